"""``Iceberg`` source: one snapshot of a table, pinned for the whole job (pyiceberg).

Splits are the scan's data files (with their delete files), sorted by path, each naming
the snapshot; the engine keeps the splits of the first run in the checkpoint, so a
resumed run reads exactly the snapshot the job started with, whatever was committed
since. A reader's position is the number of rows of its split already emitted; a
resumed reader reads the file again and drops them (the order inside a file is fixed).

Options: docs/options.md ("Iceberg source"); docs/lakehouse.md, "Sources".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from ...errors import ConfigError
from ...storage.urls import is_storage_option
from ..api import JsonValue, ReaderContext, Source, SourceReader, Split
from ..file.storage import STORAGE_HINT
from ..options import Option, OptionTable, given, option_key
from ..seatunnel_types import parse_schema
from .iceberg_catalog import TABLE_OPTIONS, IcebergTableAccess
from .reader import RowCountReader


def _rule_one_name_each(options: Mapping[str, Any]) -> None:
    """Rule: our name or SeaTunnel's for the snapshot and the time, not both."""
    for ours, theirs in (("snapshot_id", "use_snapshot_id"), ("as_of_timestamp", "use_snapshot_timestamp")):
        if given(options, ours) and given(options, theirs):
            raise ConfigError(ours, f"give {ours} or {theirs}, not both")


def _rule_schema_or_read_columns(options: Mapping[str, Any]) -> None:
    """Rule: ``schema`` or ``read_columns``, not both."""
    if given(options, "schema") and given(options, "read_columns"):
        raise ConfigError("schema", "give schema or read_columns, not both")


class IcebergSource(IcebergTableAccess, Source):
    plugin_name = "Iceberg"
    OPTIONS = OptionTable(
        *TABLE_OPTIONS,
        Option("snapshot_id", "int", "read this snapshot"),
        Option("use_snapshot_id", "int", "SeaTunnel's name for snapshot_id"),
        Option("as_of_timestamp", "int", "read the snapshot current at this time (ms since the epoch)", minimum=0),
        Option("use_snapshot_timestamp", "int", "SeaTunnel's name for as_of_timestamp", minimum=0),
        Option("read_columns", "columns", "the columns read (default: all)"),
        Option("schema", "value", "SeaTunnel's schema: the columns read and the types they are cast to"),
        Option("filter", "str", "a row filter pyiceberg pushes into the scan"),
        Option("batch_size", "int", "rows per batch (default: the engine's)", minimum=1),
        extra=is_storage_option,
        extra_hint=STORAGE_HINT,
        rules=(_rule_one_name_each, _rule_schema_or_read_columns),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.read_table_options(opts)
        self.snapshot_id: int | None = opts["snapshot_id"] if opts.given("snapshot_id") else opts["use_snapshot_id"]
        self.as_of_ms: int | None = (
            opts["as_of_timestamp"] if opts.given("as_of_timestamp") else opts["use_snapshot_timestamp"]
        )
        if self.snapshot_id is not None and self.as_of_ms is not None:  # rule: a snapshot or a time
            raise ConfigError("snapshot_id", "give a snapshot id or a timestamp, not both")
        self.columns: tuple[str, ...] = tuple(opts["read_columns"]) if opts.given("read_columns") else ("*",)
        #: the declared output (SeaTunnel's ``schema``): the scan reads its columns, batches are cast to it
        self.declared: pa.Schema | None = None
        if opts.given("schema"):
            self.declared = parse_schema(opts["schema"], "schema")
            self.columns = tuple(self.declared.names)
        self.filter: str | None = opts["filter"]
        self.batch_size: int | None = opts["batch_size"]
        self._schema: pa.Schema | None = None  # known after preflight

    # ---- driver -----------------------------------------------------------------------------
    def _table(self) -> Any:
        table = self.load_table()
        if table is None:
            raise ConfigError(option_key(self, "table"), f"{self.describe()} does not exist")
        return table

    def _snapshot(self, table: Any) -> int | None:
        if self.snapshot_id is not None:
            if table.snapshot_by_id(self.snapshot_id) is None:
                raise ConfigError(
                    option_key(self, "snapshot_id"), f"{self.describe()} has no snapshot {self.snapshot_id}"
                )
            return self.snapshot_id
        if self.as_of_ms is not None:
            snapshot = table.snapshot_as_of_timestamp(self.as_of_ms)
            if snapshot is None:
                raise ConfigError(
                    option_key(self, "as_of_timestamp"),
                    f"{self.describe()} has no snapshot at or before {self.as_of_ms} ms",
                )
            return snapshot.snapshot_id
        current = table.current_snapshot()
        return current.snapshot_id if current is not None else None

    def _scan(self, table: Any, snapshot_id: int | None) -> Any:
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.expressions.parser import parse
        from pyiceberg.expressions.visitors import bind

        try:
            row_filter = parse(self.filter) if self.filter else AlwaysTrue()
        except Exception as err:
            raise ConfigError(option_key(self, "filter"), f"cannot parse {self.filter!r}: {_first_line(err)}") from None
        scan = table.scan(
            row_filter=row_filter,
            selected_fields=self.columns,
            case_sensitive=self.case_sensitive,
            snapshot_id=snapshot_id,
        )
        try:
            scan.projection()
        except Exception as err:
            key = "schema" if self.declared is not None else "read_columns"
            raise ConfigError(option_key(self, key), f"{self.describe()}: {_first_line(err)}") from None
        try:
            bind(table.schema(), row_filter, self.case_sensitive)
        except Exception as err:
            raise ConfigError(option_key(self, "filter"), f"{self.describe()}: {_first_line(err)}") from None
        return scan

    def preflight(self) -> None:
        table = self._table()
        read = self._scan(table, self._snapshot(table)).projection().as_arrow()
        if self.declared is not None:
            try:  # an impossible conversion (a list to an int) fails here, not mid-run
                self.conform(pa.RecordBatch.from_pylist([], schema=read))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
                raise ConfigError(option_key(self, "schema"), f"{self.describe()}: {_first_line(err)}") from None
            self._schema = self.declared
        else:
            self._schema = read

    def produced_schema(self) -> pa.Schema | None:
        return self._schema if self._schema is not None else self.declared

    def splits(self, parallelism: int) -> list[Split]:
        table = self._table()
        snapshot_id = self._snapshot(table)
        if snapshot_id is None:
            return []  # an empty table: nothing to read
        tasks = sorted(self._scan(table, snapshot_id).plan_files(), key=lambda task: task.file.file_path)
        return [
            Split(
                task.file.file_path,
                {"snapshot_id": snapshot_id, "file": task.file.file_path, "records": task.file.record_count},
            )
            for task in tasks
        ]

    def conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """A batch as read, in the declared ``schema``'s column order and types."""
        declared = self.declared
        assert declared is not None
        fold = (lambda name: name) if self.case_sensitive else str.lower
        by_name = {fold(name): index for index, name in enumerate(batch.schema.names)}
        arrays = []
        for field in declared:
            index = by_name.get(fold(field.name))
            if index is None:
                raise ConfigError(option_key(self, "schema"), f"{self.describe()} has no column {field.name!r}")
            arrays.append(batch.column(index).cast(field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=declared)

    # ---- executors ---------------------------------------------------------------------------
    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        return IcebergReader(self, split, int(position or 0), self.batch_size or context.batch_size)


class IcebergReader(RowCountReader):
    source: IcebergSource

    def open_batches(self) -> Iterator[pa.RecordBatch]:
        from pyiceberg.io.pyarrow import ArrowScan

        source = self.source
        table = source._table()
        scan = source._scan(table, int(self.split.spec["snapshot_id"]))
        file = self.split.spec["file"]
        tasks = [task for task in scan.plan_files() if task.file.file_path == file]
        if len(tasks) != 1:  # expired snapshot, or a file rewritten in place
            raise ConfigError(
                option_key(source, "table"),
                f"{source.describe()}: snapshot {self.split.spec['snapshot_id']} "
                f"no longer lists {file}; was it expired while the job ran?",
            )
        arrow_scan = ArrowScan(table.metadata, table.io, scan.projection(), scan.row_filter, source.case_sensitive)
        for batch in arrow_scan.to_record_batches(tasks):
            if source.declared is not None:
                batch = source.conform(batch)
            for start in range(0, batch.num_rows, self.batch_size):
                yield batch.slice(start, self.batch_size)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
