"""``File`` source: parquet, csv or jsonl files from any storage backend.

Options: ``path`` (a directory or a single file, as a URL), ``format`` (``parquet``,
``csv``, ``jsonl``; default: from each file's extension), ``batch_size`` and the storage
options (docs/jobs.md, "File"). Splits are the files below ``path``, sorted by relative
path, which is the split id; names starting with ``_`` or ``.`` are skipped, as Spark
and pyarrow do. A reader's position is the number of rows of its file already emitted.
Parquet is read a row group at a time (a resumed reader skips whole row groups by their
footer row counts); csv and jsonl through pyarrow's streaming readers, a block at a time
(a resumed reader drops the rows already emitted). A reader whose file no longer has the
size recorded in its split fails: input files must not change while a job runs.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from ...errors import ConfigError
from ...storage.filesystem import FileInfo
from ...storage.urls import RangeFile, is_storage_option
from ..api import Dataset, JsonValue, ReaderContext, Source, SourceReader, Split
from ..datasets import path_dataset
from ..options import REQUIRED, Option, OptionTable, option_key
from .formats import FORMATS, check_optional_format, format_from_name
from .formats.parquet import ParquetReader
from .storage import STORAGE_HINT, STREAM_BLOCK_SIZE, is_hidden, open_storage


class FileSource(Source):
    plugin_name = "File"
    OPTIONS = OptionTable(
        Option("path", "str", "a directory or a single file, as a URL", REQUIRED),
        Option(
            "format", "value", "parquet, csv or jsonl (default: by each file's suffix)", convert=check_optional_format
        ),
        Option("batch_size", "int", "rows per batch (default: the engine's)", minimum=1),
        extra=is_storage_option,
        extra_hint=STORAGE_HINT,
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.format: str | None = opts["format"]
        self.batch_size: int | None = opts["batch_size"]
        self.fs, self.root = open_storage(options)
        #: the input's URL as the job names it (its dataset)
        self.url: str = opts["path"]

    def datasets(self) -> list[Dataset]:
        return [path_dataset(self.url)]

    def splits(self, parallelism: int) -> list[Split]:
        info = self.fs.info(self.root)
        if info is None:
            raise ConfigError(option_key(self, "path"), f"{self.fs.describe(self.root)} does not exist")
        if info.is_dir:
            files = sorted(self._walk(self.root, ""), key=lambda item: item[0])
        else:
            files = [(posixpath.basename(self.root), info)]
        splits = []
        for rel, file in files:
            fmt = self.format or format_from_name(rel)
            if fmt is None:
                raise ConfigError(
                    option_key(self, "format"),
                    f"cannot tell the format of {self.fs.describe(file.path)} from its extension; "
                    f"set format to one of {', '.join(FORMATS)}",
                )
            splits.append(Split(rel, {"path": file.path, "format": fmt, "size": file.size}))
        return splits

    def _walk(self, directory: str, prefix: str) -> Iterator[tuple[str, FileInfo]]:
        for entry in self.fs.list_dir(directory):
            if is_hidden(entry.name):
                continue
            if entry.is_dir:
                yield from self._walk(entry.path, f"{prefix}{entry.name}/")
            else:
                yield f"{prefix}{entry.name}", entry

    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        path, fmt, size = split.spec["path"], split.spec["format"], int(split.spec["size"])
        where = self.fs.describe(path)
        offset = 0 if position is None else position
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"File source {where}: position {position!r} is not a row offset")
        file = RangeFile(self.fs, path)
        if file.size != size:
            raise ValueError(
                f"File source {where}: the file changed while the job ran (it had {size} bytes "
                f"when the job planned its splits, now {file.size}); inputs must not change"
            )
        return self._format_reader(split, fmt, file, offset, self.batch_size or context.batch_size, where)

    def _format_reader(
        self, split: Split, fmt: str, file: RangeFile, offset: int, batch_size: int, where: str
    ) -> SourceReader:
        """The reader of one split's file in ``fmt``, from row ``offset`` (checked against
        the split). Connectors built on this one (SeaTunnel's ``LocalFile`` family,
        :mod:`.seatunnel_source`) add formats here."""
        if fmt == "parquet":
            return ParquetReader(file, offset, batch_size, where)
        if fmt == "csv":
            return StreamReader(file, _open_csv, offset, batch_size, where)
        if fmt == "jsonl":
            return StreamReader(file, _open_jsonl, offset, batch_size, where)
        raise ValueError(f"File source {where}: unknown format {fmt!r} in split {split.split_id}")


def _open_csv(file: RangeFile) -> Any:
    import pyarrow.csv as pacsv

    return pacsv.open_csv(file, read_options=pacsv.ReadOptions(block_size=STREAM_BLOCK_SIZE))


def _open_jsonl(file: RangeFile) -> Any:
    import pyarrow.json as pajson

    return pajson.open_json(file, read_options=pajson.ReadOptions(block_size=STREAM_BLOCK_SIZE))


class StreamReader(SourceReader):
    """csv / jsonl through a pyarrow streaming reader, re-cut to ``batch_size`` rows."""

    def __init__(
        self, file: RangeFile, open_reader: Callable[[RangeFile], Any], offset: int, batch_size: int, where: str
    ):
        self.file = file
        self._open = open_reader
        self._reader: Any = None
        self._where = where
        self._batch_size = batch_size
        self._to_drop = offset
        self._position = offset
        self._pending: pa.RecordBatch | None = None
        self._done = file.size == 0  # pyarrow rejects an empty file; it simply has no rows

    def read_batch(self) -> pa.RecordBatch | None:
        while True:
            if self._pending is not None and self._pending.num_rows:
                batch = self._pending.slice(0, self._batch_size)
                self._pending = self._pending.slice(batch.num_rows)
                self._position += batch.num_rows
                return batch
            if self._done:
                break
            if self._reader is None:
                self._reader = self._open(self.file)
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                self._done = True
                break
            if self._to_drop:
                dropped = min(self._to_drop, batch.num_rows)
                self._to_drop -= dropped
                batch = batch.slice(dropped)
            self._pending = batch
        if self._to_drop:
            raise ValueError(
                f"File source {self._where}: position {self._position} is past the end "
                f"({self._position - self._to_drop} rows)"
            )
        return None

    def position(self) -> JsonValue:
        return self._position

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self.file.close()
