"""``FileSystem.create_new``: create-or-fail, the write that fences two drivers of one
job (an Airflow zombie and its retry), run against every backend (conftest.py).

Each backend must decide "already exists" in the store itself (a link on local disk,
``If-None-Match: *`` on S3, ``x-oss-forbid-overwrite`` on OSS, a rename without
overwrite on WebHDFS), so the race test below is the one that matters.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError
from airflow_provider_seatunnel_ckpt.storage.filesystem import FileSystem

from .conftest import FAST_RETRIES, _unique


def _names(fs: FileSystem, directory: str) -> list[str]:
    return sorted(i.name for i in fs.list_dir(directory))


def test_creates_a_file(fs: FileSystem, fs_root: str) -> None:
    path = f"{fs_root}/job/fence/000000000001.json"  # parents implied
    fs.create_new(path, b'{"driver": "a"}')
    assert fs.read(path) == b'{"driver": "a"}'
    assert _names(fs, f"{fs_root}/job/fence") == ["000000000001.json"]
    fs.create_new(f"{fs_root}/job/fence/empty", memoryview(b""))
    assert fs.read(f"{fs_root}/job/fence/empty") == b""


def test_second_create_is_refused_and_changes_nothing(fs: FileSystem, fs_root: str) -> None:
    path = f"{fs_root}/chk-0007/_metadata"
    fs.create_new(path, b"first")
    for other in (b"second", b"", b"first but longer"):
        with pytest.raises(FileExistsError) as err:
            fs.create_new(path, other)
        assert fs.read(path) == b"first"
        assert err.value.errno is not None and fs.describe(path) == err.value.filename
        assert fs.backend in str(err.value)
    fs.write_atomic(f"{fs_root}/chk-0007/written", b"by write_atomic")
    with pytest.raises(FileExistsError):  # whoever wrote the existing file
        fs.create_new(f"{fs_root}/chk-0007/written", b"x")
    assert fs.read(f"{fs_root}/chk-0007/written") == b"by write_atomic"


def test_refused_create_leaves_no_temp_files(fs: FileSystem, fs_root: str) -> None:
    d = f"{fs_root}/fence"
    fs.create_new(f"{d}/000000000001.json", b"claim 1")
    for i in range(3):
        with pytest.raises(FileExistsError):
            fs.create_new(f"{d}/000000000001.json", b"claim %d" % (i + 2))
    assert _names(fs, d) == ["000000000001.json"]
    assert [i.name for i in fs.walk_files(d)] == ["000000000001.json"]
    if fs.backend == "local":  # not even hidden ones (list_dir hides temp names)
        assert os.listdir(d) == ["000000000001.json"]


def test_the_same_bytes_again_is_our_own_create(fs: FileSystem, fs_root: str) -> None:
    """A retry of a create whose answer was lost finds its own bytes: that is success."""
    path = f"{fs_root}/fence/000000000002.json"
    payload = b'{"driver": "b", "attempt": 1}'
    fs.create_new(path, payload)
    fs.create_new(path, bytearray(payload))
    fs.create_new(path, memoryview(payload))
    assert fs.read(path) == payload


def test_exactly_one_of_racing_creators_wins(fs: FileSystem, fs_root: str) -> None:
    n = 8
    path = f"{fs_root}/job/pipeline-1/chk-0003/_metadata"
    barrier = threading.Barrier(n)

    def create(i: int) -> bytes | None:
        payload = b"driver-%d " % i + bytes([i]) * (100 * i)
        barrier.wait()
        try:
            fs.create_new(path, payload)
        except FileExistsError:
            return None
        return payload

    for _round in range(3):  # a few rounds: a check-then-write would slip through one
        fs.delete(path)
        with ThreadPoolExecutor(n) as pool:
            won = [p for p in pool.map(create, range(n)) if p is not None]
        assert len(won) == 1, f"{fs.backend}: {len(won)} creators won"
        assert fs.read(path) == won[0]
        assert _names(fs, f"{fs_root}/job/pipeline-1/chk-0003") == ["_metadata"]


def test_write_atomic_hashed_then_exclusive(fs: FileSystem, fs_root: str) -> None:
    import hashlib

    d = f"{fs_root}/chk-0009"
    state = bytes(range(256)) * 40
    digest = fs.write_atomic_hashed_then(f"{d}/state", state, f"{d}/_metadata", lambda h: h.encode(), exclusive=True)
    assert digest == hashlib.sha256(state).hexdigest()
    assert fs.read(f"{d}/_metadata") == digest.encode()

    with pytest.raises(FileExistsError):  # the id is taken (or fenced): _metadata stays
        fs.write_atomic_hashed_then(f"{d}/state-2", b"late", f"{d}/_metadata", lambda h: b"late", exclusive=True)
    assert fs.read(f"{d}/_metadata") == digest.encode()
    assert set(_names(fs, d)) <= {"_metadata", "state", "state-2"}  # no temp files; state-2 may stay

    fs.create_new(f"{fs_root}/chk-0010/_metadata", b"")  # fenced before the state was written
    with pytest.raises(FileExistsError):
        fs.write_atomic_hashed_then(
            f"{fs_root}/chk-0010/state", b"s" * 5000, f"{fs_root}/chk-0010/_metadata", lambda h: b"m", exclusive=True
        )
    assert fs.read(f"{fs_root}/chk-0010/_metadata") == b""
    assert set(_names(fs, f"{fs_root}/chk-0010")) <= {"_metadata", "state"}

    fs.write_atomic_hashed_then(f"{d}/state", b"again", f"{d}/_metadata", lambda h: b"replaced")  # not exclusive
    assert fs.read(f"{d}/_metadata") == b"replaced"


def test_write_atomic_hashed_then_exclusive_races(fs: FileSystem, fs_root: str) -> None:
    n = 6
    barrier = threading.Barrier(n)
    d = f"{fs_root}/race"

    def complete(i: int) -> bytes | None:
        barrier.wait()
        manifest = b"manifest of driver %d" % i
        try:
            fs.write_atomic_hashed_then(
                f"{d}/state-{i}", b"s%d" % i * 1000, f"{d}/_metadata", lambda h: manifest, exclusive=True
            )
        except FileExistsError:
            return None
        return manifest

    with ThreadPoolExecutor(n) as pool:
        won = [m for m in pool.map(complete, range(n)) if m is not None]
    assert len(won) == 1 and fs.read(f"{d}/_metadata") == won[0]


# ---- S3 servers without conditional writes ------------------------------------------------
@pytest.fixture
def s3_fs(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """An S3FileSystem reaching moto through the fault proxy, and that proxy."""
    server = request.getfixturevalue("s3_server")
    server.proxy.reset()
    try:
        yield server.filesystem(server.create_bucket(_unique("conditional")), **FAST_RETRIES), server.proxy
    finally:
        server.proxy.reset()


def test_s3_precondition_failed_is_not_retried(s3_fs: tuple[Any, Any]) -> None:
    fs, proxy = s3_fs
    fs.create_new("/ckpt/_metadata", b"one")
    before = proxy.request_count
    with pytest.raises(FileExistsError):
        fs.create_new("/ckpt/_metadata", b"two")
    assert proxy.request_count - before == 2  # the PUT's 412, then the read-back GET


def test_s3_conditional_request_conflict_is_retried(s3_fs: tuple[Any, Any]) -> None:
    fs, proxy = s3_fs
    proxy.fail_next(2, status=409, code="ConditionalRequestConflict", when=lambda method, _path: method == "PUT")
    fs.create_new("/ckpt/_metadata", b"after two conflicts")
    assert fs.read("/ckpt/_metadata") == b"after two conflicts"


def test_s3_lost_answer_is_our_own_create(s3_fs: tuple[Any, Any]) -> None:
    """The PUT lands, its answer is lost, the retry gets 412: create_new still succeeds."""
    fs, proxy = s3_fs
    proxy.drop_connection_next(1, when=lambda method, _path: method == "PUT", after_forward=True)
    fs.create_new("/ckpt/_metadata", b"mine")
    assert fs.read("/ckpt/_metadata") == b"mine"


def test_s3_without_conditional_writes_falls_back_with_a_warning(
    s3_fs: tuple[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A server answering 501 NotImplemented to If-None-Match: one warning naming the
    endpoint, then check-then-write (not fenced against a concurrent driver)."""
    fs, proxy = s3_fs
    proxy.fail_next(1, status=501, code="NotImplemented", when=lambda method, _path: method == "PUT")
    with caplog.at_level(logging.WARNING):
        fs.create_new("/ckpt/_metadata", b"one")
        with pytest.raises(FileExistsError):
            fs.create_new("/ckpt/_metadata", b"two")
        fs.create_new("/ckpt/other", b"three")
    assert fs.read("/ckpt/_metadata") == b"one" and fs.read("/ckpt/other") == b"three"
    warnings = [r.getMessage() for r in caplog.records if "conditional writes" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert fs.endpoint_host in warnings[0] and fs.bucket in warnings[0] and "not fenced" in warnings[0]


def test_s3_server_ignoring_if_none_match_is_not_detected(s3_fs: tuple[Any, Any]) -> None:
    """What a server that ignores the header does (simulated by dropping it before the
    request is signed): every create succeeds and overwrites. Nothing in an S3 answer
    says whether the condition was evaluated, so this cannot be detected; docs/storage.md
    says which servers honour it."""
    fs, _proxy = s3_fs
    client = fs._get_client()

    def drop_header(request: Any, **_: Any) -> None:
        if "If-None-Match" in request.headers:
            del request.headers["If-None-Match"]

    client.meta.events.register_first("before-sign.s3.PutObject", drop_header)
    try:
        fs.create_new("/ckpt/_metadata", b"one")
        fs.create_new("/ckpt/_metadata", b"two")  # no FileExistsError: not fenced
    finally:
        client.meta.events.unregister("before-sign.s3.PutObject", drop_header)
    assert fs.read("/ckpt/_metadata") == b"two"


# ---- answers lost in transit (OSS, WebHDFS) -----------------------------------------------
def test_oss_forbids_overwrite_and_survives_a_lost_answer() -> None:
    from .conftest import _oss_backend

    with _oss_backend(**FAST_RETRIES) as (server, fs, _bucket):
        is_put = lambda r: r.method == "PUT"  # noqa: E731
        server.drop_connection_next(1, when=is_put, after_processing=True)
        fs.create_new("/ckpt/_metadata", b"mine")  # stored, answer lost, retry: 409, read back
        assert fs.read("/ckpt/_metadata") == b"mine"
        puts = [r for r in server.requests if r.method == "PUT"]
        assert len(puts) == 2 and all(r.headers.get("x-oss-forbid-overwrite") == "true" for r in puts)
        assert puts[1].status == 409
        with pytest.raises(FileExistsError):
            fs.create_new("/ckpt/_metadata", b"theirs")
        assert len([r for r in server.requests if r.method == "PUT"]) == 3  # 409 is not retried
        assert fs.read("/ckpt/_metadata") == b"mine"


def test_webhdfs_create_new_leaves_no_temp_files_and_survives_a_lost_rename() -> None:
    from airflow_provider_seatunnel_ckpt.storage.fs_webhdfs import WebHdfsFileSystem

    from .conftest import _webhdfs_server

    with _webhdfs_server() as server:
        fs = WebHdfsFileSystem(urls=[server.url], user="seatunnel", **FAST_RETRIES)
        server.drop_connection_next(1, op="RENAME", after_processing=True)
        fs.create_new("/ckpt/_metadata", b"mine")  # renamed, answer lost, retry: false, tmp gone
        with pytest.raises(FileExistsError):
            fs.create_new("/ckpt/_metadata", b"theirs")
        assert server.namespace.files() == {"/ckpt/_metadata": b"mine"}  # temp files included
        renames = [r for r in server.requests(op="RENAME")]
        assert renames and all("renameoptions" not in r.query for r in renames)


# ---- the base class's fallback --------------------------------------------------------
def test_third_party_backend_without_create_new_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem

    class PluginFileSystem(MemoryFileSystem):  # a plugin that predates create_new
        backend = "plugin"
        _create_new = FileSystem._create_new

    fs = PluginFileSystem(_unique("plugin"))
    try:
        with caplog.at_level(logging.WARNING):
            fs.create_new("/a/x", b"1")
            with pytest.raises(FileExistsError):
                fs.create_new("/a/x", b"2")
            fs.create_new("/a/y", b"3")
        assert fs.read("/a/x") == b"1"
        warnings = [r.getMessage() for r in caplog.records if "create_new is not atomic" in r.getMessage()]
        assert len(warnings) == 1 and "plugin" in warnings[0] and "not fenced" in warnings[0]
    finally:
        MemoryFileSystem.clear_all()


def test_create_new_on_a_directory_is_an_error(fs: FileSystem, fs_root: str) -> None:
    """Object stores have no directories to be in the way: there the key is simply created."""
    fs.write_atomic(f"{fs_root}/d/below", b"1")
    if fs.flat_listing:
        pytest.skip(f"{fs.backend}: a key and a prefix of the same name may coexist")
    with pytest.raises((FileExistsError, CheckpointStorageError)):
        fs.create_new(f"{fs_root}/d", b"x")
    assert fs.read(f"{fs_root}/d/below") == b"1"
    assert [i.name for i in fs.list_dir(f"{fs_root}/d")] == ["below"]
