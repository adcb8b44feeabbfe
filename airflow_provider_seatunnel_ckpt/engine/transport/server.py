"""The driver's end of the control channel: ``ControlServer``.

It listens where the executors can reach the driver, runs the handshake with every
subtask that connects and drops any peer that does not know the run's token (or is too
slow to prove it). It then moves messages both ways: one reader thread per connection
hands each incoming message to the driver loop's callback, in order, and ``send`` and
``broadcast`` write from any thread. A connection that breaks the protocol is dropped;
the others carry on.

The server creates the per-run token. The driver hands ``address`` and ``token`` to the
executors inside the Spark task closure, so the server never logs the token, leaves it
out of its repr and refuses to be pickled. Why it uses blocking sockets with a thread per
connection rather than a selector loop is in ``ControlServer``'s docstring.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import selectors
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ProtocolError
from .channel import ChannelConnection, Role, check_token
from .framing import DEFAULT_MAX_FRAME_BYTES, check_limit, encode_frame
from .sockets import (
    DEFAULT_SEND_TIMEOUT_S,
    Codec,
    configure_socket,
    describe_error,
    flush_quietly,
    format_address,
    handshake,
    pump,
    run_callback,
    shutdown,
)

log = logging.getLogger(__package__)  # the channel's one logger (sockets.py)

DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0
DEFAULT_MAX_CONNECTIONS = 1024


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
        self._token = secrets.token_hex(32) if token is None else check_token(token)
        self._on_message = on_message
        self._on_disconnect = on_disconnect
        self._on_connect = on_connect
        self._codec = codec
        self._max_frame_bytes = check_limit(max_frame_bytes)
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
            self._address: tuple[str, int] = tuple(self._listener.getsockname()[:2])
            self._wake_r, self._wake_w = socket.socketpair()
            self._accept_thread = threading.Thread(
                target=self._accept_loop, name=f"seatunnel-ckpt-control-accept-{self._address[1]}", daemon=True
            )
            self._accept_thread.start()
        except BaseException:
            self._listener.close()
            raise
        log.debug("control channel: listening on %s", format_address(self._address))

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
            return {c.id: PeerInfo(c.id, c.label, c.address) for c in self._connections.values() if c.label is not None}

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
        shutdown(conn.sock)
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
            shutdown(conn.sock)
        deadline = time.monotonic() + timeout_s
        for conn in conns:
            if conn.thread is not None and conn.thread is not current:
                conn.thread.join(max(0.0, deadline - time.monotonic()))
                if conn.thread.is_alive():
                    log.warning(
                        "control channel: %s did not stop within %g s (is a callback blocked?)",
                        conn.describe(),
                        timeout_s,
                    )
        log.debug("control channel: closed %s", format_address(self._address))

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
        raise TypeError("a ControlServer cannot be pickled; pass server.address and server.token to the executors")

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
                shutdown(conn.sock)  # maybe half a frame went out: the stream is unusable
                raise ConnectionError(
                    f"control channel: sending to {conn.describe()} failed: {describe_error(exc)}"
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
                            "control channel: accept failed on %s: %s",
                            format_address(self._address),
                            describe_error(exc),
                        )
                        time.sleep(0.1)  # e.g. out of file descriptors: do not spin
                        continue
                    self._admit(sock, format_address(address))

    def _admit(self, sock: socket.socket, address: str) -> None:
        conn = _ServerConnection(next(self._ids), sock, address)
        with self._lock:
            refused = (
                "the server is closing"
                if self._closed
                else (
                    f"too many connections ({self._max_connections})"
                    if len(self._connections) >= self._max_connections
                    else None
                )
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
        log.warning("control channel: rejected connection %d from %s%s: %s", conn.id, conn.address, claimed, reason)

    def _serve(self, conn: _ServerConnection) -> None:
        sock = conn.sock
        machine = ChannelConnection(Role.SERVER, self._token, max_frame_bytes=self._max_frame_bytes)
        announced = False
        try:
            try:
                configure_socket(sock)
                event = handshake(sock, machine, time.monotonic() + self._handshake_timeout_s)
            except ProtocolError as exc:
                self._warn_rejected(conn, machine, str(exc))
                flush_quietly(sock, machine)
                return
            except TimeoutError:
                reason = f"no hello within {self._handshake_timeout_s:g} s"
                machine.reject(reason)
                self._warn_rejected(conn, machine, reason)
                flush_quietly(sock, machine)
                return
            except OSError as exc:
                if not (conn.dropping or self._closed):
                    self._warn_rejected(conn, machine, f"connection lost during the handshake ({describe_error(exc)})")
                return
            sock.settimeout(self._send_timeout_s)  # bounds sends; the reader loops on recv timeouts
            with self._lock:
                conn.label = event.peer
            if conn.dropping or self._closed:
                return
            announced = True
            log.info("control channel: %s connected", conn.describe())
            run_callback("on_connect", self._on_connect, conn.id, event.peer)
            try:
                pump(sock, machine, lambda payload: self._deliver(conn, payload))
                if not (conn.dropping or self._closed):
                    log.info("control channel: %s closed by the peer", conn.describe())
            except ProtocolError as exc:
                log.warning("control channel: dropped %s: %s", conn.describe(), exc)
            except OSError as exc:
                if not (conn.dropping or self._closed):
                    log.warning("control channel: lost %s: %s", conn.describe(), describe_error(exc))
        finally:
            with self._lock:
                self._connections.pop(conn.id, None)
            shutdown(sock)
            with conn.send_lock:  # no writer may be inside sendall when the fd is released
                sock.close()
            if announced:
                run_callback("on_disconnect", self._on_disconnect, conn.id)

    def _deliver(self, conn: _ServerConnection, payload: dict[str, Any]) -> None:
        message = payload if self._codec is None else self._codec.decode(payload)
        try:
            self._on_message(conn.id, message)
        except ProtocolError:
            raise
        except Exception:
            log.exception("control channel: on_message failed for a message from %s; message skipped", conn.describe())
