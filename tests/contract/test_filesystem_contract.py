"""The FileSystem contract (storage/filesystem.py), run against every backend.

Backends and their servers are listed in conftest.py. Each test gets a fresh, empty
file system and a root directory (``fs_root``) to work under.
"""

from __future__ import annotations

import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError
from airflow_provider_seatunnel_ckpt.storage.filesystem import FileInfo, FileSystem

from .conftest import FAST_RETRIES, Backend

ALL_BYTES = bytes(range(256))


def _entries(infos: list[FileInfo]) -> list[tuple[str, bool, int]]:
    """Comparable view of a listing: (name, is_dir, size of files)."""
    return sorted((i.name, i.is_dir, 0 if i.is_dir else i.size) for i in infos)


# ---- read / write -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data",
    [b"", ALL_BYTES, ALL_BYTES * 1000 + b"\x00", bytearray(ALL_BYTES), memoryview(ALL_BYTES * 4)],
    ids=["empty", "all-bytes", "256k", "bytearray", "memoryview"],
)
def test_round_trip(fs: FileSystem, fs_root: str, data: bytes) -> None:
    path = f"{fs_root}/job/pipeline-1/chk-0001/task-0-0.state"
    fs.write_atomic(path, data)
    back = fs.read(path)
    assert type(back) is bytes
    assert back == bytes(data)
    info = fs.info(path)
    assert info is not None and not info.is_dir and info.size == len(bytes(data))
    assert info.path == path and info.name == "task-0-0.state"


@pytest.mark.parametrize(
    ("offset", "length", "expected"),
    [
        (0, None, ALL_BYTES),
        (10, None, ALL_BYTES[10:]),
        (0, 10, ALL_BYTES[:10]),
        (10, 20, ALL_BYTES[10:30]),
        (255, None, ALL_BYTES[255:]),
        (250, 100, ALL_BYTES[250:]),  # length past the end: what is there
        (5, 0, b""),
        (256, None, b""),  # offset at the end
        (300, 5, b""),  # offset past the end
    ],
)
def test_read_offset_length(fs: FileSystem, fs_root: str, offset: int, length: int | None, expected: bytes) -> None:
    path = f"{fs_root}/ranged"
    fs.write_atomic(path, ALL_BYTES)
    assert fs.read(path, offset, length) == expected


def test_overwrite_replaces_content(fs: FileSystem, fs_root: str) -> None:
    path = f"{fs_root}/job.json"
    fs.write_atomic(path, b"x" * 5000)
    fs.write_atomic(path, b"short")
    assert fs.read(path) == b"short"
    assert fs.info(path).size == 5
    fs.write_atomic(path, b"")
    assert fs.read(path) == b""


def test_read_text(fs: FileSystem, fs_root: str) -> None:
    fs.write_atomic(f"{fs_root}/meta.json", '{"ü": 1}'.encode())
    assert fs.read_text(f"{fs_root}/meta.json") == '{"ü": 1}'


def test_read_missing_raises_file_not_found(fs: FileSystem, fs_root: str) -> None:
    fs.write_atomic(f"{fs_root}/dir/present", b"1")
    for path in (f"{fs_root}/absent", f"{fs_root}/dir/absent", f"{fs_root}/nodir/absent"):
        with pytest.raises(FileNotFoundError):
            fs.read(path)
        with pytest.raises(FileNotFoundError):
            fs.read(path, 3, 0)
        with pytest.raises(FileNotFoundError):
            fs.read(path, 1, 10)


def test_write_is_atomic_for_concurrent_readers(fs: FileSystem, fs_root: str) -> None:
    """A reader hammering ``read`` never sees a mix of two versions or a prefix."""
    size = 4 << 20
    versions = (b"A" * size, b"B" * size)
    path = f"{fs_root}/pipeline-1/chk-0001/_metadata"
    fs.write_atomic(path, versions[0])
    stop = threading.Event()
    seen: dict = {"reads": 0, "bad": [], "errors": []}

    def reader() -> None:
        while not stop.is_set():
            try:
                data = fs.read(path)
            except Exception as exc:  # reported below
                seen["errors"].append(repr(exc))
                return
            seen["reads"] += 1
            if data != versions[0] and data != versions[1]:
                seen["bad"].append((len(data), data[:1], data[-1:]))
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        deadline = time.monotonic() + 1.5
        writes = 0
        while writes < 6 or (time.monotonic() < deadline and writes < 40):
            fs.write_atomic(path, versions[(writes + 1) % 2])
            writes += 1
    finally:
        stop.set()
        thread.join(30)
    assert not seen["bad"], f"{fs.backend}: torn read (size, first, last byte): {seen['bad']} after {writes} writes"
    assert not seen["errors"], f"{fs.backend}: read failed during overwrites: {seen['errors']}"
    assert seen["reads"] > 0
    assert fs.read(path) == versions[writes % 2]


def test_no_leftovers_after_writes(fs: FileSystem, fs_root: str) -> None:
    d = f"{fs_root}/pipeline-1/chk-0007"
    for i in range(3):
        fs.write_atomic(f"{d}/task-{i}-0.state", bytes([i]) * (i * 1000))
    fs.write_atomic(f"{d}/_metadata", b"{}")
    fs.write_atomic(f"{d}/_metadata", b'{"v": 2}')  # an overwrite leaves nothing behind either
    names = [i.name for i in fs.list_dir(d)]
    assert names == sorted(["_metadata", "task-0-0.state", "task-1-0.state", "task-2-0.state"])
    assert [i.name for i in fs.list_dir(f"{fs_root}/pipeline-1")] == ["chk-0007"]
    assert [i.name for i in fs.list_dir(fs_root)] == ["pipeline-1"]


# ---- listing / info -----------------------------------------------------------------------
def test_list_dir_nested(fs: FileSystem, fs_root: str) -> None:
    fs.write_atomic(f"{fs_root}/a/x", b"12345")
    fs.write_atomic(f"{fs_root}/a/b/y", b"1")
    fs.write_atomic(f"{fs_root}/a/b/c/z", b"")
    fs.write_atomic(f"{fs_root}/a/bc", b"12")  # a sibling whose name starts like a directory
    fs.write_atomic(f"{fs_root}/top", b"")

    assert _entries(fs.list_dir(fs_root)) == [("a", True, 0), ("top", False, 0)]
    assert _entries(fs.list_dir(f"{fs_root}/a")) == [("b", True, 0), ("bc", False, 2), ("x", False, 5)]
    assert _entries(fs.list_dir(f"{fs_root}/a/b")) == [("c", True, 0), ("y", False, 1)]
    assert _entries(fs.list_dir(f"{fs_root}/a/b/c")) == [("z", False, 0)]
    for info in fs.list_dir(f"{fs_root}/a"):
        assert info.path == f"{fs_root}/a/{info.name}"
    files = {i.name: i for i in fs.list_dir(f"{fs_root}/a")}
    assert files["x"].mtime is None or files["x"].mtime > time.time() - 3600


def test_list_dir_missing_is_empty(fs: FileSystem, fs_root: str) -> None:
    assert fs.list_dir(f"{fs_root}/missing") == []
    fs.write_atomic(f"{fs_root}/present/file", b"1")
    assert fs.list_dir(f"{fs_root}/present/missing") == []
    assert fs.list_dir(f"{fs_root}/pres") == []  # a prefix of a directory name is not a directory


def test_info(fs: FileSystem, fs_root: str) -> None:
    fs.write_atomic(f"{fs_root}/d/e/file", b"abc")
    f = fs.info(f"{fs_root}/d/e/file")
    assert f == FileInfo(f"{fs_root}/d/e/file", 3, False, f.mtime)
    for directory in (f"{fs_root}/d", f"{fs_root}/d/e"):
        d = fs.info(directory)
        assert d is not None and d.is_dir and d.path == directory
    assert fs.info(f"{fs_root}/d/missing") is None
    assert fs.info(f"{fs_root}/d/e/file/below") is None
    assert fs.info(f"{fs_root}/d/e/fil") is None
    assert fs.exists(f"{fs_root}/d/e/file") and fs.exists(f"{fs_root}/d")
    assert not fs.exists(f"{fs_root}/nothing")


def test_walk_files(fs: FileSystem, fs_root: str) -> None:
    paths = [
        f"{fs_root}/j/a",
        f"{fs_root}/j/p1/chk-1/t0",
        f"{fs_root}/j/p1/chk-1/_metadata",
        f"{fs_root}/j/p2/chk-2/t0",
    ]
    for i, p in enumerate(paths):
        fs.write_atomic(p, b"x" * i)
    walked = list(fs.walk_files(f"{fs_root}/j"))
    assert sorted(i.path for i in walked) == sorted(paths)
    assert all(not i.is_dir for i in walked)
    assert {i.path: i.size for i in walked} == {p: i for i, p in enumerate(paths)}
    assert list(fs.walk_files(f"{fs_root}/missing")) == []


# ---- delete -------------------------------------------------------------------------------
def test_delete_file(fs: FileSystem, fs_root: str) -> None:
    fs.write_atomic(f"{fs_root}/d/keep", b"1")
    fs.write_atomic(f"{fs_root}/d/gone", b"2")
    fs.delete(f"{fs_root}/d/gone")
    assert fs.info(f"{fs_root}/d/gone") is None
    with pytest.raises(FileNotFoundError):
        fs.read(f"{fs_root}/d/gone")
    assert [i.name for i in fs.list_dir(f"{fs_root}/d")] == ["keep"]


def test_delete_missing_is_a_no_op(fs: FileSystem, fs_root: str) -> None:
    fs.delete(f"{fs_root}/never")
    fs.delete(f"{fs_root}/never", recursive=True)
    fs.delete(f"{fs_root}/never/below", recursive=True)
    fs.write_atomic(f"{fs_root}/once", b"1")
    fs.delete(f"{fs_root}/once")
    fs.delete(f"{fs_root}/once")


def test_delete_recursive(fs: FileSystem, fs_root: str) -> None:
    for p in ("a/b/1", "a/b/c/2", "a/b/c/d/3", "a/bc/4", "a/b2", "a/keep"):
        fs.write_atomic(f"{fs_root}/{p}", p.encode())
    fs.delete(f"{fs_root}/a/b", recursive=True)
    assert fs.info(f"{fs_root}/a/b") is None
    assert list(fs.walk_files(f"{fs_root}/a/b")) == []
    remaining = sorted(i.path for i in fs.walk_files(fs_root))
    assert remaining == [f"{fs_root}/a/b2", f"{fs_root}/a/bc/4", f"{fs_root}/a/keep"]
    fs.delete(f"{fs_root}/a/keep", recursive=True)  # recursive on a file removes the file
    assert fs.info(f"{fs_root}/a/keep") is None


def test_delete_recursive_many(fs: FileSystem, fs_root: str) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: fs.write_atomic(f"{fs_root}/many/{i // 50}/{i:04d}", b"."), range(300)))
    assert sum(1 for _ in fs.walk_files(f"{fs_root}/many")) == 300
    fs.delete(f"{fs_root}/many", recursive=True)
    assert list(fs.walk_files(f"{fs_root}/many")) == []
    assert fs.info(f"{fs_root}/many") is None


def test_delete_files(fs: FileSystem, fs_root: str) -> None:
    big = b"B" * (2 << 20)  # large enough for the local backend's deferred reclaim
    for name in ("a", "b", "c", "big"):
        fs.write_atomic(f"{fs_root}/df/{name}", big if name == "big" else name.encode())
    fs.delete_files([f"{fs_root}/df/a", f"{fs_root}/df/big", f"{fs_root}/df/missing"])
    assert [i.name for i in fs.list_dir(f"{fs_root}/df")] == ["b", "c"]  # gone when the call returns
    with pytest.raises(FileNotFoundError):
        fs.read(f"{fs_root}/df/big")
    fs.delete_files(iter([f"{fs_root}/df/b"]))  # any iterable; one key
    fs.delete_files([])
    assert [i.name for i in fs.list_dir(f"{fs_root}/df")] == ["c"]
    fs.write_atomic(f"{fs_root}/df/big", b"new")  # the name is free again at once
    assert fs.read(f"{fs_root}/df/big") == b"new"


# ---- a file, then the file that completes it -------------------------------------------------
@pytest.mark.parametrize("size", [10, 3 << 20], ids=["small", "3MiB"])
def test_write_atomic_hashed_then(fs: FileSystem, fs_root: str, size: int) -> None:
    import hashlib

    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    seen: list[str] = []

    def manifest(digest: str) -> bytes:
        seen.append(digest)
        assert fs.info(f"{fs_root}/c/_metadata") is None  # not before the state is written
        return f"state {digest}".encode()

    digest = fs.write_atomic_hashed_then(f"{fs_root}/c/state", data, f"{fs_root}/c/_metadata", manifest)
    assert digest == hashlib.sha256(data).hexdigest() == seen[0]
    assert fs.read(f"{fs_root}/c/state") == data
    assert fs.read(f"{fs_root}/c/_metadata") == f"state {digest}".encode()
    assert sorted(i.name for i in fs.list_dir(f"{fs_root}/c")) == ["_metadata", "state"]


def test_write_atomic_hashed_then_never_writes_the_second_file_on_failure(fs: FileSystem, fs_root: str) -> None:
    def broken(digest: str) -> bytes:
        raise RuntimeError("manifest could not be built")

    with pytest.raises(RuntimeError):
        fs.write_atomic_hashed_then(f"{fs_root}/f/state", b"s" * 5000, f"{fs_root}/f/_metadata", broken)
    assert fs.info(f"{fs_root}/f/_metadata") is None
    assert [i.name for i in fs.list_dir(f"{fs_root}/f")] in ([], ["state"])  # no temp files visible


# ---- instances ----------------------------------------------------------------------------
def test_pickle_round_trip(fs: FileSystem, fs_root: str) -> None:
    fs.write_atomic(f"{fs_root}/before", b"written by the original")  # the client exists now
    clone = pickle.loads(pickle.dumps(fs))
    assert type(clone) is type(fs)
    assert clone.read(f"{fs_root}/before") == b"written by the original"
    clone.write_atomic(f"{fs_root}/after", b"written by the clone")
    assert fs.read(f"{fs_root}/after") == b"written by the clone"


def test_concurrent_writers(fs: FileSystem, fs_root: str) -> None:
    n = 16
    barrier = threading.Barrier(n)

    def write(i: int) -> None:
        barrier.wait()
        fs.write_atomic(f"{fs_root}/pipeline-1/chk-0001/task-{i}-0.state", bytes([i]) * (1000 + i))

    with ThreadPoolExecutor(n) as pool:
        list(pool.map(write, range(n)))
    listed = fs.list_dir(f"{fs_root}/pipeline-1/chk-0001")
    assert sorted(i.name for i in listed) == sorted(f"task-{i}-0.state" for i in range(n))
    for i in range(n):
        assert fs.read(f"{fs_root}/pipeline-1/chk-0001/task-{i}-0.state") == bytes([i]) * (1000 + i)


# ---- failures (backends with a fault injector) ---------------------------------------------
def test_transient_errors_are_retried(faulty_fs_backend: Backend) -> None:
    fs, fs_root, faults = faulty_fs_backend.fs, faulty_fs_backend.root, faulty_fs_backend.faults
    path = f"{fs_root}/retried"
    faults.fail_next(2, status=503)
    fs.write_atomic(path, ALL_BYTES)
    before = faults.request_count
    faults.fail_next(2, status=500)
    assert fs.read(path) == ALL_BYTES
    assert faults.request_count - before >= 3  # two failures and the request that worked
    faults.fail_next(1, status=503)
    assert fs.info(path).size == 256
    faults.fail_next(1, status=503)
    assert [i.name for i in fs.list_dir(fs_root)] == ["retried"]
    faults.fail_next(1, status=503)
    fs.delete(path)
    assert fs.info(path) is None


def test_dropped_connections_are_retried(faulty_fs_backend: Backend) -> None:
    fs, fs_root, faults = faulty_fs_backend.fs, faulty_fs_backend.root, faulty_fs_backend.faults
    faults.drop_connection_next(1)
    fs.write_atomic(f"{fs_root}/dropped", b"payload")
    faults.drop_connection_next(2)
    assert fs.read(f"{fs_root}/dropped") == b"payload"


def test_persistent_failure_raises_storage_error(faulty_fs_backend: Backend) -> None:
    fs, fs_root, faults = faulty_fs_backend.fs, faulty_fs_backend.root, faulty_fs_backend.faults
    fs.write_atomic(f"{fs_root}/file", b"1")
    faults.fail_all()
    for op in (lambda: fs.read(f"{fs_root}/file"), lambda: fs.write_atomic(f"{fs_root}/file", b"2")):
        before = faults.request_count
        with pytest.raises(CheckpointStorageError) as err:
            op()
        assert faults.request_count - before == FAST_RETRIES["retry_attempts"]
        assert "file" in str(err.value)


def test_not_found_is_not_retried(faulty_fs_backend: Backend) -> None:
    fs, fs_root, faults = faulty_fs_backend.fs, faulty_fs_backend.root, faulty_fs_backend.faults
    before = faults.request_count
    with pytest.raises(FileNotFoundError):
        fs.read(f"{fs_root}/absent")
    assert faults.request_count - before == 1


def test_wrong_credentials_fail_fast(denied_fs_backend: Backend) -> None:
    """Auth errors raise at once (no retries) and never look like "not found". Retries are
    counted at the server's side (every wrong-credentials backend has a request counter),
    not timed: a CI at a load of 15 took 6.9 s for one refused S3 read."""
    fs, fs_root, faults = denied_fs_backend.fs, denied_fs_backend.root, denied_fs_backend.faults
    assert faults is not None, f"{denied_fs_backend.name}: a wrong-credentials backend must count its requests"
    path = f"{fs_root}/job/pipeline-1/chk-0001/_metadata"
    ops = {
        "read": lambda: fs.read(path),
        "write": lambda: fs.write_atomic(path, b"{}"),
        "info": lambda: fs.info(path),
        "list": lambda: fs.list_dir(f"{fs_root}/job"),
        "delete": lambda: fs.delete(path),
        "delete-recursive": lambda: fs.delete(f"{fs_root}/job", recursive=True),
    }
    for name, op in ops.items():
        before = faults.request_count
        with pytest.raises(CheckpointStorageError) as err:
            op()
        message = str(err.value)
        assert fs.backend in message, name
        assert (fs_root + "/job").lstrip("/") in message, f"{name}: {message}"
        for word in denied_fs_backend.error_mentions:
            assert word in message, f"{name}: {message}"
        secret = denied_fs_backend.secret
        assert not secret or (secret not in message and secret not in repr(err.value))
        assert faults.request_count - before == 1, f"{name} was retried"


def test_move_publishes_and_replays(fs: FileSystem, fs_root: str) -> None:
    """The File sink's commit: staged file -> final name (into a new directory), source
    gone; replaying a move that already happened is a no-op; moving nothing is an error."""
    payload = bytes(range(256)) * 1000
    fs.write_atomic(f"{fs_root}/out/_staged/part-0", payload)
    fs.move(f"{fs_root}/out/_staged/part-0", f"{fs_root}/out/final/part-0")
    assert fs.read(f"{fs_root}/out/final/part-0") == payload
    assert fs.info(f"{fs_root}/out/_staged/part-0") is None
    fs.move(f"{fs_root}/out/_staged/part-0", f"{fs_root}/out/final/part-0")  # replay after a crash
    assert fs.read(f"{fs_root}/out/final/part-0") == payload
    fs.write_atomic(f"{fs_root}/out/_staged/part-1", b"new")
    fs.write_atomic(f"{fs_root}/out/final/part-1", b"old")
    fs.move(f"{fs_root}/out/_staged/part-1", f"{fs_root}/out/final/part-1")  # replaces
    assert fs.read(f"{fs_root}/out/final/part-1") == b"new"
    with pytest.raises(FileNotFoundError):
        fs.move(f"{fs_root}/out/_staged/never", f"{fs_root}/out/final/never")


def test_open_new_streams_a_file_that_sync_makes_complete(fs: FileSystem, fs_root: str) -> None:
    """``open_new``: pieces written (more than one writeback chunk on local disk), the
    position counted, the whole file under its name once ``sync`` returns, in a new
    directory; ``close`` before ``sync`` ends writing without losing anything."""
    piece = bytes(range(256)) * 4096  # 1 MiB
    pieces = [piece[i:] + bytes([i]) for i in range(10)]
    path = f"{fs_root}/table/data/a=1/part-0.parquet"
    out = fs.open_new(path)
    for i, p in enumerate(pieces):
        assert out.write(memoryview(p) if i % 2 else p) == len(p)
    assert out.tell() == sum(map(len, pieces))
    out.close()
    assert out.closed
    with pytest.raises(ValueError, match="closed"):
        out.write(b"late")
    out.sync()
    out.sync()  # a second sync is a no-op
    assert fs.read(path) == b"".join(pieces)
    assert fs.info(path).size == out.tell()
    assert [i.name for i in fs.list_dir(f"{fs_root}/table/data/a=1")] == ["part-0.parquet"]


def test_open_new_discard_leaves_nothing(fs: FileSystem, fs_root: str) -> None:
    """Discarded while being written, or after it was synced: the file is gone; as a
    context manager, a block that raises discards."""
    writing = fs.open_new(f"{fs_root}/data/writing")
    writing.write(b"x" * 100_000)
    writing.discard()
    done = fs.open_new(f"{fs_root}/data/done")
    done.write(b"y" * 10)
    done.sync()
    assert fs.read(f"{fs_root}/data/done") == b"y" * 10
    done.discard()
    with pytest.raises(RuntimeError):
        with fs.open_new(f"{fs_root}/data/failed") as failed:
            failed.write(b"z")
            raise RuntimeError("the producer failed")
    with fs.open_new(f"{fs_root}/data/kept") as kept:
        kept.write(b"kept")
    assert _entries(fs.list_dir(f"{fs_root}/data")) == [("kept", False, 4)]
    with pytest.raises(ValueError, match="discard"):
        writing.sync()
