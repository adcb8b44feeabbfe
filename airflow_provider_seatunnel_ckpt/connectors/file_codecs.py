"""Containers SeaTunnel's file connectors read and write around text, csv and json
files: lzop files (``compress_codec = lzo``) and archives (``archive_compress_codec``).

lzop is the format of the ``lzop`` tool and of Hadoop's ``LzopCodec``, which SeaTunnel's
sinks write and its sources read::

    magic 89 4c 5a 4f 00 0d 0a 1a 0a
    header  version u16, lib version u16, [version needed u16], method u8, [level u8],
            flags u32, [filter u32], mode u32, mtime u32, [mtime high u32],
            name length u8, name, checksum u32 (adler32, or crc32 with F_H_CRC32)
            [extra field: length u32, data, checksum u32]
    blocks  uncompressed length u32 (0 ends the file), compressed length u32,
            checksums as the flags say, data (stored as it is when the lengths are equal)

(fields in brackets: only from version 0x0940 on, or when a flag says so; all big-endian).
The blocks are LZO1X, through ``lzallright`` (the ``lzo`` extra).
"""

from __future__ import annotations

import logging
import struct
import tarfile
import zipfile
import zlib
from typing import Any, Iterator

from ..storage.urls import ReadStream

log = logging.getLogger(__name__)

LZOP_MAGIC = b"\x89LZO\x00\r\n\x1a\n"
#: SeaTunnel's sink (aircompressor's LzopCodec) reads only files whose flags are 0 and
#: whose header says at most these versions, so the writer says exactly that
_WRITE_VERSION, _WRITE_LIB_VERSION, _WRITE_NEEDED = 0x1010, 0x2050, 0x0940
_METHOD_LZO1X_1, _LEVEL = 1, 5
_LZO1X_METHODS = (1, 2, 3)  # LZO1X-1, LZO1X-1(15), LZO1X-999: one decompressor reads all
#: lzop's own block size; the largest block it will ever write is 64 MiB
WRITE_BLOCK_SIZE = 256 * 1024
_MAX_BLOCK = 64 * 1024 * 1024

F_ADLER32_D, F_ADLER32_C, F_H_EXTRA_FIELD = 0x1, 0x2, 0x40
F_CRC32_D, F_CRC32_C, F_H_FILTER, F_H_CRC32 = 0x100, 0x200, 0x800, 0x1000


def _lzo() -> Any:
    from lzallright import LZOCompressor

    return LZOCompressor


class LzopReader(ReadStream):
    """The uncompressed bytes of an lzop file read from ``raw`` (anything with
    ``read(n)``), one block in memory at a time. Errors are ``ValueError`` lines naming
    ``where``."""

    def __init__(self, raw: Any, where: str):
        super().__init__()
        self._raw = raw
        self._where = where
        self._codec = _lzo()
        self._block = b""
        self._offset = 0
        self._eof = False
        self._flags = self._read_header()

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        # whole requests: pyarrow's readers take a short read as a short block, our line
        # reader as more to come; either is fine, fewer calls are faster
        want = None if size is None or size < 0 else size
        parts, have = [], 0
        while want is None or have < want:
            if self._offset >= len(self._block):
                if self._eof or not self._next_block():
                    break
            end = len(self._block) if want is None else min(len(self._block), self._offset + want - have)
            parts.append(self._block[self._offset:end])
            have += end - self._offset
            self._offset = end
        return b"".join(parts)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()

    def _fail(self, problem: str) -> ValueError:
        return ValueError(f"{self._where}: not a valid lzop file: {problem}")

    def _exact(self, count: int, what: str) -> bytes:
        data = b""
        while len(data) < count:
            piece = self._raw.read(count - len(data))
            if not piece:
                raise self._fail(f"it ends inside the {what} (truncated)")
            data += piece
        return data

    def _u32(self, what: str) -> int:
        return struct.unpack(">I", self._exact(4, what))[0]

    def _read_header(self) -> int:
        magic = self._raw.read(len(LZOP_MAGIC))
        if magic != LZOP_MAGIC:
            raise self._fail("it does not start with lzop's magic bytes (is it lzo-compressed with lzop or "
                             "Hadoop's LzopCodec?)")
        header = bytearray(self._exact(4, "header"))
        version, _ = struct.unpack(">HH", header)
        if version < 0x0900:
            raise self._fail(f"header version {version:#06x} is older than any lzop release")
        if version >= 0x0940:
            header += self._exact(2, "header")
            needed = struct.unpack(">H", header[-2:])[0]
            if needed > 0x1040:
                raise self._fail(f"it needs lzop {needed:#06x} to extract, newer than this reader knows")
        header += self._exact(1, "header")
        method = header[-1]
        if method not in _LZO1X_METHODS:
            raise self._fail(f"method {method} is not LZO1X")
        if version >= 0x0940:
            header += self._exact(1, "header")
        header += self._exact(4, "header")
        flags = struct.unpack(">I", header[-4:])[0]
        if flags & F_H_FILTER:
            raise self._fail("it was written with an lzop filter, which this reader does not undo")
        header += self._exact(8 if version < 0x0940 else 12, "header")  # mode, mtime(s)
        header += self._exact(1, "header")
        header += self._exact(header[-1], "header")  # the original file name
        expected = self._u32("header")
        actual = zlib.crc32(header) if flags & F_H_CRC32 else zlib.adler32(header)
        if expected != actual:
            raise self._fail("the header's checksum does not match (corrupt)")
        if flags & F_H_EXTRA_FIELD:
            length = self._u32("header's extra field")
            self._exact(length + 4, "header's extra field")
        return flags

    def _next_block(self) -> bool:
        head = self._raw.read(4)
        if not head:
            raise self._fail("it ends without its end marker (truncated)")
        if len(head) < 4:
            head += self._exact(4 - len(head), "block header")
        size = struct.unpack(">I", head)[0]
        if size == 0:
            self._eof = True
            return False
        if size > _MAX_BLOCK:
            raise self._fail(f"a block says it holds {size} bytes, more than lzop's 64 MiB (corrupt)")
        stored = self._u32("block header")
        flags = self._flags
        checks = []
        for flag, kind in ((F_ADLER32_D, zlib.adler32), (F_CRC32_D, zlib.crc32)):
            if flags & flag:
                checks.append((kind, self._u32("block header"), True))
        if stored < size:
            for flag, kind in ((F_ADLER32_C, zlib.adler32), (F_CRC32_C, zlib.crc32)):
                if flags & flag:
                    checks.append((kind, self._u32("block header"), False))
        elif stored > size:
            raise self._fail(f"a block of {size} bytes says it takes {stored} compressed (corrupt)")
        data = self._exact(stored, "block")
        for kind, value, uncompressed in checks:
            if not uncompressed and kind(data) != value:
                raise self._fail("a block's compressed-data checksum does not match (corrupt)")
        if stored < size:
            try:
                block = self._codec.decompress(data, output_size_hint=size)
            except Exception as exc:  # lzallright's LZOError: its args are an enum, not a sentence
                raise self._fail(f"a block does not decompress ({type(exc).__name__} {exc.args[0] if exc.args else ''})"
                                 ) from None
            if len(block) != size:
                raise self._fail(f"a block decompresses to {len(block)} bytes, not the {size} it says (corrupt)")
        else:
            block = data
        for kind, value, uncompressed in checks:
            if uncompressed and kind(block) != value:
                raise self._fail("a block's checksum does not match (corrupt)")
        self._block, self._offset = block, 0
        return True


class LzopWriter:
    """Writes an lzop file into ``out`` (``write``, ``tell``, ``close``): header as
    Hadoop's LzopCodec writes it (no checksums: SeaTunnel's reader accepts no flags), then
    256 KiB blocks. ``close`` writes the last block and the end marker, then closes ``out``."""

    def __init__(self, out: Any, mtime: int = 0):
        self._out = out
        self._codec = _lzo()()
        self._pending = bytearray()
        self.closed = False
        header = struct.pack(">HHHBBIIIIB", _WRITE_VERSION, _WRITE_LIB_VERSION, _WRITE_NEEDED, _METHOD_LZO1X_1,
                             _LEVEL, 0, 0o100644, mtime & 0xFFFFFFFF, 0, 0)
        out.write(LZOP_MAGIC + header + struct.pack(">I", zlib.adler32(header)))

    def write(self, data: Any) -> int:
        if self.closed:
            raise ValueError("write to a closed lzop file")
        self._pending += data
        while len(self._pending) >= WRITE_BLOCK_SIZE:
            self._write_block(bytes(self._pending[:WRITE_BLOCK_SIZE]))
            del self._pending[:WRITE_BLOCK_SIZE]
        return len(data)

    def tell(self) -> int:
        """Bytes written so far, counting the block not yet compressed as it is (what a
        file size limit should see)."""
        return self._out.tell() + len(self._pending)

    def flush(self) -> None:
        """Nothing to do: a block is written when it is full, or at ``close``."""

    def close(self) -> None:
        if self.closed:
            return
        if self._pending:
            self._write_block(bytes(self._pending))
            self._pending = bytearray()
        self._out.write(b"\x00\x00\x00\x00")
        self.closed = True
        self._out.close()

    def _write_block(self, block: bytes) -> None:
        packed = self._codec.compress(block)
        if len(packed) >= len(block):  # incompressible: stored, as lzop does
            packed = block
        self._out.write(struct.pack(">II", len(block), len(packed)) + packed)


# ---------------------------------------------------------------------------------------
# archives

#: archive_compress_codec -> tarfile's streaming mode (zip is read through its directory)
TAR_MODES = {"tar": "r|", "tar_gz": "r|gz"}
ARCHIVE_CODECS = ("zip",) + tuple(TAR_MODES)


_ARCHIVE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, tarfile.TarError, EOFError, zlib.error, OSError,
                   NotImplementedError, RuntimeError)


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


def archive_entries(raw: Any, codec: str, suffix: str | tuple[str, ...], where: str
                    ) -> Iterator[tuple[str, int, Any]]:
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
    log.warning("%s: archive entry %s is skipped: its name does not end with %s (SeaTunnel reads only those)",
                where, name, suffix if isinstance(suffix, str) else " or ".join(suffix))
    return False
