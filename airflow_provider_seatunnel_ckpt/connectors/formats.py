"""File formats the File source and sink understand, and storage-option plumbing."""

from __future__ import annotations

import posixpath
from typing import Any, Mapping

from ..errors import ConfigError
from ..storage.filesystem import FileSystem
from ..storage.urls import filesystem_for_url, is_storage_option

FORMATS = ("parquet", "csv", "jsonl")
#: file extension of each format's output
EXTENSIONS = {"parquet": "parquet", "csv": "csv", "jsonl": "jsonl"}
_BY_EXTENSION = {
    ".parquet": "parquet",
    ".parq": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}
STORAGE_HINT = "storage options such as fs.s3a.endpoint, fs.oss.endpoint, webhdfs.url, seatunnel.hadoop.*"


def format_from_name(name: str) -> str | None:
    """``parquet`` / ``csv`` / ``jsonl`` from a file name's extension, else None."""
    return _BY_EXTENSION.get(posixpath.splitext(name)[1].lower())


def is_hidden(name: str) -> bool:
    """Spark's and pyarrow's rule: names starting with ``_`` or ``.`` are not data."""
    return name.startswith(("_", "."))


def open_storage(options: Mapping[str, Any], path_option: str = "path") -> tuple[FileSystem, str]:
    """The file system and root for a connector's ``path`` and its storage options."""
    storage = {k: v for k, v in options.items() if is_storage_option(k)}
    return filesystem_for_url(options.get(path_option), storage, key=path_option)  # type: ignore[arg-type]


def check_format(value: Any, key: str = "format") -> str:
    if not isinstance(value, str) or value.strip().lower() not in FORMATS + ("json",):
        raise ConfigError(key, f"{value!r} is not one of {', '.join(FORMATS)}")
    value = value.strip().lower()
    return "jsonl" if value == "json" else value
