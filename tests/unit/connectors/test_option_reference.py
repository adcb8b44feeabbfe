"""The option tables: docs/options.md shows each one as it is declared, every option has a
one-line description, and the shared parsing keeps the one-line errors."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.connectors.options import REQUIRED, Option, OptionTable, given
from airflow_provider_seatunnel_ckpt.errors import ConfigError

from .option_reference import DOC, block, classes, reference


def test_docs_options_md_shows_every_table_as_declared() -> None:
    assert block(DOC.read_text()) == "\n" + reference() + "\n", (
        "docs/options.md is out of date: python -m tests.unit.connectors.option_reference"
    )


def test_every_builtin_declares_its_options_with_short_descriptions() -> None:
    for kind, display, cls in classes():
        table = cls.OPTIONS
        assert list(table), f"{display} {kind} declares no option"
        for option in table:
            assert len(option.doc) <= 100, f"{display}.{option.name}: the description is one short line"


_TABLE = OptionTable(
    Option("rows", "int", "rows", REQUIRED, minimum=0),
    Option("mode", "str", "a mode", "fast", choices=("fast", "slow")),
    Option("keys", "columns", "key columns"),
    extra=lambda key: key.startswith("fs."),
    extra_hint="fs.* options",
    rules=(lambda options: given(options, "keys") and given(options, "mode") and _refuse(),),
)


def _refuse() -> None:
    raise ConfigError("keys", "give keys or mode, not both")


def test_a_table_parses_typed_values_with_their_defaults() -> None:
    parsed = _TABLE.parse("Demo", {"rows": "1_000", "fs.x": 1})
    assert dict(parsed) == {"rows": 1000, "mode": "fast", "keys": None}
    assert parsed.given("rows") and not parsed.given("mode")
    assert parsed.raw["fs.x"] == 1


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({}, "rows: is required for Demo"),
        ({"rows": -1}, "rows: must be >= 0, got -1"),
        ({"rows": 1, "mode": "Medium"}, "mode: 'Medium' is not one of fast, slow"),
        ({"rows": 1, "other": 1}, "other: unknown option for Demo; known options: keys, mode, rows (or fs.* options)"),
        ({"rows": 1, "keys": ["a"], "mode": "slow"}, "keys: give keys or mode, not both"),
    ],
)
def test_a_table_fails_with_one_line(options: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigError) as info:
        _TABLE.parse("Demo", options)
    assert str(info.value) == error


def test_an_option_is_declared_once_with_a_known_kind() -> None:
    with pytest.raises(ValueError):
        OptionTable(Option("a", "int", "a"), Option("a", "str", "a again"))
    with pytest.raises(ValueError):
        Option("a", "integer", "a")
    with pytest.raises(ValueError):
        Option("a", "int", "two\nlines")
