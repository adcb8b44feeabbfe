"""SeaTunnel's file source (``LocalFile``, ``S3File``, ``OssFile``, ``HdfsFile``: the
classes are in :mod:`.local`, :mod:`.s3`, :mod:`.oss`, :mod:`.hdfs`, each with its
storage): the ``File`` source's splits, positions and readers (a split is a file, a
position the rows of it already emitted) with SeaTunnel's options, formats and partition
columns. Options and differences from SeaTunnel: docs/seatunnel.md."""

from __future__ import annotations

import io
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa

from ...errors import ConfigError
from ...storage.urls import RangeFile
from ..api import JsonValue, Source, SourceReader, Split
from ..options import Parsed, option_key
from ..seatunnel_types import Column, parse_columns
from .archives import _ArchiveBatches
from .codecs import _input, _Transcoded
from .config import (
    CONTENT_COLUMN,
    DATE_FORMATS,
    DATETIME_FORMATS,
    DEFAULT_TEXT_DELIMITER,
    EXTENSIONS,
    SINK_ONLY_OPTIONS,
    SOURCE_OPTIONS,
    STREAM_CODECS,
    TIME_FORMATS,
    _archive,
    _checked_encoding,
    _choice,
    _format,
    _require_lzo,
    _warn,
)
from .formats import binary, excel, xml
from .formats.convert import convert, plain_timestamps
from .formats.json import _json_content, open_json
from .formats.orc import _OrcStripes
from .formats.parquet import ParquetReader
from .formats.text import _blank_to_null, _element, _field_splitter, _LineBatches, from_text, split_fields
from .source import FileSource, StreamReader
from .storage import STREAM_BLOCK_SIZE, FileStorage


def _partitions_of(path: str) -> list[tuple[str, str]]:
    """SeaTunnel's ``parsePartitionsByPath``: every ``k=v`` part of the path."""
    pairs: dict[str, str] = {}
    for part in path.split("/"):
        if "=" in part:
            pieces = part.split("=")
            pairs[pieces[0]] = pieces[1]
    return list(pairs.items())


class _ShapedReader(SourceReader):
    """A reader whose batches ``shape`` turns into the source's rows (one row out per row
    in, so the inner reader's positions stay exact)."""

    def __init__(self, inner: SourceReader, shape: Callable[[pa.RecordBatch], pa.RecordBatch], where: str):
        self._inner = inner
        self._shape = shape
        self._where = where

    def read_batch(self) -> pa.RecordBatch | None:
        try:
            batch = self._inner.read_batch()
            return None if batch is None else self._shape(batch)
        except (pa.ArrowException, ValueError) as exc:
            message = str(exc).split("\n")[0]
            if self._where in message:
                raise
            raise ValueError(f"{self._where}: {message}") from exc

    def position(self) -> JsonValue:
        return self._inner.position()

    def close(self) -> None:
        self._inner.close()


class SeaTunnelFileSource(FileSource):
    """SeaTunnel's file source (``LocalFile`` and the others below): a ``File`` source
    with SeaTunnel's options, formats and partition columns."""

    #: how the connector's options name its files (the subclasses': :mod:`.local`, :mod:`.s3`...)
    storage: ClassVar[FileStorage]
    #: ``tables_configs``: one source per table (connectors/union.py, via the registry)
    reads_tables_configs = True
    OPTIONS = SOURCE_OPTIONS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A connector's table: SeaTunnel's file source options and its storage's."""
        super().__init_subclass__(**kwargs)
        if "storage" in cls.__dict__:
            cls.OPTIONS = SOURCE_OPTIONS + cls.storage.connection_options

    def __init__(self, options: Mapping[str, Any]):
        Source.__init__(self, options)
        plugin = self.plugin_name
        opts = self.parse_options()
        for name in sorted(SINK_ONLY_OPTIONS & set(options)):
            _warn(
                plugin,
                "source",
                "option %s is a sink option; SeaTunnel's source ignores it, and so does this one",
                name,
            )
        self._read_format(opts)
        self._read_schema(opts)
        self._read_layout(opts)
        self.batch_size = None
        self.fs, self.root, self.url = self.storage.open(options)
        self._partition_keys: list[str] | None = None
        #: the splits of the one listing of ``path`` (preflight's, then the plan's)
        self._planned: list[Split] | None = None

    def _read_format(self, opts: Parsed) -> None:
        """``file_format_type``, ``encoding``, the date formats and the codecs."""
        plugin = self.plugin_name
        self.format = _format(opts)
        #: text, csv, json: the files' character encoding (None: UTF-8)
        self.encoding = _checked_encoding(plugin, "source", opts, self.format)
        #: checked; text, csv and json values in any of them are recognised, xml values only in the one chosen
        self._temporal_formats = [
            _choice(opts, name, allowed)
            for name, allowed in (
                ("date_format", DATE_FORMATS),
                ("datetime_format", DATETIME_FORMATS),
                ("time_format", TIME_FORMATS),
            )
        ]
        codec = opts["compress_codec"].lower()
        self.codec: str | None = None
        if self.format in ("text", "csv", "json"):
            if codec == "lzo":  # lzop files, as SeaTunnel's readers (Hadoop's LzopCodec) read them
                _require_lzo("compress_codec")
            elif codec not in ("none",) + STREAM_CODECS:
                raise ConfigError("compress_codec", f"{codec!r} is not one of none, lzo, {', '.join(STREAM_CODECS)}")
            self.codec = None if codec == "none" else codec
        elif self.format in ("xml", "binary") and codec != "none":  # SeaTunnel's readers read these as they are
            raise ConfigError(
                "compress_codec", f"{codec!r}: {self.format} files are read as they are; remove the option"
            )
        elif self.format == "excel" and codec != "none":  # SeaTunnel's excel reader reads the file as it is
            raise ConfigError(
                "compress_codec",
                f"{codec!r}: excel files are read as they are (xlsx is zipped already); remove the option",
            )
        # parquet and orc files name their codec themselves, as SeaTunnel's readers find it
        #: zip, tar or tar_gz: each file is an archive whose entries are read one by one
        self.archive: str | None = _archive(opts, self.format, self.codec)

    def _read_schema(self, opts: Parsed) -> None:
        """``schema``, ``read_columns`` and xml's row options: the columns emitted."""
        plugin = self.plugin_name
        if self.format == "binary":
            # SeaTunnel's binary reader has its fixed schema and no partition columns
            for name in ("schema", "read_columns"):
                if opts.given(name):
                    _warn(
                        plugin,
                        "source",
                        "%s is ignored for binary files: their rows are data, relativePath, partIndex, as in SeaTunnel",
                        name,
                    )
        schema = opts["schema"]
        # a schema block that only names the table (tables_configs over parquet or orc files,
        # whose columns the files carry) declares no columns, as in SeaTunnel
        names_only = isinstance(schema, Mapping) and set(schema) <= {"table"}
        self.columns: list[Column] | None = (
            parse_columns(schema, "schema") if opts.given("schema") and not names_only else None
        )
        #: json without a schema: SeaTunnel's simple text table, one ``content`` column read from each object's
        #: ``content`` member (its JsonDeserializationSchema over that row type); a schema naming no column
        #: (``schema {}``) gives rows of no columns, as SeaTunnel's empty row type does
        self.json_content = self.format == "json" and not opts.given("schema")
        if self.format == "json" and self.columns is None and not self.json_content:
            self.columns = []
        if self.columns is None and self.format in ("excel", "xml"):
            raise ConfigError("schema", f"is required for {self.format} files, as in SeaTunnel")
        if self.format == "xml" and not self.columns:
            raise ConfigError("schema", "names no column; xml files need at least one, as in SeaTunnel")
        #: xml: the rows' element name and whether their fields are its attributes (else its child elements)
        self.xml_row_tag: str | None = None
        self.xml_use_attributes = False
        if self.format == "xml":
            for name in ("xml_row_tag", "xml_use_attr_format"):
                if not opts.given(name):
                    raise ConfigError(name, "is required for xml files, as in SeaTunnel")
            self.xml_row_tag = opts["xml_row_tag"]
            if not self.xml_row_tag.strip():
                raise ConfigError("xml_row_tag", "must name the rows' element")
            self.xml_use_attributes = opts["xml_use_attr_format"]
        names = [c.name for c in self.columns] if self.columns is not None else []
        self.read_columns: list[str] | None = opts["read_columns"]
        if self.read_columns is not None:
            if self.columns is None and self.format in ("text", "csv"):
                raise ConfigError("read_columns", "needs a schema for text and csv files, as in SeaTunnel")
            for name in self.read_columns if self.columns is not None else ():
                if name not in names:
                    raise ConfigError("read_columns", f"no column {name!r} in schema; it has {', '.join(names)}")
        if self.format == "binary":
            self.columns, self.read_columns = None, None
        #: (index in the schema, column) of the columns emitted, in order
        self.selected: list[tuple[int, Column]] = []
        if self.columns is not None:
            order = self.read_columns or names
            self.selected = [(names.index(name), self.columns[names.index(name)]) for name in order]

    def _read_layout(self, opts: Parsed) -> None:
        """The delimiters, header rows, sheet, file filter and partitions."""
        plugin = self.plugin_name
        if opts.given("field_delimiter") and opts.given("delimiter") and opts["field_delimiter"] != opts["delimiter"]:
            raise ConfigError("delimiter", "disagrees with field_delimiter (delimiter is its older name); set one")
        key = "delimiter" if not opts.given("field_delimiter") and opts.given("delimiter") else "field_delimiter"
        delimiter = opts[key] or (DEFAULT_TEXT_DELIMITER if self.format in ("text", "excel", "xml") else ",")
        self.splitter = _field_splitter(plugin, self.format, delimiter, key)
        self.row_delimiter: str = opts["row_delimiter"]
        if self.row_delimiter != "\n" and self.format != "parquet" and self.format != "orc":
            how = (
                "ignores it (json files are read a line per row)"
                if self.format == "json"
                else "splits rows at it; SeaTunnel's reader splits them at line breaks whatever row_delimiter says"
            )
            _warn(plugin, "source", "row_delimiter %r: this reader %s", self.row_delimiter, how)
        self.skip_header: int = opts["skip_header_row_number"]
        self.sheet_name: str | None = opts["sheet_name"] if self.format == "excel" else None
        pattern = opts["file_filter_pattern"]
        try:
            self.file_filter = re.compile(pattern) if pattern is not None else None
        except re.error as exc:
            raise ConfigError("file_filter_pattern", f"{pattern!r} is not a valid regular expression: {exc}") from None
        self.parse_partitions: bool = opts["parse_partition_from_path"] and self.format != "binary"
        self.read_partitions: list[str] = opts["read_partitions"] or []

    # -- planning (driver) ---------------------------------------------------------------
    def splits(self, parallelism: int) -> list[Split]:
        """The ``File`` source's splits (files below ``path``, sorted), less the files
        SeaTunnel leaves out: empty ones, names ``file_filter_pattern`` does not match,
        paths without any of ``read_partitions``; with their ``k=v`` path parts.

        ``path`` is listed once: preflight needs the partition columns, and the plan made
        a few seconds later is the same files (a split is one file, whatever the
        parallelism). Listing 100,000 local files takes 1.7 s (bench/scale_bench.py), and
        a bucket's objects take longer."""
        if self._planned is None:
            self._planned = self._list_splits()
        return list(self._planned)

    def _list_splits(self) -> list[Split]:
        planned, keys = [], None
        for split in super().splits(1):
            path = split.spec["path"]
            if int(split.spec["size"]) == 0:
                continue
            if self.file_filter is not None and not self.file_filter.fullmatch(posixpath.basename(path)):
                continue
            if self.read_partitions and not any(part in path for part in self.read_partitions):
                continue
            spec = dict(split.spec)
            if self.parse_partitions:
                pairs = _partitions_of(path)
                if keys is None:
                    keys = [k for k, _ in pairs]
                    clash = sorted(set(keys) & {c.name for _, c in self.selected})
                    if clash:
                        raise ConfigError(
                            option_key(self, "schema"),
                            f"column {clash[0]!r} is also a partition of "
                            f"{self.fs.describe(path)}; leave partition columns out of the schema",
                        )
                elif [k for k, _ in pairs] != keys:
                    raise ConfigError(
                        option_key(self, "path"),
                        f"{self.fs.describe(path)} has partitions "
                        f"{[k for k, _ in pairs]}, the first file {keys}: the files must have the same "
                        "partition directories (or set parse_partition_from_path = false)",
                    )
                spec["partitions"] = [list(pair) for pair in pairs]
            planned.append(Split(split.split_id, spec))
        self._partition_keys = keys or []
        return planned

    def preflight(self) -> None:
        if self.parse_partitions and self._partition_keys is None:
            self.splits(1)  # the partition columns are in the files' paths

    def produced_schema(self) -> pa.Schema | None:
        if self.format == "binary":
            return binary.SCHEMA
        if self.columns is not None:
            fields = [pa.field(c.name, c.type) for _, c in self.selected]
        elif self.format in ("text", "csv") or self.json_content:
            fields = [pa.field(CONTENT_COLUMN, pa.string())]
        else:
            return None  # parquet and orc: the files tell
        if self.parse_partitions:
            if self._partition_keys is None:  # not listed (run --check contacts nothing): reading tells
                return None
            fields += [pa.field(k, pa.string()) for k in self._partition_keys]
        return pa.schema(fields)

    # -- reading (executors) -------------------------------------------------------------
    def _format_reader(
        self, split: Split, fmt: str, file: RangeFile, offset: int, batch_size: int, where: str
    ) -> SourceReader:
        where = f"{self.plugin_name} source {where}"
        columns = [c.name for _, c in self.selected] if self.selected else self.read_columns
        if fmt == "binary":
            return binary.BinaryReader(
                file, binary.relative_path(self.root, str(split.spec["path"])), offset, batch_size, where
            )
        if fmt == "parquet":
            inner: SourceReader = ParquetReader(file, offset, batch_size, where, columns=columns)
        elif fmt == "orc":
            inner = StreamReader(file, lambda f: _OrcStripes(f, columns), offset, batch_size, where)
        elif fmt in ("text", "csv", "json", "excel", "xml"):
            suffix: str | tuple[str, ...] = "." + EXTENSIONS[fmt]
            if fmt == "xml":
                row_tag, use_attributes = str(self.xml_row_tag), self.xml_use_attributes
                xml_names = [c.name for _, c in self.selected]

                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    return xml.XmlBatches(stream, self.encoding, row_tag, use_attributes, xml_names, at, batch_size)
            elif fmt == "json" and self.json_content:  # read as lines: any member types, parsed in _shape

                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    return _LineBatches(self._decoded(stream), "\n", 0, at)
            elif fmt == "json":

                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    return open_json(self._decoded(stream), self.selected)
            elif fmt == "excel":
                suffix = excel.SUFFIXES  # SeaTunnel's FileFormat.EXCEL: xlsx and xls
                fields = [(index, c.name, c.type) for index, c in self.selected]

                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    if self.archive is not None:
                        stream = excel.read_entry(stream, size, at)
                    else:  # openpyxl seeks in the file: a buffer over the ranged reads
                        stream = io.BufferedReader(stream, buffer_size=STREAM_BLOCK_SIZE)
                    return excel.ExcelBatches(
                        stream, name, at, self.sheet_name, self.skip_header, fields, self.splitter[1], batch_size
                    )
            else:

                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    return _LineBatches(self._decoded(stream), self.row_delimiter, self.skip_header, at)

            if self.archive is not None:  # a position counts rows across the entries, in archive order
                archive = self.archive
                inner = StreamReader(
                    file, lambda f: _ArchiveBatches(f, archive, suffix, where, open_file), offset, batch_size, where
                )
            else:
                path = str(split.spec["path"])
                inner = StreamReader(
                    file,
                    lambda f: open_file(_input(f, self.codec, where), where, path, f.size),
                    offset,
                    batch_size,
                    where,
                )
        else:
            return super()._format_reader(split, fmt, file, offset, batch_size, where)
        partitions = [tuple(pair) for pair in split.spec.get("partitions") or ()] if self.parse_partitions else []
        return _ShapedReader(inner, lambda batch: self._shape(fmt, batch, partitions), where)

    def _xml_formats(self) -> xml.XmlFormats:
        date, datetime_format, time_format = self._temporal_formats
        pattern, digits = DATETIME_FORMATS[datetime_format]
        return xml.XmlFormats(
            (DATE_FORMATS[date], date),
            (pattern, digits, datetime_format),
            (TIME_FORMATS[time_format], time_format),
            self.splitter[1] if self.splitter[0] == "regex" else re.escape(self.splitter[1]),
        )

    def _decoded(self, stream: Any) -> Any:
        return stream if self.encoding is None else _Transcoded(stream, self.encoding)

    def _shape(self, fmt: str, batch: pa.RecordBatch, partitions: Sequence[tuple[str, str]]) -> pa.RecordBatch:
        arrays: list[pa.Array]
        if fmt in ("text", "csv"):
            lines = batch.column(0)
            if self.columns is None:
                arrays, names = [_blank_to_null(lines)], [CONTENT_COLUMN]
            else:
                fields = split_fields(lines, *self.splitter)
                arrays = [from_text(_element(fields, index), c.type, c.name) for index, c in self.selected]
                names = [c.name for _, c in self.selected]
        elif fmt == "json" and self.json_content:
            arrays, names = [_json_content(batch.column(0))], [CONTENT_COLUMN]
        elif fmt == "xml":
            formats = self._xml_formats()
            arrays = [xml.convert(batch.column(c.name), c.type, c.name, formats) for _, c in self.selected]
            names = [c.name for _, c in self.selected]
        elif fmt == "excel":  # the reader made the schema's columns
            arrays, names = list(batch.columns), list(batch.schema.names)
        elif self.columns is not None:  # json, or parquet / orc cast to the schema
            present = set(batch.schema.names)
            for _, c in self.selected:
                if c.name not in present and fmt != "json":
                    raise ValueError(f"no column {c.name!r} in the file (it has {', '.join(batch.schema.names)})")
            arrays = [
                convert(batch.column(c.name), c.type, c.name, base64_bytes=fmt == "json")
                if c.name in present
                else pa.nulls(batch.num_rows, c.type)
                for _, c in self.selected
            ]
            names = [c.name for _, c in self.selected]
        else:  # parquet / orc as they are (only read_columns, when given)
            names = list(self.read_columns or batch.schema.names)
            arrays = [batch.column(name) for name in names]
            arrays = [plain_timestamps(a) for a in arrays]  # orc reads as ns, parquet may be zoned
        for key, value in partitions:
            arrays.append(pa.nulls(batch.num_rows, pa.string()).fill_null(value))
            names.append(key)
        if not arrays:  # rows of no columns (json with schema {}): from_arrays would make no rows
            return pa.RecordBatch.from_struct_array(pa.nulls(batch.num_rows, pa.struct([])).fill_null({}))
        return pa.RecordBatch.from_arrays(arrays, names=names)
