"""The channel: framing plus the handshake, as one state machine with no I/O (h11 style).

``receive_data(bytes)`` only buffers, ``next_event()`` returns ``Authenticated``,
``MessageReceived``, ``PeerClosed`` or ``NEED_DATA``, ``data_to_send()`` returns the
handshake bytes it wants written and ``send(message)`` returns bytes. No sockets, threads
or clocks (the adapters enforce the handshake deadline), so every handshake path, forged
MACs and replays included, is tested with bytes alone. The token never crosses the wire::

    server -> {"type": "challenge", "nonce": Ns, "protocol": V}
    client -> {"type": "hello", "protocol": V, "peer": "subtask-3/attempt-1",
               "nonce": Nc, "mac": HMAC-SHA256(token, "seatunnel-ckpt hello\\nNs\\nNc")}
    server -> {"type": "welcome", "mac": HMAC-SHA256(token, "seatunnel-ckpt welcome\\nNc\\nNs")}
       or -> {"type": "reject", "reason": "..."} and the server closes the connection

``Ns``, ``Nc``: fresh random 128-bit hex nonces; ``V``: ``messages.PROTOCOL_VERSION``. Each
side proves it knows the per-run token by MACing the other's nonce, so an executor never
talks to an impostor driver; each MAC has its own label and covers both nonces, so one
side's answer cannot be replayed as the other's. A client of another protocol version
still sends its hello (then gives up), so the driver's log names the mismatch.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from ...errors import ProtocolError
from ..messages import PROTOCOL_VERSION
from .framing import (
    DEFAULT_MAX_FRAME_BYTES,
    END_OF_STREAM,
    HANDSHAKE_MAX_FRAME_BYTES,
    NEED_DATA,
    FrameReader,
    Sentinel,
    check_limit,
    encode_frame,
)

MAX_LABEL_CHARS = 128
MIN_TOKEN_CHARS = 16

_NONCE_BYTES = 16
_NONCE = re.compile(r"[0-9a-f]{32,128}")
_MAC = re.compile(r"[0-9a-f]{64}")


# --- events ---------------------------------------------------------------------------------


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


Event = Authenticated | MessageReceived | PeerClosed | Sentinel


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


def printable(value: Any, limit: int = 120) -> str:
    """Untrusted text made safe for one log line."""
    text = value if isinstance(value, str) else repr(value)
    safe = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text[:limit])
    return safe + ("..." if len(text) > limit else "")


def check_token(token: Any) -> str:
    # The message never shows the value: it may be a real token with a typo.
    if not (isinstance(token, str) and len(token) >= MIN_TOKEN_CHARS and token.isascii() and token.isprintable()):
        raise ValueError(
            f"the control-channel token must be a printable ASCII string of at least {MIN_TOKEN_CHARS} characters"
        )
    return token


def _is_label(label: Any) -> TypeGuard[str]:
    return isinstance(label, str) and 0 < len(label) <= MAX_LABEL_CHARS and label.isprintable()


def check_label(label: Any) -> str:
    if not _is_label(label):
        raise ValueError(f"peer label must be 1 to {MAX_LABEL_CHARS} printable characters, got {printable(label)!r}")
    return label


def _is_protocol(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _exact_fields(frame: Mapping[str, Any], kind: str, fields: set[str]) -> None:
    missing = fields - frame.keys()
    if missing:
        raise ProtocolError(f"{kind} frame is missing field(s) {sorted(missing)}")
    unknown = frame.keys() - fields
    if unknown:
        raise ProtocolError(f"{kind} frame has unknown field(s) {printable(sorted(unknown))}")


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
        self._key = check_token(token).encode("ascii")
        self.label = check_label(label)
        self.max_frame_bytes = check_limit(max_frame_bytes)
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
            event = self._guard(lambda: self._handle(frame))  # noqa: B023 - called within this iteration
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
                f"unexpected {printable(kind, 40)!r} frame while the channel is {self._state.value} "
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
        self._queue(
            {
                "type": "hello",
                "protocol": self.protocol,
                "peer": self.label,
                "nonce": self._local_nonce,
                "mac": mac,
            }
        )
        if not same_protocol:
            # The hello above still goes out, so the driver logs the mismatch too.
            raise ProtocolError(
                f"protocol version mismatch: the driver speaks {printable(protocol, 20)}, "
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
                f"protocol version mismatch: the peer speaks {printable(protocol, 20)}, "
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
        raise ProtocolError(f"the driver rejected the connection: {printable(reason, 300)}")

    def _on_app(self, frame: dict[str, Any]) -> MessageReceived:
        return MessageReceived(frame)

    _HANDLERS: Mapping[str, Callable[[ChannelConnection, dict[str, Any]], Event | None]] = {
        "challenge": _on_challenge,
        "hello": _on_hello,
        "welcome": _on_welcome,
        "reject": _on_reject,
        _APP: _on_app,
    }
