"""Fixtures for the file-system contract suite: one set of tests, every backend.

Each backend is ONE entry in ``BACKENDS``: a ``BackendFactory`` whose ``plain`` member
is a context-manager factory ``(request) -> Backend`` giving a fresh, empty file system
and a root directory to work under. Two optional members enable the failure tests:

* ``faulty``: the same backend with a fault injector in front (``Backend.faults``,
  see ``Faults``) and fast retries, for the transient-error tests;
* ``wrong_credentials``: a client whose secret is wrong (``Backend.secret``), for the
  fail-fast test; ``Backend.faults`` may be set to count the requests it makes.

Servers are started once per session and only when a test needs them.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest

from airflow_provider_seatunnel_ckpt.storage.filesystem import FileSystem

#: retries in the failure tests: as many attempts as production, much shorter waits
FAST_RETRIES: dict[str, Any] = {"retry_attempts": 4, "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05}


class Faults(Protocol):
    """What the failure tests need from a backend's fault injector."""

    def fail_next(self, n: int, status: int = 503) -> None: ...
    def drop_connection_next(self, n: int) -> None: ...
    def fail_all(self) -> None: ...
    @property
    def request_count(self) -> int: ...


@dataclass
class Backend:
    name: str
    fs: FileSystem
    root: str  #: an absolute directory the test owns; it may not exist yet
    faults: Faults | None = None
    secret: str | None = None  #: the credential that must never appear in a message
    #: words every permanent-error message must contain besides the path (bucket, host)
    error_mentions: tuple[str, ...] = field(default_factory=tuple)


Factory = Callable[[pytest.FixtureRequest], AbstractContextManager[Backend]]


@dataclass(frozen=True)
class BackendFactory:
    plain: Factory
    faulty: Factory | None = None
    wrong_credentials: Factory | None = None


_counter = itertools.count()


def _unique(prefix: str) -> str:
    return f"{prefix}-{next(_counter)}-{uuid.uuid4().hex[:8]}"


# ---- local ------------------------------------------------------------------------------
@contextlib.contextmanager
def _local(request: pytest.FixtureRequest) -> Iterator[Backend]:
    from airflow_provider_seatunnel_ckpt.storage.fs_local import LocalFileSystem

    tmp_path = request.getfixturevalue("tmp_path")
    yield Backend("local", LocalFileSystem(), str(tmp_path / "root"))


# ---- memory -----------------------------------------------------------------------------
@contextlib.contextmanager
def _memory(request: pytest.FixtureRequest) -> Iterator[Backend]:
    from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem

    try:
        yield Backend("memory", MemoryFileSystem(_unique("contract")), "/seatunnel/checkpoint")
    finally:
        MemoryFileSystem.clear_all()


# ---- s3 (moto) --------------------------------------------------------------------------
class _ProxyFaults:
    """``Faults`` over tests.servers.s3.FaultProxy."""

    def __init__(self, proxy: Any):
        self.proxy = proxy

    def fail_next(self, n: int, status: int = 503) -> None:
        self.proxy.fail_next(n, status=status)

    def drop_connection_next(self, n: int) -> None:
        self.proxy.drop_connection_next(n)

    def fail_all(self) -> None:
        self.proxy.fail_rate(1.0)

    @property
    def request_count(self) -> int:
        return self.proxy.request_count


@contextlib.contextmanager
def _s3(request: pytest.FixtureRequest) -> Iterator[Backend]:
    server = request.getfixturevalue("s3_server")
    bucket = server.create_bucket(_unique("contract"))
    fs = server.filesystem(bucket, endpoint_url=server.direct_url)  # no proxy hop
    yield Backend("s3", fs, "/seatunnel/checkpoint")


@contextlib.contextmanager
def _s3_faulty(request: pytest.FixtureRequest) -> Iterator[Backend]:
    server = request.getfixturevalue("s3_server")
    bucket = server.create_bucket(_unique("faulty"))
    server.proxy.reset()
    try:
        yield Backend("s3", server.filesystem(bucket, **FAST_RETRIES), "/ckpt", _ProxyFaults(server.proxy))
    finally:
        server.proxy.reset()


@contextlib.contextmanager
def _s3_wrong_credentials(request: pytest.FixtureRequest) -> Iterator[Backend]:
    from urllib.parse import urlparse

    server = request.getfixturevalue("s3_server")
    bucket = server.create_bucket(_unique("denied"))
    server.proxy.reset()
    wrong = "wRoNg+SeCrEt/" + uuid.uuid4().hex
    try:
        with server.iam_auth() as (key_id, _secret):  # a real key id, so S3 checks the signature
            fs = server.filesystem(bucket, access_key_id=key_id, secret_access_key=wrong, **FAST_RETRIES)
            host = urlparse(server.endpoint_url).netloc
            yield Backend("s3", fs, "/ckpt", _ProxyFaults(server.proxy), wrong, (bucket, host))
    finally:
        server.proxy.reset()


# ---- webhdfs (tests/servers/webhdfs.py) ------------------------------------------------------
@dataclass
class _ServerFaults:
    """``Faults`` over a test server with its own fault injection (webhdfs, oss)."""

    fail_next_fn: Callable[[int, int], None]
    drop_fn: Callable[[int], None]
    fail_all_fn: Callable[[], None]
    count_fn: Callable[[], int]

    def fail_next(self, n: int, status: int = 503) -> None:
        self.fail_next_fn(n, status)

    def drop_connection_next(self, n: int) -> None:
        self.drop_fn(n)

    def fail_all(self) -> None:
        self.fail_all_fn()

    @property
    def request_count(self) -> int:
        return self.count_fn()


def _webhdfs_faults(server: Any) -> _ServerFaults:
    def fail_all() -> None:
        server.fail_rate = 1.0

    return _ServerFaults(
        lambda n, status: server.fail_next(n, status),
        lambda n: server.drop_connection_next(n),
        fail_all,
        lambda: len(server.requests()),
    )


@contextlib.contextmanager
def _webhdfs_server(**kwargs: Any) -> Iterator[Any]:
    from tests.servers.webhdfs import WebHdfsServer

    with WebHdfsServer(**kwargs) as server:
        yield server


@contextlib.contextmanager
def _webhdfs(request: pytest.FixtureRequest) -> Iterator[Backend]:
    from airflow_provider_seatunnel_ckpt.storage.fs_webhdfs import WebHdfsFileSystem

    with _webhdfs_server() as server:
        yield Backend("webhdfs", WebHdfsFileSystem(urls=[server.url], user="seatunnel"), "/seatunnel/checkpoint")


@contextlib.contextmanager
def _webhdfs_faulty(request: pytest.FixtureRequest) -> Iterator[Backend]:
    from airflow_provider_seatunnel_ckpt.storage.fs_webhdfs import WebHdfsFileSystem

    with _webhdfs_server() as server:
        fs = WebHdfsFileSystem(urls=[server.url], user="seatunnel", **FAST_RETRIES)
        yield Backend("webhdfs", fs, "/ckpt", _webhdfs_faults(server))


@contextlib.contextmanager
def _webhdfs_wrong_credentials(request: pytest.FixtureRequest) -> Iterator[Backend]:
    from airflow_provider_seatunnel_ckpt.storage.fs_webhdfs import WebHdfsFileSystem

    with _webhdfs_server(required_user="hdfs") as server:
        fs = WebHdfsFileSystem(urls=[server.url], user="intruder", **FAST_RETRIES)
        yield Backend("webhdfs", fs, "/ckpt", _webhdfs_faults(server), None, (f"127.0.0.1:{server.port}",))


# ---- hdfs: Hadoop's own MiniDFSCluster (tests/servers/hadoop.py, tests/conftest.py) ---------
# The real HDFS beside the WebHDFS test server above: the server gives the faults, the
# cluster gives Hadoop's own answers. One cluster per session; each test its own directory.
@contextlib.contextmanager
def _hdfs(request: pytest.FixtureRequest) -> Iterator[Backend]:
    from airflow_provider_seatunnel_ckpt.storage.fs_webhdfs import WebHdfsFileSystem

    cluster = request.getfixturevalue("hdfs_cluster")
    fs = WebHdfsFileSystem(urls=[cluster.webhdfs_url], user="seatunnel")
    yield Backend("hdfs", fs, f"/{_unique('contract')}/checkpoint")


@contextlib.contextmanager
def _hdfs_ha(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """An HA pair with the standby NameNode listed first: every call meets a standby first,
    as a client does after a failover (a CREATE it gets is redirected all the same, and
    the DataNode then answers StandbyException)."""
    from airflow_provider_seatunnel_ckpt.storage.fs_webhdfs import WebHdfsFileSystem

    cluster = request.getfixturevalue("hdfs_ha_cluster")
    by_state = sorted(cluster.namenodes, key=lambda nn: nn["state"] != "standby")
    urls = [f"http://127.0.0.1:{nn['http_port']}" for nn in by_state]
    fs = WebHdfsFileSystem(urls=urls, user="seatunnel")
    yield Backend("hdfs-ha", fs, f"/{_unique('contract')}/checkpoint")


# ---- oss (tests/servers/oss.py) ----------------------------------------------------------------
def _oss_faults(server: Any) -> _ServerFaults:
    def fail_all() -> None:
        server.fail_rate = 1.0

    return _ServerFaults(
        lambda n, status: server.fail_next(n, status),
        lambda n: server.drop_connection_next(n),
        fail_all,
        lambda: len(server.requests),
    )


@contextlib.contextmanager
def _oss_backend(secret: str | None = None, **fs_kwargs: Any) -> Iterator[tuple[Any, Any, str]]:
    from airflow_provider_seatunnel_ckpt.storage.fs_oss import OssFileSystem
    from tests.servers.oss import OssServer

    with OssServer("contract-ak", "contract-sk") as server:
        bucket = _unique("contract")
        server.create_bucket(bucket)
        fs = OssFileSystem(bucket, server.endpoint, "contract-ak", secret or "contract-sk", **fs_kwargs)
        yield server, fs, bucket


@contextlib.contextmanager
def _oss(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with _oss_backend() as (_server, fs, _bucket):
        yield Backend("oss", fs, "/seatunnel/checkpoint")


@contextlib.contextmanager
def _oss_faulty(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with _oss_backend(**FAST_RETRIES) as (server, fs, _bucket):
        yield Backend("oss", fs, "/ckpt", _oss_faults(server))


@contextlib.contextmanager
def _oss_wrong_credentials(request: pytest.FixtureRequest) -> Iterator[Backend]:
    wrong = "wRoNg-OsS-SeCrEt-" + uuid.uuid4().hex
    with _oss_backend(secret=wrong, **FAST_RETRIES) as (server, fs, bucket):
        yield Backend("oss", fs, "/ckpt", _oss_faults(server), wrong, (bucket, f"127.0.0.1:{server.port}"))


# ---- the registry -----------------------------------------------------------------------
BACKENDS: dict[str, BackendFactory] = {
    "local": BackendFactory(_local),
    "memory": BackendFactory(_memory),
    "s3": BackendFactory(_s3, faulty=_s3_faulty, wrong_credentials=_s3_wrong_credentials),
    "webhdfs": BackendFactory(_webhdfs, faulty=_webhdfs_faulty, wrong_credentials=_webhdfs_wrong_credentials),
    "oss": BackendFactory(_oss, faulty=_oss_faulty, wrong_credentials=_oss_wrong_credentials),
    "hdfs": BackendFactory(_hdfs),
    "hdfs-ha": BackendFactory(_hdfs_ha),
}


#: (backend, test) -> why the backend breaks that part of the contract today. Marked
#: xfail(strict=True): the day the backend is fixed the test XPASSes, fails, and the
#: entry must go.
KNOWN_DEVIATIONS: dict[tuple[str, str], str] = {
    # ("webhdfs", "test_info"): "info() of a path below a file raises instead of returning None",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("fs_backend") if callspec else None
        if name in ("hdfs", "hdfs-ha"):  # the cluster fixture is asked for inside the backend
            item.add_marker("hdfs_cluster")
        reason = KNOWN_DEVIATIONS.get((name, getattr(item, "originalname", "")))
        if reason is None:
            continue
        item.add_marker(pytest.mark.xfail(reason=f"{name}: {reason}", strict=True))


def _names(kind: str) -> list[str]:
    return [name for name, f in BACKENDS.items() if getattr(f, kind) is not None]


def _open(request: pytest.FixtureRequest, kind: str) -> AbstractContextManager[Backend]:
    factory = getattr(BACKENDS[request.param], kind)
    return factory(request)


# Fixture names are prefixed so they do not shadow fixtures of other suites in tests/.
@pytest.fixture(params=_names("plain"))
def fs_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with _open(request, "plain") as b:
        yield b


@pytest.fixture
def fs(fs_backend: Backend) -> FileSystem:
    """A fresh, empty file system of each backend."""
    return fs_backend.fs


@pytest.fixture
def fs_root(fs_backend: Backend) -> str:
    """The directory the test owns in ``fs`` (may not exist yet)."""
    return fs_backend.root


@pytest.fixture(params=_names("faulty"))
def faulty_fs_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with _open(request, "faulty") as b:
        yield b


@pytest.fixture(params=_names("wrong_credentials"))
def denied_fs_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with _open(request, "wrong_credentials") as b:
        yield b


# ---- checkpoint storage on top of each backend -------------------------------------------
def _storage_maker(backend: Backend) -> Callable[..., Any]:
    from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage

    def make(max_retained: int = 3) -> Any:
        namespace = backend.root.rstrip("/") + "/namespace/"
        return FileSystemCheckpointStorage(backend.fs, namespace, max_retained, storage_type=backend.name)

    return make


@pytest.fixture
def make_storage(fs_backend: Backend) -> Callable[..., Any]:
    """``make_storage(max_retained=3)``: a CheckpointStorage over each backend's file system."""
    return _storage_maker(fs_backend)


@pytest.fixture
def make_faulty_storage(faulty_fs_backend: Backend) -> tuple[Callable[..., Any], Backend]:
    return _storage_maker(faulty_fs_backend), faulty_fs_backend


@pytest.fixture
def make_denied_storage(denied_fs_backend: Backend) -> tuple[Callable[..., Any], Backend]:
    return _storage_maker(denied_fs_backend), denied_fs_backend
