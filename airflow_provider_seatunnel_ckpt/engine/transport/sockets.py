"""What both socket adapters (``server.py``, ``client.py``) do alike with a socket and a channel.

Socket options (no Nagle delay for small control messages, keepalive so a dead peer is
noticed), the handshake under one overall deadline, the read loop that feeds the channel
and hands application frames on, a best-effort flush of a reject before closing, and
``shutdown`` to wake every thread blocked on a socket. Also the ``Codec`` both adapters
take, and the helpers that keep their log lines to one safe line each.

Kept in one place so that the driver's and the executor's ends of a connection read,
time out and fail the same way; the channel itself (``channel.py``) stays free of I/O.
Everything here logs under the package's logger, the name the channel always logged
under, so logging configurations that name it keep working.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .channel import Authenticated, ChannelConnection, MessageReceived, PeerClosed, printable
from .framing import HANDSHAKE_MAX_FRAME_BYTES, NEED_DATA

log = logging.getLogger(__package__)

DEFAULT_SEND_TIMEOUT_S = 30.0

_RECV_CHUNK = 256 * 1024
_KEEPALIVE = (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))


class Codec(Protocol):
    """Turns application messages into JSON-safe dicts and back (``engine.messages`` fits).

    ``decode`` raises ProtocolError for a malformed message; the transport then drops
    the connection that sent it.
    """

    def encode(self, message: Any) -> Mapping[str, Any]: ...

    def decode(self, raw: Any) -> Any: ...


def configure_socket(sock: socket.socket) -> None:
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


def handshake(sock: socket.socket, machine: ChannelConnection, deadline: float) -> Authenticated:
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


def flush_quietly(sock: socket.socket, machine: ChannelConnection) -> None:
    """Best effort: tell the peer why (reject) before the connection is closed."""
    pending = machine.data_to_send()
    if pending:
        try:
            sock.settimeout(1.0)
            sock.sendall(pending)
        except OSError:
            pass


def pump(sock: socket.socket, machine: ChannelConnection, deliver: Callable[[dict[str, Any]], None]) -> None:
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


def shutdown(sock: socket.socket) -> None:
    """Wake every thread blocked on ``sock`` (recv returns b"", send fails)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def describe_error(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {printable(text, 200)}" if text else type(exc).__name__


def format_address(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(address)


def run_callback(what: str, callback: Callable[..., Any] | None, *args: Any) -> None:
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:
        log.exception("control channel: %s callback failed", what)
