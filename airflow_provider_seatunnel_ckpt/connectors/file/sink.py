"""``File`` sink: parquet, csv or jsonl files on any storage backend, exactly once (2PC).

Options: ``path`` (the output directory, as a URL), ``format`` (``parquet``, ``csv``,
``jsonl``), ``compression`` (parquet's codec), ``max_file_bytes`` (a file is staged early
once it reaches this size) and the storage options (docs/jobs.md, "File").

Committed output is ``part-{job}-{subtask:05d}-{attempt}-{checkpoint:010d}-{seq}.{ext}``
under ``path``, the only non-hidden files; staged files live under
``_staging/{job_id}/`` and ``discard_job`` writes ``_discarded-{job_id}.json``. The writer
encodes batches straight into staged files and syncs full ones on its own flush thread
(at most one in flight); ``prepare_commit`` returns the files staged since the last one,
whose final names a replay publishes again; the committer moves them (idempotently),
cleans up orphans, rolls back newer epochs on an older restore and records discarded
output. docs/jobs.md, "The File sink's two-phase commit, step by step", has the whole
protocol.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import json
import logging
import posixpath
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from ...errors import CheckpointStorageError, ConfigError
from ...storage.filesystem import FileInfo, FileSystem, NewFile
from ...storage.layout import validate_checkpoint_id, validate_job_id
from ...storage.urls import is_storage_option
from ..api import Dataset, JsonValue, Sink, SinkCommitter, SinkWriter
from ..datasets import path_dataset
from ..options import REQUIRED, Option, OptionTable
from .formats import EXTENSIONS, FORMATS, check_optional_format
from .storage import STORAGE_HINT, is_hidden, open_storage

log = logging.getLogger(__name__)

STAGING_DIR = "_staging"
DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
PARQUET_CODECS = ("snappy", "zstd", "gzip", "lz4", "brotli", "none")


def job_tag(job_id: str) -> str:
    """Short, stable tag of a job id used in committed file names."""
    return hashlib.sha256(job_id.encode("utf-8")).hexdigest()[:8]


_FINAL_RE = re.compile(r"part-([0-9a-f]{8})-(\d{5,})-(\d+)-(\d{10,})-(\d+)\.[a-z]+")
#: ``discard_job``'s record, in the output directory (hidden, like ``_staging``)
DISCARDED_NAME = "_discarded-{job_id}.json"


class FileSink(Sink):
    """The File sink; the hooks below (encoders, partition directories, file names, rows
    per file) let SeaTunnel's file sinks (:mod:`.seatunnel_sink`) reuse its protocol."""

    plugin_name = "File"
    #: output files may be in subdirectories of ``path`` (partition directories): commit
    #: infos may name them, and ``rollback``/``discard_job`` look for this job's files below ``path``
    nested_output = False
    #: a file is staged early once it holds this many rows (0: no limit), like ``max_file_bytes``
    max_file_rows = 0
    #: a change row (UPDATE_BEFORE, DELETE...) is written as a plain row, its kind dropped
    #: by the engine: SeaTunnel's file sinks write every row and never look at its kind
    change_rows = "ignore"
    OPTIONS = OptionTable(
        Option("path", "str", "the output directory, as a URL", REQUIRED),
        Option("format", "value", "parquet, csv or jsonl", "parquet", convert=check_optional_format),
        Option("compression", "str", "parquet's codec", choices=PARQUET_CODECS),
        Option(
            "max_file_bytes",
            "int",
            "a file is staged early once it reaches this size",
            DEFAULT_MAX_FILE_BYTES,
            minimum=0,
        ),
        extra=is_storage_option,
        extra_hint=STORAGE_HINT,
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.format: str = opts["format"]
        self.compression: str | None = opts["compression"]
        if self.compression is not None and self.format != "parquet":  # rule: compression is parquet's
            raise ConfigError("compression", f"applies to parquet only; {self.format} is written uncompressed")
        self.max_file_bytes: int = opts["max_file_bytes"]
        self.fs, self.root = open_storage(options)
        #: the output's URL as the job names it (its dataset)
        self.url: str = opts["path"]
        self.extension = EXTENSIONS[self.format]

    def datasets(self) -> list[Dataset]:
        return [path_dataset(self.url)]

    def staging_dir(self, job_id: str) -> str:
        return _join(self.root, STAGING_DIR, validate_job_id(job_id))

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> FileSinkWriter:
        return FileSinkWriter(self, job_id, subtask, attempt)

    def create_committer(self, job_id: str) -> FileSinkCommitter:
        return FileSinkCommitter(
            self.fs,
            self.root,
            self.staging_dir(job_id),
            job_tag(job_id),
            _join(self.root, DISCARDED_NAME.format(job_id=validate_job_id(job_id))),
            parse_name=self.parse_final_name,
            nested=self.nested_output,
        )

    def new_encoder(self, schema: pa.Schema, out: NewFile) -> _FileEncoder:
        """The encoder of one output file (``out``) for batches of ``schema``."""
        return _FileEncoder(self.format, schema, self.compression, out)

    def split_batch(self, batch: pa.RecordBatch) -> Iterable[tuple[str, pa.RecordBatch]]:
        """``(directory, rows)`` pairs: where under ``path`` each part of ``batch`` goes
        ("" = ``path`` itself; else a relative directory, with ``nested_output``)."""
        return (("", batch),)

    def final_names(self, tag: str, subtask: int, attempt: int, checkpoint_id: int, count: int) -> list[str]:
        """The committed names of the ``count`` files a writer staged for a checkpoint, in
        the order they were cut; called once per ``prepare_commit`` and kept in its commit
        info, so a replayed commit publishes the same names. ``parse_final_name`` must
        recognise each of them."""
        return [f"part-{tag}-{subtask:05d}-{attempt}-{checkpoint_id:010d}-{i}.{self.extension}" for i in range(count)]

    @staticmethod
    def parse_final_name(name: str) -> tuple[str, int] | None:
        """(job tag, checkpoint id) of a committed file's name (None: not one of ours)."""
        match = _FINAL_RE.fullmatch(name)
        return (match.group(1), int(match.group(4))) if match else None


class FileSinkWriter(SinkWriter):
    def __init__(self, sink: FileSink, job_id: str, subtask: int, attempt: int):
        run_attempt = sink.run_attempt
        for name, value in (("subtask", subtask), ("attempt", attempt), ("run attempt", run_attempt)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"File sink: {name} must be a non-negative integer, got {value!r}")
        self.sink = sink
        self.subtask = subtask
        self.attempt = attempt
        self.run_attempt = run_attempt
        self._staging = sink.staging_dir(job_id)
        self._tag = job_tag(job_id)
        self._writer_id = secrets.token_hex(4)
        self._uploads = 0
        # (staged path, rows, directory under path) uploaded since the last prepare_commit
        self._staged: list[tuple[str, int, str]] = []
        self._files: dict[str, _FileEncoder] = {}  # being written, by directory ("" = path itself)
        #: at least the bytes the open files hold gathered (only grows until checked)
        self._gathered_estimate = 0
        # Full files are synced off the caller's (processing) thread, one at a time.
        # Only the caller thread touches the fields below; the flush thread only writes.
        self._flusher: ThreadPoolExecutor | None = None  # created at the first full file
        self._inflight: tuple[Future[None], _FileEncoder, int, str] | None = None  # (sync, file, rows, dir)
        self._error: BaseException | None = None  # a failed sync: sticky, raised again
        self._failed: list[str] = []  # paths of failed syncs, deleted (best effort) on close

    def write(self, batch: pa.RecordBatch) -> None:
        if self._error is not None or (self._inflight is not None and self._inflight[0].done()):
            self._collect()  # does not block: raises a failed sync, records a finished one
        if batch.num_rows == 0:
            return
        for directory, part in self.sink.split_batch(batch):
            self._write_to(directory, part)

    def _write_to(self, directory: str, batch: pa.RecordBatch) -> None:
        file = self._files.get(directory)
        if file is not None and not file.schema.equals(batch.schema):
            self._flush_current(directory)
            file = None
        max_rows, max_bytes = self.sink.max_file_rows, self.sink.max_file_bytes
        while batch.num_rows:
            if file is None:
                file = self._files[directory] = self._start_file(batch.schema)
            piece = batch.slice(0, max_rows - file.rows) if max_rows else batch
            before = file.gathered_bytes
            file.write(piece)
            self._gathered_estimate += max(0, file.gathered_bytes - before)
            batch = batch.slice(piece.num_rows)
            if (max_rows and file.rows >= max_rows) or (max_bytes and file.size >= max_bytes):
                self._flush_current(directory)
                file = None
        if self._gathered_estimate > MAX_GATHERED_BYTES:
            self._limit_gathered()

    def _limit_gathered(self) -> None:
        """Many open files (``partition_by`` over many values) each gathering a few rows
        per batch would hold everything since the checkpoint in memory: past the limit,
        every open file writes what it gathered as a row group."""
        held = sum(file.gathered_bytes for file in self._files.values())
        if held > MAX_GATHERED_BYTES:
            for file in self._files.values():
                if file.gathered_bytes:
                    file.write_gathered()
            held = 0
        self._gathered_estimate = held

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        validate_checkpoint_id(checkpoint_id)
        self._collect()  # the file syncing in the background belongs to this epoch
        for directory in list(self._files):
            self._stage_current(directory)
        if not self._staged:
            return None
        names = self.sink.final_names(self._tag, self.subtask, self.attempt, checkpoint_id, len(self._staged))
        final = [
            _join(self.sink.root, *([directory] if directory else []), name)
            for (_, _, directory), name in zip(self._staged, names)
        ]
        info = {"staged": [p for p, _, _ in self._staged], "final": final, "rows": sum(r for _, r, _ in self._staged)}
        self._staged = []
        return info

    def close(self) -> None:
        """Drop unstaged rows and, best effort, staged files no commit info names yet.

        A sync still in flight is cancelled, or waited for, and its file deleted, so no
        staged file appears after the writer was closed."""
        current, self._files = list(self._files.values()), {}
        for file in current:
            self._discard(file)
        doomed = [path for path, _, _ in self._staged] + self._failed
        self._staged, self._failed = [], []
        inflight, self._inflight = self._inflight, None
        if inflight is not None:
            sync, file, _, _ = inflight
            if sync.cancel():
                self._discard(file)
            else:
                try:
                    sync.result()
                except BaseException:  # aborting anyway; the error was or will be reported
                    pass
                doomed.append(file.path)
        if self._flusher is not None:
            self._flusher.shutdown(wait=False)
            self._flusher = None
        for path in doomed:
            try:
                self.sink.fs.delete(path)
            except Exception as exc:  # cleanup() removes it later
                log.warning("File sink: could not delete %s: %s", self.sink.fs.describe(path), exc)

    def _discard(self, file: _FileEncoder) -> None:
        file.abandon()
        try:
            file.out.discard()
        except Exception as exc:  # cleanup() removes it later
            log.warning("File sink: could not delete %s: %s", self.sink.fs.describe(file.path), exc)

    def _next_path(self) -> str:
        # The run attempt keeps a zombie driver's subtasks and the claimant's apart: both
        # may stage the same checkpoint id for the same subtask and Spark task attempt.
        name = f"{self.subtask}-{self.attempt}-r{self.run_attempt}-{self._writer_id}-{self._uploads:06d}"
        path = _join(self._staging, f"{name}.{self.sink.extension}")
        self._uploads += 1
        return path

    def _start_file(self, schema: pa.Schema) -> _FileEncoder:
        path = self._next_path()
        out = self.sink.fs.open_new(path)
        try:
            return self.sink.new_encoder(schema, out)
        except BaseException:
            out.discard()
            raise

    def _stage_current(self, directory: str) -> None:
        """Finish the file being written for ``directory`` and sync it on this thread
        (``prepare_commit``)."""
        file = self._files.pop(directory)
        try:
            rows = file.finish()
            file.out.sync()
        except BaseException:
            self._failed.append(file.path)
            raise
        self._staged.append((file.path, rows, directory))

    def _flush_current(self, directory: str) -> None:
        """Finish the (full) file being written for ``directory`` and hand its sync to
        the flush thread; waits for the previous one first, so at most one file is in
        flight besides the ones being filled."""
        self._collect()
        file = self._files.pop(directory)
        try:
            rows = file.finish()
        except BaseException:
            self._failed.append(file.path)
            raise
        if self._flusher is None:
            self._flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"file-sink-{self.subtask}-flush")
        self._inflight = (self._flusher.submit(file.out.sync), file, rows, directory)

    def _collect(self) -> None:
        """Wait for the sync in flight and record its staged file; raise when it (or
        an earlier one) failed."""
        if self._inflight is not None:
            sync, file, rows, directory = self._inflight
            try:
                sync.result()
            except BaseException as exc:
                self._inflight = None
                self._failed.append(file.path)
                self._error = exc
                log.error("File sink: staging %s in the background failed: %s", self.sink.fs.describe(file.path), exc)
            else:
                self._inflight = None
                self._staged.append((file.path, rows, directory))
        if self._error is not None:
            raise self._error


class FileSinkCommitter(SinkCommitter):
    """Publishes staged files; every method may be replayed."""

    def __init__(
        self,
        fs: FileSystem,
        root: str,
        staging_dir: str,
        tag: str,
        discarded_path: str | None = None,
        parse_name: Callable[[str], tuple[str, int] | None] | None = None,
        nested: bool = False,
    ):
        self.fs = fs
        self.root = root
        self.staging_dir = staging_dir
        self.tag = tag
        #: committed file name -> (job tag, checkpoint id), None for other files
        self.parse_name = parse_name or FileSink.parse_final_name
        #: committed files may be in (visible) subdirectories of ``root``
        self.nested = nested
        #: ``discard_job``'s record (None: a committer without one, which never discards)
        self.discarded_path = discarded_path
        self._discarded: int | None = None  # read once: only discard_job changes it

    def discarded_through(self) -> int:
        """The highest checkpoint id of this job's committed output that ``discard_job``
        set aside (0: none). That output belongs to earlier runs and stays."""
        if self._discarded is None:
            self._discarded = self._read_discarded()
        return self._discarded

    def _read_discarded(self) -> int:
        if self.discarded_path is None:
            return 0
        try:
            data = self.fs.read(self.discarded_path)
        except FileNotFoundError:
            return 0
        try:
            value = json.loads(data)["discarded_through_checkpoint_id"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(value)
        except (ValueError, KeyError, TypeError) as err:
            raise CheckpointStorageError(
                f"File sink: {self.fs.describe(self.discarded_path)} is damaged ({err!r}); it records which committed "
                "output of discarded runs must stay: restore it, or delete it to let rollbacks reach that output"
            ) from None
        return value

    def _committed(self) -> list[tuple[int, str]]:
        """(checkpoint id, path) of this job's committed files, in any release's naming."""
        found = []
        for entry in self._visible_files(self.root):
            parsed = self.parse_name(entry.name)
            if parsed and parsed[0] == self.tag:
                found.append((parsed[1], entry.path))
        return found

    def _visible_files(self, directory: str) -> Iterable[FileInfo]:
        for entry in self.fs.list_dir(directory):
            if not entry.is_dir:
                yield entry
            elif self.nested and not is_hidden(entry.name):  # never _staging
                yield from self._visible_files(entry.path)

    def rollback(self, after_checkpoint_id: int) -> list[str]:
        """Delete this job's committed files of epochs newer than ``after_checkpoint_id``;
        never the output of runs ``discard_job`` set aside (all at or below
        ``discarded_through()``: checkpoint ids only grow)."""
        floor = max(after_checkpoint_id, self.discarded_through())
        removed = []
        for checkpoint_id, path in self._committed():
            if checkpoint_id > floor:
                self.fs.delete(path)
                removed.append(path)
        if removed:
            log.warning(
                "File sink: removed %d committed file(s) newer than checkpoint %d from %s (they will be re-produced)",
                len(removed),
                floor,
                self.fs.describe(self.root),
            )
        return removed

    def discard_job(self) -> None:
        """The job's checkpoints are deleted: delete its staged files and record the
        highest checkpoint id of its committed files, which stay (``rollback`` and a
        later run leave them alone). Idempotent."""
        through = max([self.discarded_through(), *(checkpoint_id for checkpoint_id, _ in self._committed())])
        if through > self.discarded_through() and self.discarded_path is not None:
            record = {"discarded_through_checkpoint_id": through, "tag": self.tag, "discarded_ms": _now_ms()}
            self.fs.write_atomic(self.discarded_path, json.dumps(record).encode("utf-8"))
            self._discarded = through
            log.info(
                "File sink: committed output of job tag %s up to checkpoint %d in %s stays (discarded runs)",
                self.tag,
                through,
                self.fs.describe(self.root),
            )
        self.fs.delete(self.staging_dir, recursive=True)

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        for info in commit_infos:
            pairs = self._pairs(info)
            if pairs and self.discarded_through():
                self._refuse_discarded(pairs)
            for staged, final in pairs:
                try:
                    self.fs.move(staged, final)
                except FileNotFoundError:
                    raise CheckpointStorageError(
                        f"File sink: cannot publish {self.fs.describe(final)}: its staged file "
                        f"{self.fs.describe(staged)} is gone and the final file does not exist"
                    ) from None

    def _refuse_discarded(self, pairs: list[tuple[str, str]]) -> None:
        """Checkpoint ids never repeat while the job's checkpoint storage exists, so a
        final name at or below the discarded output's means the job was deleted as a
        whole and started again: publishing could replace a file of that output."""
        through = self.discarded_through()
        for _, final in pairs:
            parsed = self.parse_name(final.rpartition("/")[2])
            if parsed and parsed[0] == self.tag and parsed[1] <= through:
                raise CheckpointStorageError(
                    f"File sink: cannot publish {self.fs.describe(final)}: its checkpoint id {parsed[1]} is "
                    f"not above checkpoint {through}, the newest of this job's output that earlier, discarded runs "
                    f"committed ({self.fs.describe(self.discarded_path or self.root)}); the job's checkpoint ids "
                    "started again (its checkpoint storage was deleted), and that output stays: run under a new "
                    "job id, or move that output away and delete the record"
                )

    def cleanup(self, keep: Iterable[JsonValue], subtask: int | None = None) -> None:
        """Delete staged files not named by ``keep``.

        ``subtask`` limits the sweep to that subtask's files (a region failover must not
        touch what running subtasks staged for checkpoints still in flight).
        """
        referenced = {staged for info in keep for staged, _ in self._pairs(info)}
        prefix = None if subtask is None else f"{subtask}-"
        remaining = 0
        for file in list(self.fs.walk_files(self.staging_dir)):
            if file.path in referenced or (prefix is not None and not file.name.startswith(prefix)):
                remaining += 1
                continue
            self.fs.delete(file.path)
        if not remaining and prefix is None:  # also hidden temp files of interrupted uploads
            self.fs.delete(self.staging_dir, recursive=True)

    def _pairs(self, info: JsonValue) -> list[tuple[str, str]]:
        if info is None:
            return []
        if not isinstance(info, Mapping):
            raise ValueError(f"File sink: commit info must be a mapping, got {type(info).__name__}")
        staged, final = info.get("staged"), info.get("final")
        if not isinstance(staged, list) or not isinstance(final, list) or len(staged) != len(final):
            raise ValueError(f"File sink: malformed commit info {info!r}")
        pairs = []
        for s, f in zip(staged, final):
            if not (isinstance(s, str) and s.startswith(self.staging_dir + "/") and posixpath.normpath(s) == s):
                raise ValueError(f"File sink: staged file {s!r} is not under {self.fs.describe(self.staging_dir)}")
            if not self._visible_below_root(f):
                where = "below" if self.nested else "in"
                raise ValueError(
                    f"File sink: final file {f!r} is not a visible file {where} {self.fs.describe(self.root)}"
                )
            pairs.append((s, f))
        return pairs

    def _visible_below_root(self, path: Any) -> bool:
        """``path`` is a visible file in ``root`` (or, with ``nested``, in visible
        subdirectories of it): no hidden, empty, ``.`` or ``..`` part."""
        if not isinstance(path, str):
            return False
        root = self.root.rstrip("/")
        if not path.startswith(root + "/"):
            return False
        parts = path[len(root) + 1 :].split("/")
        if len(parts) > 1 and not self.nested:
            return False
        return all(part and part not in (".", "..") and not is_hidden(part) for part in parts)


#: parquet: batches smaller than this are gathered into one row group of at least this
#: many rows. Each ``write_batch`` is a row group of its own: a source of 100,000 files of
#: ten rows each made files of 100,000 ten-row groups, whose footer metadata the writer
#: holds until the file ends and every reader parses.
MIN_ROW_GROUP_ROWS = 65_536
#: what one writer's open files may hold gathered in all before they write it out
MAX_GATHERED_BYTES = 64 << 20


class _FileEncoder:
    """One output file being encoded into ``out`` (a ``NewFile``)."""

    def __init__(self, fmt: str, schema: pa.Schema, compression: str | None, out: NewFile):
        self.format = fmt
        #: the schema of the batches this file takes (a batch of another starts a new file)
        self.schema = schema
        #: the schema written (the same here; seatunnel_sink.py renames fields)
        self.file_schema = schema
        self.rows = 0
        self.out = out
        self.path = out.path
        #: parquet batches not yet written (fewer than MIN_ROW_GROUP_ROWS rows in all)
        self._gathered: list[pa.RecordBatch] = []
        self._gathered_rows = 0
        self._gathered_bytes = 0
        if fmt == "parquet":
            import pyarrow.parquet as pq

            self._writer: Any = pq.ParquetWriter(out, schema, compression=compression or "snappy")
        elif fmt == "csv":
            import pyarrow.csv as pacsv

            self._writer = pacsv.CSVWriter(out, schema)
        elif fmt == "orc":  # SeaTunnel's file sinks (seatunnel_sink.py)
            import pyarrow.orc as orc

            self._writer = orc.ORCWriter(out, compression=compression or "uncompressed")
        elif fmt == "jsonl":
            self._writer = None
        else:  # pragma: no cover - checked by FileSink
            raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")

    @property
    def size(self) -> int:
        """Bytes written, and the in-memory size of the gathered batches (the file's size
        limit counts them)."""
        return self.out.tell() + self._gathered_bytes

    def write(self, batch: pa.RecordBatch) -> None:
        if self.format == "orc":
            self._writer.write(pa.Table.from_batches([batch]))
        elif self.format == "parquet":
            self._write_parquet(batch)
        elif self._writer is not None:
            self._writer.write_batch(batch)
        else:  # pyarrow has no JSON writer: one json.dumps per row
            lines = [json.dumps(row, default=_json_default, ensure_ascii=False) for row in batch.to_pylist()]
            self.out.write(("\n".join(lines) + "\n").encode("utf-8"))
        self.rows += batch.num_rows

    @property
    def gathered_bytes(self) -> int:
        return self._gathered_bytes

    def _write_parquet(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows >= MIN_ROW_GROUP_ROWS:
            self.write_gathered()
            self._writer.write_batch(batch)  # a row group as it is: no copy
            return
        self._gathered.append(batch)
        self._gathered_rows += batch.num_rows
        # a slice's nbytes counts only its part of the shared buffers
        self._gathered_bytes += batch.nbytes
        if self._gathered_rows >= MIN_ROW_GROUP_ROWS:
            self.write_gathered()

    def write_gathered(self) -> None:
        """Write the gathered batches as one row group (fewer than 2 x MIN_ROW_GROUP_ROWS rows)."""
        if self._gathered:
            table = pa.Table.from_batches(self._gathered, schema=self.file_schema)
            self._writer.write_table(table, row_group_size=table.num_rows)
            self._gathered, self._gathered_rows, self._gathered_bytes = [], 0, 0

    def abandon(self) -> None:
        """Never write the footer: the file is being discarded. (Parquet's and ORC's writers
        otherwise write it when they are garbage-collected, into the discarded file, and
        Python prints that failure as a traceback on stderr.)"""
        self._gathered, self._gathered_rows, self._gathered_bytes = [], 0, 0
        if self._writer is not None and hasattr(self._writer, "is_open"):
            self._writer.is_open = False

    def finish(self) -> int:
        """Write the footer and end writing (the file is not durable before its sync);
        returns the rows written."""
        if self.format == "parquet":
            self.write_gathered()
        if self._writer is not None:
            self._writer.close()
        self.out.close()
        return self.rows


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts]) if root != "/" else "/" + "/".join(parts)
