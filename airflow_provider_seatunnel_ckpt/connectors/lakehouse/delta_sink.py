"""``Delta`` sink: one Delta commit per completed checkpoint, exactly once (delta-rs).

Writers write parquet files into the table's directory; the driver's committer adds a
completed checkpoint's files in ONE commit that carries an application transaction
``(seatunnel-ckpt:{job id}, checkpoint id)``, and skips a checkpoint at or below
``transaction_version(app id)``: it is already in the table. ``cleanup`` deletes this
job's files the table does not reference; ``check_rollback`` and ``rollback`` refuse to
restore past a committed version.

Options: docs/options.md ("Delta sink"); concurrent writers and restores:
docs/lakehouse.md, "`Delta`".
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from ...errors import ConfigError, ConnectorError
from ...storage.urls import is_storage_option
from ..api import Dataset, JsonValue, Sink, SinkCommitter
from ..datasets import path_dataset
from ..file.storage import STORAGE_HINT
from ..options import REQUIRED, SAVE_MODE_OPTIONS, Option, OptionTable, option_key
from .common import (
    MAX_FILE_BYTES_DOC,
    CommitFile,
    TableLocation,
    collect,
    commit_attempts,
    delete_quietly,
    not_yet_committed,
    object_store_options,
    parse_modes,
    reason,
    storage_of,
)
from .datafiles import (
    DEFAULT_MAX_FILE_BYTES,
    PARQUET_CODECS,
    DataFileWriter,
    file_prefix,
    split_by,
)
from .schema import storable_schema
from .table_writer import TableWriter, check_table_accepts

log = logging.getLogger(__name__)

APP_ID_PREFIX = "seatunnel-ckpt:"
#: delta-rs' own retries of a commit over other writers' commits (each checked for a conflict)
COMMIT_RETRIES = 20


class DeltaSink(Sink):
    plugin_name = "Delta"
    OPTIONS = OptionTable(
        Option("path", "str", "the table's directory, as a URL", REQUIRED),
        Option("mode", "str", "append only", "append", choices=("append",)),
        *SAVE_MODE_OPTIONS,
        Option("partition_by", "columns", "the partition columns of a new table"),
        Option("compression", "str", "the Parquet codec", "snappy", choices=PARQUET_CODECS),
        Option("max_file_bytes", "int", MAX_FILE_BYTES_DOC, DEFAULT_MAX_FILE_BYTES, minimum=0),
        extra=is_storage_option,
        extra_hint=STORAGE_HINT,
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.path: str = opts["path"]
        self.create_missing, _ = parse_modes(opts)
        self.partition_by: list[str] = opts["partition_by"] or []
        self.compression: str = opts["compression"]
        self.max_file_bytes: int = opts["max_file_bytes"]
        self.storage_options = storage_of(options)
        self.location = TableLocation.of(self.path, self.storage_options)
        # delta-rs takes local tables as plain paths
        self.uri = self.location.root if self.location.url.startswith(("file:", "/")) else self.location.url
        self.delta_options = object_store_options(self.storage_options)

    def describe(self) -> str:
        return f"Delta table {self.location.url}"

    def datasets(self) -> list[Dataset]:
        return [path_dataset(self.location.url)]

    def location_of(self, table: Any) -> TableLocation:
        return self.location

    def load_table(self) -> Any | None:
        from deltalake import DeltaTable

        try:
            if not DeltaTable.is_deltatable(self.uri, self.delta_options):
                return None
            return DeltaTable(self.uri, storage_options=self.delta_options)
        except Exception as err:
            raise ConnectorError(f"cannot open {self.describe()}: {reason(err)}") from None

    def create_table(self, schema: pa.Schema) -> Any:
        """Create the table from ``schema``; a concurrent creator wins harmlessly."""
        from deltalake import DeltaTable

        missing = [c for c in self.partition_by if c not in schema.names]
        if missing:
            raise ConfigError(
                option_key(self, "partition_by"),
                f"{', '.join(missing)} not in the job's output (columns: {', '.join(schema.names)})",
            )
        try:
            DeltaTable.create(
                self.uri,
                storable_schema(schema, fixed_binary=False),
                mode="ignore",
                partition_by=self.partition_by or None,
                storage_options=self.delta_options,
            )
        except Exception as err:
            if self.load_table() is None:  # not a lost race: a real failure
                raise ConnectorError(f"cannot create {self.describe()}: {reason(err)}") from None
        table = self.load_table()
        if table is None:
            raise ConnectorError(f"{self.describe()} was created but cannot be opened")
        return table

    def preflight(self) -> None:
        table = self.load_table()
        if table is None:
            if not self.create_missing:
                raise ConfigError(
                    "path", f"{self.describe()} does not exist (schema_save_mode: ERROR_WHEN_SCHEMA_NOT_EXIST)"
                )
            return
        have = list(table.metadata().partition_columns)
        if self.partition_by and have != self.partition_by:
            raise ConfigError(
                "partition_by",
                f"{self.describe()} exists and is partitioned by "
                f"{', '.join(have) or 'nothing'}; partition_by only applies to a table "
                "the sink creates",
            )

    def table_schema(self, table: Any) -> pa.Schema:
        """The table's columns as Arrow, without metadata."""
        return pa.schema([pa.field(f.name, f.type, f.nullable) for f in pa.schema(table.schema().to_arrow())])

    accepts_reads_the_target = True

    def accepts(self, schema: pa.Schema) -> None:
        check_table_accepts(self, schema, "path")

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> DeltaWriter:
        return DeltaWriter(self, job_id, subtask, attempt)

    def create_committer(self, job_id: str) -> DeltaCommitter:
        return DeltaCommitter(self, job_id)


class DeltaWriter(TableWriter):
    plugin = "Delta"
    table_option = "path"

    def files_for(self, table: Any, location: TableLocation) -> DataFileWriter:
        partitions = list(table.metadata().partition_columns)
        stored = pa.schema([f for f in self.sink.table_schema(table) if f.name not in partitions])

        def partitioner(batch: pa.RecordBatch) -> list[tuple[tuple[Any, ...], pa.RecordBatch]]:
            # Delta keeps partition values as strings in the log
            return split_by([batch.column(c).cast(pa.string()) for c in partitions], batch)

        def without_partitions(batch: pa.RecordBatch) -> pa.RecordBatch:
            return pa.RecordBatch.from_arrays([batch.column(f.name) for f in stored], schema=stored)

        return DataFileWriter(
            location.fs,
            location.root,
            self.job_id,
            self.subtask,
            self.attempt,
            schema=stored,
            partition_names=partitions,
            partitioner=partitioner if partitions else None,
            prepare=without_partitions if partitions else None,
            compression=self.sink.compression,
            max_file_bytes=self.sink.max_file_bytes,
        )


class DeltaCommitter(SinkCommitter):
    """Adds each completed checkpoint's files in one commit; every method may be replayed."""

    def __init__(self, sink: DeltaSink, job_id: str):
        self.sink = sink
        self.job_id = job_id
        self.app_id = APP_ID_PREFIX + job_id

    def last_committed(self, table: Any) -> int | None:
        version = table.transaction_version(self.app_id)
        return version or None  # 0 = reset by discard_job

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        files = collect(commit_infos, "Delta")
        if not files:
            return
        from deltalake.exceptions import CommitFailedError

        # delta-rs retries a commit that lost its version to another writer's by itself,
        # after checking each newer commit for a conflict; one that carries this job's
        # application transaction (another driver of the job committed: a fenced one
        # whose commit was in flight, or the claimant's replay) fails it as a
        # "concurrent transaction". Then this loop reads the table and applies the
        # replay rule again: the other driver's commit is found, and nothing is added.
        for attempt in commit_attempts(CommitFailedError):
            with attempt:
                table = self._table()
                done = self.last_committed(table)
                checkpoint, left = not_yet_committed(files, done)
                if not left:
                    log.info(
                        "Delta sink: checkpoint %d of job %s is already in %s (up to %d); not committed again",
                        max(f.checkpoint for f in files),
                        self.job_id,
                        self.sink.describe(),
                        done,
                    )
                    return
                self._add(table, checkpoint, left)
                log.info(
                    "Delta sink: committed checkpoint %d of job %s to %s (%d file(s), %d row(s))",
                    checkpoint,
                    self.job_id,
                    self.sink.describe(),
                    len(left),
                    sum(f.file.rows for f in left),
                )

    def _add(self, table: Any, checkpoint: int, files: list[CommitFile]) -> None:
        """One commit: the files' ``add`` actions and the application transaction
        ``(app id, checkpoint)``, based on the version ``table`` holds, the one whose
        transaction version the replay rule read."""
        from deltalake import CommitProperties, Transaction
        from deltalake.transaction import AddAction

        now_ms = int(time.time() * 1000)
        root = self.sink.location.root
        actions = [
            AddAction(
                path=quote(entry.file.path[len(root) + 1 :], safe="/="),
                size=entry.file.size,
                partition_values=dict(entry.file.partition),
                modification_time=now_ms,
                data_change=True,
                stats=json.dumps({"numRecords": entry.file.rows}),
            )
            for entry in files
        ]
        properties = CommitProperties(
            app_transactions=[Transaction(self.app_id, checkpoint)],
            max_commit_retries=COMMIT_RETRIES,
            custom_metadata={"seatunnel.job-id": self.job_id, "seatunnel.checkpoint-id": str(checkpoint)},
        )
        table.create_write_transaction(
            actions,
            mode="append",
            schema=table.schema(),
            partition_by=list(table.metadata().partition_columns) or None,
            commit_properties=properties,
        )

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        table = self.sink.load_table()
        location = self.sink.location
        if table is None or not location.fs.exists(location.root):
            return
        kept = {f.file.path for f in collect(keep, "Delta")}
        referenced = {location.to_path(uri) for uri in table.file_uris()}
        prefix = file_prefix(self.job_id)
        for info in location.fs.walk_files(location.root):
            if (
                info.name.startswith(prefix)
                and info.path not in kept
                and info.path not in referenced
                and "/_delta_log/" not in info.path
            ):
                delete_quietly(location.fs, info.path, "Delta")

    def check_rollback(self, after_checkpoint_id: int, newer_checkpoint_ids: Sequence[int] = ()) -> None:
        """Refuse a restore older than the newest checkpoint the table holds for this job
        (a Delta commit cannot be undone); reads the table, changes nothing. The runner
        calls it before it deletes the newer checkpoints."""
        table = self.sink.load_table()
        done = self.last_committed(table) if table is not None else None
        if done is not None and done > after_checkpoint_id:
            raise ConfigError(
                "--restore",
                f"{self.sink.describe()} already holds the rows of checkpoint {done} of job {self.job_id} (table version "
                f"{table.version()} or earlier); a table commit cannot be undone by restoring checkpoint "
                f"{after_checkpoint_id}: restore checkpoint {done} or newer, or restore the table yourself "
                "(docs/lakehouse.md)",
            )

    def rollback(self, after_checkpoint_id: int) -> None:
        """Nothing to remove; refuses as ``check_rollback`` does."""
        self.check_rollback(after_checkpoint_id)

    def discard_job(self) -> None:
        from deltalake import CommitProperties, Transaction

        table = self.sink.load_table()
        if table is None or self.last_committed(table) is None:
            return
        table.create_write_transaction(
            [],
            mode="append",
            schema=table.schema(),
            partition_by=list(table.metadata().partition_columns) or None,
            commit_properties=CommitProperties(app_transactions=[Transaction(self.app_id, 0)]),
        )

    def pending(self) -> list[dict[str, Any]]:
        table = self.sink.load_table()
        return [
            {
                "table": self.sink.location.url,
                "last_committed_checkpoint": self.last_committed(table) if table else None,
                "version": table.version() if table else None,
            }
        ]

    def _table(self) -> Any:
        table = self.sink.load_table()
        if table is None:
            raise ConnectorError(f"{self.sink.describe()} disappeared before its data files were committed")
        return table
