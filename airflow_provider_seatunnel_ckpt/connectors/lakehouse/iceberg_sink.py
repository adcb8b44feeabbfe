"""``Iceberg`` sink: one table snapshot per completed checkpoint, exactly once (pyiceberg).

Writers write parquet data files (with Iceberg field ids) straight into the table's
``data/`` directory, where no reader sees them until a snapshot names them;
``prepare_commit`` returns each file with its partition and column statistics
(iceberg_files.py). Once the checkpoint is durable, the driver's committer adds every file
of the checkpoint in ONE append snapshot whose summary holds the job and checkpoint ids,
and skips a checkpoint the branch's history already holds, so replays never double rows
(iceberg_commit.py). ``cleanup`` deletes this job's files that no snapshot and no kept
commit info names; ``check_rollback`` and ``rollback`` refuse a restore older than this
job's newest snapshot.

Options: docs/options.md ("Iceberg sink"). The protocol, concurrent writers and restores:
docs/lakehouse.md ("Exactly once: one snapshot per checkpoint" and the sections after it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ...errors import ConfigError, ConnectorError
from ...storage.urls import is_storage_option
from ..api import JsonValue, Sink, SinkCommitter
from ..file.storage import STORAGE_HINT
from ..options import SAVE_MODE_OPTIONS, Option, OptionTable, given, option_key
from .common import (
    MAX_FILE_BYTES_DOC,
    TableLocation,
    check_mapping,
    collect,
    commit_attempts,
    delete_quietly,
    not_yet_committed,
    parse_modes,
    reason,
)
from .datafiles import (
    DEFAULT_MAX_FILE_BYTES,
    PARQUET_CODECS,
    DataFileWriter,
    file_prefix,
    job_tag,
    split_by,
)
from .iceberg_catalog import TABLE_OPTIONS, IcebergTableAccess
from .iceberg_files import data_file, partition_representation, statistics_of
from .schema import storable_schema
from .table_writer import TableWriter, check_table_accepts

log = logging.getLogger(__name__)

JOB_ID_PROPERTY = "seatunnel.job-id"
CHECKPOINT_PROPERTY = "seatunnel.checkpoint-id"
#: table property: this job's snapshots at or before this snapshot id are from an earlier run
RESTART_PROPERTY = "seatunnel.job.{tag}.restart-after-snapshot"
_TRANSFORM = re.compile(
    r"^\s*(identity|year|month|day|hour|bucket|truncate|void)\s*\(\s*(?:(\d+)\s*,\s*)?([^()\s,]+)\s*\)\s*$",
    re.IGNORECASE,
)


def parse_partition_field(text: str, key: str = "partition_by") -> tuple[str, str]:
    """``"day(ts)"`` -> ``("ts", "day")``; ``"bucket(16, id)"`` -> ``("id", "bucket[16]")``;
    ``"col"`` -> ``("col", "identity")``."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(key, f"expected a column or a transform such as day(ts) or bucket(16, id), got {text!r}")
    if "(" not in text:
        return text.strip(), "identity"
    match = _TRANSFORM.match(text)
    if not match:
        raise ConfigError(
            key,
            f"{text!r} is not a partition field: use col, year(col), month(col), day(col), "
            "hour(col), bucket(N, col) or truncate(W, col)",
        )
    name, width, column = match.group(1).lower(), match.group(2), match.group(3)
    if name in ("bucket", "truncate"):
        if width is None:
            raise ConfigError(key, f"{text!r}: {name} needs a width, as in {name}(16, {column})")
        return column, f"{name}[{int(width)}]"
    if width is not None:
        raise ConfigError(key, f"{text!r}: {name} takes only a column")
    return column, name


def _rule_one_partition_option(options: Mapping[str, Any]) -> None:
    """Rule: ``partition_by`` or SeaTunnel's ``iceberg.table.partition-keys``, not both."""
    if given(options, "partition_by") and given(options, "iceberg.table.partition-keys"):
        raise ConfigError("partition_by", "give partition_by or iceberg.table.partition-keys, not both")


class IcebergSink(IcebergTableAccess, Sink):
    plugin_name = "Iceberg"
    OPTIONS = OptionTable(
        *TABLE_OPTIONS,
        *SAVE_MODE_OPTIONS,
        Option("partition_by", "value", "the partition fields: columns or transforms such as day(ts), bucket(16, id)"),
        Option("iceberg.table.partition-keys", "value", "SeaTunnel's partition columns, a list or comma-separated"),
        Option("iceberg.table.write-props", "value", "the table's write properties (write.parquet.compression-codec)"),
        Option("iceberg.table.commit-branch", "str", "the branch committed to", "main"),
        Option("max_file_bytes", "int", MAX_FILE_BYTES_DOC, DEFAULT_MAX_FILE_BYTES, minimum=0),
        extra=is_storage_option,
        extra_hint=STORAGE_HINT,
        rules=(_rule_one_partition_option,),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.read_table_options(opts)
        self.create_missing, _ = parse_modes(opts)
        fields = opts["partition_by"]
        keys = opts["iceberg.table.partition-keys"]
        if isinstance(keys, str):
            keys = [k for k in (part.strip() for part in keys.split(",")) if k]
        raw = fields if fields is not None else keys
        if raw is not None and (isinstance(raw, str) or not isinstance(raw, (list, tuple))):
            raise ConfigError("partition_by", f"expected a list such as [day(ts), bucket(16, id)], got {raw!r}")
        self.partition_by = [parse_partition_field(f) for f in raw or ()]
        self.write_props = check_mapping(
            opts.raw, "iceberg.table.write-props", "{write.parquet.compression-codec: zstd}"
        )
        codec = self.write_props.get("write.parquet.compression-codec", "zstd").lower()
        codec = "none" if codec == "uncompressed" else codec
        if codec not in PARQUET_CODECS:
            raise ConfigError(
                "iceberg.table.write-props",
                f"write.parquet.compression-codec {codec!r} is not one of {', '.join(PARQUET_CODECS)}",
            )
        self.compression = codec
        self.branch: str = opts["iceberg.table.commit-branch"]
        self.max_file_bytes: int = opts["max_file_bytes"]

    # ---- table ------------------------------------------------------------------------------
    def create_table(self, schema: pa.Schema) -> Any:
        """Create the table (and namespace) from ``schema``. Every subtask may try at once:
        the losers' attempts fail (how depends on the catalog: "already exists", or a
        failed commit) and they load the winner's table."""
        catalog = self.catalog()
        try:
            catalog.create_namespace_if_not_exists(self.namespace)
        except Exception:  # lost a race with another subtask; creating the table tells
            pass
        try:
            with catalog.create_table_transaction(
                self.identifier, schema=storable_schema(schema), properties=self.write_props
            ) as txn:
                if self.partition_by:
                    with txn.update_spec() as spec:
                        for column, transform in self.partition_by:
                            spec.add_field(column, transform, _partition_name(column, transform))
        except Exception as err:
            table = self.load_table()
            if table is not None:
                return table
            if isinstance(err, ValueError):  # a partition field on a column the output lacks
                raise ConfigError(option_key(self, "partition_by"), f"cannot create {self.describe()}: {err}") from None
            raise ConnectorError(f"cannot create {self.describe()}: {reason(err)}") from None
        table = self.load_table()
        if table is None:
            raise ConnectorError(f"{self.describe()} was created but cannot be loaded")
        log.info("Iceberg sink: created %s at %s", self.describe(), table.location())
        return table

    def preflight(self) -> None:
        table = self.load_table()
        if table is None:
            if not self.create_missing:
                raise ConfigError(
                    "table", f"{self.describe()} does not exist (schema_save_mode: ERROR_WHEN_SCHEMA_NOT_EXIST)"
                )
            return
        if self.partition_by:
            wanted = [(c, t) for c, t in self.partition_by]
            spec = table.spec()
            have = [(table.schema().find_column_name(f.source_id), str(f.transform)) for f in spec.fields]
            if have != wanted:
                shown = ", ".join(f"{t}({c})" for c, t in have) or "nothing"
                raise ConfigError(
                    "partition_by",
                    f"{self.describe()} exists and is partitioned by {shown}; "
                    "partition_by only applies to a table the sink creates",
                )
        self.location_of(table)

    def table_schema(self, table: Any) -> pa.Schema:
        """The table's columns as Arrow, without metadata."""
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        return schema_to_pyarrow(table.schema(), include_field_ids=False)

    accepts_reads_the_target = True

    def accepts(self, schema: pa.Schema) -> None:
        check_table_accepts(self, schema, "table")

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> IcebergWriter:
        return IcebergWriter(self, job_id, subtask, attempt)

    def create_committer(self, job_id: str) -> IcebergCommitter:
        return IcebergCommitter(self, job_id)


class IcebergWriter(TableWriter):
    plugin = "Iceberg"
    table_option = "table"

    def files_for(self, table: Any, location: TableLocation) -> DataFileWriter:
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        iceberg_schema = table.schema()
        fields = [
            (iceberg_schema.find_column_name(f.source_id), iceberg_schema.find_type(f.source_id), f)
            for f in table.spec().fields
        ]

        def partitioner(batch: pa.RecordBatch) -> list[tuple[tuple[Any, ...], pa.RecordBatch]]:
            keys = [
                partition_representation(f.transform.pyarrow_transform(kind)(batch.column(column)))
                for column, kind, f in fields
            ]
            return split_by(keys, batch)

        spec_id = table.spec().spec_id
        describe = statistics_of(table.metadata)
        return DataFileWriter(
            location.fs,
            f"{location.root}/data",
            self.job_id,
            self.subtask,
            self.attempt,
            # field ids in the files: readers map columns by id, as for files Iceberg writers make
            schema=schema_to_pyarrow(iceberg_schema, include_field_ids=True),
            partition_names=[f.name for _, _, f in fields],
            partitioner=partitioner if fields else None,
            describe=lambda metadata: {**describe(metadata), "spec_id": spec_id},
            compression=self.sink.compression,
            max_file_bytes=self.sink.max_file_bytes,
        )


class IcebergCommitter(SinkCommitter):
    """Adds each completed checkpoint's data files as one snapshot; every method may be replayed."""

    def __init__(self, sink: IcebergSink, job_id: str):
        self.sink = sink
        self.job_id = job_id
        self.restart_property = RESTART_PROPERTY.format(tag=job_tag(job_id))

    def last_committed(self, table: Any) -> tuple[int | None, int | None]:
        """(checkpoint id, snapshot id) of this job's newest snapshot on the branch, walking
        back from its head; (None, None) when this run of the job has committed nothing."""
        restart = table.properties.get(self.restart_property)
        snapshot = self._head(table)
        while snapshot is not None:
            if restart is not None and snapshot.snapshot_id == int(restart):
                return None, None
            summary = snapshot.summary
            if summary is not None and summary.get(JOB_ID_PROPERTY) == self.job_id:
                return int(summary[CHECKPOINT_PROPERTY]), snapshot.snapshot_id
            snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
        return None, None

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        files = collect(commit_infos, "Iceberg")
        if not files:
            return  # an epoch without rows makes no snapshot
        from pyiceberg.exceptions import CommitFailedException

        from .iceberg_commit import StartBranch, without_library_retries

        for attempt in commit_attempts(CommitFailedException):
            with attempt:
                table = self._table()
                done, _ = self.last_committed(table)
                checkpoint, left = not_yet_committed(files, done)
                if not left:
                    log.info(
                        "Iceberg sink: checkpoint %d of job %s is already in %s (up to %d); not committed again",
                        max(f.checkpoint for f in collect(commit_infos, "Iceberg")),
                        self.job_id,
                        self.sink.describe(),
                        done,
                    )
                    return
                properties = {JOB_ID_PROPERTY: self.job_id, CHECKPOINT_PROPERTY: str(checkpoint)}
                version = table.metadata.format_version
                # a branch of a table without snapshots starts with this commit, as in Java
                new_branch = self.sink.branch != "main" and not table.metadata.snapshots
                # The commit applies to the table the replay rule just read, or fails: the
                # append asserts the branch's head (pyiceberg's requirement), a new branch
                # that the branch does not exist (StartBranch), and nothing retries it but
                # this loop, which reads the table and checks the rule again.
                with without_library_retries(table).transaction() as txn:
                    branch = None if new_branch else self.sink.branch
                    with txn.update_snapshot(snapshot_properties=properties, branch=branch).fast_append() as append:
                        for entry in left:
                            stats = dict(entry.file.stats)
                            spec_id = stats.pop("spec_id")
                            append.append_data_file(
                                data_file(
                                    entry.url,
                                    entry.file.size,
                                    list(entry.file.partition.values()),
                                    stats,
                                    spec_id,
                                    version,
                                )
                            )
                    if new_branch:
                        StartBranch(txn, self.sink.branch, append.snapshot_id).commit()
                log.info(
                    "Iceberg sink: committed checkpoint %d of job %s to %s (%d file(s), %d row(s))",
                    checkpoint,
                    self.job_id,
                    self.sink.describe(),
                    len(left),
                    sum(f.file.rows for f in left),
                )

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        table = self.sink.load_table()
        if table is None:
            return
        location = self.sink.location_of(table)
        kept = {f.file.path for f in collect(keep, "Iceberg")}
        referenced = set()
        # every snapshot's files, on any branch (main may have none when the job writes a
        # branch): committed data is never taken for staging, and time travel keeps working
        if table.metadata.snapshots:
            referenced = {location.to_path(url) for url in table.inspect.all_files().column("file_path").to_pylist()}
        prefix = file_prefix(self.job_id)
        data_dir = f"{location.root}/data"
        if not location.fs.exists(data_dir):
            return
        for info in location.fs.walk_files(data_dir):
            if info.name.startswith(prefix) and info.path not in kept and info.path not in referenced:
                delete_quietly(location.fs, info.path, "Iceberg")

    def check_rollback(self, after_checkpoint_id: int, newer_checkpoint_ids: Sequence[int] = ()) -> None:
        """Refuse a restore older than this job's newest snapshot (a table commit cannot
        be undone); reads the table, changes nothing. The runner calls it before it
        deletes the newer checkpoints, so a refused restore leaves the job as it was."""
        table = self.sink.load_table()
        if table is None:
            return
        done, snapshot_id = self.last_committed(table)
        if done is not None and done > after_checkpoint_id:
            raise ConfigError(
                "--restore",
                f"{self.sink.describe()} already holds snapshot {snapshot_id} with the rows of checkpoint {done} of job "
                f"{self.job_id}; a table commit cannot be undone by restoring checkpoint {after_checkpoint_id}: restore "
                f"checkpoint {done} or newer, or roll the table back yourself (docs/lakehouse.md)",
            )

    def rollback(self, after_checkpoint_id: int) -> None:
        """Nothing to remove (a restore never goes below the table's newest snapshot of
        this job); refuses as ``check_rollback`` does."""
        self.check_rollback(after_checkpoint_id)

    def discard_job(self) -> None:
        table = self.sink.load_table()
        head = self._head(table) if table is not None else None
        if head is None:
            return
        with table.transaction() as txn:
            txn.set_properties({self.restart_property: str(head.snapshot_id)})

    def _head(self, table: Any) -> Any:
        """The newest snapshot of the branch the sink commits to (None: it has none yet)."""
        return table.snapshot_by_name(self.sink.branch) if self.sink.branch != "main" else table.current_snapshot()

    def pending(self) -> list[dict[str, Any]]:
        table = self.sink.load_table()
        done, snapshot_id = self.last_committed(table) if table is not None else (None, None)
        return [{"table": self.sink.identifier, "last_committed_checkpoint": done, "snapshot_id": snapshot_id}]

    def _table(self) -> Any:
        table = self.sink.load_table()
        if table is None:
            raise ConnectorError(f"{self.sink.describe()} disappeared before its data files were committed")
        return table


# ---- helpers ------------------------------------------------------------------------------
def _partition_name(column: str, transform: str) -> str:
    base = transform.split("[")[0]
    return column if base == "identity" else f"{column}_{base}"
