"""The file formats: the ``File`` connector's (parquet, csv, jsonl, named here) and
SeaTunnel's (``file_format_type``: one module each, :mod:`.text`, :mod:`.csv`,
:mod:`.json`, :mod:`.parquet`, :mod:`.orc`, :mod:`.excel`, :mod:`.xml`, :mod:`.binary`;
:mod:`.convert` casts read columns to a schema)."""

from __future__ import annotations

import posixpath
from typing import Any

from ....errors import ConfigError

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


def format_from_name(name: str) -> str | None:
    """``parquet`` / ``csv`` / ``jsonl`` from a file name's extension, else None."""
    return _BY_EXTENSION.get(posixpath.splitext(name)[1].lower())


def check_optional_format(value: Any) -> str | None:
    """``format`` when given (None: not given)."""
    return None if value is None else check_format(value)


def check_format(value: Any, key: str = "format") -> str:
    if not isinstance(value, str) or value.strip().lower() not in FORMATS + ("json",):
        raise ConfigError(key, f"{value!r} is not one of {', '.join(FORMATS)}")
    value = value.strip().lower()
    return "jsonl" if value == "json" else value
