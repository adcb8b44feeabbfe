"""Codecs of SeaTunnel's text, csv and json files: lzop files (``compress_codec = lzo``,
the format of the ``lzop`` tool and of Hadoop's ``LzopCodec``, which SeaTunnel's sinks
write and its sources read; LZO1X blocks through ``lzallright``, the ``lzo`` extra), the
streaming decompressors of the other source codecs, and character encodings
(``encoding``). The lzop layout is in docs/seatunnel.md ("lzop files and archives").
"""

from __future__ import annotations

import codecs
import io
import logging
import struct
import time
import zlib
from typing import Any

import pyarrow as pa

from ...storage.filesystem import NewFile, warn_once
from ...storage.urls import RangeFile, ReadStream
from .storage import STREAM_BLOCK_SIZE

log = logging.getLogger(__name__)

LZOP_MAGIC = b"\x89LZO\x00\r\n\x1a\n"
#: SeaTunnel's source (aircompressor's LzopCodec) reads only files whose flags are 0,
#: whose method is 1 and whose header says at most these versions, so the writer says
#: exactly that. Its LZO1X decoder (SeaTunnel 2.3.4's and 2.3.8's, older than aircompressor 0.12)
#: still misreads the 2-byte matches of lzallright's blocks (docs/seatunnel.md,
#: "Differential test against SeaTunnel's own engine")
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
            parts.append(self._block[self._offset : end])
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
            raise self._fail(
                "it does not start with lzop's magic bytes (is it lzo-compressed with lzop or Hadoop's LzopCodec?)"
            )
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
                raise self._fail(
                    f"a block does not decompress ({type(exc).__name__} {exc.args[0] if exc.args else ''})"
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
        header = struct.pack(
            ">HHHBBIIIIB",
            _WRITE_VERSION,
            _WRITE_LIB_VERSION,
            _WRITE_NEEDED,
            _METHOD_LZO1X_1,
            _LEVEL,
            0,
            0o100644,
            mtime & 0xFFFFFFFF,
            0,
            0,
        )
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
        warn_once(
            (where, encoding),
            "%s: %r cannot hold %r; written as '?', as SeaTunnel writes it",
            where,
            encoding,
            exc.object[exc.start : exc.end],
        )
        return text.encode(encoding, errors="replace")


def _input(file: RangeFile, codec: str | None, where: str) -> Any:
    """``file`` (or its decompressed bytes) as a stream with ``read(n)``."""
    if codec is None:
        return file
    if codec == "lzo":  # buffered: the lzop reader asks for a few bytes at a time
        return LzopReader(io.BufferedReader(file, buffer_size=STREAM_BLOCK_SIZE), where)
    raw = pa.BufferedInputStream(pa.PythonFile(file, mode="r"), buffer_size=STREAM_BLOCK_SIZE)
    return pa.CompressedInputStream(raw, codec)


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
