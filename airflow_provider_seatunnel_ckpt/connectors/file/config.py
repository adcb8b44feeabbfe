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
from ..options import Options
from .archives import ARCHIVE_CODECS

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

SOURCE_OPTIONS = frozenset(
    {
        "path",
        "file_format_type",
        "schema",
        "read_columns",
        "field_delimiter",
        "delimiter",
        "row_delimiter",
        "skip_header_row_number",
        "date_format",
        "datetime_format",
        "time_format",
        "file_filter_pattern",
        "parse_partition_from_path",
        "read_partitions",
        "compress_codec",
        "archive_compress_codec",
        "encoding",
        "tables_configs",
        "sheet_name",
        "xml_row_tag",
        "xml_use_attr_format",
    }
)
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
SINK_OPTIONS = frozenset(
    {
        "path",
        "file_format_type",
        "field_delimiter",
        "row_delimiter",
        "sink_columns",
        "have_partition",
        "partition_by",
        "partition_dir_expression",
        "is_partition_field_write_in_file",
        "custom_filename",
        "file_name_expression",
        "filename_time_format",
        "is_enable_transaction",
        "batch_size",
        "compress_codec",
        "archive_compress_codec",
        "single_file_mode",
        "tmp_path",
        "enable_header_write",
        "encoding",
        "date_format",
        "datetime_format",
        "time_format",
        "schema_save_mode",
        "data_save_mode",
        "save_mode",
        "max_rows_in_memory",
        "sheet_name",
        "xml_root_tag",
        "xml_row_tag",
        "xml_use_attr_format",
        "parquet_avro_write_timestamp_as_int96",
        "parquet_avro_write_fixed_as_int96",
    }
)
_EXCEL_OPTIONS = ("sheet_name", "max_rows_in_memory")
_XML_OPTIONS = ("xml_row_tag", "xml_use_attr_format", "xml_root_tag")
#: the formats whose files are text in ``encoding``
_ENCODED_FORMATS = ("text", "csv", "json", "xml")


def _format(opts: Options, default: str | None = None) -> str:
    value = opts.str("file_format_type", default, choices=FORMATS + REFUSED_FORMATS)
    if value in REFUSED_FORMATS:
        raise ConfigError("file_format_type", f"{value} is not supported yet; supported: {', '.join(FORMATS)}")
    return value


def _encoding(opts: Options) -> str | None:
    """The Python codec of ``encoding`` (Java's charset names: ``GBK``, ``ISO-8859-1``...);
    None for UTF-8, which needs no transcoding. A blank value is UTF-8, as SeaTunnel's
    ``EncodingUtils`` takes it."""
    value = opts.str("encoding", "UTF-8").strip()
    if not value:
        return None
    try:
        name = codecs.lookup(value).name
    except LookupError:
        raise ConfigError(
            "encoding", f"{value!r} is not a known character encoding (UTF-8, GBK, ISO-8859-1...)"
        ) from None
    return None if name == "utf-8" else name


def _choice(opts: Options, name: str, allowed: Mapping[str, Any], default: str) -> str:
    value = opts.str(name, default)
    if value not in allowed:
        raise ConfigError(name, f"{value!r} is not one of SeaTunnel's formats: {', '.join(allowed)}")
    return value


def _check_archive(opts: Options) -> None:
    """Sinks: SeaTunnel's sinks ignore the option; writing archives is not supported here."""
    value = opts.str("archive_compress_codec", "none").lower()
    if value != "none":
        raise ConfigError("archive_compress_codec", f"{value} archives are read, not written; remove the option")


def _archive(opts: Options, fmt: str, codec: str | None) -> str | None:
    """Sources: the archive codec (``zip``, ``tar``, ``tar_gz``), or None."""
    value = opts.str("archive_compress_codec", "none").lower()
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


def _warn_excel_xml(plugin: str, kind: str, opts: Options, fmt: str) -> None:
    for name in (() if fmt == "xml" and kind == "source" else _XML_OPTIONS) + (
        () if fmt == "excel" else _EXCEL_OPTIONS
    ):
        if opts.has(name):
            log.warning(
                "%s %s: option %s only applies to %s files; ignored",
                plugin,
                kind,
                name,
                "excel" if name in _EXCEL_OPTIONS else "xml",
            )


def _warn(plugin: str, kind: str, message: str, *args: Any) -> None:
    log.warning(f"%s %s: {message}", plugin, kind, *args)


def _delimiter(options: Mapping[str, Any], name: str, default: str) -> str:
    """A delimiter option as written (no stripping: a tab or a space is a delimiter)."""
    value = options.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or value == "":
        raise ConfigError(name, f"expected a non-empty string, got {value!r}")
    return value


def _column_list(options: Mapping[str, Any], name: str) -> list[str]:
    value = options.get(name)
    if value is None:
        return []
    if (
        isinstance(value, str)
        or not isinstance(value, (list, tuple))
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise ConfigError(name, f"expected a list of column names, got {value!r}")
    if len({v.lower() for v in value}) != len(value):
        raise ConfigError(name, f"lists a column more than once: {value!r}")
    return list(value)


def _checked_encoding(plugin: str, kind: str, opts: Options, options: Mapping[str, Any], fmt: str) -> str | None:
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
            options.get("encoding"),
            fmt,
        )
        encoding = None
    return encoding
