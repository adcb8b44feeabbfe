"""docs/connectors.md carries the suite's table: a row per connector of the registry, a
column per case, and every skip with the reason the context gives (no servers needed)."""

from __future__ import annotations

from .conftest import SINKS, SOURCES
from .contexts import SINK_CASES, SOURCE_CASES
from .docs_table import DOC, table_rows


def test_the_docs_table_names_every_connector_and_case() -> None:
    rows = table_rows(DOC.read_text(), "contract-table")
    for kind, registry, cases in (("sink", SINKS, SINK_CASES), ("source", SOURCES, SOURCE_CASES)):
        header = next((row for row in rows if row[0] == kind), None)
        assert header == [kind, *cases], f"docs/connectors.md: the {kind} table's columns"
        start = rows.index(header) + 2
        names = []
        for row in rows[start:]:
            if row[0] in ("sink", "source"):
                break
            names.append(row[0])
            assert all(cell == "pass" or cell.startswith("skip: ") for cell in row[1:]), row
        assert names == list(registry), f"docs/connectors.md: the {kind} table's rows"
