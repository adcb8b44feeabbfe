"""Control channel: sans-I/O framing and handshake, then real sockets on 127.0.0.1.

The first half drives FrameReader / ChannelConnection with bytes only (no sockets, no
threads, no clocks). The second half runs a real ControlServer and ControlClients; it
waits on events and conditions with timeouts, never on fixed sleeps.
"""

from __future__ import annotations

import json
import logging
import pickle
import re
import socket
import struct
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

from airflow_provider_seatunnel_ckpt.engine import messages, transport
from airflow_provider_seatunnel_ckpt.engine.messages import PROTOCOL_VERSION
from airflow_provider_seatunnel_ckpt.engine.transport import (
    END_OF_STREAM,
    HANDSHAKE_MAX_FRAME_BYTES,
    NEED_DATA,
    Authenticated,
    ChannelConnection,
    ChannelState,
    ControlClient,
    ControlServer,
    FrameReader,
    MessageReceived,
    PeerClosed,
    Role,
    encode_frame,
)
from airflow_provider_seatunnel_ckpt.errors import ProtocolError

TOKEN = "a1" * 32
OTHER_TOKEN = "b2" * 32
LOGGER = transport.__name__
LONG_HEX = re.compile(r"[0-9a-f]{32,}")  # a token, a MAC or a nonce would match


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]


# --- sans-I/O: framing ----------------------------------------------------------------------


def frames_in(reader: FrameReader) -> list:
    out = []
    while (frame := reader.next_frame()) is not NEED_DATA:
        out.append(frame)
        if frame is END_OF_STREAM:
            break
    return out


MESSAGES = [{"type": "a", "n": 1}, {"type": "b", "text": "héllo ✓", "nested": [1, {"x": None}]}, {}]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64, 10_000])
def test_frames_split_and_merged_across_chunk_boundaries(chunk):
    stream = b"".join(encode_frame(m) for m in MESSAGES)
    reader = FrameReader()
    got = []
    for i in range(0, len(stream), chunk):
        reader.receive_data(stream[i : i + chunk])
        got += frames_in(reader)
    reader.receive_data(b"")
    assert got == MESSAGES
    assert reader.next_frame() is END_OF_STREAM
    assert reader.buffered_bytes == 0


def test_oversized_length_prefix_is_rejected_before_the_body_is_buffered():
    reader = FrameReader(HANDSHAKE_MAX_FRAME_BYTES)
    with pytest.raises(ProtocolError, match=r"incoming frame of 4294967295 bytes exceeds the limit of 4096 bytes"):
        reader.receive_data(struct.pack(">I", 2**32 - 1))  # only the header: no body sent yet
    assert reader.buffered_bytes == 0
    with pytest.raises(ProtocolError, match="broken"):
        reader.receive_data(b"{}")


def test_frame_limit_is_exact_on_both_sides():
    limit = 5000
    at_limit = {"p": "x" * (limit - len('{"p":""}'))}
    frame = encode_frame(at_limit, limit)
    assert len(frame) == 4 + limit
    reader = FrameReader(limit)
    reader.receive_data(frame)
    assert reader.next_frame() == at_limit
    over = {"p": "x" * (limit - len('{"p":""}') + 1)}
    with pytest.raises(ProtocolError, match=rf"outgoing frame of {limit + 1} bytes exceeds the limit of {limit} bytes"):
        encode_frame(over, limit)
    with pytest.raises(ProtocolError, match=rf"incoming frame of {limit + 1} bytes exceeds the limit of {limit}"):
        reader.receive_data(encode_frame(over, limit + 1))


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b"", "not valid JSON"),
        (b'{"a": NaN}', "NaN is not valid JSON"),
        (b"\xff\xfe{}", "not valid UTF-8"),
        (b"[1, 2]", "must hold a JSON object, got a JSON array"),
        (b"null", "got a JSON null"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_malformed_frame_bodies_raise_protocol_error(body, problem):
    reader = FrameReader()
    reader.receive_data(struct.pack(">I", len(body)) + body)
    with pytest.raises(ProtocolError, match=problem):
        reader.next_frame()


def test_stream_closed_mid_frame_is_an_error_and_clean_close_is_not():
    frame = encode_frame({"type": "x"})
    reader = FrameReader()
    reader.receive_data(frame[:-3])
    assert reader.next_frame() is NEED_DATA
    reader.receive_data(b"")
    with pytest.raises(ProtocolError, match="in the middle of a frame"):
        reader.next_frame()


@pytest.mark.parametrize("bad", [{"b": b"bytes"}, {"f": float("nan")}, ["not", "an", "object"]])
def test_encode_frame_refuses_values_that_are_not_json_objects(bad):
    with pytest.raises(ProtocolError):
        encode_frame(bad)


def test_limits_are_validated():
    with pytest.raises(ValueError, match="max_frame_bytes"):
        FrameReader(100)
    with pytest.raises(ValueError, match="max_frame_bytes"):
        FrameReader(2**32)


# --- sans-I/O: handshake --------------------------------------------------------------------


class Pair:
    """Two ChannelConnections joined by an in-memory pipe (like h11's ConnectionPair)."""

    def __init__(self, server: ChannelConnection, client: ChannelConnection):
        self.server, self.client = server, client
        self.wire: list[bytes] = []

    def deliver(self, sender: ChannelConnection, receiver: ChannelConnection) -> list:
        data = sender.data_to_send()
        self.wire.append(data)
        receiver.receive_data(data)
        events = []
        while (event := receiver.next_event()) is not NEED_DATA:
            events.append(event)
            if isinstance(event, PeerClosed):
                break
        return events

    def handshake(self) -> None:
        assert self.deliver(self.server, self.client) == []  # challenge -> hello queued
        assert self.deliver(self.client, self.server) == [Authenticated("subtask-3/attempt-1")]
        assert self.deliver(self.server, self.client) == [Authenticated("driver")]


def make_pair(server_token=TOKEN, client_token=TOKEN, **client_kw) -> Pair:
    return Pair(
        ChannelConnection(Role.SERVER, server_token),
        ChannelConnection(Role.CLIENT, client_token, label="subtask-3/attempt-1", **client_kw),
    )


def test_handshake_then_messages_both_ways_and_the_token_never_on_the_wire():
    pair = make_pair()
    assert pair.server.state is ChannelState.AWAIT_HELLO
    assert pair.client.state is ChannelState.AWAIT_CHALLENGE
    pair.handshake()
    assert pair.server.state is pair.client.state is ChannelState.OPEN
    assert pair.server.peer == "subtask-3/attempt-1"
    wire = b"".join(pair.wire)
    assert TOKEN.encode() not in wire
    assert pair.wire[0].find(b'"type":"challenge"') > 0 and f'"protocol":{PROTOCOL_VERSION}'.encode() in pair.wire[0]

    pair.client.receive_data(pair.server.send({"type": "trigger", "id": 7}))
    assert pair.client.next_event() == MessageReceived({"type": "trigger", "id": 7})
    # After the handshake a frame named like a handshake frame is just a message.
    pair.server.receive_data(pair.client.send({"type": "hello"}))
    assert pair.server.next_event() == MessageReceived({"type": "hello"})


def test_welcome_and_a_large_message_in_one_chunk_use_the_open_limit():
    pair = make_pair()
    pair.deliver(pair.server, pair.client)
    pair.deliver(pair.client, pair.server)
    big = {"type": "restore_state", "inline": "x" * 100_000}  # far over the handshake limit
    pair.client.receive_data(pair.server.data_to_send() + pair.server.send(big))
    assert pair.client.next_event() == Authenticated("driver")
    assert pair.client.next_event() == MessageReceived(big)


def test_wrong_token_is_rejected_without_revealing_token_or_mac():
    pair = make_pair(client_token=OTHER_TOKEN)
    pair.deliver(pair.server, pair.client)
    hello = pair.client.data_to_send()
    mac = json.loads(hello[4:])["mac"]
    pair.server.receive_data(hello)
    with pytest.raises(ProtocolError, match="authentication failed") as failure:
        pair.server.next_event()
    assert pair.server.state is ChannelState.CLOSED
    assert pair.server.claimed_peer == "subtask-3/attempt-1"
    for text in (str(failure.value), pair.server.data_to_send().decode("utf-8", "replace")):
        assert TOKEN not in text and OTHER_TOKEN not in text and mac not in text
    with pytest.raises(ProtocolError):
        pair.server.next_event()  # stays failed


def test_client_sees_the_reject_reason():
    pair = make_pair(client_token=OTHER_TOKEN)
    pair.deliver(pair.server, pair.client)
    pair.server.receive_data(pair.client.data_to_send())
    with pytest.raises(ProtocolError):
        pair.server.next_event()
    with pytest.raises(ProtocolError, match="the driver rejected the connection: authentication failed"):
        pair.deliver(pair.server, pair.client)
    assert pair.client.state is ChannelState.CLOSED


def test_first_frame_must_be_hello():
    server = ChannelConnection(Role.SERVER, TOKEN)
    server.data_to_send()
    server.receive_data(encode_frame({"type": "register", "subtask": 0, "attempt": 0}))
    expected = r"unexpected 'register' frame while the channel is awaiting hello \(expected 'hello'\)"
    with pytest.raises(ProtocolError, match=expected):
        server.next_event()
    reject = json.loads(server.data_to_send()[4:])
    assert reject["type"] == "reject" and "register" in reject["reason"]


def test_protocol_version_mismatch_fails_on_both_sides():
    pair = make_pair(protocol=PROTOCOL_VERSION + 1)
    pair.client.receive_data(pair.server.data_to_send())
    newer = PROTOCOL_VERSION + 1
    with pytest.raises(ProtocolError, match=rf"driver speaks {PROTOCOL_VERSION}, this side speaks {newer}"):
        pair.client.next_event()
    # The client's hello still goes out, so the driver logs the mismatch as well.
    pair.server.receive_data(pair.client.data_to_send())
    with pytest.raises(ProtocolError, match=rf"peer speaks {newer}, this side speaks {PROTOCOL_VERSION}"):
        pair.server.next_event()


def test_client_drops_an_impostor_driver():
    pair = make_pair()
    pair.deliver(pair.server, pair.client)
    pair.deliver(pair.client, pair.server)
    pair.server.data_to_send()  # the real welcome is discarded; an impostor cannot compute it
    pair.client.receive_data(encode_frame({"type": "welcome", "mac": "0" * 64}))
    with pytest.raises(ProtocolError, match="server does not know this run's token"):
        pair.client.next_event()


def test_a_replayed_hello_mac_does_not_pass_as_welcome():
    pair = make_pair()
    pair.deliver(pair.server, pair.client)
    hello = json.loads(pair.client.data_to_send()[4:])
    pair.client.receive_data(encode_frame({"type": "welcome", "mac": hello["mac"]}))
    with pytest.raises(ProtocolError, match="authentication failed"):
        pair.client.next_event()


def test_handshake_frames_are_limited_before_authentication():
    server = ChannelConnection(Role.SERVER, TOKEN)  # open limit is 64 MiB, pre-auth only 4 KiB
    server.data_to_send()
    with pytest.raises(ProtocolError, match=f"exceeds the limit of {HANDSHAKE_MAX_FRAME_BYTES} bytes"):
        server.receive_data(struct.pack(">I", HANDSHAKE_MAX_FRAME_BYTES + 1))
    assert server.state is ChannelState.CLOSED
    assert json.loads(server.data_to_send()[4:])["type"] == "reject"


def test_application_messages_need_an_open_channel():
    client = ChannelConnection(Role.CLIENT, TOKEN, label="x")
    with pytest.raises(ProtocolError, match="awaiting challenge"):
        client.send({"type": "register"})


@pytest.mark.parametrize("label", ["", "x" * 129, "bad\nlabel"])
def test_labels_are_checked(label):
    with pytest.raises(ValueError, match="peer label"):
        ChannelConnection(Role.CLIENT, TOKEN, label=label)


def test_short_tokens_are_refused_without_echoing_them():
    with pytest.raises(ValueError) as failure:
        ChannelConnection(Role.SERVER, "s3cr3t")
    assert "s3cr3t" not in str(failure.value)


# --- real sockets ---------------------------------------------------------------------------


class Inbox:
    """Server-side callback recorder."""

    def __init__(self):
        self.cond = threading.Condition()
        self.by_connection: dict[int, list] = defaultdict(list)
        self.connected: dict[int, str] = {}
        self.disconnected: list[int] = []

    def on_message(self, connection_id, message):
        with self.cond:
            self.by_connection[connection_id].append(message)
            self.cond.notify_all()

    def on_connect(self, connection_id, label):
        with self.cond:
            self.connected[connection_id] = label
            self.cond.notify_all()

    def on_disconnect(self, connection_id):
        with self.cond:
            self.disconnected.append(connection_id)
            self.cond.notify_all()

    def wait(self, predicate, timeout=5.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: predicate(self), timeout)

    def count(self) -> int:
        return sum(len(v) for v in self.by_connection.values())

    def connection_of(self, label) -> int:
        return next(cid for cid, lab in self.connected.items() if lab == label)


class ClientInbox:
    def __init__(self):
        self.messages: list = []
        self.event = threading.Event()
        self.reconnected = threading.Event()
        self.closed_with: list = []
        self.closed = threading.Event()

    def on_message(self, message):
        self.messages.append(message)
        self.event.set()

    def on_reconnect(self):
        self.reconnected.set()

    def on_close(self, error):
        self.closed_with.append(error)
        self.closed.set()


@pytest.fixture
def make_server():
    servers = []

    def make(**kw):
        inbox = kw.pop("inbox", None) or Inbox()
        kw.setdefault("on_message", inbox.on_message)
        server = ControlServer(
            token=kw.pop("token", TOKEN), on_connect=inbox.on_connect, on_disconnect=inbox.on_disconnect, **kw
        )
        servers.append(server)
        return server, inbox

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def make_client():
    clients = []

    def make(server_or_address, label="subtask-0/attempt-0", token=TOKEN, connect=True, **kw):
        inbox = ClientInbox()
        address = server_or_address.address if isinstance(server_or_address, ControlServer) else server_or_address
        kw.setdefault("on_reconnect", inbox.on_reconnect)
        client = ControlClient(address, token, label, inbox.on_message, on_close=inbox.on_close, **kw)
        clients.append(client)
        if connect:
            client.connect()
        return client, inbox

    yield make
    for client in clients:
        client.close()


def raw_connect(server: ControlServer) -> tuple[socket.socket, FrameReader]:
    sock = socket.create_connection(server.address, timeout=5)
    return sock, FrameReader()


def read_frame(sock: socket.socket, reader: FrameReader):
    while (frame := reader.next_frame()) is NEED_DATA:
        reader.receive_data(sock.recv(65536))
    return frame


def test_handshake_over_tcp_and_messages_flow_both_ways(make_server, make_client):
    server, inbox = make_server()
    clients = [make_client(server, label=f"subtask-{i}/attempt-0") for i in range(3)]
    assert inbox.wait(lambda s: len(s.connected) == 3)
    assert sorted(p.label for p in server.connections().values()) == [f"subtask-{i}/attempt-0" for i in range(3)]
    for i, (client, _) in enumerate(clients):
        client.send({"type": "register", "subtask": i})
    assert inbox.wait(lambda s: s.count() == 3)
    for i, (_, client_inbox) in enumerate(clients):
        cid = inbox.connection_of(f"subtask-{i}/attempt-0")
        assert inbox.by_connection[cid] == [{"type": "register", "subtask": i}]
        server.send(cid, {"type": "restore_state", "for": i})
        assert client_inbox.event.wait(5)
        assert client_inbox.messages == [{"type": "restore_state", "for": i}]


def test_broadcast_reaches_every_client(make_server, make_client):
    server, inbox = make_server()
    clients = [make_client(server, label=f"subtask-{i}/attempt-0") for i in range(4)]
    assert inbox.wait(lambda s: len(s.connected) == 4)
    reached = server.broadcast({"type": "trigger_barrier", "checkpoint_id": 1})
    assert sorted(reached) == sorted(inbox.connected)
    for _, client_inbox in clients:
        assert client_inbox.event.wait(5)
        assert client_inbox.messages == [{"type": "trigger_barrier", "checkpoint_id": 1}]


def test_wrong_token_is_dropped_and_logged_once_without_secrets(make_server, make_client, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server, inbox = make_server()
    with pytest.raises(ProtocolError, match="rejected the connection: authentication failed"):
        make_client(server, label="subtask-3/attempt-1", token=OTHER_TOKEN)
    assert wait_until(lambda: len(warnings_of(caplog)) == 1)
    (line,) = warnings_of(caplog)
    assert "127.0.0.1:" in line and "subtask-3/attempt-1" in line and "authentication failed" in line
    assert TOKEN not in caplog.text and OTHER_TOKEN not in caplog.text
    assert not LONG_HEX.search(caplog.text)  # no token, MAC or nonce
    assert inbox.count() == 0 and inbox.connected == {} and server.connections() == {}


def test_a_message_before_hello_is_never_delivered(make_server, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server, inbox = make_server()
    sock, reader = raw_connect(server)
    with sock:
        assert read_frame(sock, reader)["type"] == "challenge"
        sock.sendall(encode_frame({"type": "register", "subtask": 0, "attempt": 0}))
        reject = read_frame(sock, reader)
        assert reject["type"] == "reject" and "expected 'hello'" in reject["reason"]
        assert read_frame(sock, reader) is END_OF_STREAM
    assert wait_until(lambda: len(warnings_of(caplog)) == 1)
    assert "unexpected 'register' frame" in warnings_of(caplog)[0]
    assert inbox.count() == 0


def test_no_hello_within_the_timeout_drops_the_connection(make_server, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server, inbox = make_server(handshake_timeout_s=0.2)
    sock, reader = raw_connect(server)
    started = time.monotonic()
    with sock:
        assert read_frame(sock, reader)["type"] == "challenge"
        reject = read_frame(sock, reader)  # we say nothing and wait
        assert reject == {"type": "reject", "reason": "no hello within 0.2 s"}
        assert read_frame(sock, reader) is END_OF_STREAM
    assert 0.15 < time.monotonic() - started < 3
    assert wait_until(lambda: len(warnings_of(caplog)) == 1)
    assert "no hello within 0.2 s" in warnings_of(caplog)[0] and "127.0.0.1:" in warnings_of(caplog)[0]


def test_a_trickling_peer_cannot_extend_the_handshake_deadline(make_server):
    server, _ = make_server(handshake_timeout_s=0.3)
    sock, reader = raw_connect(server)
    hello = encode_frame({"type": "hello", "padding": "x" * 100})
    started = time.monotonic()
    with sock:
        read_frame(sock, reader)
        try:
            for byte in hello:  # one byte every 50 ms would take ~5 s
                sock.sendall(bytes([byte]))
                time.sleep(0.05)
        except OSError:
            pass
    assert time.monotonic() - started < 2


def test_wrong_protocol_version_is_rejected(make_server, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server, inbox = make_server()
    sock, reader = raw_connect(server)
    machine = ChannelConnection(Role.CLIENT, TOKEN, label="subtask-1/attempt-0", protocol=PROTOCOL_VERSION + 1)
    with sock:
        challenge = read_frame(sock, reader)
        machine.receive_data(encode_frame(challenge))
        with pytest.raises(ProtocolError, match="version mismatch"):
            machine.next_event()
        sock.sendall(machine.data_to_send())  # the hello, with a valid MAC but version + 1
        reject = read_frame(sock, reader)
        assert reject["type"] == "reject" and "protocol version mismatch" in reject["reason"]
        assert read_frame(sock, reader) is END_OF_STREAM
    assert wait_until(lambda: len(warnings_of(caplog)) == 1)
    assert f"peer speaks {PROTOCOL_VERSION + 1}" in warnings_of(caplog)[0]
    assert inbox.connected == {}


def test_oversized_frame_closes_the_connection(make_server, make_client, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server, inbox = make_server(max_frame_bytes=4096)
    client, client_inbox = make_client(server, max_frame_bytes=1 << 20)
    assert inbox.wait(lambda s: len(s.connected) == 1)
    client.send({"type": "ack", "inline": "x" * 10_000})
    assert inbox.wait(lambda s: len(s.disconnected) == 1)
    assert client_inbox.closed.wait(5)
    assert isinstance(client_inbox.closed_with[0], OSError)
    assert inbox.count() == 0
    assert any("incoming frame of 10" in w and "exceeds the limit of 4096 bytes" in w for w in warnings_of(caplog))


def test_oversized_send_is_refused_locally_and_the_connection_survives(make_server, make_client):
    server, inbox = make_server()
    client, _ = make_client(server, max_frame_bytes=4096)
    with pytest.raises(ProtocolError, match="outgoing frame of .* exceeds the limit of 4096 bytes"):
        client.send({"type": "ack", "inline": "x" * 5000})
    client.send({"type": "decline", "reason": "state too large"})
    assert inbox.wait(lambda s: s.count() == 1)
    assert client.connected


def test_client_reconnects_after_the_server_drops_it(make_server, make_client):
    server, inbox = make_server()
    reconnected = threading.Event()

    def reregister():
        client.send({"type": "register", "again": True})  # the callback may send
        reconnected.set()

    client, client_inbox = make_client(server, reconnect=True, initial_backoff_s=0.01, on_reconnect=reregister)
    client.send({"type": "register"})
    assert inbox.wait(lambda s: s.count() == 1)
    (first,) = inbox.connected
    assert server.drop_connection(first)
    assert not server.drop_connection(9999)
    assert reconnected.wait(5)
    assert inbox.wait(lambda s: first in s.disconnected and len(s.connected) == 2)
    second = max(inbox.connected)
    assert inbox.wait(lambda s: s.by_connection[second] == [{"type": "register", "again": True}])
    assert client.reconnects == 1 and client.connected
    client.send({"type": "ack"})
    server.send(second, {"type": "notify_complete"})
    assert inbox.wait(lambda s: s.by_connection[second][-1] == {"type": "ack"})
    assert client_inbox.event.wait(5) and client_inbox.messages == [{"type": "notify_complete"}]
    assert not client_inbox.closed.is_set()


def test_client_gives_up_after_bounded_retries_when_the_driver_is_gone(make_server, make_client):
    server, inbox = make_server()
    client, client_inbox = make_client(server, reconnect=True, connect_attempts=2, initial_backoff_s=0.01)
    assert inbox.wait(lambda s: len(s.connected) == 1)
    server.close()
    assert client_inbox.closed.wait(5)
    assert isinstance(client_inbox.closed_with[0], OSError)
    assert not client_inbox.reconnected.is_set()
    with pytest.raises(ConnectionError):
        client.send({"type": "ack"})


def test_connect_retries_are_bounded():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        address = probe.getsockname()
    client = ControlClient(address, TOKEN, "s", lambda m: None, connect_attempts=3, initial_backoff_s=0.01)
    started = time.monotonic()
    with pytest.raises(ConnectionRefusedError):
        client.connect()
    assert time.monotonic() - started < 2
    client.close()


def test_close_notifies_both_sides_joins_threads_and_frees_the_port(make_server, make_client):
    before = set(threading.enumerate())
    server, inbox = make_server()
    client, client_inbox = make_client(server)
    assert inbox.wait(lambda s: len(s.connected) == 1)
    client.close()
    assert client_inbox.closed.wait(5) and client_inbox.closed_with == [None]
    assert inbox.wait(lambda s: len(s.disconnected) == 1)
    other, other_inbox = make_client(server, label="subtask-1/attempt-0")
    # registered before the close: one accepted but not yet registered is dropped silently
    assert inbox.wait(lambda s: len(s.connected) == 2)
    port = server.address[1]
    server.close()
    server.close()  # idempotent
    assert other_inbox.closed.wait(5)
    assert inbox.wait(lambda s: len(s.disconnected) == 2)
    assert wait_until(lambda: not (set(threading.enumerate()) - before))
    again, _ = make_server(port=port)
    assert again.address[1] == port


def test_50_clients_100_messages_each_exactly_once_and_in_order(make_server, make_client):
    def echo(connection_id, message):
        inbox.on_message(connection_id, message)
        server.send(connection_id, {"type": "echo", "seq": message["seq"]})

    inbox = Inbox()
    server, _ = make_server(inbox=inbox, on_message=echo)
    clients = [make_client(server, label=f"subtask-{i}/attempt-0") for i in range(50)]
    assert inbox.wait(lambda s: len(s.connected) == 50)
    start = threading.Barrier(50)

    def produce(i):
        client = clients[i][0]
        start.wait()
        for seq in range(100):
            client.send({"type": "data", "client": i, "seq": seq})

    producers = [threading.Thread(target=produce, args=(i,)) for i in range(50)]
    for t in producers:
        t.start()
    for t in producers:
        t.join(10)
    assert inbox.wait(lambda s: s.count() == 5000, timeout=10)
    for i in range(50):
        received = inbox.by_connection[inbox.connection_of(f"subtask-{i}/attempt-0")]
        assert received == [{"type": "data", "client": i, "seq": seq} for seq in range(100)]
    for _, client_inbox in clients:
        assert wait_until(lambda: len(client_inbox.messages) == 100, timeout=10)  # noqa: B023 - called within this iteration
        assert [m["seq"] for m in client_inbox.messages] == list(range(100))


def test_the_messages_module_works_as_codec(make_server, make_client):
    server, inbox = make_server(codec=messages)
    client, client_inbox = make_client(server, codec=messages)
    client.send(messages.Register(subtask=3, attempt=1))
    assert inbox.wait(lambda s: s.count() == 1)
    (cid,) = inbox.by_connection
    assert inbox.by_connection[cid] == [messages.Register(subtask=3, attempt=1)]
    server.send(cid, messages.NotifyComplete(checkpoint_id=4))
    assert client_inbox.event.wait(5)
    assert client_inbox.messages == [messages.NotifyComplete(checkpoint_id=4)]


def test_a_malformed_message_drops_the_sender(make_server, make_client, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server, inbox = make_server(codec=messages)
    client, client_inbox = make_client(server)  # no codec: can send anything
    client.send({"type": "register", "subtask": -1, "attempt": 0})
    assert client_inbox.closed.wait(5)
    assert inbox.wait(lambda s: len(s.disconnected) == 1)
    assert inbox.count() == 0
    assert any("dropped connection" in w and "register" in w for w in warnings_of(caplog))


def test_a_failing_callback_does_not_kill_the_connection(make_server, make_client):
    seen = []

    def flaky(connection_id, message):
        seen.append(message)
        if message["n"] == 0:
            raise RuntimeError("bug in the coordinator adapter")

    server, _ = make_server(on_message=flaky)
    client, _ = make_client(server)
    client.send({"n": 0})
    client.send({"n": 1})
    assert wait_until(lambda: len(seen) == 2)
    assert client.connected


def test_the_token_stays_out_of_repr_and_pickles(make_server, make_client):
    server, _ = make_server(token=None)
    assert len(server.token) == 64 and server.token != TOKEN
    client, _ = make_client(server, token=server.token)
    for text in (repr(server), str(server), repr(client), str(client)):
        assert server.token not in text
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(server)
