"""SeaTunnel's file connectors, ``LocalFile``, ``S3File``, ``OssFile`` and ``HdfsFile``,
as sources and sinks, with SeaTunnel's option names, on top of the ``File`` connector.

The source is a :class:`~.file_source.FileSource` (its splits, positions and readers: a
split is a file, a position the number of its rows already emitted, so a restored run
resumes at the exact row); the sink is a :class:`~.file_sink.FileSink` (its two-phase
commit: files are staged under ``path/_staging`` and renamed to their final names only
once the checkpoint that covers them is durable, exactly once). This module adds
SeaTunnel's formats, options and file names.

Storage (the connection options map onto the storage options of
:mod:`~airflow_provider_seatunnel_ckpt.storage.urls`; those are accepted too)::

    LocalFile  path = /abs/dir                      local disk (or file:///abs/dir)
    S3File     bucket = "s3a://b", path = /dir       s3://b/dir; fs.s3a.endpoint, fs.s3a.aws.credentials.provider
               access_key, secret_key               -> fs.s3a.access.key, fs.s3a.secret.key
               hadoop_s3_properties { fs.s3a.* }    -> those fs.s3a.* keys (others are ignored, with a warning)
    OssFile    bucket = "oss://b", path = /dir       oss://b/dir
               endpoint, access_key, access_secret  -> fs.oss.endpoint, fs.oss.accessKeyId, fs.oss.accessKeySecret
    HdfsFile   fs.defaultFS = "hdfs://nn:8020"      hdfs://nn:8020/dir over WebHDFS (webhdfs.url if its
               path = /dir                          HTTP address is not the name node's host:9870)
               hdfs_site_path                       its properties -> seatunnel.hadoop.* (HA name services)
               remote_user, kerberos_principal,     -> hdfs.user, kerberosPrincipal,
               kerberos_keytab_path, krb5_path         kerberosKeytabFilePath, krb5Path

Formats (``file_format_type``): ``text``, ``csv``, ``json``, ``parquet``, ``orc``,
``excel`` (.xlsx through openpyxl, the ``excel`` extra, and .xls read by xlrd;
:mod:`.excel_format` says how cells convert), ``xml`` (sources: :mod:`.xml_format`) and ``binary``
(:mod:`.binary_format`: SeaTunnel's fixed rows of 1024-byte chunks, copied file for file). Text and csv are SeaTunnel's:
one row per line, fields split by ``field_delimiter`` (text: ``\\u0001``; csv: ``,``
with ``"`` quoting), nested values (``array``, ``map``, ``row``) split by ``\\u0002``,
``\\u0003``... one level down each, a blank field is null, dates and timestamps in
SeaTunnel's formats. Json is one object per line.

Source options: ``path``, ``file_format_type``, ``schema`` (text and csv without one give one
``content`` column holding each line, json one ``content`` column read from each object's
``content`` member, as SeaTunnel's simple text table does; json with ``schema {}`` rows of no
columns; required for xml; ignored for binary; for
parquet and orc it casts the files' columns, by name; required for excel: column ``i`` is
the sheet's column ``i``), ``read_columns``, ``sheet_name`` (excel: else the first sheet),
``field_delimiter`` (``delimiter``), ``row_delimiter``, ``skip_header_row_number``,
``date_format``/``datetime_format``/``time_format`` (checked; values are recognised in
any of SeaTunnel's formats, as its readers do), ``file_filter_pattern`` (a regex the
file name must match), ``parse_partition_from_path`` (default true: ``k=v`` parts of a
file's path become string columns after the others), ``read_partitions``,
``compress_codec`` (text, csv, json: ``none``, ``lzo`` (lzop files, as Hadoop's
``LzopCodec`` writes them; needs the ``lzo`` extra), ``gzip``, ``bz2``, ``zstd``,
``lz4``, ``brotli``; parquet and orc are read whatever their codec), ``encoding`` (text,
csv, json, xml: Java's charset names through Python's codecs; undecodable bytes read as
U+FFFD, as Java's reader decodes them), ``xml_row_tag``/``xml_use_attr_format`` (xml),
``archive_compress_codec`` (text, csv, json, excel: ``none``, ``zip``, ``tar``,
``tar_gz``: each file is an archive, its entries read in archive order, each as a file of
``file_format_type`` (``skip_header_row_number`` applies to each), directories and
entries without the format's suffix (``.txt``, ``.csv``, ``.json``, ``.xlsx``/``.xls``)
skipped, as SeaTunnel does; an xlsx entry is read into memory, up to 256 MiB; a split is
still one archive and its position the rows already emitted; not with
``compress_codec``).

Sink options: ``path``, ``file_format_type`` (default ``csv``), ``field_delimiter``,
``row_delimiter`` (between rows, none after the last, as SeaTunnel writes),
``sink_columns``, ``partition_by``/``partition_dir_expression``/
``is_partition_field_write_in_file`` (``have_partition`` is informational: SeaTunnel
partitions whenever ``partition_by`` is set), ``file_name_expression``,
``filename_time_format``, ``custom_filename``, ``is_enable_transaction``, ``batch_size``
(rows per file), ``compress_codec`` (text, csv, json: ``none`` or ``lzo``, lzop files
named ``….lzo.txt`` as SeaTunnel names them; parquet and orc: SeaTunnel's codecs but
lzo), ``enable_header_write``, ``date_format``/
``datetime_format``/``time_format``, ``encoding`` (text, csv, json: a character the
encoding cannot hold is written as ``?``, as Java's ``getBytes`` writes it, with a warning),
``sheet_name`` and ``max_rows_in_memory``
(excel: a header row, then a row per record, as SeaTunnel's ExcelGenerator writes; rows
stream to openpyxl's temporary file, so ``max_rows_in_memory`` needs nothing),
``schema_save_mode``/
``data_save_mode`` (``RECREATE_SCHEMA``, ``DROP_DATA`` and ``ERROR_WHEN_DATA_EXISTS`` run in
``start_fresh``: only when a run starts the job from its beginning, never on a restore, as
SeaTunnel runs them at submission only), ``tmp_path`` (ignored: files are staged
under ``path/_staging``).

Committed file names (the two-phase commit's final names)::

    {partition dir/}{file_name_expression}_{n}{.codec}.{ext}

with ``${transactionId}`` = ``T_{job tag}_{subtask}_{attempt}_{checkpoint id:010d}``
(SeaTunnel: ``T_{job id}_{uuid prefix}_{subtask}_{checkpoint id}``), ``${now}`` the time
the writer prepared the checkpoint in ``filename_time_format``, ``${uuid}`` a random
UUID per file, ``n`` the file's index within the checkpoint. The names are chosen once,
when the writer prepares the checkpoint, and kept in its commit info: a replayed commit
publishes exactly the same names, whatever ``${now}`` and ``${uuid}`` say. The
transaction id in every name lets a restore from an older checkpoint find and remove this
job's files of newer epochs (they are written again).

Where this differs from SeaTunnel (each is an error or a warning line when an option asks
for it, else listed here):

* sources skip every name starting with ``_`` or ``.`` (SeaTunnel: ``_SUCCESS`` and
  ``.*``), so a sink's ``_staging`` is never read; empty lines are no rows (SeaTunnel
  fails on them); a one-character ``field_delimiter`` that is a regex character (``|``)
  splits at that character (SeaTunnel splits with it as a Java regex; a warning says so);
  ``row_delimiter`` splits text and csv rows (SeaTunnel's reader splits at line breaks; a
  warning says so); gzip, bz2, zstd, lz4 and brotli files are decompressed too (SeaTunnel:
  lzo only); lzop files using an lzop filter are refused; an excel row with no value is no row, formula cells give
  their cached value (SeaTunnel fails on them); json numbers must be json numbers where the schema has a
  number (SeaTunnel also parses numeric strings), a map entry with a null value is left
  out; zoned parquet timestamps become their UTC wall-clock time (SeaTunnel: the JVM's
  zone) and timestamps are microseconds; a schema on parquet or orc casts by column name.
* sinks write numbers in Arrow's text form (``1``, ``2.5e+300``; Java: ``1.0``,
  ``2.5E300``), quote csv values holding a comma, quote or line break (SeaTunnel writes
  them as they are), head a file with the columns it holds (SeaTunnel: every upstream
  column); excel files hold the written columns side by side (SeaTunnel leaves a blank
  column where a partition field is not written); a null partition value is the
  directory ``k=null`` (SeaTunnel fails); a file is also cut at 16 MiB (excel: of sheet
  xml), besides ``batch_size`` rows; ``lzo`` for parquet and orc is
  refused (pyarrow writes no lzo), orc files cannot hold time columns;
  ``archive_compress_codec`` is refused (SeaTunnel's sinks ignore it); ``path`` deleted by
  a save mode is made again by the first commit (SeaTunnel: at once); xml sinks and
  ``CUSTOM_PROCESSING`` are refused; ``single_file_mode`` is refused; ``is_enable_transaction =
  false``, ``tmp_path`` and ``save_mode`` change nothing (warnings say so).
"""

from __future__ import annotations

import base64
import codecs
import datetime as dt
import decimal
import io
import json
import logging
import posixpath
import re
import secrets
import time
import uuid
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError
from ..extras import require
from ..storage.filesystem import FileSystem, NewFile, warn_once
from ..storage.urls import RangeFile, ReadStream, filesystem_for_url, is_storage_option
from .api import JsonValue, Sink, Source, SourceReader, Split
from . import binary_format, excel_format, xml_format
from .file_codecs import ARCHIVE_CODECS, LzopReader, LzopWriter, archive_entries
from .file_sink import DEFAULT_MAX_FILE_BYTES, FileSink, FileSinkCommitter, _FileEncoder, _json_default
from .file_source import STREAM_BLOCK_SIZE, FileSource, ParquetReader, StreamReader
from .formats import STORAGE_HINT, is_hidden
from .options import Options, option_key
from .seatunnel_types import Column, has_map, parse_columns, type_name

log = logging.getLogger(__name__)

FORMATS = ("text", "csv", "json", "parquet", "orc", "excel", "xml", "binary")
REFUSED_FORMATS: tuple[str, ...] = ()
#: SeaTunnel's file name suffix of each format (excel: the suffix written; .xls is also read)
EXTENSIONS = {"text": "txt", "csv": "csv", "json": "json", "parquet": "parquet", "orc": "orc", "excel": "xlsx", "xml": "xml", "binary": ""}
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
CODEC_SUFFIX = {"none": "", "snappy": ".snappy", "lz4": ".lz4", "zlib": ".zlib", "gzip": ".gz", "brotli": ".br",
                "zstd": ".zstd", "lzo": ".lzo"}
CONTENT_COLUMN = "content"

#: per connector: its connection options (its storage, besides the storage options)
CONNECTION_OPTIONS = {
    "LocalFile": (),
    "S3File": ("bucket", "access_key", "secret_key", "hadoop_s3_properties"),
    "OssFile": ("bucket", "endpoint", "access_key", "access_secret"),
    "HdfsFile": ("hdfs_site_path", "remote_user", "kerberos_principal", "kerberos_keytab_path", "krb5_path"),
}
#: connection option -> the storage option it sets
_STORAGE_KEY = {
    "S3File": {"access_key": "fs.s3a.access.key", "secret_key": "fs.s3a.secret.key"},
    "OssFile": {"endpoint": "fs.oss.endpoint", "access_key": "fs.oss.accessKeyId",
                "access_secret": "fs.oss.accessKeySecret"},
    "HdfsFile": {"remote_user": "hdfs.user", "kerberos_principal": "kerberosPrincipal",
                 "kerberos_keytab_path": "kerberosKeytabFilePath", "krb5_path": "krb5Path"},
}
#: fs.s3a.* keys the S3 backend reads (storage/fs_s3.py); hadoop_s3_properties may hold any
_S3_KEYS_READ = frozenset({
    "fs.s3a.endpoint", "fs.s3a.endpoint.region", "fs.s3a.path.style.access", "fs.s3a.connection.ssl.enabled",
    "fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token", "fs.s3a.aws.credentials.provider",
    "fs.s3a.multipart.threshold", "fs.s3a.multipart.size",
})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

SOURCE_OPTIONS = frozenset({
    "path", "file_format_type", "schema", "read_columns", "field_delimiter", "delimiter", "row_delimiter",
    "skip_header_row_number", "date_format", "datetime_format", "time_format", "file_filter_pattern",
    "parse_partition_from_path", "read_partitions", "compress_codec", "archive_compress_codec", "encoding",
    "tables_configs", "sheet_name", "xml_row_tag", "xml_use_attr_format",
})
#: sink options SeaTunnel's job files also put on sources; its sources ignore them, so do we (with a warning)
SINK_ONLY_OPTIONS = frozenset({
    "file_name_expression", "filename_time_format", "is_enable_transaction", "partition_dir_expression",
    "is_partition_field_write_in_file", "have_partition", "partition_by", "sink_columns", "custom_filename",
    "tmp_path", "batch_size", "enable_header_write", "single_file_mode", "save_mode", "schema_save_mode",
    "data_save_mode", "max_rows_in_memory", "xml_root_tag",
})
SINK_OPTIONS = frozenset({
    "path", "file_format_type", "field_delimiter", "row_delimiter", "sink_columns", "have_partition",
    "partition_by", "partition_dir_expression", "is_partition_field_write_in_file", "custom_filename",
    "file_name_expression", "filename_time_format", "is_enable_transaction", "batch_size", "compress_codec",
    "archive_compress_codec", "single_file_mode", "tmp_path", "enable_header_write", "encoding", "date_format",
    "datetime_format", "time_format", "schema_save_mode", "data_save_mode", "save_mode", "max_rows_in_memory",
    "sheet_name", "xml_root_tag", "xml_row_tag", "xml_use_attr_format", "parquet_avro_write_timestamp_as_int96",
    "parquet_avro_write_fixed_as_int96",
})
_EXCEL_OPTIONS = ("sheet_name", "max_rows_in_memory")
_XML_OPTIONS = ("xml_row_tag", "xml_use_attr_format", "xml_root_tag")
#: the formats whose files are text in ``encoding``
_ENCODED_FORMATS = ("text", "csv", "json", "xml")


# ---------------------------------------------------------------------------------------
# options shared by sources and sinks


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
        raise ConfigError("encoding", f"{value!r} is not a known character encoding (UTF-8, GBK, ISO-8859-1...)") \
            from None
    return None if name == "utf-8" else name


class _Transcoded(ReadStream):
    """The bytes of ``raw`` (text in ``encoding``) as UTF-8, which the line and json
    readers read. Undecodable bytes become U+FFFD, as Java's ``InputStreamReader`` (SeaTunnel's
    readers) decodes them."""

    def __init__(self, raw: Any, encoding: str):
        super().__init__()
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._pending = b""
        self._eof = False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = None if size is None or size < 0 else size
        while not self._eof and (want is None or len(self._pending) < want):
            data = self._raw.read(STREAM_BLOCK_SIZE)
            if not data:
                self._eof = True
                text = self._decoder.decode(b"", final=True)
            else:
                text = self._decoder.decode(bytes(data))
            self._pending += text.encode("utf-8")
        if want is None:
            out, self._pending = self._pending, b""
        else:
            out, self._pending = self._pending[:want], self._pending[want:]
        return out

    def close(self) -> None:
        if not self.closed and not isinstance(self._raw, RangeFile):
            self._raw.close()
        super().close()


def _encode(text: str, encoding: str | None, where: str) -> bytes:
    """``text`` in the sink's ``encoding``. A character the encoding cannot hold is written
    as ``?``, as Java's ``String.getBytes`` (SeaTunnel's writers) writes it; a warning says so."""
    if encoding is None:
        return text.encode("utf-8")
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as exc:
        warn_once((where, encoding), "%s: %r cannot hold %r; written as '?', as SeaTunnel writes it", where, encoding,
                  exc.object[exc.start:exc.end])
        return text.encode(encoding, errors="replace")


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
        raise ConfigError("archive_compress_codec", f"{value} archives of {fmt} files are not supported (text, csv, "
                                                    "json, excel and xml files only)")
    if codec is not None:
        raise ConfigError("compress_codec", f"{codec} cannot be combined with archive_compress_codec = {value}: "
                                            "the archive's entries are read as they are")
    return value


def _require_lzo(key: str) -> None:
    require("lzo", "lzo", key)


def _require_excel(key: str) -> None:
    require("excel", "excel", key)


def _warn_excel_xml(plugin: str, kind: str, opts: Options, fmt: str) -> None:
    for name in (() if fmt == "xml" and kind == "source" else _XML_OPTIONS) + (() if fmt == "excel" else _EXCEL_OPTIONS):
        if opts.has(name):
            log.warning("%s %s: option %s only applies to %s files; ignored", plugin, kind, name,
                        "excel" if name in _EXCEL_OPTIONS else "xml")


def _bucket(value: Any, schemes: Sequence[str], key: str = "bucket") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"expected a bucket such as {schemes[0]}://name, got {value!r}")
    text = value.strip().rstrip("/")
    match = _SCHEME.match(text)
    if match:
        if match.group(1).lower() not in schemes:
            raise ConfigError(key, f"{value!r} is not a {' or '.join(schemes)} bucket")
        text = text[match.end():]
    if not text or "/" in text:
        raise ConfigError(key, f"expected a bucket such as {schemes[0]}://name, got {value!r}")
    return text


def _hdfs_site(path: Any, key: str = "hdfs_site_path") -> dict[str, str]:
    """The properties of an ``hdfs-site.xml``."""
    import xml.etree.ElementTree as ET

    if not isinstance(path, str) or not path.strip():
        raise ConfigError(key, f"expected the path of an hdfs-site.xml, got {path!r}")
    try:
        root = ET.parse(path.strip()).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ConfigError(key, f"cannot read {path!r}: {exc}") from None
    properties = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name and value is not None:
            properties[name.strip()] = value.strip()
    return properties


def open_seatunnel_storage(plugin: str, options: Mapping[str, Any]) -> tuple[FileSystem, str, str]:
    """The file system, root path and URL of a SeaTunnel file connector's ``path`` and its
    connection options (``bucket``, ``access_key``, ``fs.defaultFS``...)."""
    storage: dict[str, Any] = {k: v for k, v in options.items() if is_storage_option(k)}
    source_of: dict[str, str] = {}  # storage option -> the connector option that set it

    def put(name: str, value: Any, from_key: str) -> None:
        if name in storage and storage[name] != value:
            raise ConfigError(from_key, f"disagrees with {name} = {storage[name]!r}; set one of them")
        storage[name] = value
        source_of[name] = from_key

    path = options.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ConfigError("path", f"expected a non-empty path, got {path!r}")
    path = path.strip()
    scheme = (_SCHEME.match(path).group(1).lower() if _SCHEME.match(path) else "")
    for name, target in _STORAGE_KEY.get(plugin, {}).items():
        if options.get(name) is not None:
            put(target, options[name], name)
    if plugin == "LocalFile":
        if scheme not in ("", "file"):
            raise ConfigError("path", f"{path!r} is not a local path; LocalFile reads and writes the local file system")
        url = path
    elif plugin == "S3File":
        schemes = ("s3a", "s3n", "s3")
        if scheme:
            if scheme not in schemes:
                raise ConfigError("path", f"{path!r} is not an S3 path")
            parts = urlsplit(path)
            if options.get("bucket") is not None and _bucket(options["bucket"], schemes) != parts.netloc:
                raise ConfigError("bucket", f"disagrees with the bucket in path {path!r}")
            url = f"s3://{parts.netloc}{parts.path}"
        else:
            if options.get("bucket") is None:
                raise ConfigError("bucket", "is required for S3File (s3a://name)")
            url = f"s3://{_bucket(options['bucket'], schemes)}/{path.lstrip('/')}"
        props = options.get("hadoop_s3_properties")
        if props is not None:
            if not isinstance(props, Mapping):
                raise ConfigError("hadoop_s3_properties", "expected a mapping of fs.s3a.* keys to values")
            for name, value in props.items():
                if str(name) in _S3_KEYS_READ:
                    put(str(name), value, f"hadoop_s3_properties.{name}")
                else:
                    log.warning("%s: hadoop_s3_properties.%s is not used by this S3 client; ignored", plugin, name)
    elif plugin == "OssFile":
        if scheme:
            if scheme != "oss":
                raise ConfigError("path", f"{path!r} is not an OSS path")
            url = path
        else:
            if options.get("bucket") is None:
                raise ConfigError("bucket", "is required for OssFile (oss://name)")
            url = f"oss://{_bucket(options['bucket'], ('oss',))}/{path.lstrip('/')}"
    elif plugin == "HdfsFile":
        if options.get("hdfs_site_path") is not None:
            for name, value in _hdfs_site(options["hdfs_site_path"]).items():
                storage.setdefault(f"seatunnel.hadoop.{name}", value)
        if scheme:
            url = path
        else:
            default_fs = options.get("fs.defaultFS")
            if not isinstance(default_fs, str) or not default_fs.strip():
                raise ConfigError("fs.defaultFS", "is required for HdfsFile (hdfs://namenode:8020) unless path is a URL")
            url = f"{default_fs.strip().rstrip('/')}/{path.lstrip('/')}"
    else:  # pragma: no cover - the classes below are the only callers
        raise ValueError(plugin)
    try:
        return (*filesystem_for_url(url, storage, key="path"), url)
    except ConfigError as err:
        key = source_of.get(err.key, err.key)
        if key == "path" and options.get("bucket") is not None and "bucket" in err.problem:
            key = "bucket"  # the URL's bucket came from the bucket option
        raise ConfigError(key, err.problem) from None


def _warn(plugin: str, kind: str, message: str, *args: Any) -> None:
    log.warning(f"%s %s: {message}", plugin, kind, *args)


# ---------------------------------------------------------------------------------------
# text values <-> Arrow (vectorised)


def _blank_to_null(col: pa.Array) -> pa.Array:
    """SeaTunnel's ``StringUtils.isBlank``: an empty or whitespace-only field is null."""
    blank = pc.match_substring_regex(col, r"^\s*$")
    return pc.if_else(blank, pa.scalar(None, col.type), col)


def _element(lists: pa.ListArray, index: int) -> pa.Array:
    """Element ``index`` of every list; null where a list is shorter or null."""
    offsets, values = _list_parts(lists)
    offsets = np.asarray(offsets, dtype=np.int64)
    starts, lengths = offsets[:-1], offsets[1:] - offsets[:-1]
    valid = (lengths > index) & np.asarray(lists.is_valid(), dtype=bool)
    positions = np.where(valid, starts + index, 0)
    return values.take(pa.array(positions, type=pa.int64(), mask=~valid))


def _split(col: pa.Array, separator: str) -> pa.ListArray:
    return pc.split_pattern(col, pattern=separator)


def _list_parts(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(offsets from 0, values) of a list or map array, also of a slice of one."""
    offsets = np.asarray(col.offsets, dtype=np.int64)
    start = int(offsets[0]) if len(offsets) else 0
    values = col.values.slice(start, int(offsets[-1]) - start if len(offsets) else 0)
    return pa.array(offsets - start, pa.int32()), values


def _rebuild_list(lists: pa.Array, values: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(_list_parts(lists)[0], values, mask=lists.is_null())


class TextFormats:
    """How dates, times and timestamps are written (``date_format``...); reading
    recognises any of SeaTunnel's formats."""

    def __init__(self, date_format: str = "yyyy-MM-dd", datetime_format: str = "yyyy-MM-dd HH:mm:ss",
                 time_format: str = "HH:mm:ss"):
        self.date = DATE_FORMATS[date_format]
        self.datetime, self.datetime_digits = DATETIME_FORMATS[datetime_format]
        self.time_digits = TIME_FORMATS[time_format]


_DATE_SEPARATED = (re.compile(r"^(\d{4})[./](\d{2})[./](\d{2})"), r"\1-\2-\3")
_DATE_CHINESE = (re.compile(r"^(\d{4})年(\d{2})月(\d{2})日"), r"\1-\2-\3")
_DATE_COMPACT = (r"^(\d{4})(\d{2})(\d{2})$", r"\1-\2-\3")
_DATETIME_COMPACT = (r"^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$", r"\1-\2-\3 \4:\5:\6")
_TIME_CHINESE = (r"(\d{2})时(\d{2})分(\d{2})秒$", r"\1:\2:\3")


def _normalise_dates(col: pa.Array) -> pa.Array:
    """yyyy.MM.dd, yyyy/MM/dd, yyyy年MM月dd日 -> yyyy-MM-dd (the rest of the value stays)."""
    for pattern, replacement in (_DATE_SEPARATED, _DATE_CHINESE):
        col = pc.replace_substring_regex(col, pattern=pattern.pattern, replacement=replacement)
    return col


def _parse_date(col: pa.Array, name: str) -> pa.Array:
    col = pc.replace_substring_regex(_normalise_dates(col), pattern=_DATE_COMPACT[0], replacement=_DATE_COMPACT[1])
    return _cast(col, pa.date32(), name, "a date (yyyy-MM-dd, yyyy.MM.dd, yyyy/MM/dd, yyyyMMdd)")


def _parse_timestamp(col: pa.Array, name: str) -> pa.Array:
    col = pc.replace_substring_regex(col, pattern=_DATETIME_COMPACT[0], replacement=_DATETIME_COMPACT[1])
    col = pc.replace_substring_regex(_normalise_dates(col), pattern=_TIME_CHINESE[0], replacement=_TIME_CHINESE[1])
    # minutes without seconds (yyyy-MM-dd HH:mm), as SeaTunnel's patterns accept
    col = pc.replace_substring_regex(col, pattern=r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2})$", replacement=r"\1:00")
    parsed = _cast(col, pa.timestamp("ns"), name, "a timestamp (yyyy-MM-dd HH:mm:ss and SeaTunnel's other formats)")
    return pc.cast(parsed, pa.timestamp("us"), safe=False)


def _parse_time(col: pa.Array, name: str) -> pa.Array:
    stamps = _cast(pc.binary_join_element_wise("1970-01-01 ", col, ""), pa.timestamp("us"), name,
                   "a time (HH:mm:ss[.SSS])")
    return pc.cast(pc.cast(stamps, pa.int64()), pa.time64("us"))


def _cast(col: pa.Array, target: pa.DataType, name: str, what: str | None = None) -> pa.Array:
    try:
        return pc.cast(col, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        detail = str(exc).split("\n")[0]
        raise ValueError(f"column {name}: cannot read {what or type_name(target)}: {detail}") from None


def from_text(col: pa.Array, target: pa.DataType, name: str, level: int = 0, base64_bytes: bool = False,
              blank_is_null: bool = True) -> pa.Array:
    """Text fields (a string array) as values of ``target``, as SeaTunnel's text format
    reads them: blank is null (``blank_is_null``: text and csv files; a json string is
    what it says), nested values split by the separator of the next level."""
    if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
        col = _cast(col, pa.string(), name, "UTF-8 text")
    if pa.types.is_null(target):
        return pa.nulls(len(col), target)
    if blank_is_null:
        col = _blank_to_null(col)
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return col.cast(target)
    if pa.types.is_boolean(target):
        return pc.equal(pc.utf8_lower(col), "true")  # Java's Boolean.parseBoolean
    if pa.types.is_integer(target) or pa.types.is_floating(target) or pa.types.is_decimal(target):
        return _cast(col, target, name)
    if pa.types.is_binary(target):
        if base64_bytes:  # json: bytes are base64 text
            try:
                values = [None if v is None else base64.b64decode(v, validate=True) for v in col.to_pylist()]
            except (ValueError, TypeError) as exc:
                raise ValueError(f"column {name}: bytes are not base64: {exc}") from None
            return pa.array(values, pa.binary())
        return col.cast(pa.binary())
    if pa.types.is_date(target):
        return _parse_date(col, name).cast(target)
    if pa.types.is_timestamp(target):
        return _parse_timestamp(col, name).cast(target)
    if pa.types.is_time(target):
        return _parse_time(col, name).cast(target)
    if level + 2 >= len(SEPARATORS) and (pa.types.is_map(target) or pa.types.is_list(target)
                                         or pa.types.is_struct(target)):
        raise ValueError(f"column {name}: nested too deep for text files ({len(SEPARATORS)} separators)")
    if pa.types.is_list(target):
        lists = _split(col, SEPARATORS[level + 1])
        values = from_text(_list_parts(lists)[1], target.value_type, name, level + 1, base64_bytes, blank_is_null)
        return _rebuild_list(lists, values)
    if pa.types.is_map(target):
        entries = _split(col, SEPARATORS[level + 1])
        offsets, values = _list_parts(entries)
        pairs = _split(values, SEPARATORS[level + 2])
        keys = from_text(_element(pairs, 0), target.key_type, name, level + 1, base64_bytes, blank_is_null)
        items = from_text(_element(pairs, 1), target.item_type, name, level + 1, base64_bytes, blank_is_null)
        if keys.null_count:
            raise ValueError(f"column {name}: a map key is blank (maps here cannot hold a null key)")
        return pa.MapArray.from_arrays(offsets, keys, items, mask=entries.is_null())
    if pa.types.is_struct(target):
        parts = _split(col, SEPARATORS[level + 1])
        children = [from_text(_element(parts, i), field.type, f"{name}.{field.name}", level + 1, base64_bytes,
                              blank_is_null) for i, field in enumerate(target)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=col.is_null())
    raise ValueError(f"column {name}: {type_name(target)} cannot be read from text")


def convert(col: pa.Array, target: pa.DataType, name: str, base64_bytes: bool = False) -> pa.Array:
    """``col`` as ``target``: text through :func:`from_text`; rows by field name (a json
    object read as a row becomes a map); lists element-wise; the rest by Arrow's cast."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.type == target:
        return col
    if pa.types.is_null(col.type):
        return pa.nulls(len(col), target)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        if not (pa.types.is_string(target) or pa.types.is_large_string(target)):
            return from_text(col, target, name, base64_bytes=base64_bytes, blank_is_null=False)
    if pa.types.is_struct(col.type) and pa.types.is_map(target):
        return _struct_to_map(col, target, name, base64_bytes)
    if pa.types.is_struct(col.type) and pa.types.is_struct(target):
        children = col.flatten()
        by_name = {field.name: child for field, child in zip(col.type, children)}
        converted = [
            convert(by_name[field.name], field.type, f"{name}.{field.name}", base64_bytes)
            if field.name in by_name else pa.nulls(len(col), field.type)
            for field in target
        ]
        return pa.StructArray.from_arrays(converted, fields=list(target), mask=col.is_null())
    if pa.types.is_timestamp(col.type) and pa.types.is_timestamp(target):
        return plain_timestamps(col).cast(target, safe=False) if target.tz is None else _cast(col, target, name)
    if (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and pa.types.is_list(target):
        offsets, values = _list_parts(col)
        return pa.ListArray.from_arrays(offsets, convert(values, target.value_type, name, base64_bytes),
                                        mask=col.is_null())
    return _cast(col, target, name)


def plain_timestamps(col: pa.Array) -> pa.Array:
    """Timestamps as SeaTunnel's ``timestamp`` (ours: microseconds, no time zone): a
    zoned one as its UTC wall-clock time, finer units truncated to microseconds."""
    if not pa.types.is_timestamp(col.type) or (col.type.unit == "us" and col.type.tz is None):
        return col
    return col.view(pa.timestamp(col.type.unit)).cast(pa.timestamp("us"), safe=False)


def _struct_to_map(col: pa.StructArray, target: pa.MapType, name: str, base64_bytes: bool) -> pa.Array:
    """A json object read as a row (pyarrow infers one field per key) as a map: the
    keys with a value, in field order."""
    n, children = len(col), col.flatten()
    names = [field.name for field in col.type]
    if not names:
        valid = np.zeros((n, 0), dtype=bool)
    else:
        valid = np.stack([np.asarray(child.is_valid(), dtype=bool) for child in children], axis=1)
    offsets = np.concatenate([[0], np.cumsum(valid.sum(axis=1))]).astype(np.int32)
    rows, fields = np.nonzero(valid)
    keys = convert(pa.array(np.array(names, dtype=object)[fields] if len(fields) else [], pa.string()),
                   target.key_type, name)
    if names:
        items_all = pa.concat_arrays([convert(child, target.item_type, name, base64_bytes) for child in children])
        items = items_all.take(pa.array(fields.astype(np.int64) * n + rows, pa.int64()))
    else:
        items = pa.array([], target.item_type)
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items, mask=col.is_null())


def to_text(col: pa.Array, formats: TextFormats, name: str, level: int = 0) -> pa.Array:
    """Values as SeaTunnel's text format writes them (null: empty; nested values joined
    by the separator of the next level); a string array without nulls."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    kind = col.type
    if pa.types.is_null(kind):
        text = pa.nulls(len(col), pa.string())
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = col.cast(pa.string())
    elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        text = pc.cast(col.cast(pa.binary()), pa.string(), safe=False)  # the bytes as they are
    elif pa.types.is_date(kind):
        text = pc.strftime(col.cast(pa.date32()), format=formats.date)
    elif pa.types.is_timestamp(kind):
        digits = formats.datetime_digits
        unit = "s" if digits == 0 else ("ns" if digits == 9 else "us")
        stamps = pc.cast(col.view(pa.timestamp(kind.unit)), pa.timestamp(unit), safe=False)  # zoned: UTC time
        text = pc.strftime(stamps, format=formats.datetime)
        if digits == 3:
            text = pc.utf8_slice_codeunits(text, 0, -3)
    elif pa.types.is_time(kind):
        text = pc.cast(pc.cast(col, pa.time64("us")), pa.string())  # HH:MM:SS.ffffff
        text = pc.utf8_slice_codeunits(text, 0, 8 + (1 + formats.time_digits if formats.time_digits else 0))
    elif pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind) \
            or pa.types.is_decimal(kind):
        text = pc.cast(col, pa.string())
    elif level + 2 >= len(SEPARATORS):
        raise ValueError(f"column {name}: nested too deep for text files ({len(SEPARATORS)} separators)")
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        if not pa.types.is_list(kind):
            col = col.cast(pa.list_(kind.value_type))
        offsets, values = _list_parts(col)
        lists = pa.ListArray.from_arrays(offsets, to_text(values, formats, name, level + 1), mask=col.is_null())
        text = pc.binary_join(lists, SEPARATORS[level + 1])
    elif pa.types.is_map(kind):
        offsets, pairs = _list_parts(col)
        keys, items = pairs.flatten()
        entries = pc.binary_join_element_wise(to_text(keys, formats, name, level + 1),
                                              to_text(items, formats, name, level + 1), SEPARATORS[level + 2])
        lists = pa.ListArray.from_arrays(offsets, entries, mask=col.is_null())
        text = pc.binary_join(lists, SEPARATORS[level + 1])
    elif pa.types.is_struct(kind):
        children = [to_text(child, formats, f"{name}.{field.name}", level + 1)
                    for field, child in zip(kind, col.flatten())]
        text = pc.binary_join_element_wise(*children, SEPARATORS[level + 1]) if children else \
            pa.array([""] * len(col), pa.string())
        text = pc.if_else(col.is_null(), pa.scalar(None, pa.string()), text)
    else:
        raise ValueError(f"column {name}: {kind} cannot be written to a text file")
    return text.fill_null("")


def _csv_quote(text: pa.Array, delimiter: str) -> pa.Array:
    """RFC 4180 quoting, only where a value needs it."""
    needs = pc.match_substring_regex(text, pattern="[" + re.escape(delimiter) + '"\r\n]')
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, pattern='"', replacement='""'), '"', "")
    return pc.if_else(needs, quoted, text)


# ---------------------------------------------------------------------------------------
# source

_REGEX_META = frozenset(".$|()[]{}^?*+\\")


def _delimiter(options: Mapping[str, Any], name: str, default: str) -> str:
    """A delimiter option as written (no stripping: a tab or a space is a delimiter)."""
    value = options.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or value == "":
        raise ConfigError(name, f"expected a non-empty string, got {value!r}")
    return value


def _field_splitter(plugin: str, fmt: str, delimiter: str, key: str) -> tuple[str, str]:
    """(how, delimiter) to split a line into fields: SeaTunnel's csv reader splits at the
    delimiter's first character, with ``"`` quoting; its text reader splits with the
    delimiter as a Java regular expression."""
    if fmt == "csv":
        return "csv", delimiter[0]
    if len(delimiter) == 1:
        if delimiter in _REGEX_META:
            log.warning("%s source: field_delimiter %r splits at that character here; SeaTunnel's text reader takes "
                        "it as a Java regular expression (write %r there)", plugin, delimiter, "\\" + delimiter)
        return "literal", delimiter
    if not set(delimiter) & _REGEX_META:
        return "literal", delimiter
    try:
        compiled = re.compile(delimiter)
    except re.error as exc:
        raise ConfigError(key, f"{delimiter!r} is not a valid regular expression (the text reader splits with "
                               f"it as SeaTunnel's does): {exc}") from None
    if compiled.match("") is not None:
        raise ConfigError(key, f"{delimiter!r} matches the empty text as a regular expression (SeaTunnel's text "
                               f"reader would split every character); escape it, e.g. \\\\|")
    return "regex", delimiter


def split_fields(lines: pa.Array, how: str, delimiter: str) -> pa.ListArray:
    """Each line's fields (a list array), as :func:`_field_splitter` says."""
    if how == "literal":
        return pc.split_pattern(lines, pattern=delimiter)
    if how == "regex":
        return pc.split_pattern_regex(lines, pattern=delimiter)
    plain = pc.split_pattern(lines, pattern=delimiter)
    quoted = pc.fill_null(pc.match_substring(lines, '"'), False)
    rows = np.flatnonzero(np.asarray(quoted, dtype=bool))
    if not len(rows):
        return plain
    import csv

    parsed: list[Any] = [None] * len(lines)
    for row, line in zip(rows, lines.take(pa.array(rows, pa.int64())).to_pylist()):
        try:
            parsed[row] = next(csv.reader([line], delimiter=delimiter), [])
        except csv.Error:  # SeaTunnel's CsvLineSplitor: a line it cannot parse has no fields
            parsed[row] = []
    return pc.if_else(quoted, pa.array(parsed, pa.list_(pa.string())), plain)


def _partitions_of(path: str) -> list[tuple[str, str]]:
    """SeaTunnel's ``parsePartitionsByPath``: every ``k=v`` part of the path."""
    pairs: dict[str, str] = {}
    for part in path.split("/"):
        if "=" in part:
            pieces = part.split("=")
            pairs[pieces[0]] = pieces[1]
    return list(pairs.items())


def _json_parse_type(kind: pa.DataType) -> pa.DataType | None:
    """The type pyarrow's json reader reads for a column of ``kind`` (converted after):
    dates, times, timestamps and bytes as text; None: let it infer (maps, which it reads
    as rows)."""
    if has_map(kind):
        return None
    if pa.types.is_date(kind) or pa.types.is_time(kind) or pa.types.is_timestamp(kind) or pa.types.is_binary(kind):
        return pa.string()
    if pa.types.is_list(kind):
        return pa.list_(_json_parse_type(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _json_parse_type(f.type)) for f in kind])
    return kind


def _input(file: RangeFile, codec: str | None, where: str) -> Any:
    """``file`` (or its decompressed bytes) as a stream with ``read(n)``."""
    if codec is None:
        return file
    if codec == "lzo":  # buffered: the lzop reader asks for a few bytes at a time
        return LzopReader(io.BufferedReader(file, buffer_size=STREAM_BLOCK_SIZE), where)
    raw = pa.BufferedInputStream(pa.PythonFile(file, mode="r"), buffer_size=STREAM_BLOCK_SIZE)
    return pa.CompressedInputStream(raw, codec)


def _json_content(lines: pa.Array) -> pa.Array:
    """Each json line's ``content`` member as text (a string as it is, another value as its
    json text, as Jackson's ``JsonNode.toString`` gives it; absent or null: null)."""
    values = []
    for line in lines.to_pylist():
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"a line is not json ({exc}): {line[:80]!r}") from None
        value = row.get(CONTENT_COLUMN) if isinstance(row, dict) else None
        if value is not None and not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        values.append(value)
    return pa.array(values, pa.string())


class _ArchiveBatches:
    """The batches of every file in an archive, one entry after the other, each read as
    its own file (``open_entry(stream, where, name, size)``: its header lines skipped,
    its json blocks parsed); empty entries have no rows."""

    def __init__(self, file: RangeFile, codec: str, suffix: str | tuple[str, ...], where: str,
                 open_entry: Callable[[Any, str, str, int], Any]):
        # zip reads its directory at the end, then each entry: seeks, so a buffer over
        # ranged reads; tar is read front to back through the same buffer
        self._raw = io.BufferedReader(file, buffer_size=STREAM_BLOCK_SIZE)
        self._entries = archive_entries(self._raw, codec, suffix, where)
        self._open = open_entry
        self._where = where
        self._current: Any = None

    def read_next_batch(self) -> pa.RecordBatch:
        while True:
            if self._current is None:
                entry = next(self._entries, None)
                if entry is None:
                    raise StopIteration
                name, size, stream = entry
                if size == 0:
                    stream.close()
                    continue
                self._current = self._open(stream, f"{self._where} (entry {name})", name, size)
            try:
                return self._current.read_next_batch()
            except StopIteration:
                self._current.close()
                self._current = None

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None
        self._entries.close()
        self._raw.close()


class _LineBatches:
    """The lines of a text or csv file, one string column ``line`` per block: the first
    ``skip`` lines and empty lines left out."""

    def __init__(self, stream: Any, row_delimiter: str, skip: int, where: str, block_size: int = STREAM_BLOCK_SIZE):
        self._stream = stream
        self._delimiter = row_delimiter
        self._bytes = row_delimiter.encode("utf-8")
        self._skip = skip
        self._where = where
        self._block = block_size
        self._carry = b""
        self._eof = False

    def read_next_batch(self) -> pa.RecordBatch:
        while not self._eof:
            data = self._stream.read(self._block)
            if not data:
                self._eof = True
                chunk, self._carry = self._carry, b""
                if not chunk:
                    break
            else:
                buffer = self._carry + bytes(data)
                cut = buffer.rfind(self._bytes)
                if cut < 0:
                    self._carry = buffer
                    continue
                chunk, self._carry = buffer[:cut], buffer[cut + len(self._bytes):]
            lines = self._lines(chunk)
            if self._skip:
                skipped = min(self._skip, len(lines))
                lines, self._skip = lines.slice(skipped), self._skip - skipped
            lines = lines.filter(pc.greater(pc.binary_length(lines), 0))
            if len(lines):
                return pa.record_batch([lines], names=["line"])
        raise StopIteration

    def _lines(self, chunk: bytes) -> pa.Array:
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{self._where} is not UTF-8 text ({exc})") from None
        lines = pc.split_pattern(pa.array([text], pa.string()), pattern=self._delimiter).values
        if self._delimiter == "\n":  # \r\n line ends, as Java's line reader takes them
            lines = pc.replace_substring_regex(lines, pattern="\r$", replacement="")
        return lines

    def close(self) -> None:
        if not isinstance(self._stream, RangeFile):
            self._stream.close()


class _OrcStripes:
    """An ORC file, one batch per stripe (only ``columns``, when given)."""

    def __init__(self, file: RangeFile, columns: list[str] | None):
        import pyarrow.orc as orc

        self._orc = orc.ORCFile(file)
        self._columns = columns
        self._next = 0

    def read_next_batch(self) -> pa.RecordBatch:
        if self._next >= self._orc.nstripes:
            raise StopIteration
        batch = self._orc.read_stripe(self._next, columns=self._columns)
        self._next += 1
        return batch

    def close(self) -> None:
        pass


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

    plugin_name = "LocalFile"
    #: ``tables_configs``: one source per table (connectors/union.py, via the registry)
    reads_tables_configs = True

    def __init__(self, options: Mapping[str, Any]):
        Source.__init__(self, options)
        plugin = self.plugin_name
        opts = Options(plugin, options, known=SOURCE_OPTIONS | SINK_ONLY_OPTIONS | set(CONNECTION_OPTIONS[plugin]),
                       extra=is_storage_option, extra_hint=STORAGE_HINT)
        if opts.has("tables_configs"):
            raise ConfigError("tables_configs", "one source is one table; load_source makes one per table "
                                                "of tables_configs")
        for name in sorted(SINK_ONLY_OPTIONS & set(options)):
            _warn(plugin, "source", "option %s is a sink option; SeaTunnel's source ignores it, and so does this one",
                  name)
        self.format = _format(opts)
        _warn_excel_xml(plugin, "source", opts, self.format)
        if self.format == "excel":
            _require_excel("file_format_type")
        #: text, csv, json: the files' character encoding (None: UTF-8)
        self.encoding = _encoding(opts)
        if self.encoding is not None and self.format not in _ENCODED_FORMATS:
            _warn(plugin, "source", "encoding %r does not apply to %s files; ignored, as SeaTunnel ignores it",
                  options.get("encoding"), self.format)
            self.encoding = None
        #: checked; text, csv and json values in any of them are recognised, xml values only in the one chosen
        self._temporal_formats = [_choice(opts, name, allowed, default) for name, allowed, default in (
            ("date_format", DATE_FORMATS, "yyyy-MM-dd"), ("datetime_format", DATETIME_FORMATS, "yyyy-MM-dd HH:mm:ss"),
            ("time_format", TIME_FORMATS, "HH:mm:ss"))]
        codec = opts.str("compress_codec", "none").lower()
        self.codec: str | None = None
        if self.format in ("text", "csv", "json"):
            if codec == "lzo":  # lzop files, as SeaTunnel's readers (Hadoop's LzopCodec) read them
                _require_lzo("compress_codec")
            elif codec not in ("none",) + STREAM_CODECS:
                raise ConfigError("compress_codec", f"{codec!r} is not one of none, lzo, {', '.join(STREAM_CODECS)}")
            self.codec = None if codec == "none" else codec
        elif self.format in ("xml", "binary") and codec != "none":  # SeaTunnel's readers read these as they are
            raise ConfigError("compress_codec", f"{codec!r}: {self.format} files are read as they are; remove the option")
        elif self.format == "excel" and codec != "none":  # SeaTunnel's excel reader reads the file as it is
            raise ConfigError("compress_codec", f"{codec!r}: excel files are read as they are (xlsx is zipped "
                                                "already); remove the option")
        # parquet and orc files name their codec themselves, as SeaTunnel's readers find it
        #: zip, tar or tar_gz: each file is an archive whose entries are read one by one
        self.archive: str | None = _archive(opts, self.format, self.codec)

        if self.format == "binary":
            # SeaTunnel's binary reader has its fixed schema and no partition columns
            for name in ("schema", "read_columns"):
                if opts.has(name):
                    _warn(plugin, "source", "%s is ignored for binary files: their rows are data, relativePath, "
                                            "partIndex, as in SeaTunnel", name)
        schema = options.get("schema")
        # a schema block that only names the table (tables_configs over parquet or orc files,
        # whose columns the files carry) declares no columns, as in SeaTunnel
        names_only = isinstance(schema, Mapping) and set(schema) <= {"table"}
        self.columns: list[Column] | None = parse_columns(schema, "schema") if opts.has("schema") and not names_only else None
        #: json without a schema: SeaTunnel's simple text table, one ``content`` column read from each object's
        #: ``content`` member (its JsonDeserializationSchema over that row type); a schema naming no column
        #: (``schema {}``) gives rows of no columns, as SeaTunnel's empty row type does
        self.json_content = self.format == "json" and not opts.has("schema")
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
                if not opts.has(name):
                    raise ConfigError(name, "is required for xml files, as in SeaTunnel")
            self.xml_row_tag = opts.str("xml_row_tag")
            if not self.xml_row_tag.strip():
                raise ConfigError("xml_row_tag", "must name the rows' element")
            self.xml_use_attributes = opts.bool("xml_use_attr_format")
        names = [c.name for c in self.columns] if self.columns is not None else []
        self.read_columns: list[str] | None = opts.str_list("read_columns") if opts.has("read_columns") else None
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

        if options.get("field_delimiter") is not None and options.get("delimiter") is not None \
                and options["field_delimiter"] != options["delimiter"]:
            raise ConfigError("delimiter", "disagrees with field_delimiter (delimiter is its older name); set one")
        key = "delimiter" if options.get("field_delimiter") is None and options.get("delimiter") is not None \
            else "field_delimiter"
        delimiter = _delimiter(options, key, DEFAULT_TEXT_DELIMITER if self.format in ("text", "excel", "xml") else ",")
        self.splitter = _field_splitter(plugin, self.format, delimiter, key)
        self.row_delimiter = _delimiter(options, "row_delimiter", "\n")
        if self.row_delimiter != "\n" and self.format != "parquet" and self.format != "orc":
            how = "ignores it (json files are read a line per row)" if self.format == "json" else \
                "splits rows at it; SeaTunnel's reader splits them at line breaks whatever row_delimiter says"
            _warn(plugin, "source", "row_delimiter %r: this reader %s", self.row_delimiter, how)
        self.skip_header: int = opts.int("skip_header_row_number", 0, minimum=0)
        self.sheet_name: str | None = opts.str("sheet_name", None) if self.format == "excel" else None
        pattern = opts.str("file_filter_pattern", None)
        try:
            self.file_filter = re.compile(pattern) if pattern is not None else None
        except re.error as exc:
            raise ConfigError("file_filter_pattern", f"{pattern!r} is not a valid regular expression: {exc}") from None
        self.parse_partitions: bool = opts.bool("parse_partition_from_path", True) and self.format != "binary"
        self.read_partitions: list[str] = opts.str_list("read_partitions") if opts.has("read_partitions") else []
        self.batch_size = None
        self.fs, self.root, self.url = open_seatunnel_storage(plugin, options)
        self._partition_keys: list[str] | None = None
        #: the splits of the one listing of ``path`` (preflight's, then the plan's)
        self._planned: list[Split] | None = None

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
                        raise ConfigError(option_key(self, "schema"), f"column {clash[0]!r} is also a partition of "
                                          f"{self.fs.describe(path)}; leave partition columns out of the schema")
                elif [k for k, _ in pairs] != keys:
                    raise ConfigError(option_key(self, "path"), f"{self.fs.describe(path)} has partitions "
                                      f"{[k for k, _ in pairs]}, the first file {keys}: the files must have the same "
                                      "partition directories (or set parse_partition_from_path = false)")
                spec["partitions"] = [list(pair) for pair in pairs]
            planned.append(Split(split.split_id, spec))
        self._partition_keys = keys or []
        return planned

    def preflight(self) -> None:
        if self.parse_partitions and self._partition_keys is None:
            self.splits(1)  # the partition columns are in the files' paths

    def produced_schema(self) -> pa.Schema | None:
        if self.format == "binary":
            return binary_format.SCHEMA
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
            return binary_format.BinaryReader(file, binary_format.relative_path(self.root, str(split.spec["path"])),
                                              offset, batch_size, where)
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
                    return xml_format.XmlBatches(stream, self.encoding, row_tag, use_attributes, xml_names, at,
                                                 batch_size)
            elif fmt == "json" and self.json_content:  # read as lines: any member types, parsed in _shape
                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    return _LineBatches(self._decoded(stream), "\n", 0, at)
            elif fmt == "json":
                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    return self._open_json(self._decoded(stream))
            elif fmt == "excel":
                suffix = excel_format.SUFFIXES  # SeaTunnel's FileFormat.EXCEL: xlsx and xls
                fields = [(index, c.name, c.type) for index, c in self.selected]

                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    if self.archive is not None:
                        stream = excel_format.read_entry(stream, size, at)
                    else:  # openpyxl seeks in the file: a buffer over the ranged reads
                        stream = io.BufferedReader(stream, buffer_size=STREAM_BLOCK_SIZE)
                    return excel_format.ExcelBatches(stream, name, at, self.sheet_name, self.skip_header, fields,
                                                     self.splitter[1], batch_size)
            else:
                def open_file(stream: Any, at: str, name: str, size: int) -> Any:
                    return _LineBatches(self._decoded(stream), self.row_delimiter, self.skip_header, at)
            if self.archive is not None:  # a position counts rows across the entries, in archive order
                archive = self.archive
                inner = StreamReader(file, lambda f: _ArchiveBatches(f, archive, suffix, where, open_file),
                                     offset, batch_size, where)
            else:
                path = str(split.spec["path"])
                inner = StreamReader(file, lambda f: open_file(_input(f, self.codec, where), where, path, f.size),
                                     offset, batch_size, where)
        else:
            return super()._format_reader(split, fmt, file, offset, batch_size, where)
        partitions = [tuple(pair) for pair in split.spec.get("partitions") or ()] if self.parse_partitions else []
        return _ShapedReader(inner, lambda batch: self._shape(fmt, batch, partitions), where)

    def _xml_formats(self) -> xml_format.XmlFormats:
        date, datetime_format, time_format = self._temporal_formats
        pattern, digits = DATETIME_FORMATS[datetime_format]
        return xml_format.XmlFormats((DATE_FORMATS[date], date), (pattern, digits, datetime_format),
                                     (TIME_FORMATS[time_format], time_format),
                                     self.splitter[1] if self.splitter[0] == "regex" else re.escape(self.splitter[1]))

    def _decoded(self, stream: Any) -> Any:
        return stream if self.encoding is None else _Transcoded(stream, self.encoding)

    def _open_json(self, stream: Any) -> Any:
        import pyarrow.json as pajson

        parse = [(c.name, _json_parse_type(c.type)) for _, c in self.selected]
        explicit = pa.schema([pa.field(name, kind) for name, kind in parse if kind is not None])
        infer = any(kind is None for _, kind in parse)
        return pajson.open_json(
            stream,
            read_options=pajson.ReadOptions(block_size=STREAM_BLOCK_SIZE),
            parse_options=pajson.ParseOptions(explicit_schema=explicit,
                                              unexpected_field_behavior="infer" if infer else "ignore"),
        )

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
            arrays = [xml_format.convert(batch.column(c.name), c.type, c.name, formats) for _, c in self.selected]
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
                if c.name in present else pa.nulls(batch.num_rows, c.type)
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


class LocalFileSource(SeaTunnelFileSource):
    plugin_name = "LocalFile"


class S3FileSource(SeaTunnelFileSource):
    plugin_name = "S3File"


class OssFileSource(SeaTunnelFileSource):
    plugin_name = "OssFile"


class HdfsFileSource(SeaTunnelFileSource):
    plugin_name = "HdfsFile"


# ---------------------------------------------------------------------------------------
# sink

#: a file name's transaction id: T_{job tag}_{subtask}_{attempt}_{checkpoint id}
_TRANSACTION_RE = re.compile(r"T_([0-9a-f]{8})_(\d+)_(\d+)_(\d{10,})")
_VARIABLE_RE = re.compile(r"\$\{([^}]*)\}")
#: Java DateTimeFormatter letters filename_time_format may use -> value of a datetime
_TIME_FIELDS: dict[str, Callable[[dt.datetime], str]] = {
    "yyyy": lambda t: f"{t.year:04d}", "yy": lambda t: f"{t.year % 100:02d}", "MM": lambda t: f"{t.month:02d}",
    "M": lambda t: str(t.month), "dd": lambda t: f"{t.day:02d}", "d": lambda t: str(t.day),
    "HH": lambda t: f"{t.hour:02d}", "H": lambda t: str(t.hour), "mm": lambda t: f"{t.minute:02d}",
    "m": lambda t: str(t.minute), "ss": lambda t: f"{t.second:02d}", "s": lambda t: str(t.second),
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

    sink: "SeaTunnelFileSink"

    @classmethod
    def over(cls, committer: FileSinkCommitter, sink: "SeaTunnelFileSink") -> "_SaveModeCommitter":
        wrapped = cls.__new__(cls)
        wrapped.__dict__.update(committer.__dict__)
        wrapped.sink = sink
        return wrapped

    def start_fresh(self) -> None:
        super().start_fresh()
        sink, fs, root = self.sink, self.fs, self.root
        if sink.data_save_mode == "ERROR_WHEN_DATA_EXISTS" and sink.schema_save_mode != "RECREATE_SCHEMA":
            found = next((f for f in fs.walk_files(root) if not _hidden_below(f.path[len(root):].lstrip("/"))), None)
            if found is not None:
                raise ConfigError(option_key(sink, "data_save_mode"),
                                  f"{fs.describe(root)} holds files ({fs.describe(found.path)}): ERROR_WHEN_DATA_EXISTS")
        if sink.schema_save_mode == "RECREATE_SCHEMA" or sink.data_save_mode == "DROP_DATA":
            if fs.info(root) is not None:
                mode = "schema_save_mode = RECREATE_SCHEMA" if sink.schema_save_mode == "RECREATE_SCHEMA" \
                    else "data_save_mode = DROP_DATA"
                log.warning("%s sink: deleting %s before the job's first checkpoint (%s)", sink.plugin_name,
                            fs.describe(root), mode)
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
            tokens.append((False, pattern[i + 1:end] if end > i + 1 else "'"))
            i = end + 1
        elif char.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == char:
                j += 1
            if pattern[i:j] not in _TIME_FIELDS:
                raise ConfigError(key, f"{pattern[i:j]!r} in {pattern!r} is not supported; use "
                                       f"{', '.join(_TIME_FIELDS)} and literal text")
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


def _column_list(options: Mapping[str, Any], name: str) -> list[str]:
    value = options.get(name)
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)) \
            or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(name, f"expected a list of column names, got {value!r}")
    if len({v.lower() for v in value}) != len(value):
        raise ConfigError(name, f"lists a column more than once: {value!r}")
    return list(value)


class _TextEncoder:
    """One text or csv output file in SeaTunnel's text format: the header line when
    asked, then rows separated by ``row_delimiter`` (none after the last row)."""

    #: it writes as rows come: nothing is held back (file_sink's writer limits what encoders gather)
    gathered_bytes = 0

    def __init__(self, fmt: str, schema: pa.Schema, out: NewFile, field_delimiter: str, row_delimiter: str,
                 header: bool, formats: TextFormats, encoding: str | None = None):
        self.format = fmt
        self._encoding = encoding
        self.schema = schema
        self.rows = 0
        self.out = out
        self.path = out.path
        self._delimiter = "," if fmt == "csv" else field_delimiter  # SeaTunnel's csv writer: always ","
        self._row = row_delimiter
        self._formats = formats
        self._started = False
        if header:
            names = pa.array(schema.names, pa.string())
            if fmt == "csv":
                names = _csv_quote(names, ",")
            out.write(_encode(self._delimiter.join(names.to_pylist()) + row_delimiter, encoding, out.path))

    @property
    def size(self) -> int:
        return self.out.tell()

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        columns = [to_text(batch.column(i), self._formats, field.name) for i, field in enumerate(batch.schema)]
        if self.format == "csv":
            columns = [_csv_quote(column, ",") for column in columns]
        lines = pc.binary_join_element_wise(*columns, self._delimiter)
        body = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines), self._row)
        if self._started:
            self.out.write(_encode(self._row, self._encoding, self.path))
        if self._encoding is None:
            self.out.write(body[0].as_buffer())
        else:
            self.out.write(_encode(body[0].as_py(), self._encoding, self.path))
        self._started = True
        self.rows += batch.num_rows

    def finish(self) -> int:
        self.out.close()
        return self.rows

    def abandon(self) -> None:
        """Nothing is held back (the file sink calls it on a file it discards)."""


class _LzopNewFile(LzopWriter):
    """A staged file written as an lzop file: what the encoders write is compressed;
    ``sync`` and ``discard`` (the file sink's commit) reach the file underneath."""

    def __init__(self, out: NewFile):
        super().__init__(out, mtime=int(time.time()))
        self.path = out.path
        self._file = out

    def sync(self) -> None:
        self.close()
        self._file.sync()

    def discard(self) -> None:
        self.closed = True
        self._file.discard()


class _JsonEncoder(_FileEncoder):
    """One json output file: an object per row, rows separated by ``row_delimiter`` (none
    after the last), as SeaTunnel writes it: maps as objects, decimals as numbers, bytes
    as base64, dates and times in ISO form."""

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
        text = self._row.join(json.dumps(row, default=self._default, ensure_ascii=False) for row in rows)
        if self._marker in text:
            text = self._number.sub(r"\1", text)
        self.out.write(_encode((self._row if self._started else "") + text, self._encoding, self.path))
        self._started = True
        self.rows += batch.num_rows

    def _default(self, value: Any) -> Any:
        if isinstance(value, decimal.Decimal):
            return f"\u0000{self._marker}{value}\u0000"
        return _json_default(value)


class SeaTunnelFileSink(FileSink):
    """SeaTunnel's file sink (``LocalFile`` and the others below): the ``File`` sink's
    two-phase commit with SeaTunnel's options, formats, partition directories and names."""

    plugin_name = "LocalFile"
    nested_output = True

    def __init__(self, options: Mapping[str, Any]):
        Sink.__init__(self, options)
        plugin = self.plugin_name
        opts = Options(plugin, options, known=SINK_OPTIONS | set(CONNECTION_OPTIONS[plugin]),
                       extra=is_storage_option, extra_hint=STORAGE_HINT)
        self.format: str = _format(opts, "csv")
        if self.format == "xml":
            raise ConfigError("file_format_type", "xml files are read, not written here yet; supported for sinks: "
                                                  f"{', '.join(f for f in FORMATS if f != 'xml')}")
        _warn_excel_xml(plugin, "sink", opts, self.format)
        if self.format == "excel":
            _require_excel("file_format_type")
        #: text, csv, json: the character encoding written (None: UTF-8)
        self.encoding = _encoding(opts)
        if self.encoding is not None and self.format not in _ENCODED_FORMATS:
            _warn(plugin, "sink", "encoding %r does not apply to %s files; ignored, as SeaTunnel ignores it",
                  options.get("encoding"), self.format)
            self.encoding = None
        _check_archive(opts)
        self._date_format = _choice(opts, "date_format", DATE_FORMATS, "yyyy-MM-dd")
        self._datetime_format = _choice(opts, "datetime_format", DATETIME_FORMATS, "yyyy-MM-dd HH:mm:ss")
        self._time_format = _choice(opts, "time_format", TIME_FORMATS, "HH:mm:ss")
        self.formats = TextFormats(self._date_format, self._datetime_format, self._time_format)
        codec = opts.str("compress_codec", "none").lower()
        #: text, csv and json files written as lzop files (SeaTunnel: Hadoop's LzopCodec)
        self.lzo = False
        if self.format in ("text", "csv", "json"):
            if codec == "lzo":
                _require_lzo("compress_codec")
                self.lzo = True
            elif codec != "none":
                raise ConfigError("compress_codec", f"{codec!r}: {self.format} files are written uncompressed or "
                                                    "with lzo, as SeaTunnel writes them")
            self.compression: str | None = None
        elif self.format == "binary":
            if codec != "none":
                raise ConfigError("compress_codec", f"{codec!r}: binary files are written as they are")
            self.compression = None
        elif self.format == "excel":
            if codec != "none":  # SeaTunnel's docs: "excel type does not support any compression format"
                raise ConfigError("compress_codec", f"{codec!r}: excel files are written uncompressed (xlsx is "
                                                    "zipped already), as SeaTunnel writes them")
            self.compression = None
        else:
            allowed = SINK_CODECS[self.format]
            if codec == "lzo":
                raise ConfigError("compress_codec", f"lzo is not supported for {self.format} files (pyarrow writes "
                                                    f"no lzo); use one of {', '.join(allowed)}")
            if codec not in allowed:
                raise ConfigError("compress_codec", f"{codec!r} is not one of {', '.join(allowed)} for "
                                                    f"{self.format} files")
            self.compression = allowed[codec]
        self.codec_suffix = CODEC_SUFFIX.get(codec, "")
        self.field_delimiter = _delimiter(options, "field_delimiter", DEFAULT_TEXT_DELIMITER)
        self.row_delimiter = _delimiter(options, "row_delimiter", "\n")
        self.header: bool = opts.bool("enable_header_write", False)
        #: excel: the sheet's name (SeaTunnel: Sheet<random int>); max_rows_in_memory is accepted and needs
        #: nothing (openpyxl's write-only sheet keeps no rows in memory)
        self.sheet_name: str | None = opts.str("sheet_name", None) if self.format == "excel" else None
        if self.format == "excel" and opts.has("max_rows_in_memory"):
            opts.int("max_rows_in_memory", 0)

        self.sink_columns = _column_list(options, "sink_columns")  # empty: every column, as in SeaTunnel
        self.partition_by = _column_list(options, "partition_by")
        have_partition = opts.bool("have_partition", False)
        if self.partition_by and opts.has("have_partition") and not have_partition:
            _warn(plugin, "sink", "partition_by is set and have_partition = false: the files are partitioned by "
                                  "partition_by all the same, as SeaTunnel does")
        if self.sink_columns and not {c.lower() for c in self.partition_by} <= {c.lower() for c in self.sink_columns}:
            raise ConfigError("partition_by", "partition fields must be in sink_columns, as in SeaTunnel")
        self.partition_in_file: bool = opts.bool("is_partition_field_write_in_file", False)
        self.partition_template: str | None = opts.str("partition_dir_expression", None)

        self.transactional: bool = opts.bool("is_enable_transaction", True)
        expression = opts.str("file_name_expression", "${transactionId}")
        if opts.has("file_name_expression") and opts.has("custom_filename") and not opts.bool("custom_filename"):
            _warn(plugin, "sink", "file_name_expression is used although custom_filename = false, as SeaTunnel's "
                                  "code does (its docs say otherwise)")
        if "${transactionId}" not in expression:
            if self.transactional:
                raise ConfigError("file_name_expression", "must contain ${transactionId} when is_enable_transaction "
                                                          "is true, as in SeaTunnel")
            expression = "${transactionId}_" + expression
            _warn(plugin, "sink", "file names start with ${transactionId}_ here (file_name_expression lacks it): "
                                  "it is how a restore finds this job's files")
        if not self.transactional:
            _warn(plugin, "sink", "is_enable_transaction = false: output is written through the two-phase commit "
                                  "all the same (files appear, exactly once, when a checkpoint completes)")
        if "/" in expression or expression.startswith(("_", ".")):
            raise ConfigError("file_name_expression", f"{expression!r} must make a visible file name: no '/', "
                                                      "not starting with '_' or '.'")
        self.file_name_expression = expression
        self.filename_time_format = opts.str("filename_time_format", "yyyy.MM.dd")
        self._time_tokens = _time_tokens(self.filename_time_format, "filename_time_format")
        if opts.bool("single_file_mode", False):
            raise ConfigError("single_file_mode", "is not supported: each writer commits its own files at every "
                                                  "checkpoint, which is what makes the output exactly once")
        if opts.has("tmp_path"):
            _warn(plugin, "sink", "tmp_path is ignored: files are staged under path/_staging and renamed when a "
                                  "checkpoint completes")
        if opts.has("save_mode"):
            _warn(plugin, "sink", "save_mode is not read by SeaTunnel's file sinks (an option of older releases; "
                                  "data_save_mode replaced it); ignored")
        for name, default in (("schema_save_mode", "CREATE_SCHEMA_WHEN_NOT_EXIST"), ("data_save_mode", "APPEND_DATA")):
            mode = opts.str(name, default).upper()
            if mode == "CUSTOM_PROCESSING":
                raise ConfigError(name, "CUSTOM_PROCESSING is not supported: SeaTunnel's file catalogs run no SQL")
            allowed = ("RECREATE_SCHEMA", "CREATE_SCHEMA_WHEN_NOT_EXIST", "ERROR_WHEN_SCHEMA_NOT_EXIST", "IGNORE") \
                if name == "schema_save_mode" else ("APPEND_DATA", "DROP_DATA", "ERROR_WHEN_DATA_EXISTS")
            if mode not in allowed:
                raise ConfigError(name, f"{mode!r} is not one of {', '.join(allowed)}")
        self.schema_save_mode = opts.str("schema_save_mode", "CREATE_SCHEMA_WHEN_NOT_EXIST").upper()
        self.data_save_mode = opts.str("data_save_mode", "APPEND_DATA").upper()
        if plugin == "HdfsFile" and (self.schema_save_mode == "RECREATE_SCHEMA" or self.data_save_mode != "APPEND_DATA"):
            # SeaTunnel's HdfsFile has no catalog, so its save modes never run
            _warn(plugin, "sink", "schema_save_mode %s / data_save_mode %s do nothing on HdfsFile, as in SeaTunnel "
                                  "(it has no catalog); the directory is left as it is", self.schema_save_mode,
                  self.data_save_mode)
            self.schema_save_mode = "CREATE_SCHEMA_WHEN_NOT_EXIST"
            self.data_save_mode = "APPEND_DATA"
        if opts.bool("parquet_avro_write_timestamp_as_int96", False):
            raise ConfigError("parquet_avro_write_timestamp_as_int96", "is not supported: timestamps are written as "
                                                                       "parquet INT64 timestamps")
        if options.get("parquet_avro_write_fixed_as_int96"):
            raise ConfigError("parquet_avro_write_fixed_as_int96", "is not supported")
        self.max_file_rows = opts.int("batch_size", 1_000_000, minimum=1)
        self.max_file_bytes = DEFAULT_MAX_FILE_BYTES
        self.extension = EXTENSIONS[self.format]
        self.fs, self.root, self.url = open_seatunnel_storage(plugin, options)
        self._layout_cache: tuple[pa.Schema, tuple[list[int], list[int]]] | None = None

    # -- checks (driver) -----------------------------------------------------------------
    def preflight(self) -> None:
        if self.schema_save_mode == "ERROR_WHEN_SCHEMA_NOT_EXIST" and self.fs.info(self.root) is None:
            raise ConfigError(option_key(self, "schema_save_mode"),
                              f"{self.fs.describe(self.root)} does not exist (ERROR_WHEN_SCHEMA_NOT_EXIST)")

    def create_committer(self, job_id: str) -> FileSinkCommitter:
        committer = super().create_committer(job_id)
        if self.schema_save_mode != "RECREATE_SCHEMA" and self.data_save_mode == "APPEND_DATA":
            return committer
        return _SaveModeCommitter.over(committer, self)

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> Any:
        if self.format == "binary":
            return binary_format.BinaryWriter(self, job_id, subtask, attempt)
        return super().create_writer(job_id, subtask, attempt)

    def accepts(self, schema: pa.Schema) -> None:
        if self.format == "binary":
            problem = binary_format.check_schema(schema)
            if problem is not None:
                raise ConfigError(option_key(self, "file_format_type"), problem)
            return
        written, _ = self._layout(schema)
        if self.format == "orc":
            for index in written:
                if pa.types.is_time(schema.field(index).type):
                    raise ConfigError(option_key(self, "file_format_type"),
                                      f"orc files cannot hold time column {schema.field(index).name!r}")

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
                raise ConfigError(option_key(self, key), f"no column {name!r} in the rows; they have "
                                                         f"{', '.join(names)}")
            return index

        sink = [find(c, "sink_columns") for c in self.sink_columns] or list(range(len(names)))
        partition = [find(c, "partition_by") for c in self.partition_by]
        written = sink if self.partition_in_file else [i for i in sink if i not in partition]
        if not written:
            raise ConfigError(option_key(self, "sink_columns"), "no column is left to write once the partition "
                                                                "fields are left out (is_partition_field_write_in_file)")
        self._layout_cache = (schema, (written, partition))
        return written, partition

    # -- writing (executors) -------------------------------------------------------------
    def new_encoder(self, schema: pa.Schema, out: NewFile) -> Any:
        if self.lzo:
            out = _LzopNewFile(out)  # type: ignore[assignment]  # a NewFile's face over the lzop writer
        if self.format in ("text", "csv"):
            return _TextEncoder(self.format, schema, out, self.field_delimiter, self.row_delimiter, self.header,
                                self.formats, self.encoding)
        if self.format == "json":
            return _JsonEncoder(schema, out, self.row_delimiter, self.encoding)
        if self.format == "excel":
            return excel_format.ExcelEncoder(schema, out, self.sheet_name, self.field_delimiter, self._date_format,
                                             self._datetime_format, self._time_format, self.formats)
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
            mapping = {**{f"k{i}": k for i, k in enumerate(self.partition_by)},
                       **{f"v{i}": v for i, v in enumerate(values)}}
            text = _substitute(self.partition_template, mapping)
        parts = [part for part in text.split("/") if part]
        for part in parts:
            if part in (".", "..") or part.startswith(("_", ".")):
                raise ValueError(f"{self.plugin_name} sink: partition directory {text!r} (values {list(values)}) has "
                                 f"the part {part!r}, which readers would skip or which leaves {self.fs.describe(self.root)}")
        return "/".join(parts)

    def final_names(self, tag: str, subtask: int, attempt: int, checkpoint_id: int, count: int) -> list[str]:
        """``{file_name_expression}_{n}{.codec}.{ext}``; see the module docstring."""
        transaction = f"T_{tag}_{subtask}_{attempt}_{checkpoint_id:010d}"
        now = _format_time(self._time_tokens, dt.datetime.now())
        names = []
        for index in range(count):
            values = {"transactionId": transaction, "now": now, "uuid": str(uuid.uuid4()),
                      self.filename_time_format: now}
            name = _substitute(self.file_name_expression, values)
            names.append(f"{name}_{index}{self.codec_suffix}.{self.extension}")
        return names

    @staticmethod
    def parse_final_name(name: str) -> tuple[str, int] | None:
        match = _TRANSACTION_RE.search(name)
        return (match.group(1), int(match.group(4))) if match else None


class LocalFileSink(SeaTunnelFileSink):
    plugin_name = "LocalFile"


class S3FileSink(SeaTunnelFileSink):
    plugin_name = "S3File"


class OssFileSink(SeaTunnelFileSink):
    plugin_name = "OssFile"


class HdfsFileSink(SeaTunnelFileSink):
    plugin_name = "HdfsFile"
