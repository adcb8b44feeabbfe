"""Framing: JSON objects to bytes on a stream and back, with no sockets (sans-I/O).

A frame is a 4-byte big-endian unsigned length ``N`` followed by ``N`` bytes of UTF-8
JSON whose top level is an object. ``N`` (the body, header not included) is bounded:
``HANDSHAKE_MAX_FRAME_BYTES`` (4 KiB) until the handshake completes, so an
unauthenticated peer cannot make us allocate much, then ``max_frame_bytes`` (default
64 MiB, because the in-memory storage ships state inline in ACKs and restores). A
length prefix over the limit is rejected as soon as its 4 bytes arrive, before the body
is buffered, and the stream is then broken for good.

Kept apart from the sockets so that every byte-level case (chunks split anywhere, a
peer closing mid-frame, NaN, bad UTF-8, an oversized prefix) is tested with bytes only.
``FrameReader.next_frame`` answers ``NEED_DATA`` or ``END_OF_STREAM`` when it has no
frame to give; those two sentinels are the only non-frame answers.
"""

from __future__ import annotations

import enum
import json
import struct
from collections.abc import Mapping
from typing import Any

from ...errors import ProtocolError

DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
#: Limit on frames before the handshake completes (challenge, hello, welcome, reject).
HANDSHAKE_MAX_FRAME_BYTES = 4096
#: What the 4-byte length prefix can express.
MAX_FRAME_BYTES_LIMIT = 2**32 - 1

_HEADER = struct.Struct(">I")
_JSON_TYPE_NAMES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


class Sentinel(enum.Enum):
    NEED_DATA = "need data"
    END_OF_STREAM = "end of stream"


#: ``next_event()`` / ``next_frame()``: the buffered bytes hold no complete frame.
NEED_DATA = Sentinel.NEED_DATA
#: ``FrameReader.next_frame()``: the peer closed the stream after a whole frame.
END_OF_STREAM = Sentinel.END_OF_STREAM


def check_limit(max_frame_bytes: int) -> int:
    if not isinstance(max_frame_bytes, int) or isinstance(max_frame_bytes, bool):
        raise ValueError(f"max_frame_bytes must be an integer, got {type(max_frame_bytes).__name__}")
    if not HANDSHAKE_MAX_FRAME_BYTES <= max_frame_bytes <= MAX_FRAME_BYTES_LIMIT:
        raise ValueError(
            f"max_frame_bytes must be between {HANDSHAKE_MAX_FRAME_BYTES} and "
            f"{MAX_FRAME_BYTES_LIMIT}, got {max_frame_bytes}"
        )
    return max_frame_bytes


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def encode_frame(message: Mapping[str, Any], max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> bytes:
    """One frame for ``message``; ProtocolError if it is not JSON-safe or too large."""
    if not isinstance(message, Mapping):
        raise ProtocolError(f"a frame must hold a JSON object, got {type(message).__name__}")
    try:
        body = json.dumps(dict(message), separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"message is not JSON-safe: {exc}") from None
    if len(body) > max_frame_bytes:
        raise ProtocolError(f"outgoing frame of {len(body)} bytes exceeds the limit of {max_frame_bytes} bytes")
    return _HEADER.pack(len(body)) + body


def _decode_body(body: bytes) -> dict[str, Any]:
    # `from None` everywhere: a JSONDecodeError keeps the whole document alive in .doc.
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"frame is not valid UTF-8 (bad byte at offset {exc.start})") from None
    except RecursionError:
        raise ProtocolError("frame is nested too deeply to be decoded") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, too many integer digits
        raise ProtocolError(f"frame is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        name = "null" if value is None else _JSON_TYPE_NAMES.get(type(value), type(value).__name__)
        raise ProtocolError(f"a frame must hold a JSON object, got a JSON {name}")
    return value


class FrameReader:
    """Reassembles frames from arbitrary chunks of a byte stream (sans-I/O).

    Only the frame at the head of the buffer is examined: its length prefix is checked
    against ``max_frame_bytes`` as soon as its 4 bytes arrive, so an oversized frame is
    refused before its body is buffered. Callers drain ``next_frame()`` after each
    ``receive_data()``, which bounds the buffer to one frame plus one chunk.
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = check_limit(max_frame_bytes)
        self._buffer = bytearray()
        self._length: int | None = None
        self._eof = False
        self._failed = False

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer)

    def receive_data(self, data: bytes) -> None:
        """Buffer ``data``; ``b""`` means the peer closed its side of the stream."""
        self._check_usable()
        if self._eof:
            raise ProtocolError("data received after the end of the stream")
        if not data:
            self._eof = True
            return
        self._buffer += data
        self._read_header()

    def next_frame(self) -> dict[str, Any] | Sentinel:
        """The next complete frame's JSON object, ``NEED_DATA`` or ``END_OF_STREAM``."""
        self._check_usable()
        self._read_header()
        length = self._length
        if length is None or len(self._buffer) < _HEADER.size + length:
            if not self._eof:
                return NEED_DATA
            if self._buffer:
                got = max(0, len(self._buffer) - _HEADER.size)
                expected = "a frame header" if length is None else f"{length} bytes"
                self._fail()
                raise ProtocolError(
                    f"the peer closed the connection in the middle of a frame ({got} bytes received of {expected})"
                )
            return END_OF_STREAM
        body = bytes(self._buffer[_HEADER.size : _HEADER.size + length])
        del self._buffer[: _HEADER.size + length]
        self._length = None
        try:
            return _decode_body(body)
        except ProtocolError:
            self._fail()
            raise

    def _read_header(self) -> None:
        if self._length is not None or len(self._buffer) < _HEADER.size:
            return
        (length,) = _HEADER.unpack_from(self._buffer)
        if length > self.max_frame_bytes:
            self._fail()
            raise ProtocolError(f"incoming frame of {length} bytes exceeds the limit of {self.max_frame_bytes} bytes")
        self._length = length

    def _fail(self) -> None:
        self._failed = True
        self._buffer = bytearray()

    def _check_usable(self) -> None:
        if self._failed:
            raise ProtocolError("the frame stream is broken by an earlier protocol error")
