"""SeaTunnel's file connector options (``LocalFile``, ``S3File``, ``OssFile``, ``HdfsFile``):
the option names, formats, date formats and codecs they accept, and the checks sources
and sinks share. Each option is described in docs/seatunnel.md."""

from __future__ import annotations

import codecs
import logging
from collections.abc import Mapping
from typing import Any

from ...errors import ConfigError
from ...extras import require
from ...storage.urls import is_storage_option
from ..options import REQUIRED, Option, OptionTable, Parsed, given
from .archives import ARCHIVE_CODECS
from .storage import STORAGE_HINT

log = logging.getLogger(__name__)

FORMATS = ("text", "csv", "json", "parquet", "orc", "excel", "xml", "binary")
REFUSED_FORMATS: tuple[str, ...] = ()
#: SeaTunnel's file name suffix of each format (excel: the suffix written; .xls is also read)
EXTENSIONS = {
    "text": "txt",
    "csv": "csv",
    "json": "json",
    "parquet": "parquet",
    "orc": "orc",
    "excel": "xlsx",
    "xml": "xml",
    "binary": "",
}
#: SeaTunnel's separators of text files: fields, then each nesting level one further
SEPARATORS = ("\u0001", "\u0002", "\u0003", "\u0004", "\u0005", "\u0006", "\u0007")
DEFAULT_TEXT_DELIMITER = SEPARATORS[0]
#: the formats SeaTunnel's options accept (its DateUtils / DateTimeUtils / TimeUtils)
DATE_FORMATS = {"yyyy-MM-dd": "%Y-%m-%d", "yyyy.MM.dd": "%Y.%m.%d", "yyyy/MM/dd": "%Y/%m/%d"}
#: datetime format -> (strftime format without fractions, fraction digits)
DATETIME_FORMATS = {
    "yyyy-MM-dd HH:mm:ss": ("%Y-%m-%d %H:%M:%S", 0),
    "yyyy-MM-dd HH:mm:ss.SSSSSS": ("%Y-%m-%d %H:%M:%S", 6),
    "yyyy.MM.dd HH:mm:ss": ("%Y.%m.%d %H:%M:%S", 0),
    "yyyy/MM/dd HH:mm:ss": ("%Y/%m/%d %H:%M:%S", 0),
    "yyyyMMddHHmmss": ("%Y%m%d%H%M%S", 0),
    "yyyy-MM-dd'T'HH:mm:ss": ("%Y-%m-%dT%H:%M:%S", 0),
    "yyyy-MM-dd'T'HH:mm:ss.SSS": ("%Y-%m-%dT%H:%M:%S", 3),
    "yyyy-MM-dd'T'HH:mm:ss.SSSSSS": ("%Y-%m-%dT%H:%M:%S", 6),
    "yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSS": ("%Y-%m-%dT%H:%M:%S", 9),
}
TIME_FORMATS = {"HH:mm:ss": 0, "HH:mm:ss.SSS": 3}
#: source codecs for text, csv and json (pyarrow's streaming decompressors)
STREAM_CODECS = ("gzip", "bz2", "zstd", "lz4", "brotli")
#: parquet and orc sink codecs: SeaTunnel's list, without lzo (pyarrow writes no lzo) -> pyarrow's name
SINK_CODECS = {
    "parquet": {"none": "none", "snappy": "snappy", "lz4": "lz4", "gzip": "gzip", "brotli": "brotli", "zstd": "zstd"},
    "orc": {"none": "uncompressed", "snappy": "snappy", "lz4": "lz4", "zlib": "zlib"},
}
#: SeaTunnel's file name suffix of a codec (its CompressFormat)
CODEC_SUFFIX = {
    "none": "",
    "snappy": ".snappy",
    "lz4": ".lz4",
    "zlib": ".zlib",
    "gzip": ".gz",
    "brotli": ".br",
    "zstd": ".zstd",
    "lzo": ".lzo",
}
CONTENT_COLUMN = "content"

#: sink options SeaTunnel's job files also put on sources; its sources ignore them, so do we (with a warning)
SINK_ONLY_OPTIONS = frozenset(
    {
        "file_name_expression",
        "filename_time_format",
        "is_enable_transaction",
        "partition_dir_expression",
        "is_partition_field_write_in_file",
        "have_partition",
        "partition_by",
        "sink_columns",
        "custom_filename",
        "tmp_path",
        "batch_size",
        "enable_header_write",
        "single_file_mode",
        "save_mode",
        "schema_save_mode",
        "data_save_mode",
        "max_rows_in_memory",
        "xml_root_tag",
    }
)


def _rule_one_table(options: Mapping[str, Any]) -> None:
    """Rule (sources): ``tables_configs`` is split by the registry before a source is made."""
    if given(options, "tables_configs"):
        raise ConfigError(
            "tables_configs", "one source is one table; load_source makes one per table of tables_configs"
        )


def _date_formats(kind: str) -> tuple[Option, ...]:
    return (
        Option("date_format", "str", f"dates {kind}: yyyy-MM-dd, yyyy.MM.dd or yyyy/MM/dd", "yyyy-MM-dd"),
        Option("datetime_format", "str", f"timestamps {kind} (SeaTunnel's formats)", "yyyy-MM-dd HH:mm:ss"),
        Option("time_format", "str", f"times {kind}: HH:mm:ss or HH:mm:ss.SSS", "HH:mm:ss"),
    )


_PATH = Option("path", "value", "the directory or file, on the connector's storage (checked there)")
_ENCODING = Option("encoding", "str", "the character set of text, csv, json and xml files", "UTF-8")
_COMPRESS = Option("compress_codec", "str", "the files' codec (lzo, gzip...; parquet and orc: theirs)", "none")
_ARCHIVE = Option("archive_compress_codec", "str", "zip, tar or tar_gz archives (read only)", "none")
_ROW_DELIMITER = Option("row_delimiter", "text", "the text between rows", "\n")
_SHEET = Option("sheet_name", "str", "excel: the sheet's name")

#: the options of SeaTunnel's file sources, in the order they are checked
SOURCE_OPTIONS = OptionTable(
    _PATH,
    Option("file_format_type", "str", "the files' format", REQUIRED, choices=FORMATS + REFUSED_FORMATS),
    _ENCODING,
    *_date_formats("read"),
    _COMPRESS,
    _ARCHIVE,
    Option("schema", "value", "SeaTunnel's schema: the columns of text, csv, json, excel and xml files"),
    Option("xml_row_tag", "str", "xml: the rows' element name"),
    Option("xml_use_attr_format", "bool", "xml: the fields are the row element's attributes"),
    Option("read_columns", "columns", "the columns read (default: all)"),
    Option("field_delimiter", "text", "text and csv: the text between fields (text: \\u0001, csv: ,)"),
    Option("delimiter", "text", "the older name of field_delimiter"),
    _ROW_DELIMITER,
    Option("skip_header_row_number", "int", "rows skipped at the start of each file", 0, minimum=0),
    _SHEET,
    Option("file_filter_pattern", "str", "a regular expression file paths must match"),
    Option("parse_partition_from_path", "bool", "k=v directories become columns", True),
    Option("read_partitions", "columns", "read only these partition directories"),
    Option("tables_configs", "value", "one source per table; the registry splits them"),
    *(
        Option(name, "value", "a sink option: ignored with a warning, as SeaTunnel's source ignores it")
        for name in sorted(SINK_ONLY_OPTIONS)
    ),
    extra=is_storage_option,
    extra_hint=STORAGE_HINT,
    rules=(_rule_one_table,),
)
#: the options of SeaTunnel's file sinks, in the order they are checked
SINK_OPTIONS = OptionTable(
    _PATH,
    Option("file_format_type", "str", "the files' format", "csv", choices=FORMATS + REFUSED_FORMATS),
    _ENCODING,
    _ARCHIVE,
    *_date_formats("written"),
    _COMPRESS,
    Option("field_delimiter", "text", "text and csv: the text between fields", DEFAULT_TEXT_DELIMITER),
    _ROW_DELIMITER,
    Option("enable_header_write", "bool", "text and csv: a header row of column names", False),
    _SHEET,
    Option("max_rows_in_memory", "int", "excel: accepted; rows are never held", 0),
    Option("sink_columns", "names", "the columns written (default: all)"),
    Option("partition_by", "names", "the columns of k=v partition directories"),
    Option("have_partition", "bool", "SeaTunnel's switch for partition_by (partition_by decides)", False),
    Option("is_partition_field_write_in_file", "bool", "partition columns are written in the files too", False),
    Option("partition_dir_expression", "str", "the partition directories' names (${k0}=${v0}...)"),
    Option("is_enable_transaction", "bool", "SeaTunnel's; files are always committed in two phases", True),
    Option("file_name_expression", "str", "the files' names; must hold ${transactionId}", "${transactionId}"),
    Option("custom_filename", "bool", "SeaTunnel's switch for file_name_expression (which is used)"),
    Option("filename_time_format", "str", "the format of ${now} in file names", "yyyy.MM.dd"),
    Option("single_file_mode", "bool", "not supported (each writer commits its own files)", False),
    Option("tmp_path", "value", "ignored: files are staged under path/_staging"),
    Option("save_mode", "value", "an older option SeaTunnel no longer reads; ignored"),
    Option("schema_save_mode", "str", "what happens to the directory before the job", "CREATE_SCHEMA_WHEN_NOT_EXIST"),
    Option("data_save_mode", "str", "what happens to the files before the job", "APPEND_DATA"),
    Option("parquet_avro_write_timestamp_as_int96", "bool", "not supported (timestamps are INT64)", False),
    Option("parquet_avro_write_fixed_as_int96", "value", "not supported"),
    Option("batch_size", "int", "rows per file before the writer starts the next", 1_000_000, minimum=1),
    Option("xml_root_tag", "value", "xml: accepted; xml files are not written"),
    Option("xml_row_tag", "value", "xml: accepted; xml files are not written"),
    Option("xml_use_attr_format", "value", "xml: accepted; xml files are not written"),
    extra=is_storage_option,
    extra_hint=STORAGE_HINT,
)


_EXCEL_OPTIONS = ("sheet_name", "max_rows_in_memory")
_XML_OPTIONS = ("xml_row_tag", "xml_use_attr_format", "xml_root_tag")
#: the formats whose files are text in ``encoding``
_ENCODED_FORMATS = ("text", "csv", "json", "xml")


def _format(opts: Parsed) -> str:
    value: str = opts["file_format_type"]
    if value in REFUSED_FORMATS:
        raise ConfigError("file_format_type", f"{value} is not supported yet; supported: {', '.join(FORMATS)}")
    return value


def _encoding(opts: Parsed) -> str | None:
    """The Python codec of ``encoding`` (Java's charset names: ``GBK``, ``ISO-8859-1``...);
    None for UTF-8, which needs no transcoding. A blank value is UTF-8, as SeaTunnel's
    ``EncodingUtils`` takes it."""
    value = opts["encoding"].strip()
    if not value:
        return None
    try:
        name = codecs.lookup(value).name
    except LookupError:
        raise ConfigError(
            "encoding", f"{value!r} is not a known character encoding (UTF-8, GBK, ISO-8859-1...)"
        ) from None
    return None if name == "utf-8" else name


def _choice(opts: Parsed, name: str, allowed: Mapping[str, Any]) -> str:
    value: str = opts[name]
    if value not in allowed:
        raise ConfigError(name, f"{value!r} is not one of SeaTunnel's formats: {', '.join(allowed)}")
    return value


def _check_archive(opts: Parsed) -> None:
    """Sinks: SeaTunnel's sinks ignore the option; writing archives is not supported here."""
    value = opts["archive_compress_codec"].lower()
    if value != "none":
        raise ConfigError("archive_compress_codec", f"{value} archives are read, not written; remove the option")


def _archive(opts: Parsed, fmt: str, codec: str | None) -> str | None:
    """Sources: the archive codec (``zip``, ``tar``, ``tar_gz``), or None."""
    value = opts["archive_compress_codec"].lower()
    if value == "none":
        return None
    if value not in ARCHIVE_CODECS:
        raise ConfigError("archive_compress_codec", f"{value!r} is not one of none, {', '.join(ARCHIVE_CODECS)}")
    if fmt not in ("text", "csv", "json", "excel", "xml"):
        raise ConfigError(
            "archive_compress_codec",
            f"{value} archives of {fmt} files are not supported (text, csv, json, excel and xml files only)",
        )
    if codec is not None:
        raise ConfigError(
            "compress_codec",
            f"{codec} cannot be combined with archive_compress_codec = {value}: "
            "the archive's entries are read as they are",
        )
    return value


def _require_lzo(key: str) -> None:
    require("lzo", "lzo", key)


def _require_excel(key: str) -> None:
    require("excel", "excel", key)


def _warn_excel_xml(plugin: str, kind: str, opts: Parsed, fmt: str) -> None:
    for name in (() if fmt == "xml" and kind == "source" else _XML_OPTIONS) + (
        () if fmt == "excel" else _EXCEL_OPTIONS
    ):
        if opts.given(name):
            log.warning(
                "%s %s: option %s only applies to %s files; ignored",
                plugin,
                kind,
                name,
                "excel" if name in _EXCEL_OPTIONS else "xml",
            )


def _warn(plugin: str, kind: str, message: str, *args: Any) -> None:
    log.warning(f"%s %s: {message}", plugin, kind, *args)


def _checked_encoding(plugin: str, kind: str, opts: Parsed, fmt: str) -> str | None:
    """What sources and sinks check once the format is known: excel's and xml's options on
    other formats (a warning), the excel extra, and ``encoding``: its Python codec (None:
    UTF-8, or a format whose files are not text, with a warning)."""
    _warn_excel_xml(plugin, kind, opts, fmt)
    if fmt == "excel":
        _require_excel("file_format_type")
    encoding = _encoding(opts)
    if encoding is not None and fmt not in _ENCODED_FORMATS:
        _warn(
            plugin,
            kind,
            "encoding %r does not apply to %s files; ignored, as SeaTunnel ignores it",
            opts.raw.get("encoding"),
            fmt,
        )
        encoding = None
    return encoding
