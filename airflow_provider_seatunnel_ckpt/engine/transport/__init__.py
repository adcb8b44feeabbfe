"""The authenticated control channel between the checkpoint coordinator and its subtasks.

The coordinator runs on the Spark driver; every subtask runs in a Spark executor and
reaches the driver over TCP (``spark.driver.host``). This package moves JSON objects
between them. It does not know what the messages mean: ``engine/messages.py`` defines
them, and a ``codec`` (that module itself fits) turns them into dicts and back.

One module a layer, each importing only the ones above it in this list:

* ``framing``: bytes in, JSON objects out; objects in, bytes out. No sockets.
* ``channel``: framing plus the handshake state machine. No sockets, threads or clocks.
* ``sockets``: what both socket adapters do alike (handshake deadline, read loop).
* ``server`` (driver) and ``client`` (executor): thin threaded socket adapters.

The two lower layers hold every protocol decision and are tested with bytes alone. The
names below are the package's API; callers import them from here.
"""

from __future__ import annotations

from ...errors import ProtocolError
from .channel import (
    MAX_LABEL_CHARS,
    MIN_TOKEN_CHARS,
    TRANSITIONS,
    Authenticated,
    ChannelConnection,
    ChannelState,
    Event,
    MessageReceived,
    PeerClosed,
    Role,
)
from .client import DEFAULT_CONNECT_ATTEMPTS, DEFAULT_CONNECT_TIMEOUT_S, ControlClient
from .framing import (
    DEFAULT_MAX_FRAME_BYTES,
    END_OF_STREAM,
    HANDSHAKE_MAX_FRAME_BYTES,
    MAX_FRAME_BYTES_LIMIT,
    NEED_DATA,
    FrameReader,
    encode_frame,
)
from .server import DEFAULT_HANDSHAKE_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS, ControlServer, PeerInfo
from .sockets import DEFAULT_SEND_TIMEOUT_S, Codec

__all__ = [
    "DEFAULT_CONNECT_ATTEMPTS",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_HANDSHAKE_TIMEOUT_S",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_SEND_TIMEOUT_S",
    "END_OF_STREAM",
    "HANDSHAKE_MAX_FRAME_BYTES",
    "MAX_FRAME_BYTES_LIMIT",
    "MAX_LABEL_CHARS",
    "MIN_TOKEN_CHARS",
    "NEED_DATA",
    "TRANSITIONS",
    "Authenticated",
    "ChannelConnection",
    "ChannelState",
    "Codec",
    "ControlClient",
    "ControlServer",
    "Event",
    "FrameReader",
    "MessageReceived",
    "PeerClosed",
    "PeerInfo",
    "ProtocolError",
    "Role",
    "encode_frame",
]
