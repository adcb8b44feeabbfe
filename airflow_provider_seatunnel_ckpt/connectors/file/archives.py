"""Archives SeaTunnel's file sources read (``archive_compress_codec``: ``zip``, ``tar``,
``tar_gz``): each file is an archive whose entries are read one after the other, each as
a file of the source's format."""

from __future__ import annotations

import io
import logging
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ...storage.urls import RangeFile
from .storage import STREAM_BLOCK_SIZE

log = logging.getLogger(__name__)

#: archive_compress_codec -> tarfile's streaming mode (zip is read through its directory)
TAR_MODES = {"tar": "r|", "tar_gz": "r|gz"}
ARCHIVE_CODECS = ("zip",) + tuple(TAR_MODES)


_ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    tarfile.TarError,
    EOFError,
    zlib.error,
    OSError,
    NotImplementedError,
    RuntimeError,
)


class _OneWay:
    """An archive entry as a plain forward stream: tarfile's streamed entries claim to be
    seekable and then fail, and pyarrow asks. A broken archive found while reading (a bad
    CRC, a truncated gzip stream) is the same one line as one found while listing."""

    def __init__(self, stream: Any, what: str, where: str):
        self._stream = stream
        self._what = what
        self._where = where
        self.closed = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def read(self, size: int | None = -1) -> bytes:
        try:
            return self._stream.read(-1 if size is None else size)
        except _ARCHIVE_ERRORS as exc:
            raise _broken(self._what, self._where, exc) from None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._stream.close()


def archive_entries(raw: Any, codec: str, suffix: str | tuple[str, ...], where: str) -> Iterator[tuple[str, int, Any]]:
    """(name, size, stream) of each file in the archive ``raw`` (buffered and seekable
    for zip; read front to back for tar), in archive order, as SeaTunnel reads them:
    directories are skipped, and so are files whose name does not end with ``suffix``
    (or one of them: excel's ``.xlsx`` and ``.xls``; a warning says so). Each stream
    must be read before the next entry is asked for. Broken archives raise one ``ValueError`` line naming ``where``."""
    what = codec.replace("_", ".")
    try:
        if codec == "zip":
            with zipfile.ZipFile(raw) as archive:
                for info in archive.infolist():
                    if info.is_dir() or not _wanted(info.filename, suffix, where):
                        continue
                    with archive.open(info) as stream:
                        yield info.filename, info.file_size, _OneWay(stream, what, where)
        else:
            with tarfile.open(fileobj=raw, mode=TAR_MODES[codec]) as archive:
                for member in archive:
                    if not member.isfile() or not _wanted(member.name, suffix, where):
                        continue
                    stream = archive.extractfile(member)
                    assert stream is not None  # a regular file has contents
                    yield member.name, member.size, _OneWay(stream, what, where)
    except _ARCHIVE_ERRORS as exc:
        raise _broken(what, where, exc) from None


def _broken(what: str, where: str, exc: BaseException) -> ValueError:
    return ValueError(f"{where}: not a valid {what} archive: {exc or type(exc).__name__}")


def _wanted(name: str, suffix: str | tuple[str, ...], where: str) -> bool:
    if name.endswith(suffix):
        return True
    log.warning(
        "%s: archive entry %s is skipped: its name does not end with %s (SeaTunnel reads only those)",
        where,
        name,
        suffix if isinstance(suffix, str) else " or ".join(suffix),
    )
    return False


class _ArchiveBatches:
    """The batches of every file in an archive, one entry after the other, each read as
    its own file (``open_entry(stream, where, name, size)``: its header lines skipped,
    its json blocks parsed); empty entries have no rows."""

    def __init__(
        self,
        file: RangeFile,
        codec: str,
        suffix: str | tuple[str, ...],
        where: str,
        open_entry: Callable[[Any, str, str, int], Any],
    ):
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
