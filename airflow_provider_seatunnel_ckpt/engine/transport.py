"""The authenticated control channel between the checkpoint coordinator and its subtasks.

The coordinator runs on the Spark driver; every subtask runs in a Spark executor and
reaches the driver over TCP (``spark.driver.host``). This module moves JSON objects
between them. It does not know what the messages mean: ``engine/messages.py`` defines
them, and a ``codec`` (that module itself fits) turns them into dicts and back.

Layers, as in h11 (see STYLE.md section 4):

* ``FrameReader`` / ``encode_frame``: framing. Bytes in, JSON objects out; objects in,
  bytes out. No sockets.
* ``ChannelConnection``: framing plus the handshake state machine. ``receive_data(bytes)``
  only buffers, ``next_event()`` returns ``Authenticated``, ``MessageReceived``,
  ``PeerClosed`` or ``NEED_DATA``, ``data_to_send()`` returns the handshake bytes it
  wants written, ``send(message)`` returns bytes. No sockets, threads or clocks: the
  handshake deadline is enforced by the adapter. Tests drive it with no I/O.
* ``ControlServer`` (driver) and ``ControlClient`` (executor): thin threaded socket
  adapters around ``ChannelConnection``.

Wire format
-----------
A frame is a 4-byte big-endian unsigned length ``N`` followed by ``N`` bytes of UTF-8
JSON whose top level is an object. ``N`` (the body, header not included) is bounded:
``HANDSHAKE_MAX_FRAME_BYTES`` (4 KiB) until the handshake completes, so an
unauthenticated peer cannot make us allocate much, then ``max_frame_bytes`` (default
64 MiB, because the in-memory storage ships state inline in ACKs and restores). A
length prefix over the limit is rejected as soon as its 4 bytes arrive, before the body
is buffered, and the connection is closed.

Handshake (the token never crosses the wire)
--------------------------------------------
::

    server -> {"type": "challenge", "nonce": Ns, "protocol": V}
    client -> {"type": "hello", "protocol": V, "peer": "subtask-3/attempt-1",
               "nonce": Nc, "mac": HMAC-SHA256(token, "seatunnel-ckpt hello\\nNs\\nNc")}
    server -> {"type": "welcome", "mac": HMAC-SHA256(token, "seatunnel-ckpt welcome\\nNc\\nNs")}
       or -> {"type": "reject", "reason": "..."} and the server closes the connection

``Ns`` and ``Nc`` are fresh random 128-bit hex nonces and ``V`` is
``messages.PROTOCOL_VERSION``. The client proves it knows the per-run token by MACing the
server's nonce; the server proves the same by MACing the client's nonce, so an executor
never talks to an impostor driver. Each MAC has its own label and covers both nonces,
so one side's answer can never be replayed as the other side's. Both MACs are compared
with ``hmac.compare_digest``. After the handshake every frame is an application message.

A client whose protocol version differs still sends its hello (then gives up), so the
driver's log, the one operators read first, names the version mismatch.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import itertools
import json
import logging
import re
import secrets
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import tenacity

from ..errors import ProtocolError
from .messages import PROTOCOL_VERSION

log = logging.getLogger(__name__)

DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
#: Limit on frames before the handshake completes (challenge, hello, welcome, reject).
HANDSHAKE_MAX_FRAME_BYTES = 4096
#: What the 4-byte length prefix can express.
MAX_FRAME_BYTES_LIMIT = 2**32 - 1
DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_SEND_TIMEOUT_S = 30.0
DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_CONNECT_ATTEMPTS = 6
MAX_LABEL_CHARS = 128
MIN_TOKEN_CHARS = 16

_HEADER = struct.Struct(">I")
_NONCE_BYTES = 16
_NONCE = re.compile(r"[0-9a-f]{32,128}")
_MAC = re.compile(r"[0-9a-f]{64}")
_RECV_CHUNK = 256 * 1024
_KEEPALIVE = (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))
_JSON_TYPE_NAMES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


class Codec(Protocol):
    """Turns application messages into JSON-safe dicts and back (``engine.messages`` fits).

    ``decode`` raises ProtocolError for a malformed message; the transport then drops
    the connection that sent it.
    """

    def encode(self, message: Any) -> Mapping[str, Any]: ...

    def decode(self, raw: Any) -> Any: ...


# --- events ---------------------------------------------------------------------------------


class _Sentinel(enum.Enum):
    NEED_DATA = "need data"
    END_OF_STREAM = "end of stream"


#: ``next_event()`` / ``next_frame()``: the buffered bytes hold no complete frame.
NEED_DATA = _Sentinel.NEED_DATA
#: ``FrameReader.next_frame()``: the peer closed the stream after a whole frame.
END_OF_STREAM = _Sentinel.END_OF_STREAM


@dataclass(frozen=True, slots=True)
class Authenticated:
    """The handshake succeeded; ``peer`` is the other side's label ("driver" for a client)."""

    peer: str


@dataclass(frozen=True, slots=True)
class MessageReceived:
    """An application frame from an authenticated peer."""

    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PeerClosed:
    """The peer closed its side of the stream at a frame boundary."""


Event = Authenticated | MessageReceived | PeerClosed | _Sentinel


# --- framing --------------------------------------------------------------------------------


def _check_limit(max_frame_bytes: int) -> int:
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
        body = json.dumps(
            dict(message), separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"message is not JSON-safe: {exc}") from None
    if len(body) > max_frame_bytes:
        raise ProtocolError(
            f"outgoing frame of {len(body)} bytes exceeds the limit of {max_frame_bytes} bytes"
        )
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
        self.max_frame_bytes = _check_limit(max_frame_bytes)
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

    def next_frame(self) -> dict[str, Any] | _Sentinel:
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
                    f"the peer closed the connection in the middle of a frame "
                    f"({got} bytes received of {expected})"
                )
            return END_OF_STREAM
        body = bytes(self._buffer[_HEADER.size:_HEADER.size + length])
        del self._buffer[:_HEADER.size + length]
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
            raise ProtocolError(
                f"incoming frame of {length} bytes exceeds the limit of {self.max_frame_bytes} bytes"
            )
        self._length = length

    def _fail(self) -> None:
        self._failed = True
        self._buffer = bytearray()

    def _check_usable(self) -> None:
        if self._failed:
            raise ProtocolError("the frame stream is broken by an earlier protocol error")


# --- handshake state machine ----------------------------------------------------------------


class Role(enum.Enum):
    SERVER = "server"
    CLIENT = "client"


class ChannelState(enum.Enum):
    AWAIT_HELLO = "awaiting hello"  # server: challenge sent
    AWAIT_CHALLENGE = "awaiting challenge"  # client: connected
    AWAIT_WELCOME = "awaiting welcome"  # client: hello sent
    OPEN = "open"  # authenticated: application frames only
    CLOSED = "closed"  # peer closed, handshake rejected, or a protocol error


_APP = "application message"

#: Every transition of the channel: state -> kind of incoming frame -> next state. In
#: OPEN every frame is an application message, whatever its "type" says. A frame kind
#: missing here is a protocol violation.
TRANSITIONS: Mapping[ChannelState, Mapping[str, ChannelState]] = {
    ChannelState.AWAIT_HELLO: {"hello": ChannelState.OPEN},
    ChannelState.AWAIT_CHALLENGE: {"challenge": ChannelState.AWAIT_WELCOME, "reject": ChannelState.CLOSED},
    ChannelState.AWAIT_WELCOME: {"welcome": ChannelState.OPEN, "reject": ChannelState.CLOSED},
    ChannelState.OPEN: {_APP: ChannelState.OPEN},
    ChannelState.CLOSED: {},
}


def _mac(key: bytes, purpose: str, first_nonce: str, second_nonce: str) -> str:
    text = f"seatunnel-ckpt {purpose}\n{first_nonce}\n{second_nonce}"
    return hmac.new(key, text.encode("ascii"), hashlib.sha256).hexdigest()


def _printable(value: Any, limit: int = 120) -> str:
    """Untrusted text made safe for one log line."""
    text = value if isinstance(value, str) else repr(value)
    safe = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text[:limit])
    return safe + ("..." if len(text) > limit else "")


def _check_token(token: Any) -> str:
    # The message never shows the value: it may be a real token with a typo.
    if not (isinstance(token, str) and len(token) >= MIN_TOKEN_CHARS and token.isascii() and token.isprintable()):
        raise ValueError(
            f"the control-channel token must be a printable ASCII string of at least {MIN_TOKEN_CHARS} characters"
        )
    return token


def _is_label(label: Any) -> bool:
    return isinstance(label, str) and 0 < len(label) <= MAX_LABEL_CHARS and label.isprintable()


def _check_label(label: Any) -> str:
    if not _is_label(label):
        raise ValueError(f"peer label must be 1 to {MAX_LABEL_CHARS} printable characters, got {_printable(label)!r}")
    return label


def _is_protocol(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _exact_fields(frame: Mapping[str, Any], kind: str, fields: set[str]) -> None:
    missing = fields - frame.keys()
    if missing:
        raise ProtocolError(f"{kind} frame is missing field(s) {sorted(missing)}")
    unknown = frame.keys() - fields
    if unknown:
        raise ProtocolError(f"{kind} frame has unknown field(s) {_printable(sorted(unknown))}")


class ChannelConnection:
    """One end of a control-channel connection, without I/O (h11 style).

    The reading side (``receive_data``, ``next_event``, ``data_to_send``) belongs to one
    thread. ``send`` may be called from any thread once the channel is OPEN; it only
    encodes, so writers serialise the returned bytes themselves.

    Any ProtocolError moves the channel to CLOSED for good. A server that fails a
    handshake queues a ``reject`` frame saying why (never a MAC or the token); the
    adapter sends it, best effort, before closing.
    """

    def __init__(
        self,
        role: Role,
        token: str,
        *,
        label: str = "driver",
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        protocol: int = PROTOCOL_VERSION,
        nonce_factory: Callable[[], str] | None = None,
    ) -> None:
        self._key = _check_token(token).encode("ascii")
        self.label = _check_label(label)
        self.max_frame_bytes = _check_limit(max_frame_bytes)
        self.protocol = protocol
        self._new_nonce = nonce_factory or (lambda: secrets.token_hex(_NONCE_BYTES))
        self._reader = FrameReader(HANDSHAKE_MAX_FRAME_BYTES)
        self._outbox = bytearray()
        self._local_nonce = ""
        self._remote_nonce = ""
        self._peer: str | None = None
        self.claimed_peer: str | None = None  # what an unauthenticated hello said, for logs
        self.error: ProtocolError | None = None
        if role is Role.SERVER:
            self._state = ChannelState.AWAIT_HELLO
            self._local_nonce = self._new_nonce()
            self._queue({"type": "challenge", "nonce": self._local_nonce, "protocol": self.protocol})
        else:
            self._state = ChannelState.AWAIT_CHALLENGE

    def __repr__(self) -> str:
        return f"ChannelConnection(label={self.label!r}, state={self._state.name}, peer={self._peer!r})"

    @property
    def state(self) -> ChannelState:
        return self._state

    @property
    def peer(self) -> str | None:
        """The other side's label, once it is authenticated."""
        return self._peer

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes from the peer; ``b""`` means it closed its side."""
        self._guard(lambda: self._reader.receive_data(data))

    def data_to_send(self) -> bytes:
        """Bytes the handshake wants written (challenge, hello, welcome or reject)."""
        data, self._outbox = bytes(self._outbox), bytearray()
        return data

    def next_event(self) -> Event:
        """The next event, or NEED_DATA; raises ProtocolError on any protocol violation."""
        while True:
            if self.error is not None:
                raise ProtocolError(f"the channel failed earlier: {self.error}")
            frame = self._guard(self._reader.next_frame)
            if frame is NEED_DATA:
                return NEED_DATA
            if frame is END_OF_STREAM:
                self._state = ChannelState.CLOSED
                return PeerClosed()
            event = self._guard(lambda: self._handle(frame))
            if event is not None:
                return event

    def send(self, message: Mapping[str, Any]) -> bytes:
        """The frame for an application message; only on an OPEN channel."""
        if self._state is not ChannelState.OPEN:
            raise ProtocolError(f"cannot send an application message while the channel is {self._state.value}")
        return encode_frame(message, self.max_frame_bytes)

    def reject(self, reason: str) -> None:
        """Server side: refuse a peer that has not authenticated yet (e.g. it was too slow).

        Queues a reject frame in place of anything unsent; a no-op once OPEN or CLOSED.
        """
        if self._state is ChannelState.AWAIT_HELLO:
            self._state = ChannelState.CLOSED
            self._outbox = bytearray()
            self._queue({"type": "reject", "reason": reason})

    # --- internals ---

    def _guard(self, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except ProtocolError as exc:
            if self._state is ChannelState.AWAIT_HELLO:
                self._outbox = bytearray()
                self._queue({"type": "reject", "reason": str(exc)})
            self._state = ChannelState.CLOSED
            self.error = exc
            raise

    def _handle(self, frame: dict[str, Any]) -> Event | None:
        if self._state is ChannelState.OPEN:
            kind = _APP
        else:
            raw = frame.get("type")
            kind = raw if isinstance(raw, str) else repr(raw)
        allowed = TRANSITIONS[self._state]
        new_state = allowed.get(kind)
        if new_state is None:
            expected = " or ".join(repr(k) for k in allowed) or "nothing"
            raise ProtocolError(
                f"unexpected {_printable(kind, 40)!r} frame while the channel is {self._state.value} "
                f"(expected {expected})"
            )
        event = self._HANDLERS[kind](self, frame)
        self._state = new_state
        if new_state is ChannelState.OPEN:
            self._reader.max_frame_bytes = self.max_frame_bytes
        return event

    def _queue(self, frame: dict[str, Any]) -> None:
        self._outbox += encode_frame(frame, HANDSHAKE_MAX_FRAME_BYTES)

    def _on_challenge(self, frame: dict[str, Any]) -> None:
        protocol, nonce = frame.get("protocol"), frame.get("nonce")
        if not (isinstance(nonce, str) and _NONCE.fullmatch(nonce)):
            raise ProtocolError("challenge frame carries no valid nonce")
        same_protocol = protocol == self.protocol and _is_protocol(protocol)
        if same_protocol:
            _exact_fields(frame, "challenge", {"type", "nonce", "protocol"})
        self._remote_nonce = nonce
        self._local_nonce = self._new_nonce()
        mac = _mac(self._key, "hello", self._remote_nonce, self._local_nonce)
        self._queue({
            "type": "hello", "protocol": self.protocol, "peer": self.label,
            "nonce": self._local_nonce, "mac": mac,
        })
        if not same_protocol:
            # The hello above still goes out, so the driver logs the mismatch too.
            raise ProtocolError(
                f"protocol version mismatch: the driver speaks {_printable(protocol, 20)}, "
                f"this side speaks {self.protocol}"
            )
        return None

    def _on_hello(self, frame: dict[str, Any]) -> Authenticated:
        peer = frame.get("peer")
        if _is_label(peer):
            self.claimed_peer = peer
        protocol = frame.get("protocol")
        if protocol != self.protocol or not _is_protocol(protocol):
            raise ProtocolError(
                f"protocol version mismatch: the peer speaks {_printable(protocol, 20)}, "
                f"this side speaks {self.protocol}"
            )
        _exact_fields(frame, "hello", {"type", "protocol", "peer", "nonce", "mac"})
        if not _is_label(peer):
            raise ProtocolError(f"hello frame: peer label must be 1 to {MAX_LABEL_CHARS} printable characters")
        nonce, mac = frame["nonce"], frame["mac"]
        if not (isinstance(nonce, str) and _NONCE.fullmatch(nonce)):
            raise ProtocolError("hello frame carries no valid nonce")
        expected = _mac(self._key, "hello", self._local_nonce, nonce)
        if not (isinstance(mac, str) and _MAC.fullmatch(mac) and hmac.compare_digest(mac, expected)):
            raise ProtocolError("authentication failed: the peer does not know this run's token")
        self._remote_nonce = nonce
        self._peer = peer
        self._queue({"type": "welcome", "mac": _mac(self._key, "welcome", nonce, self._local_nonce)})
        return Authenticated(peer)

    def _on_welcome(self, frame: dict[str, Any]) -> Authenticated:
        _exact_fields(frame, "welcome", {"type", "mac"})
        mac = frame["mac"]
        expected = _mac(self._key, "welcome", self._local_nonce, self._remote_nonce)
        if not (isinstance(mac, str) and _MAC.fullmatch(mac) and hmac.compare_digest(mac, expected)):
            raise ProtocolError("authentication failed: the server does not know this run's token (not the driver?)")
        self._peer = "driver"
        return Authenticated("driver")

    def _on_reject(self, frame: dict[str, Any]) -> None:
        reason = frame.get("reason")
        raise ProtocolError(f"the driver rejected the connection: {_printable(reason, 300)}")

    def _on_app(self, frame: dict[str, Any]) -> MessageReceived:
        return MessageReceived(frame)

    _HANDLERS: Mapping[str, Callable[[ChannelConnection, dict[str, Any]], Event | None]] = {
        "challenge": _on_challenge,
        "hello": _on_hello,
        "welcome": _on_welcome,
        "reject": _on_reject,
        _APP: _on_app,
    }


# --- socket helpers shared by both adapters -------------------------------------------------


def _configure_socket(sock: socket.socket) -> None:
    """Low latency for small control messages; keepalive so a dead peer is noticed."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in _KEEPALIVE:  # Linux names; elsewhere the OS defaults apply
        option = getattr(socket, name, None)
        if option is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)
            except OSError:  # pragma: no cover - platform without the option
                pass


def _settimeout_until(sock: socket.socket, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("handshake deadline passed")
    sock.settimeout(remaining)


def _handshake(sock: socket.socket, machine: ChannelConnection, deadline: float) -> Authenticated:
    """Run the handshake under one overall deadline (a peer trickling bytes gains nothing)."""
    while True:
        event = machine.next_event()
        pending = machine.data_to_send()  # challenge, hello or welcome
        if pending:
            _settimeout_until(sock, deadline)
            sock.sendall(pending)
        if isinstance(event, Authenticated):
            return event
        if isinstance(event, PeerClosed):
            raise ConnectionError("the peer closed the connection during the handshake")
        _settimeout_until(sock, deadline)
        machine.receive_data(sock.recv(HANDSHAKE_MAX_FRAME_BYTES))


def _flush_quietly(sock: socket.socket, machine: ChannelConnection) -> None:
    """Best effort: tell the peer why (reject) before the connection is closed."""
    pending = machine.data_to_send()
    if pending:
        try:
            sock.settimeout(1.0)
            sock.sendall(pending)
        except OSError:
            pass


def _pump(sock: socket.socket, machine: ChannelConnection, deliver: Callable[[dict[str, Any]], None]) -> None:
    """Deliver application frames until the peer closes; raises ProtocolError or OSError."""
    while True:
        event = machine.next_event()
        if event is NEED_DATA:
            try:
                data = sock.recv(_RECV_CHUNK)
            except TimeoutError:
                continue  # idle is fine; keepalive watches the peer, shutdown() wakes us
            machine.receive_data(data)
        elif isinstance(event, MessageReceived):
            deliver(event.payload)
        elif isinstance(event, PeerClosed):
            return


def _shutdown(sock: socket.socket) -> None:
    """Wake every thread blocked on ``sock`` (recv returns b"", send fails)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {_printable(text, 200)}" if text else type(exc).__name__


def _format_address(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(address)


def _run_callback(what: str, callback: Callable[..., Any] | None, *args: Any) -> None:
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:
        log.exception("control channel: %s callback failed", what)


# --- driver side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PeerInfo:
    """An authenticated connection as the server sees it."""

    connection_id: int
    label: str
    address: str


class _ServerConnection:
    def __init__(self, connection_id: int, sock: socket.socket, address: str) -> None:
        self.id = connection_id
        self.sock = sock
        self.address = address
        self.send_lock = threading.Lock()
        self.label: str | None = None  # set once authenticated; only then can send() reach it
        self.dropping = False  # we closed it on purpose: no warning
        self.thread: threading.Thread | None = None

    def describe(self) -> str:
        return f"connection {self.id} ({self.label or 'unauthenticated'} at {self.address})"


class ControlServer:
    """The driver's end: accepts subtask connections, authenticates them, moves messages.

    Threading: one accept thread plus one reader thread per connection, with blocking
    sockets. Parallelism is tens to hundreds of subtasks, so the thread count is modest,
    and blocking reads keep a 64 MiB restore from stalling anyone else: a selector loop
    would have to buffer partial frames for every peer (unbounded memory unless it also
    applies back-pressure) and one slow peer or slow callback would stall the rest. The
    accept thread waits in a selector only so ``close()`` can wake it portably.

    Callbacks run on the connection's reader thread and must be cheap (put the message
    on the coordinator's queue): while one runs, that connection reads nothing more.
    Per connection, messages arrive in the order they were sent. ``on_connect(id,
    label)`` and ``on_disconnect(id)`` fire once for each authenticated connection,
    including at ``close()``. ``on_message(id, message)`` gets a dict, or whatever
    ``codec.decode`` returns; a ProtocolError from the codec or from ``on_message``
    drops that connection, other exceptions are logged and the message is skipped.

    The token is created here (``secrets.token_hex(32)``) unless given. The driver
    passes ``address`` and ``token`` to executors inside the Spark task closure; the
    server itself never logs it, its repr leaves it out, and it refuses to be pickled.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        *,
        on_message: Callable[[int, Any], None],
        on_disconnect: Callable[[int], None] | None = None,
        on_connect: Callable[[int, str], None] | None = None,
        codec: Codec | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S,
        send_timeout_s: float = DEFAULT_SEND_TIMEOUT_S,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        if handshake_timeout_s <= 0 or send_timeout_s <= 0:
            raise ValueError("handshake_timeout_s and send_timeout_s must be positive")
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        self._token = secrets.token_hex(32) if token is None else _check_token(token)
        self._on_message = on_message
        self._on_disconnect = on_disconnect
        self._on_connect = on_connect
        self._codec = codec
        self._max_frame_bytes = _check_limit(max_frame_bytes)
        self._handshake_timeout_s = handshake_timeout_s
        self._send_timeout_s = send_timeout_s
        self._max_connections = max_connections
        self._lock = threading.Lock()
        self._connections: dict[int, _ServerConnection] = {}
        self._ids = itertools.count(1)
        self._closed = False
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        # create_server sets SO_REUSEADDR on POSIX, so a restarted driver can rebind at once.
        self._listener = socket.create_server((host, port), family=family, backlog=128)
        try:
            self._listener.setblocking(False)
            self._address: tuple[str, int] = tuple(self._listener.getsockname()[:2])  # type: ignore[assignment]
            self._wake_r, self._wake_w = socket.socketpair()
            self._accept_thread = threading.Thread(
                target=self._accept_loop, name=f"seatunnel-ckpt-control-accept-{self._address[1]}", daemon=True
            )
            self._accept_thread.start()
        except BaseException:
            self._listener.close()
            raise
        log.debug("control channel: listening on %s", _format_address(self._address))

    # --- public API ---

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the server listens on; with port=0 the OS picked the port."""
        return self._address

    @property
    def token(self) -> str:
        """The per-run secret. Hand it to executors; never log it."""
        return self._token

    @property
    def closed(self) -> bool:
        return self._closed

    def connections(self) -> dict[int, PeerInfo]:
        """The authenticated connections, by connection id."""
        with self._lock:
            return {
                c.id: PeerInfo(c.id, c.label, c.address)
                for c in self._connections.values()
                if c.label is not None
            }

    def send(self, connection_id: int, message: Any) -> None:
        """Send one message to one connection; safe from any thread.

        Raises ProtocolError if the message is not JSON-safe or over ``max_frame_bytes``
        (nothing was sent; the connection stays up), ConnectionError if the connection
        is gone or the write fails (the connection is then closed).
        """
        conn = self._authenticated(connection_id)
        self._write(conn, encode_frame(self._encode(message), self._max_frame_bytes))

    def broadcast(self, message: Any) -> list[int]:
        """Send to every authenticated connection; returns the ids it reached.

        A connection that fails is closed and skipped; ProtocolError as for ``send``.
        """
        frame = encode_frame(self._encode(message), self._max_frame_bytes)
        with self._lock:
            targets = [c for c in self._connections.values() if c.label is not None]
        reached = []
        for conn in targets:
            try:
                self._write(conn, frame)
            except ConnectionError as exc:
                log.info("control channel: broadcast skipped %s: %s", conn.describe(), exc)
            else:
                reached.append(conn.id)
        return reached

    def drop_connection(self, connection_id: int) -> bool:
        """Close one connection (a zombie attempt, or a test); False if it is unknown."""
        with self._lock:
            conn = self._connections.get(connection_id)
        if conn is None:
            return False
        conn.dropping = True
        _shutdown(conn.sock)
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop accepting, close every connection, join all threads and free the port."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        current = threading.current_thread()
        try:
            self._wake_w.send(b"\0")
        except OSError:  # pragma: no cover - the pair is ours and still open
            pass
        if self._accept_thread is not current:
            self._accept_thread.join(timeout_s)
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()
        with self._lock:
            conns = list(self._connections.values())
        for conn in conns:
            conn.dropping = True
            _shutdown(conn.sock)
        deadline = time.monotonic() + timeout_s
        for conn in conns:
            if conn.thread is not None and conn.thread is not current:
                conn.thread.join(max(0.0, deadline - time.monotonic()))
                if conn.thread.is_alive():
                    log.warning(
                        "control channel: %s did not stop within %g s (is a callback blocked?)",
                        conn.describe(), timeout_s,
                    )
        log.debug("control channel: closed %s", _format_address(self._address))

    def __enter__(self) -> ControlServer:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        with self._lock:
            count = sum(1 for c in self._connections.values() if c.label is not None)
        return f"ControlServer(address={self._address!r}, connections={count}, closed={self._closed})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError(
            "a ControlServer cannot be pickled; pass server.address and server.token to the executors"
        )

    # --- internals ---

    def _encode(self, message: Any) -> Mapping[str, Any]:
        return message if self._codec is None else self._codec.encode(message)

    def _authenticated(self, connection_id: int) -> _ServerConnection:
        with self._lock:
            conn = self._connections.get(connection_id)
        if conn is None or conn.label is None:
            raise ConnectionError(f"control channel: no open connection {connection_id}")
        return conn

    def _write(self, conn: _ServerConnection, frame: bytes) -> None:
        with conn.send_lock:
            try:
                conn.sock.sendall(frame)
            except OSError as exc:
                _shutdown(conn.sock)  # maybe half a frame went out: the stream is unusable
                raise ConnectionError(
                    f"control channel: sending to {conn.describe()} failed: {_describe(exc)}"
                ) from exc

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj is self._wake_r:
                        return
                    try:
                        sock, address = self._listener.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as exc:
                        if self._closed:
                            return
                        log.warning(
                            "control channel: accept failed on %s: %s", _format_address(self._address), _describe(exc)
                        )
                        time.sleep(0.1)  # e.g. out of file descriptors: do not spin
                        continue
                    self._admit(sock, _format_address(address))

    def _admit(self, sock: socket.socket, address: str) -> None:
        conn = _ServerConnection(next(self._ids), sock, address)
        with self._lock:
            refused = "the server is closing" if self._closed else (
                f"too many connections ({self._max_connections})"
                if len(self._connections) >= self._max_connections else None
            )
            if refused is None:
                self._connections[conn.id] = conn
        if refused is not None:
            level = logging.DEBUG if self._closed else logging.WARNING
            log.log(level, "control channel: refused connection %d from %s: %s", conn.id, address, refused)
            sock.close()
            return
        conn.thread = threading.Thread(
            target=self._serve, args=(conn,), name=f"seatunnel-ckpt-control-conn-{conn.id}", daemon=True
        )
        conn.thread.start()

    def _warn_rejected(self, conn: _ServerConnection, machine: ChannelConnection, reason: str) -> None:
        # ONE line: who, from where, why. Never the token, the MAC or a nonce.
        claimed = f" (claims to be {machine.claimed_peer!r})" if machine.claimed_peer else ""
        log.warning(
            "control channel: rejected connection %d from %s%s: %s", conn.id, conn.address, claimed, reason
        )

    def _serve(self, conn: _ServerConnection) -> None:
        sock = conn.sock
        machine = ChannelConnection(Role.SERVER, self._token, max_frame_bytes=self._max_frame_bytes)
        announced = False
        try:
            try:
                _configure_socket(sock)
                event = _handshake(sock, machine, time.monotonic() + self._handshake_timeout_s)
            except ProtocolError as exc:
                self._warn_rejected(conn, machine, str(exc))
                _flush_quietly(sock, machine)
                return
            except TimeoutError:
                reason = f"no hello within {self._handshake_timeout_s:g} s"
                machine.reject(reason)
                self._warn_rejected(conn, machine, reason)
                _flush_quietly(sock, machine)
                return
            except OSError as exc:
                if not (conn.dropping or self._closed):
                    self._warn_rejected(conn, machine, f"connection lost during the handshake ({_describe(exc)})")
                return
            sock.settimeout(self._send_timeout_s)  # bounds sends; the reader loops on recv timeouts
            with self._lock:
                conn.label = event.peer
            if conn.dropping or self._closed:
                return
            announced = True
            log.info("control channel: %s connected", conn.describe())
            _run_callback("on_connect", self._on_connect, conn.id, event.peer)
            try:
                _pump(sock, machine, lambda payload: self._deliver(conn, payload))
                if not (conn.dropping or self._closed):
                    log.info("control channel: %s closed by the peer", conn.describe())
            except ProtocolError as exc:
                log.warning("control channel: dropped %s: %s", conn.describe(), exc)
            except OSError as exc:
                if not (conn.dropping or self._closed):
                    log.warning("control channel: lost %s: %s", conn.describe(), _describe(exc))
        finally:
            with self._lock:
                self._connections.pop(conn.id, None)
            _shutdown(sock)
            with conn.send_lock:  # no writer may be inside sendall when the fd is released
                sock.close()
            if announced:
                _run_callback("on_disconnect", self._on_disconnect, conn.id)

    def _deliver(self, conn: _ServerConnection, payload: dict[str, Any]) -> None:
        message = payload if self._codec is None else self._codec.decode(payload)
        try:
            self._on_message(conn.id, message)
        except ProtocolError:
            raise
        except Exception:
            log.exception("control channel: on_message failed for a message from %s; message skipped", conn.describe())


# --- executor side --------------------------------------------------------------------------


class ControlClient:
    """A subtask's end: connects to the driver, authenticates, moves messages.

    ``connect()`` makes the first connection, retrying refused / timed-out attempts with
    bounded exponential backoff (``connect_attempts`` in all); a handshake rejection is a
    ProtocolError and is not retried. A reader thread then calls ``on_message(message)``
    for every message, in order. It runs on the reader thread and must be cheap (set a
    flag or put the message on a queue): the subtask's processing thread checks that
    flag and never blocks on the channel.

    If the connection drops and ``reconnect`` is true, the reader thread reconnects with
    the same retry policy and a new handshake, then calls ``on_reconnect()`` while it
    holds the send lock: messages the callback sends (re-register) go out before any
    other thread's. ``send`` raises ConnectionError while no connection is up; nothing
    is queued. A protocol violation is never answered with a reconnect.

    ``on_close(error)`` fires once when the channel is finished for good: ``error`` is
    None after ``close()``, else why the connection was lost and not re-established.
    """

    def __init__(
        self,
        address: tuple[str, int],
        token: str,
        label: str,
        on_message: Callable[[Any], None],
        *,
        on_reconnect: Callable[[], None] | None = None,
        on_close: Callable[[BaseException | None], None] | None = None,
        codec: Codec | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        send_timeout_s: float = DEFAULT_SEND_TIMEOUT_S,
        reconnect: bool = False,
        connect_attempts: int = DEFAULT_CONNECT_ATTEMPTS,
        initial_backoff_s: float = 0.1,
        max_backoff_s: float = 3.0,
    ) -> None:
        host, port = address
        self._address = (str(host), int(port))
        self._token = _check_token(token)
        self._label = _check_label(label)
        if connect_timeout_s <= 0 or send_timeout_s <= 0:
            raise ValueError("connect_timeout_s and send_timeout_s must be positive")
        if connect_attempts < 1:
            raise ValueError(f"connect_attempts must be at least 1, got {connect_attempts}")
        self._on_message = on_message
        self._on_reconnect = on_reconnect
        self._on_close = on_close
        self._codec = codec
        self._max_frame_bytes = _check_limit(max_frame_bytes)
        self._connect_timeout_s = connect_timeout_s
        self._send_timeout_s = send_timeout_s
        self._reconnect = reconnect
        self._connect_attempts = connect_attempts
        self._initial_backoff_s = initial_backoff_s
        self._max_backoff_s = max_backoff_s
        # RLock: on_reconnect runs under it and may call send() on the same thread.
        self._send_lock = threading.RLock()
        self._state_lock = threading.Lock()  # guards the socket references only; never held during I/O
        self._sock: socket.socket | None = None
        self._handshake_sock: socket.socket | None = None
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._reconnects = 0

    # --- public API ---

    @property
    def address(self) -> tuple[str, int]:
        return self._address

    @property
    def label(self) -> str:
        return self._label

    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def reconnects(self) -> int:
        """How many times the channel was re-established after a drop."""
        return self._reconnects

    def connect(self) -> None:
        """Connect and authenticate (with bounded retries), then start the reader thread.

        Raises the last OSError if the driver cannot be reached, ProtocolError if the
        handshake fails (wrong token, wrong protocol version, impostor driver).
        """
        with self._state_lock:
            if self._closing.is_set():
                raise ConnectionError(f"control channel: client {self._label} is closed")
            if self._thread is not None:
                raise RuntimeError(f"control channel: client {self._label} is already connected")
        sock, machine = self._open_with_retries()
        with self._state_lock:
            if self._closing.is_set():
                sock.close()
                raise ConnectionError(f"control channel: client {self._label} was closed while connecting")
            self._sock = sock
            self._thread = threading.Thread(
                target=self._run, args=(sock, machine), name=f"seatunnel-ckpt-control-client-{self._label}", daemon=True
            )
        log.debug("control channel: %s connected to the driver at %s", self._label, _format_address(self._address))
        self._thread.start()

    def send(self, message: Any) -> None:
        """Send one message; safe from any thread.

        ProtocolError if the message is not JSON-safe or over ``max_frame_bytes``
        (nothing was sent, the connection stays up); ConnectionError if there is no
        connection or the write fails (the connection is then dropped, and reconnected
        if ``reconnect``).
        """
        payload = message if self._codec is None else self._codec.encode(message)
        frame = encode_frame(payload, self._max_frame_bytes)
        with self._send_lock:
            sock = self._sock
            if sock is None:
                raise ConnectionError(f"control channel: {self._label} is not connected to the driver")
            try:
                sock.sendall(frame)
            except OSError as exc:
                _shutdown(sock)  # maybe half a frame went out; the reader notices and reconnects
                raise ConnectionError(
                    f"control channel: {self._label} could not send to the driver: {_describe(exc)}"
                ) from exc

    def close(self, timeout_s: float = 5.0) -> None:
        """Close the connection and stop the reader thread (also interrupts a reconnect)."""
        self._closing.set()
        with self._state_lock:
            socks = [s for s in (self._sock, self._handshake_sock) if s is not None]
            thread = self._thread
        for sock in socks:
            _shutdown(sock)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
            if thread.is_alive():
                log.warning(
                    "control channel: %s reader did not stop within %g s (is a callback blocked?)", self._label, timeout_s
                )

    def __enter__(self) -> ControlClient:
        if self._thread is None:
            self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ControlClient(label={self._label!r}, address={self._address!r}, connected={self.connected})"

    __str__ = __repr__

    # --- internals ---

    def _backoff_sleep(self, seconds: float) -> None:
        if self._closing.wait(seconds):
            raise ConnectionError(f"control channel: client {self._label} was closed while connecting")

    def _open_with_retries(self) -> tuple[socket.socket, ChannelConnection]:
        where = _format_address(self._address)

        def log_retry(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.warning(
                "control channel: %s could not reach the driver at %s (attempt %d of %d, retrying): %s",
                self._label, where, state.attempt_number, self._connect_attempts,
                _describe(exc) if exc else "unknown error",
            )

        retrying = tenacity.Retrying(
            # OSError covers refused, reset, unreachable and timeouts; a ProtocolError
            # (rejected handshake) will fail the same way again, so it is not retried.
            retry=tenacity.retry_if_exception(lambda exc: isinstance(exc, OSError) and not self._closing.is_set()),
            stop=tenacity.stop_after_attempt(self._connect_attempts),
            wait=tenacity.wait_random_exponential(multiplier=self._initial_backoff_s, max=self._max_backoff_s),
            sleep=self._backoff_sleep,
            before_sleep=log_retry,
            reraise=True,
        )
        return retrying(self._open_once)

    def _open_once(self) -> tuple[socket.socket, ChannelConnection]:
        deadline = time.monotonic() + self._connect_timeout_s
        sock = socket.create_connection(self._address, timeout=self._connect_timeout_s)
        with self._state_lock:
            if self._closing.is_set():
                sock.close()
                raise ConnectionError(f"control channel: client {self._label} was closed while connecting")
            self._handshake_sock = sock
        try:
            _configure_socket(sock)
            machine = ChannelConnection(
                Role.CLIENT, self._token, label=self._label, max_frame_bytes=self._max_frame_bytes
            )
            try:
                _handshake(sock, machine, deadline)
            except ProtocolError:
                _flush_quietly(sock, machine)
                raise
            sock.settimeout(self._send_timeout_s)
        except BaseException:
            sock.close()
            raise
        finally:
            with self._state_lock:
                self._handshake_sock = None
        return sock, machine

    def _run(self, sock: socket.socket, machine: ChannelConnection) -> None:
        error: BaseException | None = None
        where = _format_address(self._address)
        while True:
            try:
                _pump(sock, machine, self._deliver)
                error = ConnectionError("the driver closed the control channel")
            except (ProtocolError, OSError) as exc:
                error = exc
            self._detach(sock)
            if self._closing.is_set():
                error = None
                break
            if not self._reconnect or isinstance(error, ProtocolError):
                log.warning("control channel: %s lost the driver at %s: %s", self._label, where, _describe(error))
                break
            log.warning(
                "control channel: %s lost the driver at %s (%s); reconnecting", self._label, where, _describe(error)
            )
            try:
                sock, machine = self._open_with_retries()
            except Exception as exc:
                error = None if self._closing.is_set() else exc
                if error is not None:
                    log.warning(
                        "control channel: %s gave up reconnecting to %s: %s", self._label, where, _describe(exc)
                    )
                break
            with self._send_lock:
                with self._state_lock:
                    attached = not self._closing.is_set()
                    if attached:
                        self._sock = sock
                if not attached:
                    sock.close()
                    error = None
                    break
                self._reconnects += 1
                log.info("control channel: %s reconnected to the driver at %s", self._label, where)
                _run_callback("on_reconnect", self._on_reconnect)
        self._closing.set()
        _run_callback("on_close", self._on_close, error)

    def _detach(self, sock: socket.socket) -> None:
        _shutdown(sock)  # fails a blocked sender at once, so the lock below comes quickly
        with self._send_lock:
            with self._state_lock:
                if self._sock is sock:
                    self._sock = None
            sock.close()

    def _deliver(self, payload: dict[str, Any]) -> None:
        message = payload if self._codec is None else self._codec.decode(payload)
        try:
            self._on_message(message)
        except ProtocolError:
            raise
        except Exception:
            log.exception("control channel: on_message failed in %s; message skipped", self._label)
