"""Change rows (SeaTunnel's ``RowKind``) in Arrow batches, and the two transforms that
read them: ``FilterRowKind`` and ``RowKindExtractor`` (the column and its helpers are
the connector API's, ``connectors/api.py``).

A SeaTunnel row is an insert, the old or the new image of an update, or a delete. Here a
batch whose rows may be any of these carries one more column, :data:`ROW_KIND` (``int8``:
SeaTunnel's byte value of the kind, 0 INSERT, 1 UPDATE_BEFORE, 2 UPDATE_AFTER, 3 DELETE).
Only a source whose rows include a change (``FakeSource`` with ``rows = [{kind =
DELETE ...}]``) adds it, so every other job and schema is what it was. The column is just
data within a batch: positions and checkpoints do not change.

A connector says what it does with the column (``Transform.takes_change_rows``,
``Sink.change_rows``); the engine (``engine/routing.py``) refuses a job whose change rows
would reach one that does not (one line naming the entry), and removes the column before
every consumer that does not read it, so it never shows in a user's columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..connectors.api import (
    INSERT,
    KINDS,
    ROW_KIND,
    Transform,
    has_kinds,
    kind_code,
    kinds_of,
    strip_kinds,
    without_kinds,
)
from ..connectors.options import Option, OptionTable, Parsed, option_key
from ..errors import ConfigError

#: SeaTunnel's ``RowKind.shortString()``
SHORT = ("+I", "-U", "+U", "-D")


def _kind_list(opts: Parsed, name: str) -> list[int] | None:
    value = opts[name]
    if value is None:
        return None
    values = value if isinstance(value, list) else [value]
    return [kind_code(v, f"{name}[{i}]", any_case=True) for i, v in enumerate(values)]


def _rule_one_of_include_exclude(include: list[int] | None, exclude: list[int] | None) -> None:
    """Rule: exactly one of ``include_kinds`` and ``exclude_kinds``, a non-empty list."""
    if (include is None) == (exclude is None) or not (include or exclude):
        raise ConfigError(
            "include_kinds",
            "give exactly one of include_kinds and exclude_kinds, a non-empty list "
            f"of {', '.join(KINDS)} (they are mutually exclusive, as in SeaTunnel)",
        )


class FilterRowKindTransform(Transform):
    """SeaTunnel's ``FilterRowKind``: keeps the rows of the kinds in ``include_kinds``, or
    drops those in ``exclude_kinds`` (exactly one of the two, a non-empty list)."""

    plugin_name = "FilterRowKind"
    takes_change_rows = True
    OPTIONS = OptionTable(
        Option("include_kinds", "value", "the row kinds kept (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE)"),
        Option("exclude_kinds", "value", "the row kinds dropped; exactly one of the two is given"),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        include, exclude = _kind_list(opts, "include_kinds"), _kind_list(opts, "exclude_kinds")
        _rule_one_of_include_exclude(include, exclude)
        self.kept = frozenset(include) if include else frozenset(range(len(KINDS))) - frozenset(exclude or ())
        self._kept_codes = pa.array(sorted(self.kept), pa.int8())
        # decided by the options alone, so that every output batch has one schema
        self._keeps_column = bool(self.kept - {INSERT})

    def change_rows_out(self, kinds: Sequence[str]) -> tuple[str, ...]:
        return tuple(k for k in kinds if KINDS.index(k) in self.kept)

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        return input_schema if self._keeps_column else without_kinds(input_schema)

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        if not has_kinds(batch.schema):
            return batch if INSERT in self.kept else None
        kept = batch.filter(pc.is_in(kinds_of(batch), value_set=self._kept_codes))
        return kept if self._keeps_column else strip_kinds(kept)


class RowKindExtractorTransform(Transform):
    """SeaTunnel's ``RowKindExtractor``: appends each row's kind as a string column
    (``custom_field_name``, default ``row_kind``; ``transform_type`` SHORT gives ``+I``,
    FULL gives ``INSERT``) and makes every row an insert, as SeaTunnel does."""

    plugin_name = "RowKindExtractor"
    takes_change_rows = True
    OPTIONS = OptionTable(
        Option("custom_field_name", "str", "the appended string column of row kinds", "row_kind"),
        Option("transform_type", "str", "SHORT (+I, -U, +U, -D) or FULL (INSERT...), any case", "SHORT"),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.field_name: str = opts["custom_field_name"]
        if self.field_name == ROW_KIND:
            raise ConfigError("custom_field_name", f"{ROW_KIND!r} is reserved for the rows' kinds")
        kind = opts["transform_type"].upper()  # any case, as SeaTunnel reads an enum
        if kind not in ("SHORT", "FULL"):
            raise ConfigError("transform_type", f"{options['transform_type']!r} is not one of SHORT, FULL")
        self._names = pa.array(SHORT if kind == "SHORT" else KINDS, pa.string())
        # SeaTunnel's output column is a non-null string
        self._field = pa.field(self.field_name, pa.string(), nullable=False)

    def change_rows_out(self, kinds: Sequence[str]) -> tuple[str, ...]:
        return ()

    def _check(self, names: Iterable[str]) -> None:
        if self.field_name in names:
            raise ConfigError(option_key(self, "custom_field_name"), f"field name {self.field_name} already exists")

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        plain = without_kinds(input_schema)
        self._check(plain.names)
        return plain.append(self._field)

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        plain = strip_kinds(batch)
        self._check(plain.schema.names)
        names = pc.take(self._names, kinds_of(batch))
        return pa.RecordBatch.from_arrays([*plain.columns, names], schema=plain.schema.append(self._field))
