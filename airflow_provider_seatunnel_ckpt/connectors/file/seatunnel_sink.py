"""SeaTunnel's file sink (``LocalFile``, ``S3File``, ``OssFile``, ``HdfsFile``: the classes
are in :mod:`.local`, :mod:`.s3`, :mod:`.oss`, :mod:`.hdfs`, each with its storage): the
``File`` sink's two-phase commit (files staged under ``path/_staging``, renamed to their
final names once the checkpoint that covers them is durable) with SeaTunnel's options,
formats, partition directories, file names and save modes. Options, the committed file
names and differences from SeaTunnel: docs/seatunnel.md."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import math
import re
import secrets
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConfigError
from ...storage.filesystem import NewFile
from ..api import Sink
from ..java_text import jackson_decimal_text, java_float_text, java_iso_text
from ..options import Parsed, option_key
from .codecs import _encode, _LzopNewFile
from .config import (
    CODEC_SUFFIX,
    DATE_FORMATS,
    DATETIME_FORMATS,
    EXTENSIONS,
    FORMATS,
    SINK_CODECS,
    SINK_OPTIONS,
    TIME_FORMATS,
    _check_archive,
    _checked_encoding,
    _choice,
    _format,
    _require_lzo,
    _warn,
)
from .formats import binary, excel
from .formats.text import TextFormats, _TextEncoder, to_text
from .sink import DEFAULT_MAX_FILE_BYTES, FileSink, FileSinkCommitter, _FileEncoder, _json_default
from .storage import FileStorage, is_hidden

log = logging.getLogger(__name__)

#: a file name's transaction id: T_{job tag}_{subtask}_{attempt}_{checkpoint id}
_TRANSACTION_RE = re.compile(r"T_([0-9a-f]{8})_(\d+)_(\d+)_(\d{10,})")
_VARIABLE_RE = re.compile(r"\$\{([^}]*)\}")
#: Java DateTimeFormatter letters filename_time_format may use -> value of a datetime
_TIME_FIELDS: dict[str, Callable[[dt.datetime], str]] = {
    "yyyy": lambda t: f"{t.year:04d}",
    "yy": lambda t: f"{t.year % 100:02d}",
    "MM": lambda t: f"{t.month:02d}",
    "M": lambda t: str(t.month),
    "dd": lambda t: f"{t.day:02d}",
    "d": lambda t: str(t.day),
    "HH": lambda t: f"{t.hour:02d}",
    "H": lambda t: str(t.hour),
    "mm": lambda t: f"{t.minute:02d}",
    "m": lambda t: str(t.minute),
    "ss": lambda t: f"{t.second:02d}",
    "s": lambda t: str(t.second),
    "SSS": lambda t: f"{t.microsecond // 1000:03d}",
}


class _SaveModeCommitter(FileSinkCommitter):
    """The File sink's committer, plus SeaTunnel's save modes that delete or refuse
    existing output (its file catalog's ``dropTable``/``truncateTable``: ``path`` deleted
    and made again; ``isExistsData``: any file below it). They run in ``start_fresh``:
    when a run starts the job from its beginning, never when it restores a checkpoint,
    as SeaTunnel runs them when a job is submitted and not when it resumes. Output
    reaches ``path`` only through commits after a durable checkpoint, and a run with a
    durable checkpoint restores it, so whatever these modes delete was never committed by
    the job as it runs now."""

    sink: SeaTunnelFileSink

    @classmethod
    def over(cls, committer: FileSinkCommitter, sink: SeaTunnelFileSink) -> _SaveModeCommitter:
        wrapped = cls.__new__(cls)
        wrapped.__dict__.update(committer.__dict__)
        wrapped.sink = sink
        return wrapped

    def start_fresh(self) -> None:
        super().start_fresh()
        sink, fs, root = self.sink, self.fs, self.root
        if sink.data_save_mode == "ERROR_WHEN_DATA_EXISTS" and sink.schema_save_mode != "RECREATE_SCHEMA":
            found = next((f for f in fs.walk_files(root) if not _hidden_below(f.path[len(root) :].lstrip("/"))), None)
            if found is not None:
                raise ConfigError(
                    option_key(sink, "data_save_mode"),
                    f"{fs.describe(root)} holds files ({fs.describe(found.path)}): ERROR_WHEN_DATA_EXISTS",
                )
        if sink.schema_save_mode == "RECREATE_SCHEMA" or sink.data_save_mode == "DROP_DATA":
            if fs.info(root) is not None:
                mode = (
                    "schema_save_mode = RECREATE_SCHEMA"
                    if sink.schema_save_mode == "RECREATE_SCHEMA"
                    else "data_save_mode = DROP_DATA"
                )
                log.warning(
                    "%s sink: deleting %s before the job's first checkpoint (%s)",
                    sink.plugin_name,
                    fs.describe(root),
                    mode,
                )
                fs.delete(root, recursive=True)
            self._discarded = None  # its record, if any, went with the directory


def _hidden_below(relative: str) -> bool:
    """A path below ``path`` that readers skip (a part starting with ``_`` or ``.``)."""
    return any(is_hidden(part) for part in relative.split("/") if part)


def _time_tokens(pattern: str, key: str) -> list[tuple[bool, str]]:
    """A Java date-time pattern as (is a field, text) tokens."""
    tokens: list[tuple[bool, str]] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise ConfigError(key, f"{pattern!r} has an unclosed quote")
            tokens.append((False, pattern[i + 1 : end] if end > i + 1 else "'"))
            i = end + 1
        elif char.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == char:
                j += 1
            if pattern[i:j] not in _TIME_FIELDS:
                raise ConfigError(
                    key,
                    f"{pattern[i:j]!r} in {pattern!r} is not supported; use {', '.join(_TIME_FIELDS)} and literal text",
                )
            tokens.append((True, pattern[i:j]))
            i = j
        else:
            tokens.append((False, char))
            i += 1
    if any(not field and "/" in text for field, text in tokens):
        raise ConfigError(key, f"{pattern!r} contains '/', which would put files into subdirectories")
    return tokens


def _format_time(tokens: list[tuple[bool, str]], when: dt.datetime) -> str:
    return "".join(_TIME_FIELDS[text](when) if field else text for field, text in tokens)


def _substitute(expression: str, values: Mapping[str, str]) -> str:
    """SeaTunnel's ``VariablesSubstitute``: ``${name}`` replaced where known, else kept."""
    return _VARIABLE_RE.sub(lambda m: values.get(m.group(1), m.group(0)), expression)


class _JsonEncoder(_FileEncoder):
    """One json output file: an object per row, rows separated by ``row_delimiter`` (none
    after the last), as SeaTunnel writes it through Jackson: no spaces, maps as objects,
    decimals as numbers without trailing zeros, bytes as base64, dates and times in
    DateTimeFormatter's ISO forms (java_text.py)."""

    def __init__(self, schema: pa.Schema, out: NewFile, row_delimiter: str, encoding: str | None = None):
        super().__init__("jsonl", schema, None, out)
        self._row = row_delimiter
        self._encoding = encoding
        self._started = False
        self._marker = secrets.token_hex(8)  # wraps decimals until they are unquoted
        self._number = re.compile(r'"\\u0000' + self._marker + r'([^"\\]*)\\u0000"')

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        rows = batch.to_pylist(maps_as_pydicts="lossy")
        walked = [f for f, column in zip(batch.schema, batch.columns) if _needs_walk(f.type, column)]
        for row in rows if walked else ():
            for field in walked:
                row[field.name] = _for_json(row[field.name], field.type)
        text = self._row.join(
            json.dumps(row, default=self._default, ensure_ascii=False, separators=(",", ":")) for row in rows
        )
        if self._marker in text:
            text = self._number.sub(r"\1", text)
        self.out.write(_encode((self._row if self._started else "") + text, self._encoding, self.path))
        self._started = True
        self.rows += batch.num_rows

    def _default(self, value: Any) -> Any:
        if isinstance(value, decimal.Decimal):
            return f"\u0000{self._marker}{jackson_decimal_text(value)}\u0000"
        if isinstance(value, _JavaFloat):  # as Jackson writes it: Double/Float.toString's digits
            text = java_float_text(value.value, single=value.single)
            return f"\u0000{self._marker}{text}\u0000" if math.isfinite(value.value) else text
        if isinstance(value, (dt.date, dt.time)):
            return java_iso_text(value)
        return _json_default(value)


class _LowerCaseEncoder(_FileEncoder):
    """A parquet or orc file whose columns are named in lower case, as SeaTunnel's writers
    name them (``toLowerCase()``): ParquetWriteStrategy the columns only (a row's fields
    keep their case), OrcWriteStrategy the fields of rows too. The batches are renamed by
    a zero-copy view (same layout, other names)."""

    def __init__(self, fmt: str, schema: pa.Schema, compression: str | None, out: NewFile):
        nested = _lower_names if fmt == "orc" else (lambda kind: kind)
        lower = pa.schema([f.with_name(f.name.lower()).with_type(nested(f.type)) for f in schema])
        super().__init__(fmt, lower, compression, out)
        self._renamed = not lower.equals(schema)
        self.schema = schema  # the batches taken keep their names

    def write(self, batch: pa.RecordBatch) -> None:
        if self._renamed:
            columns = [column.view(field.type) for column, field in zip(batch.columns, self.file_schema)]
            batch = pa.RecordBatch.from_arrays(columns, schema=self.file_schema)
        super().write(batch)


def _lower_names(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(kind):
        return pa.struct([f.with_name(f.name.lower()).with_type(_lower_names(f.type)) for f in kind])
    if pa.types.is_map(kind):
        return pa.map_(_lower_names(kind.key_type), _lower_names(kind.item_type), kind.keys_sorted)
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_lower_names(kind.value_type)))
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_lower_names(kind.value_type)))
    return kind


class _JavaFloat:
    """A float (``single``: 32 bits), or a double that is not finite, for the json encoder
    to write as Jackson does: json.dumps would write a float widened to a double
    (1.2300000190734863, not 1.23) and a bare NaN (not JSON; Jackson writes "NaN"). A
    finite double keeps Python's shortest digits: the same value, though not always
    Java's text (1e-05 for 1.0E-5), and Java's digits cost 40 times as much to print."""

    __slots__ = ("value", "single")

    def __init__(self, value: float, single: bool):
        self.value = value
        self.single = single


def _needs_walk(kind: pa.DataType, column: pa.Array) -> bool:
    """Whether a column's values must be walked before json.dumps: 32-bit floats, doubles
    that are not all finite (``_JavaFloat``) or maps with keys that are not strings
    (json.dumps takes str keys only)."""
    if pa.types.is_float32(kind):
        return True
    if pa.types.is_floating(kind):
        return not pc.all(pc.is_finite(column)).as_py() if column.null_count < len(column) else False
    if pa.types.is_struct(kind):
        return any(_needs_walk(f.type, column.field(i)) for i, f in enumerate(kind))
    if pa.types.is_map(kind):
        key = kind.key_type
        return not (pa.types.is_string(key) or pa.types.is_large_string(key)) or _needs_walk(
            kind.item_type, column.items
        )
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _needs_walk(kind.value_type, column.values)
    return False


def _for_json(value: Any, kind: pa.DataType) -> Any:
    """``value`` (of ``kind``) as the json encoder takes it: floats, and doubles that are not
    finite, wrapped (``_JavaFloat``), map keys as their member names."""
    if value is None:
        return None
    if pa.types.is_float32(kind):
        return _JavaFloat(value, single=True)
    if pa.types.is_floating(kind):
        return value if math.isfinite(value) else _JavaFloat(value, single=False)
    if pa.types.is_struct(kind):
        return {f.name: _for_json(value.get(f.name), f.type) for f in kind}
    if pa.types.is_map(kind):
        items = value.items() if isinstance(value, Mapping) else value
        single = pa.types.is_float32(kind.key_type)
        return {_member_name(k, single): _for_json(v, kind.item_type) for k, v in items}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return [_for_json(v, kind.value_type) for v in value]
    return value


def _member_name(key: Any, single: bool) -> str:
    """A map key as SeaTunnel's RowToJsonConverters name its member: the key's JSON node,
    by its text if textual (strings, dates and times in ISO form, bytes in base64), else
    the node as JSON (numbers with Java's digits, true/false), as values are written."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return java_float_text(key, single=single)
    if isinstance(key, decimal.Decimal):
        return jackson_decimal_text(key)
    if isinstance(key, (dt.date, dt.time)):
        return java_iso_text(key)
    return str(_json_default(key))


class SeaTunnelFileSink(FileSink):
    """SeaTunnel's file sink (``LocalFile`` and the others below): the ``File`` sink's
    two-phase commit with SeaTunnel's options, formats, partition directories and names."""

    #: how the connector's options name its files (the subclasses': :mod:`.local`, :mod:`.s3`...)
    storage: ClassVar[FileStorage]
    nested_output = True
    OPTIONS = SINK_OPTIONS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A connector's table: SeaTunnel's file sink options and its storage's."""
        super().__init_subclass__(**kwargs)
        if "storage" in cls.__dict__:
            cls.OPTIONS = SINK_OPTIONS + cls.storage.connection_options

    def __init__(self, options: Mapping[str, Any]):
        Sink.__init__(self, options)
        opts = self.parse_options()
        self._read_format(opts)
        self._read_layout(opts)
        self._read_names(opts)
        self._read_save_modes(opts)
        self.max_file_rows: int = opts["batch_size"]
        self.max_file_bytes = DEFAULT_MAX_FILE_BYTES
        self.extension = EXTENSIONS[self.format]
        self.fs, self.root, self.url = self.storage.open(options)
        self._layout_cache: tuple[pa.Schema, tuple[list[int], list[int]]] | None = None

    def _read_format(self, opts: Parsed) -> None:
        """``file_format_type``, ``encoding``, the date formats, codecs, delimiters and excel's options."""
        plugin = self.plugin_name
        self.format: str = _format(opts)
        if self.format == "xml":
            raise ConfigError(
                "file_format_type",
                "xml files are read, not written here yet; supported for sinks: "
                f"{', '.join(f for f in FORMATS if f != 'xml')}",
            )
        #: text, csv, json: the character encoding written (None: UTF-8)
        self.encoding = _checked_encoding(plugin, "sink", opts, self.format)
        _check_archive(opts)
        self._date_format = _choice(opts, "date_format", DATE_FORMATS)
        self._datetime_format = _choice(opts, "datetime_format", DATETIME_FORMATS)
        self._time_format = _choice(opts, "time_format", TIME_FORMATS)
        self.formats = TextFormats(self._date_format, self._datetime_format, self._time_format)
        codec = opts["compress_codec"].lower()
        #: text, csv and json files written as lzop files (SeaTunnel: Hadoop's LzopCodec)
        self.lzo = False
        if self.format in ("text", "csv", "json"):
            if codec == "lzo":
                _require_lzo("compress_codec")
                self.lzo = True
            elif codec != "none":
                raise ConfigError(
                    "compress_codec",
                    f"{codec!r}: {self.format} files are written uncompressed or with lzo, as SeaTunnel writes them",
                )
            self.compression: str | None = None
        elif self.format == "binary":
            if codec != "none":
                raise ConfigError("compress_codec", f"{codec!r}: binary files are written as they are")
            self.compression = None
        elif self.format == "excel":
            if codec != "none":  # SeaTunnel's docs: "excel type does not support any compression format"
                raise ConfigError(
                    "compress_codec",
                    f"{codec!r}: excel files are written uncompressed (xlsx is "
                    "zipped already), as SeaTunnel writes them",
                )
            self.compression = None
        else:
            allowed = SINK_CODECS[self.format]
            if codec == "lzo":
                raise ConfigError(
                    "compress_codec",
                    f"lzo is not supported for {self.format} files (pyarrow writes "
                    f"no lzo); use one of {', '.join(allowed)}",
                )
            if codec not in allowed:
                raise ConfigError(
                    "compress_codec", f"{codec!r} is not one of {', '.join(allowed)} for {self.format} files"
                )
            self.compression = allowed[codec]
        self.codec_suffix = CODEC_SUFFIX.get(codec, "")
        self.field_delimiter: str = opts["field_delimiter"]
        self.row_delimiter: str = opts["row_delimiter"]
        self.header: bool = opts["enable_header_write"]
        #: excel: the sheet's name (SeaTunnel: Sheet<random int>); max_rows_in_memory is accepted and needs
        #: nothing (openpyxl's write-only sheet keeps no rows in memory)
        self.sheet_name: str | None = opts["sheet_name"] if self.format == "excel" else None

    def _read_layout(self, opts: Parsed) -> None:
        """``sink_columns`` and the partition options."""
        plugin = self.plugin_name
        self.sink_columns: list[str] = opts["sink_columns"] or []  # empty: every column, as in SeaTunnel
        self.partition_by: list[str] = opts["partition_by"] or []
        if self.partition_by and opts.given("have_partition") and not opts["have_partition"]:
            _warn(
                plugin,
                "sink",
                "partition_by is set and have_partition = false: the files are partitioned by "
                "partition_by all the same, as SeaTunnel does",
            )
        if self.sink_columns and not {c.lower() for c in self.partition_by} <= {c.lower() for c in self.sink_columns}:
            raise ConfigError("partition_by", "partition fields must be in sink_columns, as in SeaTunnel")
        self.partition_in_file: bool = opts["is_partition_field_write_in_file"]
        self.partition_template: str | None = opts["partition_dir_expression"]

    def _read_names(self, opts: Parsed) -> None:
        """``file_name_expression``, ``filename_time_format`` and the options that change nothing."""
        plugin = self.plugin_name
        self.transactional: bool = opts["is_enable_transaction"]
        expression: str = opts["file_name_expression"]
        if opts.given("file_name_expression") and opts["custom_filename"] is False:
            _warn(
                plugin,
                "sink",
                "file_name_expression is used although custom_filename = false, as SeaTunnel's "
                "code does (its docs say otherwise)",
            )
        if "${transactionId}" not in expression:
            if self.transactional:
                raise ConfigError(
                    "file_name_expression",
                    "must contain ${transactionId} when is_enable_transaction is true, as in SeaTunnel",
                )
            expression = "${transactionId}_" + expression
            _warn(
                plugin,
                "sink",
                "file names start with ${transactionId}_ here (file_name_expression lacks it): "
                "it is how a restore finds this job's files",
            )
        if not self.transactional:
            _warn(
                plugin,
                "sink",
                "is_enable_transaction = false: output is written through the two-phase commit "
                "all the same (files appear, exactly once, when a checkpoint completes)",
            )
        if "/" in expression or expression.startswith(("_", ".")):
            raise ConfigError(
                "file_name_expression",
                f"{expression!r} must make a visible file name: no '/', not starting with '_' or '.'",
            )
        self.file_name_expression = expression
        self.filename_time_format: str = opts["filename_time_format"]
        self._time_tokens = _time_tokens(self.filename_time_format, "filename_time_format")
        if opts["single_file_mode"]:
            raise ConfigError(
                "single_file_mode",
                "is not supported: each writer commits its own files at every "
                "checkpoint, which is what makes the output exactly once",
            )
        if opts.given("tmp_path"):
            _warn(
                plugin,
                "sink",
                "tmp_path is ignored: files are staged under path/_staging and renamed when a checkpoint completes",
            )
        if opts.given("save_mode"):
            _warn(
                plugin,
                "sink",
                "save_mode is not read by SeaTunnel's file sinks (an option of older releases; "
                "data_save_mode replaced it); ignored",
            )

    def _read_save_modes(self, opts: Parsed) -> None:
        """``schema_save_mode``, ``data_save_mode`` and the parquet options refused."""
        plugin = self.plugin_name
        for name in ("schema_save_mode", "data_save_mode"):
            mode = opts[name].upper()
            if mode == "CUSTOM_PROCESSING":
                raise ConfigError(name, "CUSTOM_PROCESSING is not supported: SeaTunnel's file catalogs run no SQL")
            allowed = (
                ("RECREATE_SCHEMA", "CREATE_SCHEMA_WHEN_NOT_EXIST", "ERROR_WHEN_SCHEMA_NOT_EXIST", "IGNORE")
                if name == "schema_save_mode"
                else ("APPEND_DATA", "DROP_DATA", "ERROR_WHEN_DATA_EXISTS")
            )
            if mode not in allowed:
                raise ConfigError(name, f"{mode!r} is not one of {', '.join(allowed)}")
        self.schema_save_mode = opts["schema_save_mode"].upper()
        self.data_save_mode = opts["data_save_mode"].upper()
        destructive = self.schema_save_mode == "RECREATE_SCHEMA" or self.data_save_mode != "APPEND_DATA"
        if not self.storage.has_catalog and destructive:
            # SeaTunnel's HdfsFile has no catalog, so its save modes never run
            _warn(
                plugin,
                "sink",
                f"schema_save_mode %s / data_save_mode %s do nothing on {plugin}, as in SeaTunnel "
                "(it has no catalog); the directory is left as it is",
                self.schema_save_mode,
                self.data_save_mode,
            )
            self.schema_save_mode = "CREATE_SCHEMA_WHEN_NOT_EXIST"
            self.data_save_mode = "APPEND_DATA"
        if opts["parquet_avro_write_timestamp_as_int96"]:
            raise ConfigError(
                "parquet_avro_write_timestamp_as_int96",
                "is not supported: timestamps are written as parquet INT64 timestamps",
            )
        if opts["parquet_avro_write_fixed_as_int96"]:
            raise ConfigError("parquet_avro_write_fixed_as_int96", "is not supported")

    # -- checks (driver) -----------------------------------------------------------------
    def preflight(self) -> None:
        if self.schema_save_mode == "ERROR_WHEN_SCHEMA_NOT_EXIST" and self.fs.info(self.root) is None:
            raise ConfigError(
                option_key(self, "schema_save_mode"),
                f"{self.fs.describe(self.root)} does not exist (ERROR_WHEN_SCHEMA_NOT_EXIST)",
            )

    def create_committer(self, job_id: str) -> FileSinkCommitter:
        committer = super().create_committer(job_id)
        if self.schema_save_mode != "RECREATE_SCHEMA" and self.data_save_mode == "APPEND_DATA":
            return committer
        return _SaveModeCommitter.over(committer, self)

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> Any:
        if self.format == "binary":
            return binary.BinaryWriter(self, job_id, subtask, attempt)
        return super().create_writer(job_id, subtask, attempt)

    def accepts(self, schema: pa.Schema) -> None:
        if self.format == "binary":
            problem = binary.check_schema(schema)
            if problem is not None:
                raise ConfigError(option_key(self, "file_format_type"), problem)
            return
        written, _ = self._layout(schema)
        if self.format == "orc":
            for index in written:
                if pa.types.is_time(schema.field(index).type):
                    raise ConfigError(
                        option_key(self, "file_format_type"),
                        f"orc files cannot hold time column {schema.field(index).name!r}",
                    )

    def _layout(self, schema: pa.Schema) -> tuple[list[int], list[int]]:
        """(indexes of the columns written, indexes of the partition columns) in ``schema``;
        names are matched ignoring case, as SeaTunnel does."""
        cached = self._layout_cache
        if cached is not None and cached[0].equals(schema):
            return cached[1]
        names = schema.names
        lower: dict[str, int] = {}
        for index, name in enumerate(names):
            lower.setdefault(name.lower(), index)

        def find(name: str, key: str) -> int:
            index = names.index(name) if name in names else lower.get(name.lower())
            if index is None:
                raise ConfigError(
                    option_key(self, key), f"no column {name!r} in the rows; they have {', '.join(names)}"
                )
            return index

        sink = [find(c, "sink_columns") for c in self.sink_columns] or list(range(len(names)))
        partition = [find(c, "partition_by") for c in self.partition_by]
        written = sink if self.partition_in_file else [i for i in sink if i not in partition]
        if not written:
            raise ConfigError(
                option_key(self, "sink_columns"),
                "no column is left to write once the partition fields are left out (is_partition_field_write_in_file)",
            )
        self._layout_cache = (schema, (written, partition))
        return written, partition

    # -- writing (executors) -------------------------------------------------------------
    def new_encoder(self, schema: pa.Schema, out: NewFile) -> Any:
        if self.lzo:
            out = _LzopNewFile(out)  # type: ignore[assignment]  # a NewFile's face over the lzop writer
        if self.format in ("text", "csv"):
            return _TextEncoder(
                self.format,
                schema,
                out,
                self.field_delimiter,
                self.row_delimiter,
                self.header,
                self.formats,
                self.encoding,
            )
        if self.format == "json":
            return _JsonEncoder(schema, out, self.row_delimiter, self.encoding)
        if self.format == "excel":
            return excel.ExcelEncoder(
                schema,
                out,
                self.sheet_name,
                self.field_delimiter,
                self._date_format,
                self._datetime_format,
                self._time_format,
                self.formats,
            )
        if self.format in ("parquet", "orc"):
            return _LowerCaseEncoder(self.format, schema, self.compression, out)
        return _FileEncoder(self.format, schema, self.compression, out)

    def split_batch(self, batch: pa.RecordBatch) -> Iterable[tuple[str, pa.RecordBatch]]:
        written, partition = self._layout(batch.schema)
        rows = batch.select(written)
        if not partition:
            return (("", rows),)
        values = []
        for index in partition:
            column = batch.column(index)
            text = to_text(column, self.formats, batch.schema.field(index).name)
            values.append(pc.if_else(column.is_null(), "null", text))
        key = pc.binary_join_element_wise(*values, "\u0000")
        encoded = pc.dictionary_encode(key)
        directories = [self._partition_dir(group.split("\u0000")) for group in encoded.dictionary.to_pylist()]
        if len(directories) == 1:
            return ((directories[0], rows),)
        indices = np.asarray(encoded.indices)
        counts = np.bincount(indices, minlength=len(directories))
        ordered = rows.take(pc.sort_indices(encoded.indices))  # stable: rows keep their order
        parts, start = [], 0
        for directory, count in zip(directories, counts):
            parts.append((directory, ordered.slice(start, int(count))))
            start += int(count)
        return parts

    def _partition_dir(self, values: Sequence[str]) -> str:
        if self.partition_template is None:  # SeaTunnel's default: k0=v0/k1=v1/...
            text = "/".join(f"{k}={v}" for k, v in zip(self.partition_by, values))
        else:
            mapping = {
                **{f"k{i}": k for i, k in enumerate(self.partition_by)},
                **{f"v{i}": v for i, v in enumerate(values)},
            }
            text = _substitute(self.partition_template, mapping)
        parts = [part for part in text.split("/") if part]
        for part in parts:
            if part in (".", "..") or part.startswith(("_", ".")):
                raise ValueError(
                    f"{self.plugin_name} sink: partition directory {text!r} (values {list(values)}) has "
                    f"the part {part!r}, which readers would skip or which leaves {self.fs.describe(self.root)}"
                )
        return "/".join(parts)

    def final_names(self, tag: str, subtask: int, attempt: int, checkpoint_id: int, count: int) -> list[str]:
        """``{file_name_expression}_{n}{.codec}.{ext}``; see the module docstring."""
        transaction = f"T_{tag}_{subtask}_{attempt}_{checkpoint_id:010d}"
        now = _format_time(self._time_tokens, dt.datetime.now())
        names = []
        for index in range(count):
            values = {
                "transactionId": transaction,
                "now": now,
                "uuid": str(uuid.uuid4()),
                self.filename_time_format: now,
            }
            name = _substitute(self.file_name_expression, values)
            names.append(f"{name}_{index}{self.codec_suffix}.{self.extension}")
        return names

    @staticmethod
    def parse_final_name(name: str) -> tuple[str, int] | None:
        match = _TRANSACTION_RE.search(name)
        return (match.group(1), int(match.group(4))) if match else None
