"""An executor's end of the control channel: ``ControlClient``, one per subtask attempt.

It connects to the driver, proves it knows the run's token and checks that the driver
knows it too (so a subtask never talks to an impostor), then moves messages: a reader
thread hands each incoming message to the subtask's callback, and ``send`` writes from
any thread. The subtask's processing thread never blocks on the channel.

A first connection that is refused or times out is retried with bounded exponential
backoff, because executors often start before the driver's port is reachable. A dropped
connection is reconnected only when asked (``reconnect``): the subtask then registers
again from ``on_reconnect``, under the send lock, before anything else it sends. A
rejected handshake or any other protocol violation is never retried: it would fail the
same way again.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import tenacity

from ...errors import ProtocolError
from .channel import ChannelConnection, Role, check_label, check_token
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

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_CONNECT_ATTEMPTS = 6


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
        self._token = check_token(token)
        self._label = check_label(label)
        if connect_timeout_s <= 0 or send_timeout_s <= 0:
            raise ValueError("connect_timeout_s and send_timeout_s must be positive")
        if connect_attempts < 1:
            raise ValueError(f"connect_attempts must be at least 1, got {connect_attempts}")
        self._on_message = on_message
        self._on_reconnect = on_reconnect
        self._on_close = on_close
        self._codec = codec
        self._max_frame_bytes = check_limit(max_frame_bytes)
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
        log.debug("control channel: %s connected to the driver at %s", self._label, format_address(self._address))
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
                shutdown(sock)  # maybe half a frame went out; the reader notices and reconnects
                raise ConnectionError(
                    f"control channel: {self._label} could not send to the driver: {describe_error(exc)}"
                ) from exc

    def close(self, timeout_s: float = 5.0) -> None:
        """Close the connection and stop the reader thread (also interrupts a reconnect)."""
        self._closing.set()
        with self._state_lock:
            socks = [s for s in (self._sock, self._handshake_sock) if s is not None]
            thread = self._thread
        for sock in socks:
            shutdown(sock)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
            if thread.is_alive():
                log.warning(
                    "control channel: %s reader did not stop within %g s (is a callback blocked?)",
                    self._label,
                    timeout_s,
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
        where = format_address(self._address)

        def log_retry(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.warning(
                "control channel: %s could not reach the driver at %s (attempt %d of %d, retrying): %s",
                self._label,
                where,
                state.attempt_number,
                self._connect_attempts,
                describe_error(exc) if exc else "unknown error",
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
            configure_socket(sock)
            machine = ChannelConnection(
                Role.CLIENT, self._token, label=self._label, max_frame_bytes=self._max_frame_bytes
            )
            try:
                handshake(sock, machine, deadline)
            except ProtocolError:
                flush_quietly(sock, machine)
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
        where = format_address(self._address)
        while True:
            try:
                pump(sock, machine, self._deliver)
                error = ConnectionError("the driver closed the control channel")
            except (ProtocolError, OSError) as exc:
                error = exc
            self._detach(sock)
            if self._closing.is_set():
                error = None
                break
            if not self._reconnect or isinstance(error, ProtocolError):
                log.warning("control channel: %s lost the driver at %s: %s", self._label, where, describe_error(error))
                break
            log.warning(
                "control channel: %s lost the driver at %s (%s); reconnecting",
                self._label,
                where,
                describe_error(error),
            )
            try:
                sock, machine = self._open_with_retries()
            except Exception as exc:
                error = None if self._closing.is_set() else exc
                if error is not None:
                    log.warning(
                        "control channel: %s gave up reconnecting to %s: %s", self._label, where, describe_error(exc)
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
                run_callback("on_reconnect", self._on_reconnect)
        self._closing.set()
        run_callback("on_close", self._on_close, error)

    def _detach(self, sock: socket.socket) -> None:
        shutdown(sock)  # fails a blocked sender at once, so the lock below comes quickly
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
