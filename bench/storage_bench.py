#!/usr/bin/env python
"""Checkpoint storage throughput: our public path against the raw client, side by side.

Run from the repository root (it starts and stops its own loopback servers)::

    .venv/bin/python bench/storage_bench.py                       # JSON on stdout
    .venv/bin/python bench/storage_bench.py --out                 # also bench/results/storage.json
    .venv/bin/python bench/storage_bench.py --backends local,s3 --sizes 64MiB --repeat 9

For every backend and state size it measures

* **ours**: ``store_checkpoint(PipelineState(...))`` and
  ``get_latest_checkpoint_by_job_id_and_pipeline_id`` on a storage built exactly as a
  user configures it (``load_config({"checkpoint": {"storage": {...}}})`` then
  ``create_storage``), ``max-retained: 2``, so retention deletes one old checkpoint on
  every store once it is warm;
* **raw**: the backend's own client doing one PUT and one GET of the same bytes
  (local: temp file + write + fsync + rename, then read; memory: dict assignment and
  lookup; s3: boto3 ``put_object``/``get_object``; oss: ``oss2.Bucket.put_object``/
  ``get_object``; hdfs: ``hdfs.InsecureClient.write``/``read``);

interleaved (each repetition runs ours then raw or raw then ours, alternating: ABBA), so
drift and noise hit both alike. ``ratio`` is ours/raw throughput (medians);
``paired_ratio`` is the distribution of the per-repetition ratios. A second, smaller
pass runs ours through a timing wrapper around its ``FileSystem`` to break a store and
a get down into requests (state write, manifest write, listings, retention deletes)
and in-process work (sha256, JSON). With ``--profile auto`` (default) any local/s3
store or get below the target ratio at the largest size is profiled with cProfile.

The S3 (moto), OSS and WebHDFS servers are the ones in ``tests/servers``; by default each
runs in a child process so that, as with a real remote store, it neither shares the GIL
with the client nor hides client overhead inside its own time. The OSS test server
computes CRC-64 with crcmod's C extension when it is installed (oss2 depends on it; same
values as its pure-Python reference, checked at import), so uploads are CRC-checked end
to end without the server dominating the timings.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import hashlib
import io
import json
import logging
import os
import pstats
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from bench.common import machine_info, size_label, summary  # noqa: E402

MiB = 1 << 20
ALL_BACKENDS = ("local", "memory", "s3", "oss", "hdfs")
DEFAULT_SIZES = "1KiB,1MiB,64MiB"
TARGET_RATIO = 0.9
DEFAULT_OUT = os.path.join("bench", "results", "storage.json")
OSS_KEY_ID, OSS_SECRET = "bench-ak", "bench-sk"
S3_KEY_ID = S3_SECRET = "testing"
S3_REGION = "us-east-1"
HDFS_USER = "seatunnel"
JOB_PREFIX = "bench"
PIPELINE = 1


# ---- small helpers ---------------------------------------------------------------------
def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*([kmg]?)(i?b)?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 1KiB, 1MiB, 64MiB, 4096)")
    return int(match.group(1)) << (10 * " kmg".index(match.group(2).lower() or " "))


def progress(message: str) -> None:
    print(f"[storage_bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---- servers: in a child process by default ------------------------------------------------
def _pure_python_oss_crc() -> None:
    """Make the OSS test server use its pure-Python CRC-64 (it uses crcmod's C one when
    available: same values, checked at import)."""
    import tests.servers.oss as oss_server

    oss_server.crc64_ecma = oss_server._crc64_ecma_python


def _quiet_oss_server() -> None:
    """A client closing an idle keep-alive connection makes socketserver print a
    ConnectionResetError traceback; the benchmark drops those."""
    import tests.servers.oss as oss_server

    default = oss_server._HttpServer.handle_error

    def handle_error(self: Any, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            default(self, request, client_address)

    oss_server._HttpServer.handle_error = handle_error


@contextlib.contextmanager
def _run_server(kind: str, opts: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Start one test server in this process; yield how to reach it."""
    if kind == "s3":
        from tests.servers.s3 import S3Server

        with S3Server() as server:
            server.create_bucket(opts["bucket"])
            yield {"url": server.direct_url}
    elif kind == "oss":
        if opts.get("pure_crc"):
            _pure_python_oss_crc()
        _quiet_oss_server()
        from tests.servers.oss import OssServer

        with OssServer(OSS_KEY_ID, OSS_SECRET) as server:
            server.create_bucket(opts["bucket"])
            yield {"url": server.endpoint}
    elif kind == "hdfs":
        from tests.servers.webhdfs import WebHdfsServer

        with WebHdfsServer() as server:
            yield {"url": server.url, "port": server.port}
    else:
        raise ValueError(kind)


def _server_child(kind: str, conn: Any, opts: dict[str, Any]) -> None:
    """Child-process entry point: start the server, report its address, wait for 'stop'."""
    logging.basicConfig(level=logging.ERROR)
    try:
        with _run_server(kind, opts) as info:
            conn.send(("ok", info))
            conn.recv()
    except BaseException as exc:  # report instead of dying silently
        with contextlib.suppress(Exception):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        raise


@contextlib.contextmanager
def server(kind: str, opts: dict[str, Any], in_process: bool) -> Iterator[dict[str, Any]]:
    if in_process:
        with _run_server(kind, opts) as info:
            yield info
        return
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_server_child, args=(kind, child, opts), name=f"bench-{kind}-server", daemon=True)
    process.start()
    try:
        deadline = time.monotonic() + 120
        while not parent.poll(0.1):
            if not process.is_alive():
                raise RuntimeError(f"{kind} test server process exited (code {process.exitcode}) before it started")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{kind} test server did not start within 120 s")
        status, info = parent.recv()
        if status != "ok":
            raise RuntimeError(f"{kind} test server failed to start: {info}")
        yield info
    finally:
        with contextlib.suppress(Exception):
            parent.send("stop")
        process.join(20)
        if process.is_alive():
            process.terminate()
            process.join(5)


# ---- the systems under test ---------------------------------------------------------------
@dataclass
class Target:
    name: str
    config: dict[str, Any]  #: the checkpoint config document, as a user writes it
    raw_put: Callable[[str, bytes], None]
    raw_get: Callable[[str], bytes]
    notes: list[str] = field(default_factory=list)

    def make_storage(self) -> Any:
        from airflow_provider_seatunnel_ckpt.config import load_config
        from airflow_provider_seatunnel_ckpt.storage import create_storage

        return create_storage(load_config(self.config))


def checkpoint_config(plugin_config: dict[str, Any], storage_type: str = "hdfs") -> dict[str, Any]:
    return {"checkpoint": {"storage": {"type": storage_type, "max-retained": 2, "plugin-config": plugin_config}}}


@contextlib.contextmanager
def open_target(name: str, args: argparse.Namespace) -> Iterator[Target]:
    if name == "local":
        base = tempfile.mkdtemp(prefix="storage-bench-", dir=args.local_dir)
        try:
            raw_dir = os.path.join(base, "raw")
            os.makedirs(raw_dir)

            def put(key: str, data: bytes) -> None:
                path = os.path.join(raw_dir, key)
                tmp = path + ".tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)

            def get(key: str) -> bytes:
                with open(os.path.join(raw_dir, key), "rb") as f:
                    return f.read()

            yield Target(
                "local",
                checkpoint_config({"storage.type": "local", "namespace": os.path.join(base, "ours") + "/"}),
                put,
                get,
                [
                    f"directory {base} on {_fs_type(base)}",
                    "raw = write temp file, fsync, os.replace (no directory fsync); ours also fsyncs "
                    "the directory after each rename and each mkdir",
                ],
            )
        finally:
            shutil.rmtree(base, ignore_errors=True)

    elif name == "memory":
        from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem

        store: dict[str, bytes] = {}
        try:
            yield Target(
                "memory",
                checkpoint_config({"namespace": f"/{JOB_PREFIX}/{uuid.uuid4().hex[:8]}/"}, storage_type="memory"),
                store.__setitem__,
                store.__getitem__,
                [
                    "raw = dict assignment/lookup (no copy, no hashing): the ratio is not meaningful, "
                    "the ours latency is the pure in-process cost of the checkpoint protocol"
                ],
            )
        finally:
            MemoryFileSystem.clear_all()

    elif name == "s3":
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        with server("s3", {"bucket": bucket}, args.in_process_servers) as info:
            import boto3
            from botocore.config import Config

            client = boto3.session.Session().client(
                "s3",
                endpoint_url=info["url"],
                region_name=S3_REGION,
                aws_access_key_id=S3_KEY_ID,
                aws_secret_access_key=S3_SECRET,
                config=Config(s3={"addressing_style": "path"}),
            )

            def put(key: str, data: bytes) -> None:
                client.put_object(Bucket=bucket, Key=f"raw/{key}", Body=data)

            def get(key: str) -> bytes:
                with client.get_object(Bucket=bucket, Key=f"raw/{key}")["Body"] as body:
                    return body.read()

            yield Target(
                "s3",
                checkpoint_config(
                    {
                        "storage.type": "s3",
                        "namespace": "/seatunnel/checkpoint/",
                        "s3.bucket": f"s3a://{bucket}",
                        "fs.s3a.endpoint": info["url"],
                        "fs.s3a.endpoint.region": S3_REGION,
                        "fs.s3a.access.key": S3_KEY_ID,
                        "fs.s3a.secret.key": S3_SECRET,
                        "fs.s3a.path.style.access": "true",
                        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                    }
                ),
                put,
                get,
                ["moto ThreadedMotoServer on 127.0.0.1" + ("" if args.in_process_servers else " (child process)")],
            )

    elif name == "oss":
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        opts = {"bucket": bucket, "pure_crc": args.oss_pure_crc}
        with server("oss", opts, args.in_process_servers) as info:
            import oss2

            raw_bucket = oss2.Bucket(oss2.Auth(OSS_KEY_ID, OSS_SECRET), info["url"], bucket)

            def put(key: str, data: bytes) -> None:
                raw_bucket.put_object(f"raw/{key}", data)

            def get(key: str) -> bytes:
                result = raw_bucket.get_object(f"raw/{key}")
                try:
                    return result.read()
                finally:
                    result.close()

            yield Target(
                "oss",
                checkpoint_config(
                    {
                        "storage.type": "oss",
                        "namespace": "/seatunnel/checkpoint/",
                        "oss.bucket": f"oss://{bucket}",
                        "fs.oss.endpoint": info["url"],
                        "fs.oss.accessKeyId": OSS_KEY_ID,
                        "fs.oss.accessKeySecret": OSS_SECRET,
                    }
                ),
                put,
                get,
                [
                    "tests/servers/oss.py (pure-Python HTTP server, TCP_NODELAY)"
                    + ("" if args.in_process_servers else " in a child process")
                    + ("; its pure-Python CRC-64" if args.oss_pure_crc else "; CRC-64 by crcmod's C extension"),
                    "raw = oss2 put_object (one PUT, CRC-64 checked); ours the same (no Content-MD5), "
                    "multipart (8 MiB parts) only above 128 MiB",
                ],
            )

    elif name == "hdfs":
        with server("hdfs", {}, args.in_process_servers) as info:
            from hdfs import InsecureClient

            client = InsecureClient(info["url"], user=HDFS_USER)

            def put(key: str, data: bytes) -> None:
                client.write(f"/raw/{key}", data=data, overwrite=True)

            def get(key: str) -> bytes:
                with client.read(f"/raw/{key}") as reader:
                    return reader.read()

            yield Target(
                "hdfs",
                checkpoint_config(
                    {
                        "storage.type": "hdfs",
                        "namespace": "/seatunnel/checkpoint/",
                        "fs.defaultFS": "hdfs://127.0.0.1:8020",
                        "seatunnel.hadoop.dfs.namenode.http-address": f"127.0.0.1:{info['port']}",
                        "hdfs.user": HDFS_USER,
                    }
                ),
                put,
                get,
                [
                    "tests/servers/webhdfs.py (pure-Python name node + data node)"
                    + ("" if args.in_process_servers else " in a child process"),
                    "raw = InsecureClient.write(overwrite=True) (CREATE: name node redirect + data node PUT); "
                    "ours writes a temp file the same way, then RENAME(renameoptions=OVERWRITE)",
                ],
            )
    else:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(ALL_BACKENDS)}")


def _fs_type(path: str) -> str:
    best, kind = "", "unknown"
    with contextlib.suppress(OSError):
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and path.startswith(parts[1]) and len(parts[1]) > len(best):
                    best, kind = parts[1], f"{parts[2]} ({parts[0]} mounted on {parts[1]})"
    return kind


# ---- the measurement ----------------------------------------------------------------------
@dataclass(frozen=True)
class Sample:
    wall_s: float
    cpu_s: float  #: CPU time of this (client) process: all its threads, not the servers'


class Runner:
    """Ours and raw for one backend; checkpoint ids keep increasing, as in a real job."""

    def __init__(self, target: Target, size: int, payload: bytes):
        from airflow_provider_seatunnel_ckpt.storage import PipelineState

        self.PipelineState = PipelineState
        self.target = target
        self.size = size
        self.payload = payload
        self.job = f"{JOB_PREFIX}-{size_label(size)}"
        self.raw_key = f"state-{size_label(size)}"
        self.checkpoint_id = 0

    def ours(self, storage: Any) -> tuple[float, float]:
        self.checkpoint_id += 1
        state = self.PipelineState(
            job_id=self.job, pipeline_id=PIPELINE, checkpoint_id=self.checkpoint_id, states=self.payload
        )
        c0, t0 = time.process_time(), time.perf_counter()
        storage.store_checkpoint(state)
        c1, t1 = time.process_time(), time.perf_counter()
        latest = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(self.job, PIPELINE)
        c2, t2 = time.process_time(), time.perf_counter()
        if latest is None or latest.checkpoint_id != self.checkpoint_id or latest.states != self.payload:
            raise AssertionError(f"{self.target.name}: ours read back the wrong checkpoint")
        return Sample(t1 - t0, c1 - c0), Sample(t2 - t1, c2 - c1)

    def raw(self) -> tuple[float, float]:
        c0, t0 = time.process_time(), time.perf_counter()
        self.target.raw_put(self.raw_key, self.payload)
        c1, t1 = time.process_time(), time.perf_counter()
        data = self.target.raw_get(self.raw_key)
        c2, t2 = time.process_time(), time.perf_counter()
        if data != self.payload:
            raise AssertionError(f"{self.target.name}: raw read back different bytes")
        return Sample(t1 - t0, c1 - c0), Sample(t2 - t1, c2 - c1)


def measure(runner: Runner, storage: Any, repeat: int, warmup: int) -> dict[str, Any]:
    for _ in range(warmup):
        runner.ours(storage)
        runner.raw()
    samples: dict[str, dict[str, list[Sample]]] = {op: {"ours": [], "raw": []} for op in ("store", "get")}
    for rep in range(repeat):
        order = ("ours", "raw") if rep % 2 == 0 else ("raw", "ours")
        for who in order:
            gc.collect()
            store, get = runner.ours(storage) if who == "ours" else runner.raw()
            samples["store"][who].append(store)
            samples["get"][who].append(get)
    result: dict[str, Any] = {}
    for op, by in samples.items():
        entry: dict[str, Any] = {}
        for who, runs in by.items():
            entry[who] = {
                "latency_ms": summary([r.wall_s * 1000 for r in runs]),
                "throughput_mib_s": summary([runner.size / MiB / r.wall_s for r in runs]),
                "client_cpu_ms": summary([r.cpu_s * 1000 for r in runs]),
            }
        ours_med = statistics.median(r.wall_s for r in by["ours"])
        raw_med = statistics.median(r.wall_s for r in by["raw"])
        entry["ratio"] = round(raw_med / ours_med, 3)  # throughput ratio = inverse latency ratio
        entry["paired_ratio"] = summary([r.wall_s / o.wall_s for o, r in zip(by["ours"], by["raw"])])
        result[op] = entry
    return result


# ---- breakdown: a timing wrapper around the storage's FileSystem ---------------------------
def _timing_fs(inner: Any) -> Any:
    from airflow_provider_seatunnel_ckpt.storage.filesystem import FileSystem

    class TimingFileSystem(FileSystem):
        """Forwards every FileSystem method the storage calls (so backend overrides such as
        S3's one-pass checksum or local's paired write stay in the measured path)."""

        def __init__(self) -> None:
            self.inner = inner
            self.backend = inner.backend
            self.flat_listing = inner.flat_listing
            self.calls: list[tuple[str, str, float]] = []

        def _timed(self, op: str, path: str, fn: Callable[..., Any], *a: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(path, *a)
            finally:
                self.calls.append((op, path, time.perf_counter() - t0))

        def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
            return self._timed("read", path, inner.read, offset, length)

        def write_atomic(self, path: str, data: Any) -> None:
            self._timed("write", path, inner.write_atomic, data)

        def write_atomic_hashed(self, path: str, data: Any) -> str:
            return self._timed("write", path, inner.write_atomic_hashed, data)

        def write_atomic_hashed_then(
            self, path: str, data: Any, then_path: str, then_data: Any, exclusive: bool = False
        ) -> str:
            return self._timed(
                "write+manifest", path, inner.write_atomic_hashed_then, data, then_path, then_data, exclusive
            )

        def create_new(self, path: str, data: Any) -> None:
            self._timed("write", path, inner.create_new, data)

        def list_dir(self, path: str) -> list[Any]:
            return self._timed("list", path, inner.list_dir)

        def walk_files(self, path: str) -> Any:
            return iter(self._timed("list", path, lambda p: list(inner.walk_files(p))))

        def delete(self, path: str, recursive: bool = False) -> None:
            self._timed("delete", path, inner.delete, recursive)

        def delete_files(self, paths: Any) -> None:
            paths = list(paths)
            if paths:
                self._timed("delete", paths[0], lambda _p: inner.delete_files(paths))

        def info(self, path: str) -> Any:
            return self._timed("stat", path, inner.info)

        def exists(self, path: str) -> bool:
            return self._timed("stat", path, inner.exists)

        def describe(self, path: str) -> str:
            return inner.describe(path)

    return TimingFileSystem()


_CHECKPOINT_DIR = re.compile(r"(chk|savepoint)-\d+$")


def _phase(op: str, path: str, reading: bool) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if op == "write+manifest":
        return "write_state_file + write_manifest"
    if op == "write":
        return "write_manifest" if name == "_metadata" else "write_state_file"
    if op == "read":
        return "read_manifest" if name == "_metadata" else "read_state_file"
    if op == "delete":
        return "retention_delete"
    # listing the pipeline (object stores: one prefix listing; elsewhere the pipeline
    # directory and each checkpoint directory), or probing a file
    return "list_checkpoints" if reading else "retention_list"


def breakdown(runner: Runner, repeat: int) -> dict[str, Any]:
    from airflow_provider_seatunnel_ckpt.storage.model import INLINE_STATE_LIMIT

    storage = runner.target.make_storage()
    timing = storage.fs = _timing_fs(storage.fs)  # the benchmark's own instrumentation, not a library change
    runner.ours(storage)  # warm the client and its connections
    per_op: dict[str, list[dict[str, Any]]] = {"store": [], "get": []}
    for _ in range(repeat):
        gc.collect()
        runner.checkpoint_id += 1
        state = runner.PipelineState(
            job_id=runner.job, pipeline_id=PIPELINE, checkpoint_id=runner.checkpoint_id, states=runner.payload
        )
        for op in ("store", "get"):
            timing.calls.clear()
            t0 = time.perf_counter()
            if op == "store":
                storage.store_checkpoint(state)
            else:
                latest = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(runner.job, PIPELINE)
            total = time.perf_counter() - t0
            phases: dict[str, float] = {}
            counts: dict[str, int] = {}
            for call_op, path, seconds in timing.calls:
                phase = _phase(call_op, path, reading=op == "get")
                phases[phase] = phases.get(phase, 0.0) + seconds
                counts[phase] = counts.get(phase, 0) + 1
            per_op[op].append({"total": total, "phases": phases, "counts": counts, "calls": len(timing.calls)})
        if latest is None or latest.states != runner.payload:
            raise AssertionError(f"{runner.target.name}: instrumented storage read back the wrong state")
    digest_s = []
    for _ in range(max(3, repeat)):
        t0 = time.perf_counter()
        hashlib.sha256(runner.payload).hexdigest()
        digest_s.append(time.perf_counter() - t0)
    out: dict[str, Any] = {
        "repetitions": repeat,
        "sha256_of_state_ms": round(statistics.median(digest_s) * 1000, 3),
        "state_inlined_in_manifest": runner.size <= INLINE_STATE_LIMIT,
    }
    for op, reps in per_op.items():
        names = sorted({p for r in reps for p in r["phases"]})
        out[op] = {
            "total_ms": round(statistics.median(r["total"] for r in reps) * 1000, 3),
            "in_process_ms": round(statistics.median(r["total"] - sum(r["phases"].values()) for r in reps) * 1000, 3),
            "fs_calls": max(r["calls"] for r in reps),
            "phases": {
                p: [
                    round(statistics.median(r["phases"].get(p, 0.0) for r in reps) * 1000, 3),
                    max(r["counts"].get(p, 0) for r in reps),
                ]
                for p in names
            },
        }
    return out


# ---- profiling -----------------------------------------------------------------------------
def profile(runner: Runner, op: str, repeat: int, top: int = 12) -> dict[str, Any]:
    storage = runner.target.make_storage()
    runner.ours(storage)  # warm the client
    profiler = cProfile.Profile()
    for _ in range(repeat):
        runner.checkpoint_id += 1
        state = runner.PipelineState(
            job_id=runner.job, pipeline_id=PIPELINE, checkpoint_id=runner.checkpoint_id, states=runner.payload
        )
        if op == "store":
            profiler.runcall(storage.store_checkpoint, state)
        else:
            storage.store_checkpoint(state)
            profiler.runcall(storage.get_latest_checkpoint_by_job_id_and_pipeline_id, runner.job, PIPELINE)
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    rows = []
    for (filename, line, func), (_cc, nc, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((tottime, cumtime, nc, _short(filename), line, func))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    return {
        "backend": runner.target.name,
        "size": size_label(runner.size),
        "op": op,
        "calls_profiled": repeat,
        "total_s_per_call": round(total / repeat, 4),
        "top_by_own_time (own ms, cumulative ms per call; calls in all; where)": [
            [round(t / repeat * 1000, 2), round(c / repeat * 1000, 2), n, f"{f}:{ln}({fn})"]
            for t, c, n, f, ln, fn in rows[:top]
        ],
    }


def _short(filename: str) -> str:
    for marker in ("site-packages/", REPO_ROOT + "/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


# ---- main --------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--backends", default=",".join(ALL_BACKENDS), help=f"comma-separated subset of {','.join(ALL_BACKENDS)}"
    )
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"comma-separated state sizes (default {DEFAULT_SIZES})")
    parser.add_argument("--repeat", type=int, default=5, help="measured repetitions per backend and size (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured repetitions first (default 1)")
    parser.add_argument(
        "--breakdown-repeat", type=int, default=3, help="repetitions of the instrumented pass (0: skip)"
    )
    parser.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="cProfile ours at the largest size: on local/s3 when below the target ratio (auto), on every backend (always), never",
    )
    parser.add_argument("--profile-repeat", type=int, default=3)
    parser.add_argument(
        "--out", nargs="?", const=DEFAULT_OUT, default=None, help=f"also write the JSON here (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--local-dir", default=None, help="parent directory for the local backend (default: the temp dir)"
    )
    parser.add_argument(
        "--in-process-servers", action="store_true", help="run test servers in this process (shares the GIL)"
    )
    parser.add_argument(
        "--oss-pure-crc", action="store_true", help="keep the OSS test server's pure-Python CRC-64 (very slow)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run for bench/run_all.py --quick: local and s3, 1MiB, 2 repetitions, no breakdown or profile",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.backends, args.sizes, args.repeat, args.breakdown_repeat, args.profile = "local,s3", "1MiB", 2, 0, "never"
    args.backend_list = [b.strip() for b in args.backends.split(",") if b.strip()]
    for name in args.backend_list:
        if name not in ALL_BACKENDS:
            parser.error(f"unknown backend {name!r}; choose from {', '.join(ALL_BACKENDS)}")
    try:
        args.size_list = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("airflow_provider_seatunnel_ckpt.config").setLevel(logging.ERROR)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "benchmark": "checkpoint storage: ours (public API) vs raw client",
        "machine": machine_info(),
        "settings": {
            "backends": args.backend_list,
            "sizes": [size_label(s) for s in args.size_list],
            "repeat": args.repeat,
            "warmup": args.warmup,
            "breakdown_repeat": args.breakdown_repeat,
            "order": "each repetition runs ours (store, get) and raw (put, get); which goes first alternates (ABBA)",
            "max_retained": 2,
            "servers": "in this process" if args.in_process_servers else "child processes",
            "target": f"ours/raw store throughput >= {TARGET_RATIO} at 64MiB on local and s3",
        },
        "legend": {
            "ratio": "ours/raw throughput of the medians (= raw/ours median latency); >1 means ours is faster",
            "paired_ratio": "median/min/max of the per-repetition ratios (ours and raw ran back to back)",
            "client_cpu_ms": "CPU time of the benchmark process (all its threads; not the servers' unless "
            "--in-process-servers): steadier than latency on a busy machine",
            "breakdown.*.phases": "phase -> [median ms spent inside its FileSystem calls (client + server), calls]",
            "breakdown.*.in_process_ms": "total minus FileSystem calls: sha256 of the state, manifest JSON, validation",
            "breakdown.sha256_of_state_ms": "hashlib.sha256 of the state alone, for comparison",
        },
        "backends": {},
        "results": [],
        "profiles": [],
    }
    payloads = {size: os.urandom(size) for size in args.size_list}
    largest = max(args.size_list)
    for name in args.backend_list:
        progress(f"{name}: starting")
        t_backend = time.perf_counter()
        with open_target(name, args) as target:
            report["backends"][name] = {
                "config": target.config,
                "notes": target.notes,
            }
            storage = target.make_storage()
            for size in args.size_list:
                t0 = time.perf_counter()
                runner = Runner(target, size, payloads[size])
                row: dict[str, Any] = {"backend": name, "size": size_label(size), "size_bytes": size}
                row.update(measure(runner, storage, args.repeat, args.warmup))
                if args.breakdown_repeat > 0:
                    row["breakdown"] = breakdown(runner, args.breakdown_repeat)
                report["results"].append(row)
                progress(
                    f"{name} {size_label(size)}: store ratio {row['store']['ratio']:.2f}, get ratio "
                    f"{row['get']['ratio']:.2f} ({time.perf_counter() - t0:.1f} s)"
                )
                wants = args.profile == "always" or (
                    args.profile == "auto" and min(row["store"]["ratio"], row["get"]["ratio"]) < TARGET_RATIO
                )
                auto_backend = name in ("local", "s3") or args.profile == "always"
                if wants and auto_backend and size == largest and size >= MiB:
                    for op in ("store", "get"):
                        if args.profile == "always" or row[op]["ratio"] < TARGET_RATIO:
                            report["profiles"].append(profile(runner, op, args.profile_repeat))
        progress(f"{name}: done in {time.perf_counter() - t_backend:.1f} s")
    report["ratios"] = {
        "columns": [
            "backend",
            "size",
            "store ratio",
            "get ratio",
            "store paired",
            "get paired",
            "store ms ours",
            "store ms raw",
            "get ms ours",
            "get ms raw",
        ],
        "rows": [
            [
                r["backend"],
                r["size"],
                r["store"]["ratio"],
                r["get"]["ratio"],
                r["store"]["paired_ratio"]["median"],
                r["get"]["paired_ratio"]["median"],
                round(r["store"]["ours"]["latency_ms"]["median"], 2),
                round(r["store"]["raw"]["latency_ms"]["median"], 2),
                round(r["get"]["ours"]["latency_ms"]["median"], 2),
                round(r["get"]["raw"]["latency_ms"]["median"], 2),
            ]
            for r in report["results"]
        ],
    }
    report["target_met"] = {
        f"{r['backend']} {r['size']} store": r["store"]["ratio"] >= TARGET_RATIO
        for r in report["results"]
        if r["backend"] in ("local", "s3") and r["size_bytes"] == 64 * MiB
    }
    with contextlib.suppress(OSError):
        report["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    text = compact_json(report)
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text + "\n")
        progress(f"wrote {args.out}")
    _print_table(report)
    return 0


def compact_json(value: Any, indent: str = "", width: int = 110) -> str:
    """Indented JSON whose small objects and lists stay on one line (valid JSON)."""
    flat = json.dumps(value)
    if len(indent) + len(flat) <= width or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {compact_json(v, inner, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [inner + compact_json(v, inner, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


def _print_table(report: dict[str, Any]) -> None:
    """The ratios as a table on stderr (medians; ratio = ours/raw throughput)."""

    def pair(a: float, b: float) -> str:
        return f"{_num(a):>8}/{_num(b):<8}"

    head = (
        f"{'backend':7} {'size':>5} | {'store ms':^17} {'MiB/s':^17} {'cpu ms':^17} {'ratio':>5} |"
        f" {'get ms':^17} {'MiB/s':^17} {'cpu ms':^17} {'ratio':>5}"
    )
    sub = (
        f"{'':7} {'':>5} | "
        + " ".join([f"{'ours/raw':^17}"] * 3)
        + f" {'':>5} | "
        + " ".join([f"{'ours/raw':^17}"] * 3)
    )
    lines = [head, sub, "-" * len(head)]
    for r in report["results"]:
        cells = []
        for op in ("store", "get"):
            ours, raw = r[op]["ours"], r[op]["raw"]
            cells.append(
                " ".join(
                    pair(ours[metric]["median"], raw[metric]["median"])
                    for metric in ("latency_ms", "throughput_mib_s", "client_cpu_ms")
                )
                + f" {r[op]['ratio']:>5.2f}"
            )
        lines.append(f"{r['backend']:7} {r['size']:>5} | {cells[0]} | {cells[1]}")
    print("\n".join(lines), file=sys.stderr)


def _num(x: float) -> str:
    if x >= 100_000:
        return f"{x:.2g}"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}" if x >= 1 else f"{x:.2f}"


if __name__ == "__main__":
    sys.exit(main())
