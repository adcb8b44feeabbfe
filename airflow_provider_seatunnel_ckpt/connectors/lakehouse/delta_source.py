"""``Delta`` source: one version of a Delta table, pinned for the whole job (delta-rs).

Splits are the version's data files (pyarrow dataset fragments, partition values
included), sorted by path, each naming the version; the engine keeps the splits of the
first run in the checkpoint, so a resumed run reads exactly that version. A reader's
position is the number of rows of its split already emitted.

Options: docs/options.md ("Delta source"); docs/lakehouse.md, "Sources".
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConfigError
from ...storage.urls import is_storage_option
from ..api import Dataset, JsonValue, ReaderContext, Source, SourceReader, Split
from ..datasets import path_dataset
from ..file.storage import STORAGE_HINT
from ..options import REQUIRED, Option, OptionTable, option_key
from .common import TableLocation, object_store_options, reason, storage_of
from .reader import RowCountReader


def filter_expression(value: Any, key: str = "filter") -> pc.Expression | None:
    """``[[col, op, value], ...]`` -> one pyarrow expression (all conditions AND-ed)."""
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(c, (list, tuple)) and len(c) == 3 and isinstance(c[0], str) for c in value)
    ):
        raise ConfigError(
            key, f"expected a list of [column, op, value] conditions, e.g. [[day, '=', '2024-01-02']], got {value!r}"
        )
    expression = None
    for column, op, operand in value:
        field = pc.field(column)
        op = str(op).strip().lower()
        if op in ("=", "=="):
            condition = field == operand
        elif op in ("!=", "<", "<=", ">", ">="):
            condition = {
                "!=": field != operand,
                "<": field < operand,
                "<=": field <= operand,
                ">": field > operand,
                ">=": field >= operand,
            }[op]
        elif op in ("in", "not in"):
            if not isinstance(operand, (list, tuple)):
                raise ConfigError(key, f"{op!r} needs a list of values, got {operand!r}")
            condition = field.isin(list(operand))
            condition = ~condition if op == "not in" else condition
        else:
            raise ConfigError(key, f"unknown operator {op!r}; use one of = != < <= > >= in, not in")
        expression = condition if expression is None else expression & condition
    return expression


class DeltaSource(Source):
    plugin_name = "Delta"
    OPTIONS = OptionTable(
        Option("path", "str", "the table's directory, as a URL", REQUIRED),
        Option("version", "int", "read this version of the table", minimum=0),
        Option("as_of_timestamp", "int", "read the version current at this time (ms since the epoch)", minimum=0),
        Option("read_columns", "columns", "the columns read (default: all)"),
        Option("filter", "value", "partition filters: [[column, op, value], ...]"),
        Option("batch_size", "int", "rows per batch (default: the engine's)", minimum=1),
        extra=is_storage_option,
        extra_hint=STORAGE_HINT,
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.version: int | None = opts["version"]
        self.as_of_ms: int | None = opts["as_of_timestamp"]
        if self.version is not None and self.as_of_ms is not None:  # rule: a version or a time
            raise ConfigError("version", "give a version or a timestamp, not both")
        self.columns: list[str] | None = opts["read_columns"]
        self.filter_value = opts["filter"]
        self.filter = filter_expression(self.filter_value)
        self.batch_size: int | None = opts["batch_size"]
        storage = storage_of(options)
        self.location = TableLocation.of(options["path"], storage)
        self.uri = self.location.root if self.location.url.startswith(("file:", "/")) else self.location.url
        self.delta_options = object_store_options(storage)
        self._schema: pa.Schema | None = None  # known after preflight

    def describe(self) -> str:
        return f"Delta table {self.location.url}"

    def datasets(self) -> list[Dataset]:
        return [path_dataset(self.location.url)]

    def table(self, version: int | None = None) -> Any:
        from deltalake import DeltaTable

        try:
            exists = DeltaTable.is_deltatable(self.uri, self.delta_options)
        except Exception as err:
            raise ConfigError(option_key(self, "path"), f"cannot open {self.describe()}: {reason(err)}") from None
        if not exists:
            raise ConfigError(option_key(self, "path"), f"{self.describe()} is not a Delta table (no _delta_log)")
        try:
            return DeltaTable(self.uri, version=version, storage_options=self.delta_options)
        except Exception as err:
            key = "version" if version is not None else "path"
            raise ConfigError(option_key(self, key), f"{self.describe()}: {reason(err)}") from None

    def _pinned(self) -> Any:
        if self.version is not None:
            return self.table(self.version)
        table = self.table()
        if self.as_of_ms is not None:
            try:
                table.load_as_version(datetime.datetime.fromtimestamp(self.as_of_ms / 1000, datetime.UTC))
            except Exception as err:
                raise ConfigError(option_key(self, "as_of_timestamp"), f"{self.describe()}: {reason(err)}") from None
        return table

    def dataset(self, table: Any) -> Any:
        dataset = table.to_pyarrow_dataset()
        for name in self.columns or ():
            if name not in dataset.schema.names:
                raise ConfigError(
                    option_key(self, "read_columns"),
                    f"{self.describe()} has no column {name!r} (columns: {', '.join(dataset.schema.names)})",
                )
        for column, _, _ in self.filter_value or ():
            if column not in dataset.schema.names:
                raise ConfigError(option_key(self, "filter"), f"{self.describe()} has no column {column!r}")
        return dataset

    def preflight(self) -> None:
        schema = self.dataset(self._pinned()).schema
        self._schema = pa.schema([schema.field(name) for name in self.columns]) if self.columns else schema

    def produced_schema(self) -> pa.Schema | None:
        return self._schema

    def splits(self, parallelism: int) -> list[Split]:
        table = self._pinned()
        dataset = self.dataset(table)
        fragments = sorted(dataset.get_fragments(filter=self.filter), key=lambda f: f.path)
        return [Split(f.path, {"version": table.version(), "file": f.path}) for f in fragments]

    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        return DeltaReader(self, split, int(position or 0), self.batch_size or context.batch_size)


class DeltaReader(RowCountReader):
    source: DeltaSource

    def open_batches(self) -> Iterator[pa.RecordBatch]:
        source = self.source
        dataset = source.dataset(source.table(int(self.split.spec["version"])))
        fragments = [f for f in dataset.get_fragments() if f.path == self.split.spec["file"]]
        if len(fragments) != 1:
            raise ConfigError(
                option_key(source, "path"),
                f"{source.describe()} version {self.split.spec['version']} no longer lists {self.split.spec['file']}",
            )
        return fragments[0].to_batches(
            schema=dataset.schema, columns=source.columns, filter=source.filter, batch_size=self.batch_size
        )
