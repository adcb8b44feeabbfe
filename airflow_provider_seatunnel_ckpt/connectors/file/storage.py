"""Where the file connectors' files are: a connector's ``path`` and storage options
(:mod:`~airflow_provider_seatunnel_ckpt.storage.urls`) as a file system and a root, and
:class:`FileStorage`, the base of SeaTunnel's storage plugins (``LocalFile``, ``S3File``,
``OssFile``, ``HdfsFile``: :mod:`.local`, :mod:`.s3`, :mod:`.oss`, :mod:`.hdfs`), each
mapping its connection options onto a URL and storage options."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from ...errors import ConfigError
from ...storage.filesystem import FileSystem
from ...storage.urls import filesystem_for_url, is_storage_option
from ..options import Option

#: bytes per block for the streaming readers (csv, jsonl and SeaTunnel's formats). pyarrow's
#: csv and json readers read up to about 36 blocks ahead of what they decode, on their I/O
#: thread (measured with pyarrow 26: 36-39 MB of an 89 MB file before its first batch), so
#: an open text file holds at most that much, whatever its size
STREAM_BLOCK_SIZE = 1 << 20
STORAGE_HINT = "storage options such as fs.s3a.endpoint, fs.oss.endpoint, webhdfs.url, seatunnel.hadoop.*"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

#: ``put(storage option, value, connector option)``: sets a storage option, refusing a disagreement
Put = Callable[[str, Any, str], None]


def is_hidden(name: str) -> bool:
    """Spark's and pyarrow's rule: names starting with ``_`` or ``.`` are not data."""
    return name.startswith(("_", "."))


def open_storage(options: Mapping[str, Any], path_option: str = "path") -> tuple[FileSystem, str]:
    """The file system and root for a connector's ``path`` and its storage options."""
    storage = {k: v for k, v in options.items() if is_storage_option(k)}
    return filesystem_for_url(options.get(path_option), storage, key=path_option)  # type: ignore[arg-type]


class FileStorage:
    """How one SeaTunnel file connector's ``path`` and connection options (``bucket``,
    ``access_key``, ``fs.defaultFS``...) name a file system; the storage options are
    accepted besides them."""

    #: the connector's name, in messages
    plugin: ClassVar[str]
    #: its connection options (besides the storage options), checked by ``url``
    connection_options: ClassVar[tuple[Option, ...]] = ()
    #: connection option -> the storage option it sets
    storage_keys: ClassVar[Mapping[str, str]] = {}
    #: whether the sink's save modes apply (SeaTunnel's HdfsFile has no catalog: they do nothing there)
    has_catalog: ClassVar[bool] = True

    def url(self, path: str, scheme: str, options: Mapping[str, Any], storage: dict[str, Any], put: Put) -> str:
        """The URL of ``path`` (``scheme``: its URL scheme, lower case, or ``""``); may set
        storage options through ``put`` (or ``storage`` for defaults)."""
        raise NotImplementedError

    def open(self, options: Mapping[str, Any]) -> tuple[FileSystem, str, str]:
        """The file system, root path and URL of the connector's ``options``."""
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
        scheme = _SCHEME.match(path).group(1).lower() if _SCHEME.match(path) else ""
        for name, target in self.storage_keys.items():
            if options.get(name) is not None:
                put(target, options[name], name)
        url = self.url(path, scheme, options, storage, put)
        try:
            return (*filesystem_for_url(url, storage, key="path"), url)
        except ConfigError as err:
            key = source_of.get(err.key, err.key)
            if key == "path" and options.get("bucket") is not None and "bucket" in err.problem:
                key = "bucket"  # the URL's bucket came from the bucket option
            raise ConfigError(key, err.problem) from None


def bucket_name(value: Any, schemes: Sequence[str], key: str = "bucket") -> str:
    """The name of a ``bucket`` option (``s3a://name``, ``oss://name`` or ``name``)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"expected a bucket such as {schemes[0]}://name, got {value!r}")
    text = value.strip().rstrip("/")
    match = _SCHEME.match(text)
    if match:
        if match.group(1).lower() not in schemes:
            raise ConfigError(key, f"{value!r} is not a {' or '.join(schemes)} bucket")
        text = text[match.end() :]
    if not text or "/" in text:
        raise ConfigError(key, f"expected a bucket such as {schemes[0]}://name, got {value!r}")
    return text
