"""The lzop container (connectors/file/codecs.py) SeaTunnel's file connectors read and write
with ``compress_codec = lzo``: our writer and reader round-trip, our reader reads files the
real ``lzop`` tool wrote (committed fixtures, so CI needs no tool: lzop 1.04, LZO 2.10,
``lzop -n e2e.txt`` and ``lzop -9 -n multiblock.txt``, the latter being
``connector-file-local-e2e/text/e2e.txt`` 240 times), the tool reads ours when it is
installed, and a damaged file is one line naming it."""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("lzallright", reason="the lzo extra is not installed")

from airflow_provider_seatunnel_ckpt.connectors.file.codecs import (
    LZOP_MAGIC,
    WRITE_BLOCK_SIZE,
    LzopReader,
    LzopWriter,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seatunnel" / "connector-file-local-e2e"
E2E_TEXT = (FIXTURES / "text" / "e2e.txt").read_bytes()
LZOP = shutil.which("lzop")
needs_lzop = pytest.mark.skipif(LZOP is None, reason="the lzop tool is not installed (apt-get install lzop)")


class _Sink(io.BytesIO):
    """A writable with ``close`` that keeps the bytes readable afterwards."""

    def close(self) -> None:
        self.closed_by_writer = True


def _compress(data: bytes, pieces: int = 7) -> bytes:
    out = _Sink()
    writer = LzopWriter(out)
    step = max(1, len(data) // pieces)
    for start in range(0, len(data), step):  # several writes, across block boundaries
        writer.write(data[start : start + step])
    writer.close()
    assert out.closed_by_writer
    return out.getvalue()


def _read(blob: bytes, chunk: int = -1, where: str = "/data/in.lzo") -> bytes:
    reader = LzopReader(io.BytesIO(blob), where)
    if chunk < 0:
        return reader.read()
    parts = []
    while piece := reader.read(chunk):
        parts.append(piece)
    return b"".join(parts)


def _blocks(blob: bytes) -> list[tuple[int, int]]:
    """(uncompressed, compressed) length of each block of a file our writer wrote (its header
    is fixed: 34 bytes after the magic, no checksums)."""
    at, blocks = len(LZOP_MAGIC) + 25 + 4, []
    while (size := struct.unpack(">I", blob[at : at + 4])[0]) != 0:
        stored = struct.unpack(">I", blob[at + 4 : at + 8])[0]
        blocks.append((size, stored))
        at += 8 + stored
    assert at + 4 == len(blob)
    return blocks


def test_multi_block_data_round_trips_through_our_writer_and_reader() -> None:
    data = b"".join(b"%d\x01name%d\x01%s\n" % (i, i % 13, b"x" * (i % 50)) for i in range(40_000))
    assert len(data) > 3 * WRITE_BLOCK_SIZE
    blob = _compress(data)
    blocks = _blocks(blob)
    assert len(blocks) == -(-len(data) // WRITE_BLOCK_SIZE) and all(s > c for s, c in blocks)
    assert _read(blob) == data
    assert _read(blob, chunk=100_003) == data  # reads that end inside blocks


def test_incompressible_blocks_are_stored_and_read_back() -> None:
    data = os.urandom(WRITE_BLOCK_SIZE + 1000)
    blob = _compress(data, pieces=1)
    assert [s == c for s, c in _blocks(blob)] == [True, True]
    assert _read(blob, chunk=4096) == data


def test_an_empty_file_is_a_header_and_the_end_marker() -> None:
    blob = _compress(b"")
    assert blob.endswith(b"\x00" * 4) and _read(blob) == b""


def test_our_reader_reads_files_the_lzop_tool_wrote() -> None:
    # lzop's default (LZO1X-1, adler32 of each block's data, a stored block: this data does
    # not shrink) and -9 (LZO1X-999) over three 256 KiB blocks
    assert _read((FIXTURES / "lzop" / "e2e.txt.lzo").read_bytes()) == E2E_TEXT
    assert _read((FIXTURES / "lzop" / "multiblock.txt.lzo").read_bytes(), chunk=65_536) == E2E_TEXT * 240


@needs_lzop
@pytest.mark.parametrize("options", [["-1"], ["-9"], ["--crc32"], ["-F"]])
def test_our_reader_reads_what_the_installed_lzop_writes(tmp_path: Path, options: list[str]) -> None:
    """-F: no checksums at all; --crc32: crc32 instead of adler32."""
    data = E2E_TEXT * 200
    (tmp_path / "in.txt").write_bytes(data)
    subprocess.run([LZOP, *options, "-o", str(tmp_path / "in.txt.lzo"), str(tmp_path / "in.txt")], check=True)
    assert _read((tmp_path / "in.txt.lzo").read_bytes()) == data


@needs_lzop
def test_the_lzop_tool_reads_and_tests_what_our_writer_wrote(tmp_path: Path) -> None:
    data = E2E_TEXT * 300 + os.urandom(WRITE_BLOCK_SIZE)  # compressed and stored blocks
    path = tmp_path / "ours.txt.lzo"
    path.write_bytes(_compress(data))
    tested = subprocess.run([LZOP, "-t", str(path)], capture_output=True, text=True)
    assert tested.returncode == 0, tested.stderr
    assert subprocess.run([LZOP, "-dc", str(path)], capture_output=True, check=True).stdout == data


def _one_line_error(blob: bytes, match: str) -> None:
    with pytest.raises(ValueError) as err:
        _read(blob, chunk=1 << 20)
    message = str(err.value)
    assert message.startswith("/data/in.lzo: not a valid lzop file: ") and "\n" not in message, message
    assert match in message, message


def test_a_truncated_file_is_one_line_naming_it() -> None:
    blob = (FIXTURES / "lzop" / "multiblock.txt.lzo").read_bytes()
    _one_line_error(blob[:-4], "ends without its end marker (truncated)")
    _one_line_error(blob[: len(blob) // 2], "ends inside the block (truncated)")
    _one_line_error(blob[:20], "ends inside the header (truncated)")
    _one_line_error(blob[: len(LZOP_MAGIC) - 2], "does not start with lzop's magic bytes")


def test_a_corrupt_file_is_one_line_naming_it() -> None:
    blob = bytearray((FIXTURES / "lzop" / "multiblock.txt.lzo").read_bytes())
    header = bytearray(blob)
    header[20] ^= 0xFF  # inside the mode field, covered by the header checksum
    _one_line_error(bytes(header), "the header's checksum does not match (corrupt)")
    data = bytearray(blob)
    data[len(blob) // 2] ^= 0x55  # inside a block: it no longer decompresses, or to other bytes
    with pytest.raises(ValueError) as err:
        _read(bytes(data))
    assert str(err.value).startswith("/data/in.lzo: not a valid lzop file: a block") and "\n" not in str(err.value)
    _one_line_error(E2E_TEXT, "does not start with lzop's magic bytes")
