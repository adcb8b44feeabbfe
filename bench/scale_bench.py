"""Scale: how the engine behaves as one axis of a job grows (issue #34).

``--axis splits``: one source over N splits, into a ``LocalFile`` parquet sink (two-phase
commit), parallelism 2 on ``local[2]``, a checkpoint every second to local disk. One job
per N, each a real ``seatunnel-ckpt run`` driver in its own session (JVM start included,
as a user runs it). ``--source`` picks the curve (``all``: every one, in this order):

* ``local`` (the default): SeaTunnel's ``LocalFile`` source (connectors/file/,
  on the ``File`` source's machinery: one split per file) over a directory of N small csv
  files (``--files``, default 1000, 10000, 100000), each holding ``--rows-per-file`` rows
  with unique ids;
* ``s3``: ``S3File`` over the same N files as objects in a bucket of the test S3 server
  (moto, tests/servers/s3.py, in a process of its own on loopback, a fresh one per N),
  uploaded with boto3 from ``--upload-threads`` threads (the upload is timed);
* ``jdbc``: ``Jdbc`` over a PostgreSQL table (tests/servers/postgres.py: a real server on
  loopback) read in N key ranges (``--ranges``, default 100, 1000, 10000:
  ``partition_column: id``, ``partition_num: N``), ``--rows-per-range`` rows in each;
* ``kafka``: ``Kafka`` over a topic of N partitions (``--partitions``, default 10, 100,
  1000) on librdkafka's mock cluster (tests/servers/kafka.py, a fresh one per N), bounded
  (``start_mode: earliest``, ``stop_mode: end_offsets_at_start``), ``--kafka-records``
  JSON records in all whatever N (the Kafka source reads a subtask's partitions together,
  so every partition is an unfinished split until the end: the same data per job keeps
  the jobs comparable);
* ``sequence``: ``Sequence`` over the same ``--sequence-rows`` ids at the same
  ``--sequence-rate`` rows/s in batches of ``--sequence-batch`` rows whatever N, cut into N
  splits (``--splits``, default 1000, 10000, 100000): each epoch holds the same rows in the
  same batches, so checkpoint time is measured against the split count alone (in the file
  curves the rows grow with N too).

Per N:

* **job start**: driver process start -> the first completed checkpoint (its progress
  line), split into driver start -> ``attempt N: ... splits`` (preflight, the claim,
  Spark's start and the split plan) and that line -> the first completed checkpoint;
  **split discovery** measured on its own too: ``load_source(options).splits(2)`` timed
  in this process against the same data (the driver makes the plan before Spark's job
  starts; LocalFile and S3File list their directory twice: once for the schema check,
  once for the plan);
* **per checkpoint** (the job's history in checkpoint storage, ``history/``, read with
  ``history.reader.read_history``): duration, state size, and the subtasks' sync / async
  parts, median and max over the periodic checkpoints, and the first, last and final one
  (state that grows or stays with the splits already read shows there: at the final
  checkpoint every split is finished); the size of the retained ``_metadata`` files (which
  refer to the split plan, stored once per attempt); what the retained subtask states hold
  (split entries: finished, in progress, not started);
* **driver peak RSS**: VmHWM of the driver's Python process (``/proc``), and the peak
  RSS of its JVM and of the PySpark workers (sampled every 0.25 s);
* **rows**: every id in the committed output counted (rows out = rows in, none lost,
  none twice);
* **wall time**: driver start -> exit.

Per curve: checkpoint duration p50 and state size (p50, and at the final checkpoint) at the
largest N over the smallest (``ratios``): finished splits should cost nothing, so these
should stay near 1 where the splits are read one after another (files, key ranges), and
grow no faster than N where every split is unfinished until the end (Kafka partitions).

``--profile`` records the driver and the PySpark workers with py-spy for the whole run
(``--subprocesses``, non-blocking, 50 Hz) and puts the hottest frames per process in
the result (figures of a profiled run carry py-spy's overhead: a few percent).

Generated data and checkpoints live under ``/tmp/scale_bench_*`` and are deleted at the
end (``--keep`` keeps them); servers started for a curve are stopped before the next.
The result is printed as JSON on stdout and written to ``bench/results/scale_splits.json``
(``--no-out``: not written), merged into the one there: the curves measured replace
theirs, the others stay as they were measured (each curve records its own ``machine``,
``git_commit`` included). LocalFile's curve is the document's top level (``results``,
``table``, ``settings``); the others are under ``curves.<source>``, their tables in
``extra_tables``; one plot per curve (``docs/img/scale_splits.png``,
``scale_splits_<source>.png``).

``python bench/scale_bench.py --axis splits [--source local|s3|jdbc|kafka|all] [--files 1000,10000]
[--ranges 100,1000] [--partitions 10,100] [--splits 1000,100000] [--quick] [--profile]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._procs import VENV_BIN, Proc, kill_tree, spark_env
from bench.common import RESULTS_DIR, emit, machine_info, progress, save_figure, write_local_job

NAME = "scale_splits"
INTERVAL_MS = 1000  #: default; --interval-ms changes it (a control run without periodic checkpoints)
PARALLELISM = 2
SOURCES = ("local", "s3", "jdbc", "kafka", "sequence")
COMPLETED = re.compile(
    r"checkpoint (\d+) \((checkpoint|final|savepoint)\) completed in (\d+) ms, ([^,]+) state, ([\d,]+) rows"
    r"(?:.*?acks in (\d+) ms)?(?:, persisted in (\d+) ms)?"
)
ATTEMPT = r"attempt (\d+): (\d+) subtasks, (\d+) splits, from"
NO_CHECKPOINT = r"no completed checkpoint in .*starting from the beginning"
FINISHED = r"job \S+ finished: final checkpoint (\d+), (\d+) checkpoints completed"
CSV_SCHEMA = {"fields": {"id": "bigint", "payload": "string"}}
PAYLOAD = "x" * 32


def log(message: str) -> None:
    progress(NAME, message)


def stats(values: list[float], digits: int = 1) -> dict[str, Any] | None:
    if not values:
        return None
    return {
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
        "min": round(min(values), digits),
        "n": len(values),
    }


# ---- the curves' sources: their data, servers and source options ------------------------------
def csv_body(first_id: int, rows: int) -> bytes:
    return "".join(f"{first_id + r},{PAYLOAD}\n" for r in range(rows)).encode()


class LocalFiles:
    """``LocalFile`` over N csv files ``f0000000.csv`` ... of ``rows`` rows ``id,payload``;
    file i holds ids i*rows .. i*rows + rows - 1."""

    name, unit, plugin = "local", "files", "LocalFile"
    title = "LocalFile over N small files"
    default_counts, quick_counts = "1000,10000,100000", "100,1000"

    def __init__(self, work: Path, rows: int):
        self.work, self.rows = work, rows

    def __enter__(self) -> LocalFiles:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def prepare(self, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Make the data of one N; returns (source options, what was made and how long it took)."""
        directory = self.work / f"input-{n}"
        started = time.perf_counter()
        directory.mkdir(parents=True)
        for i in range(n):
            fd = os.open(directory / f"f{i:07d}.csv", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, csv_body(i * self.rows, self.rows))
            finally:
                os.close(fd)
        made = {"rows_per_file": self.rows, "generate_s": round(time.perf_counter() - started, 2)}
        return {
            "plugin_name": self.plugin,
            "path": str(directory),
            "file_format_type": "csv",
            "schema": CSV_SCHEMA,
        }, made

    def release(self, n: int) -> None:
        shutil.rmtree(self.work / f"input-{n}", ignore_errors=True)


class S3Files(LocalFiles):
    """``S3File`` over the same N csv files, objects ``input/f0000000.csv`` ... in a bucket
    of moto's S3 server (a process of its own, started afresh for each N, so the server's
    memory and lists start empty), uploaded from ``threads`` boto3 threads."""

    name, plugin = "s3", "S3File"
    title = "S3File over N small objects (moto)"
    bucket = "scale-bench"

    def __init__(self, work: Path, rows: int, threads: int):
        super().__init__(work, rows)
        self.threads = threads
        self.server: Any = None

    def prepare(self, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
        from tests.servers.s3 import S3Server

        self.server = S3Server(own_process=True).start()
        self.server.create_bucket(self.bucket)
        client = self.server.client(
            "s3", max_pool_connections=self.threads, retries={"max_attempts": 10, "mode": "standard"}
        )

        def put(i: int) -> None:
            client.put_object(Bucket=self.bucket, Key=f"input/f{i:07d}.csv", Body=csv_body(i * self.rows, self.rows))

        started = time.perf_counter()
        with ThreadPoolExecutor(self.threads) as pool:
            for _ in pool.map(put, range(n)):
                pass
        seconds = time.perf_counter() - started
        # what listing the objects costs with boto3 alone (moto's share of split discovery)
        started = time.perf_counter()
        listed = sum(
            page.get("KeyCount", 0)
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix="input/")
        )
        list_s = time.perf_counter() - started
        if listed != n:
            raise RuntimeError(f"moto lists {listed:,} objects, {n:,} were uploaded")
        made = {
            "rows_per_file": self.rows,
            "upload_s": round(seconds, 2),
            "upload_objects_per_s": round(n / seconds, 1),
            "upload_threads": self.threads,
            "boto3_list_s": round(list_s, 3),
            "endpoint": "moto (tests/servers/s3.py, own process)",
        }
        server = self.server
        return {
            "plugin_name": self.plugin,
            "bucket": f"s3a://{self.bucket}",
            "path": "/input",
            "fs.s3a.endpoint": server.endpoint_url,
            "fs.s3a.endpoint.region": server.region,
            "fs.s3a.path.style.access": "true",
            "access_key": server.access_key_id,
            "secret_key": server.secret_access_key,
            "file_format_type": "csv",
            "schema": CSV_SCHEMA,
        }, made

    def release(self, n: int) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


class JdbcRanges:
    """``Jdbc`` over table ``public.scale_<N>`` (id bigint primary key, payload text) of
    N * ``rows`` rows on one PostgreSQL server for the whole curve, read in N key ranges of
    ``rows`` ids each (``partition_column: id``, ``partition_num: N``)."""

    name, unit, plugin = "jdbc", "key ranges", "Jdbc"
    title = "Jdbc (PostgreSQL) over N key ranges"
    default_counts, quick_counts = "100,1000,10000", "10,100"

    def __init__(self, work: Path, rows: int):
        self.work, self.rows = work, rows
        self.server: Any = None
        self.database = ""

    def __enter__(self) -> JdbcRanges:
        from tests.servers.postgres import PostgresServer

        self.server = PostgresServer().start()
        self.database = self.server.create_database("scale")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def prepare(self, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
        table = f"public.scale_{n}"
        started = time.perf_counter()
        execute = lambda sql: self.server.execute(sql, database=self.database)  # noqa: E731
        execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, payload text NOT NULL)")
        execute(f"INSERT INTO {table} SELECT g, '{PAYLOAD}' FROM generate_series(0, {n * self.rows - 1}) g")
        execute(f"VACUUM ANALYZE {table}")
        made = {
            "rows_per_range": self.rows,
            "fill_s": round(time.perf_counter() - started, 2),
            "postgresql": execute("SHOW server_version")[0][0],
        }
        return {
            "plugin_name": self.plugin,
            "url": self.server.jdbc_url(self.database),
            "user": "postgres",
            "password": self.server.password,
            "table": table,
            "partition_column": "id",
            "partition_num": n,
        }, made

    def release(self, n: int) -> None:
        if self.server is not None:
            self.server.execute(f"DROP TABLE IF EXISTS public.scale_{n}", database=self.database)


class KafkaPartitions:
    """``Kafka`` over topic ``scale`` of N partitions on a fresh mock cluster per N, holding
    ``records`` JSON records ``{"id": i, "payload": ...}`` in all (partition ``i % N``)."""

    name, unit, plugin = "kafka", "partitions", "Kafka"
    title = "Kafka over N partitions (librdkafka mock cluster)"
    default_counts, quick_counts = "10,100,1000", "4,10"
    topic = "scale"

    def __init__(self, work: Path, records: int):
        self.work, self.records = work, records
        self.cluster: Any = None

    def __enter__(self) -> KafkaPartitions:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release(0)

    def prepare(self, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
        from tests.servers.kafka import KafkaMockCluster

        self.cluster = KafkaMockCluster(brokers=3).start()
        self.cluster.create_topic(self.topic, n)
        started = time.perf_counter()
        self.cluster.produce_json(self.topic, ({"id": i, "payload": PAYLOAD} for i in range(self.records)), n)
        seconds = time.perf_counter() - started
        if any(self.cluster.low_watermarks(self.topic, n)):
            raise RuntimeError("the mock dropped records (it keeps ~5 MB a partition): use fewer --kafka-records")
        made = {
            "records": self.records,
            "records_per_partition": round(self.records / n, 1),
            "produce_s": round(seconds, 2),
        }
        return {
            "plugin_name": self.plugin,
            "bootstrap.servers": self.cluster.bootstrap_servers,
            "topic": self.topic,
            "consumer.group": f"scale-{n}",
            "start_mode": "earliest",
            "stop_mode": "end_offsets_at_start",
            "format": "json",
            "schema": CSV_SCHEMA,
            "commit_on_checkpoint": False,
        }, made

    def rows_in(self, n: int) -> int:
        return self.records

    def release(self, n: int) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None


class SequenceSplits:
    """``Sequence`` over the same ``rows`` ids, at the same ``rows_per_second`` and in batches
    of the same ``batch_size`` whatever N, cut into N splits: every epoch holds the same rows
    in the same batches, so only the split count differs. (The file curves cannot show that:
    their rows grow with N, and checkpoint time follows the rows of the epoch. Batches must
    not follow the split size either: a barrier waits for the batch in progress, which a
    rate-limited reader sleeps through.)"""

    name, unit, plugin = "sequence", "splits", "Sequence"
    title = "Sequence over N splits, equal rows per epoch"
    default_counts, quick_counts = "1000,10000,100000", "100,1000"

    def __init__(self, work: Path, rows: int, rows_per_second: float, batch_size: int):
        self.work, self.rows, self.rows_per_second, self.batch_size = work, rows, rows_per_second, batch_size

    def __enter__(self) -> SequenceSplits:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def prepare(self, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
        made = {
            "rows": self.rows,
            "rows_per_second": self.rows_per_second,
            "batch_size": self.batch_size,
            "rows_per_split": round(self.rows / n, 1),
        }
        return {
            "plugin_name": self.plugin,
            "rows": self.rows,
            "splits": n,
            "rows_per_second": self.rows_per_second,
            "batch_size": self.batch_size,
        }, made

    def rows_in(self, n: int) -> int:
        return self.rows

    def release(self, n: int) -> None:
        pass


CURVES = {cls.name: cls for cls in (LocalFiles, S3Files, JdbcRanges, KafkaPartitions, SequenceSplits)}


def rows_in(data: Any, n: int) -> int:
    """How many ids (0 .. rows_in - 1) the job must write once each."""
    return data.rows_in(n) if hasattr(data, "rows_in") else n * data.rows


def time_discovery(options: dict[str, Any], repeat: int = 3, budget_s: float = 10.0) -> dict[str, Any]:
    """The split plan as the driver makes it, timed in this process (caches warm); fewer
    than ``repeat`` times when the plans took ``budget_s`` already (a slow listing)."""
    from airflow_provider_seatunnel_ckpt.connectors import load_source

    times, splits = [], []
    while len(times) < repeat and sum(times) < budget_s:
        source = load_source(options, "source[0]")
        try:
            started = time.perf_counter()
            splits = source.splits(PARALLELISM)
            times.append(time.perf_counter() - started)
        finally:
            source.close()
    # the plan's size as the driver stores it (once per attempt: plans/, engine/split_plan.py)
    plan_bytes = len(json.dumps([[s.split_id, dict(s.spec)] for s in splits], sort_keys=True, indent=1, default=str))
    return {"seconds": stats(times, 3), "splits": len(splits), "plan_json_bytes": plan_bytes}


def write_job(work: Path, tag: str, source: dict[str, Any], output_dir: Path, interval_ms: int) -> tuple[Path, Path]:
    job = {
        "env": {
            "job.name": tag,
            "parallelism": PARALLELISM,
            "checkpoint.interval": interval_ms,
            "checkpoint.timeout": 600_000,
        },
        "source": [source],
        "sink": [{"plugin_name": "LocalFile", "path": str(output_dir), "file_format_type": "parquet"}],
    }
    checkpoint = {"interval": interval_ms, "timeout": 600_000, "tolerable-failure": 3, "history-size": 100_000}
    return write_local_job(
        work, job, checkpoint, f"{work}/checkpoints-{tag}/", f"job-{tag}.yaml", f"seatunnel-{tag}.yaml"
    )


# ---- process sampling --------------------------------------------------------------------------
class Sampler:
    """Every ``period`` s: the driver's VmHWM / VmRSS, its JVM's RSS, the PySpark workers'
    RSS (sum), and the last CPU times seen of each."""

    def __init__(self, pid: int, period: float = 0.25):
        self.pid, self.period = pid, period
        self.driver_hwm_kib = 0
        self.driver_rss_peak_kib = 0
        self.jvm_rss_peak_kib = 0
        self.workers_rss_peak_kib = 0
        self.driver_cpu_s = 0.0
        self.jvm_cpu_s = 0.0
        self.worker_cpu_s: dict[int, float] = {}
        self.timeline: list[tuple[float, int]] = []  # (s since start, driver RSS KiB)
        self._stop = threading.Event()
        self._started = time.time()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _status(self, pid: int) -> dict[str, int]:
        out = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    out[line.split(":")[0]] = int(line.split()[1])
        return out

    def _run(self) -> None:
        last_timeline = 0.0
        while not self._stop.is_set():
            with contextlib.suppress(OSError, ValueError, psutil.Error):
                status = self._status(self.pid)
                self.driver_hwm_kib = max(self.driver_hwm_kib, status.get("VmHWM", 0))
                self.driver_rss_peak_kib = max(self.driver_rss_peak_kib, status.get("VmRSS", 0))
                driver = psutil.Process(self.pid)
                t = driver.cpu_times()
                self.driver_cpu_s = t.user + t.system
                workers = 0
                for child in driver.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        name = child.name()
                        rss = child.memory_info().rss // 1024
                        ct = child.cpu_times()
                        if name == "java":
                            self.jvm_rss_peak_kib = max(self.jvm_rss_peak_kib, rss)
                            self.jvm_cpu_s = ct.user + ct.system
                        elif "python" in name or name.startswith("seatunnel"):
                            workers += rss
                            self.worker_cpu_s[child.pid] = ct.user + ct.system
                self.workers_rss_peak_kib = max(self.workers_rss_peak_kib, workers)
                now = time.time() - self._started
                if now - last_timeline >= 2.0:
                    self.timeline.append((round(now, 1), status.get("VmRSS", 0)))
                    last_timeline = now
            self._stop.wait(self.period)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(timeout=5)
        return {
            "driver_peak_rss_mib": round(self.driver_hwm_kib / 1024, 1),
            "driver_peak_rss_sampled_mib": round(self.driver_rss_peak_kib / 1024, 1),
            "jvm_peak_rss_mib": round(self.jvm_rss_peak_kib / 1024, 1),
            "pyspark_workers_peak_rss_mib": round(self.workers_rss_peak_kib / 1024, 1),
            "driver_cpu_s": round(self.driver_cpu_s, 2),
            "jvm_cpu_s": round(self.jvm_cpu_s, 2),
            "pyspark_workers_cpu_s_last_seen": round(sum(self.worker_cpu_s.values()), 2),
            "driver_rss_timeline_mib": [
                [t, round(k / 1024, 1)] for t, k in self.timeline[:: max(1, len(self.timeline) // 40)]
            ],
        }


# ---- py-spy --------------------------------------------------------------------------------------
class Profiler:
    def __init__(self, pid: int, out: Path, rate: int = 50):
        import subprocess

        self.out = out
        self.err = out.with_suffix(".err")
        with open(self.err, "w") as err:
            self.proc = subprocess.Popen(
                [
                    str(VENV_BIN / "py-spy"),
                    "record",
                    "--pid",
                    str(pid),
                    "--subprocesses",
                    "--nonblocking",
                    "--rate",
                    str(rate),
                    "--format",
                    "raw",
                    "-o",
                    str(out),
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )

    def stop(self) -> dict[str, Any]:
        import subprocess

        if self.proc.poll() is None:
            self.proc.send_signal(2)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if not self.out.exists():
            return {"error": self.err.read_text(errors="replace")[-500:]}
        return summarize_profile(self.out.read_text(errors="replace"))


def _role(process_frame: str) -> str:
    """py-spy --subprocesses roots each stack in the chain of processes above it; the
    innermost one says whose stack it is."""
    if "worker_daemon" in process_frame or "pyspark.daemon" in process_frame or "pyspark.worker" in process_frame:
        return "pyspark_workers"
    if "seatunnel-ckpt" in process_frame:
        return "driver"
    return "other"


def summarize_profile(raw: str, top: int = 25) -> dict[str, Any]:
    """Per role (driver / PySpark workers): samples, the hottest frames by samples with the
    frame on the stack (inclusive) and at the leaf (self), in percent of the role's samples."""
    roles: dict[str, dict[str, Any]] = {}
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        n = int(count)
        role = "driver"
        while frames and frames[0].startswith("process "):
            role = _role(frames[0])
            frames = frames[1:]
        # drop thread frames ("thread (0x...)") py-spy may add
        frames = [f for f in frames if not f.startswith("thread (")]
        entry = roles.setdefault(role, {"samples": 0, "inclusive": {}, "self": {}})
        entry["samples"] += n
        for frame in set(frames):
            entry["inclusive"][frame] = entry["inclusive"].get(frame, 0) + n
        if frames:
            entry["self"][frames[-1]] = entry["self"].get(frames[-1], 0) + n
    out: dict[str, Any] = {}
    for role, entry in roles.items():
        total = entry["samples"] or 1

        def ranked(table: dict[str, int]) -> list[list[Any]]:
            items = sorted(table.items(), key=lambda kv: -kv[1])
            ours = [
                (f, c)
                for f, c in items
                if "airflow_provider_seatunnel_ckpt" in f or "pyarrow" in f or "json" in f or "hashlib" in f
            ]
            return [[f, round(100 * c / total, 1)] for f, c in (ours[:top] if ours else items[:top])]  # noqa: B023 - called within this iteration

        out[role] = {
            "samples": entry["samples"],
            "inclusive_percent": ranked(entry["inclusive"]),
            "self_percent": [
                [f, round(100 * c / total, 1)] for f, c in sorted(entry["self"].items(), key=lambda kv: -kv[1])[:top]
            ],
        }
    return out


# ---- after the run -------------------------------------------------------------------------------
def checkpoint_figures(config_path: Path, job_id: str) -> dict[str, Any]:
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.history.reader import read_history
    from airflow_provider_seatunnel_ckpt.storage.registry import create_storage

    storage = create_storage(load_config(config_path))
    history = read_history(storage, job_id)
    completed = sorted((c for c in history.checkpoints if c.status == "completed"), key=lambda c: c.id)
    periodic = [c for c in completed if c.kind == "checkpoint"]
    final = [c for c in completed if c.kind == "final"]

    def per(c: Any) -> dict[str, Any]:
        subs = c.subtask_details
        return {
            "id": c.id,
            "kind": c.kind,
            "duration_ms": c.duration_ms,
            "state_bytes": c.state_bytes,
            "rows": c.rows,
            "ack_duration_ms": c.ack_duration_ms,
            "persist_ms": c.persist_ms,
            "sync_ms_max": max((s.sync_ms for s in subs), default=None),
            "async_ms_max": max((s.async_ms for s in subs), default=None),
        }

    series = [per(c) for c in completed]
    pick = periodic or completed
    figures: dict[str, Any] = {
        "completed": len(completed),
        "periodic": len(periodic),
        "failed_or_aborted": sum(1 for c in history.checkpoints if c.status != "completed"),
        "duration_ms": stats([c.duration_ms for c in pick if c.duration_ms is not None], 0),
        "state_bytes": stats([c.state_bytes for c in pick], 0),
        "sync_ms_max_of_subtasks": stats([s["sync_ms_max"] for s in map(per, pick) if s["sync_ms_max"] is not None], 0),
        "async_ms_max_of_subtasks": stats(
            [s["async_ms_max"] for s in map(per, pick) if s["async_ms_max"] is not None], 0
        ),
        "persist_ms": stats([c.persist_ms for c in pick if c.persist_ms is not None], 0),
        "first": per(pick[0]) if pick else None,
        "last_periodic": per(periodic[-1]) if periodic else None,
        "final": per(final[-1]) if final else None,
    }
    # a thinned series (first, last and up to 30 between) for plots / reading the trend
    step = max(1, len(series) // 30)
    figures["series"] = series[::step] + ([series[-1]] if series and (len(series) - 1) % step else [])
    figures["retained"] = retained_checkpoints(storage, job_id)
    return figures


def retained_checkpoints(storage: Any, job_id: str) -> list[dict[str, Any]]:
    """What the retained checkpoints hold: the ``_metadata`` size (with the split plan)
    and, per subtask state, how many split entries it has and in which condition."""
    from airflow_provider_seatunnel_ckpt.engine.split_plan import load_plan
    from airflow_provider_seatunnel_ckpt.engine.state_codec import decode_subtask_state

    out = []
    for entry in sorted(storage.list_checkpoint_entries(job_id, 1), key=lambda e: e.checkpoint_id):
        if not entry.completed:
            continue
        manifest = storage.read_manifest(job_id, 1, entry.checkpoint_id, entry.savepoint)
        metadata_bytes = len(manifest.to_bytes()) if hasattr(manifest, "to_bytes") else None
        plan = load_plan(storage, job_id, manifest.properties) or []
        record: dict[str, Any] = {
            "id": entry.checkpoint_id,
            "kind": manifest.kind.value,
            "metadata_bytes": metadata_bytes,
            "plan_splits": len(plan),
            "subtasks": {},
        }
        for subtask, handle in sorted(manifest.subtask_states.items()):
            data = storage.read_state(job_id, 1, entry.checkpoint_id, handle, entry.savepoint)
            decoded = decode_subtask_state(data, f"checkpoint {entry.checkpoint_id} subtask {subtask}")
            # a dict of split entries, or (since finished splits are kept as runs of plan
            # indices) a SubtaskState with the entries and the runs [start, step, count]
            splits = getattr(decoded, "splits", decoded)
            runs = getattr(decoded, "finished", [])
            finished = sum(1 for s in splits.values() if s.finished)
            unstarted = sum(1 for s in splits.values() if not s.finished and s.position is None)
            record["subtasks"][str(subtask)] = {
                "state_bytes": len(data),
                "inline": handle.inline is not None,
                "split_entries": len(splits),
                "finished": finished,
                "not_started": unstarted,
                "in_progress": len(splits) - finished - unstarted,
                "finished_runs": len(runs),
                "finished_in_runs": sum(int(run[2]) for run in runs),
                "bytes_per_entry": round(len(data) / len(splits), 1) if splits else None,
            }
        out.append(record)
    return out


def count_output(output_dir: Path, expected_ids: int) -> dict[str, Any]:
    import numpy as np
    import pyarrow.parquet as pq

    files = [
        p
        for p in output_dir.rglob("*.parquet")
        if not any(part.startswith(("_", ".")) for part in p.relative_to(output_dir).parts)
    ]
    parts = [pq.read_table(p, columns=["id"]).column("id").to_numpy() for p in files]
    # the sink writes each batch it is given as a row group: one per small input file
    row_groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in files)
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    unique = np.unique(ids)
    in_range = unique[(unique >= 0) & (unique < expected_ids)]
    return {
        "rows_in": expected_ids,
        "rows_out": int(len(ids)),
        "distinct_ids_out": int(len(unique)),
        "lost": int(expected_ids - len(in_range)),
        "duplicated": int(len(ids) - len(unique)),
        "unexpected_ids": int(len(unique) - len(in_range)),
        "output_files": len(files),
        "output_row_groups": row_groups,
        "exactly_once": bool(len(ids) == expected_ids and len(unique) == expected_ids == len(in_range)),
    }


# ---- a curve's table, ratios, summary and targets (bench/README.md's contract) ------------------
COLUMNS = [
    "files",
    "wall s",
    "job start s",
    "split discovery s",
    "checkpoints",
    "ckpt duration ms p50",
    "ckpt duration ms max",
    "state bytes p50",
    "state bytes max",
    "state bytes first",
    "state bytes last",
    "state bytes final",
    "_metadata bytes",
    "driver peak RSS MiB",
    "rows in",
    "rows out",
    "exactly once",
]
#: the summary's and the targets' names for each curve: (suffix of the headline keys, N as "100k"?)
HEADLINE = {
    "local": ("files", True),
    "s3": ("files_s3", True),
    "jdbc": ("jdbc_ranges", True),
    "kafka": ("kafka_partitions", False),
    "sequence": ("splits_equal_rows", True),
}


def _get(doc: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def unit_key(curve: str) -> str:
    return CURVES[curve].unit.replace(" ", "_")


def short(n: int, thousands: bool = True) -> str:
    """100000 -> '100k' (1000 -> '1k'); without ``thousands`` as it is."""
    return f"{n // 1000}k" if thousands and n >= 1000 and n % 1000 == 0 else str(n)


def done(results: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return sorted((int(n), r) for n, r in results.items() if "error" not in r)


def row_of(n: int, r: dict[str, Any]) -> list[Any]:
    retained = _get(r, "checkpoints", "retained") or []
    return [
        n,
        r.get("wall_s"),
        _get(r, "timings", "job_start_s"),
        _get(r, "split_discovery_in_process", "seconds", "median"),
        _get(r, "checkpoints", "completed"),
        _get(r, "checkpoints", "duration_ms", "median"),
        _get(r, "checkpoints", "duration_ms", "max"),
        _get(r, "checkpoints", "state_bytes", "median"),
        _get(r, "checkpoints", "state_bytes", "max"),
        _get(r, "checkpoints", "first", "state_bytes"),
        _get(r, "checkpoints", "last_periodic", "state_bytes"),
        _get(r, "checkpoints", "final", "state_bytes"),
        retained[-1].get("metadata_bytes") if retained else None,
        _get(r, "process", "driver_peak_rss_mib"),
        _get(r, "output", "rows_in"),
        _get(r, "output", "rows_out"),
        _get(r, "output", "exactly_once"),
    ]


def table_of(curve: str, results: dict[str, Any]) -> dict[str, Any]:
    columns = [CURVES[curve].unit, *COLUMNS[1:]]
    return {"columns": columns, "rows": [row_of(n, r) for n, r in done(results)]}


FIGURES = {
    "checkpoint_ms_p50": ("checkpoints", "duration_ms", "median"),
    "state_bytes_p50": ("checkpoints", "state_bytes", "median"),
    "state_bytes_final": ("checkpoints", "final", "state_bytes"),
    "driver_peak_rss_mib": ("process", "driver_peak_rss_mib"),
    "job_start_s": ("timings", "job_start_s"),
}


def ratios_of(results: dict[str, Any]) -> dict[str, Any] | None:
    """The largest N's figures over the smallest N's: how the curve grows."""
    points = done(results)
    if len(points) < 2:
        return None
    (low, small), (high, large) = points[0], points[-1]
    out: dict[str, Any] = {"n_min": low, "n_max": high, "splits": round(high / low, 2)}
    for name, keys in FIGURES.items():
        a, b = _get(small, *keys), _get(large, *keys)
        out[name] = round(b / a, 2) if a and b is not None else None
    out["checkpoint_ms_late_vs_early"] = late_vs_early(large)
    return out


def late_vs_early(result: dict[str, Any]) -> float | None:
    """Within one run: checkpoint duration p50 of the second half of its periodic
    checkpoints over the first half's (the very first, at the job's start, left out).
    Finished splits pile up as the run goes on: if they cost something, this grows."""
    durations = [
        s["duration_ms"]
        for s in _get(result, "checkpoints", "series") or []
        if s.get("kind") == "checkpoint" and s.get("duration_ms") is not None
    ][1:]
    if len(durations) < 4:
        return None
    half = len(durations) // 2
    early, late = statistics.median(durations[:half]), statistics.median(durations[half:])
    return round(late / early, 2) if early else None


def summary_and_targets(curve: str, results: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Flat summary keys per N and the curve's headlines; the targets they are held to."""
    unit = CURVES[curve].unit
    prefix = "scale_splits" if curve == "local" else f"scale_splits_{curve}"
    summary: dict[str, Any] = {}
    for n, r in done(results):
        for key, value in (
            ("wall_s", r.get("wall_s")),
            ("job_start_s", _get(r, "timings", "job_start_s")),
            ("checkpoint_ms_p50", _get(r, "checkpoints", "duration_ms", "median")),
            ("checkpoint_ms_max", _get(r, "checkpoints", "duration_ms", "max")),
            ("state_bytes_p50", _get(r, "checkpoints", "state_bytes", "median")),
            ("state_bytes_final", _get(r, "checkpoints", "final", "state_bytes")),
            ("driver_peak_rss_mib", _get(r, "process", "driver_peak_rss_mib")),
            # Kafka's readers hold librdkafka clients in the workers (issue #51)
            ("workers_peak_rss_mib", _get(r, "process", "pyspark_workers_peak_rss_mib") if curve == "kafka" else None),
        ):
            if value is not None:
                summary[f"{prefix}_{key}_{n}"] = value
    label = "scale_splits" if curve == "local" else f"scale_splits {curve}"
    targets = [
        {
            "figure": f"{label} rows out = rows in ({n} {unit})",
            "target": "every id once",
            "value": _get(r, "output", "rows_out"),
            "met": _get(r, "output", "exactly_once"),
        }
        for n, r in done(results)
    ]
    ratios = ratios_of(results)
    if ratios is None:
        return summary, targets
    low, high = ratios["n_min"], ratios["n_max"]
    suffix, thousands = HEADLINE[curve]
    vs = f"{short(high, thousands)}_vs_{short(low, thousands)}"
    if curve == "local" and (low, high) != (1000, 100_000):
        vs = None  # issue #34's headlines are 100k vs 1k files: a quick run does not make them
    # Files and key ranges are read one after another (two in progress at a time): what they
    # cost should not grow with N. Kafka's partitions are all read together (every one is
    # unfinished until the end): they may cost as much more as there are more of them.
    # Sequence's epochs hold the same rows whatever N: issue #51 holds its checkpoint time to 1.5
    bound = ratios["splits"] if curve == "kafka" else 1.5 if curve == "sequence" else 2
    why = "grows no faster than the unfinished splits" if curve == "kafka" else "finished splits cost nothing"
    start = _get(results, str(high), "timings", "job_start_s")
    if start is not None and vs is not None:
        summary[f"scale_start_seconds_{short(high, thousands)}_{suffix}"] = start
        if curve in ("local", "s3") and high >= 100_000:
            targets.append(
                {
                    "figure": f"{label} job start (driver start -> first completed checkpoint), {high:,} {unit}",
                    "target": "<= 30 s",
                    "value": start,
                    "met": start <= 30,
                }
            )
    workers = _get(results, str(high), "process", "pyspark_workers_peak_rss_mib")
    if curve == "kafka" and vs is not None:
        # issue #51: one consumer per subtask, not per partition
        if workers is not None:
            summary[f"kafka_{high}_partitions_worker_rss_mib"] = workers
            targets.append(
                {
                    "figure": f"{label} PySpark workers' peak RSS, {high:,} {unit}",
                    "target": "<= 600 MiB",
                    "value": workers,
                    "met": workers <= 600,
                }
            )
        if start is not None:
            targets.append(
                {
                    "figure": f"{label} job start (driver start -> first completed checkpoint), {high:,} {unit}",
                    "target": "<= 10 s",
                    "value": start,
                    "met": start <= 10,
                }
            )
    for key, figure, ratio, target in (
        ("scale_ckpt_time_ratio", "checkpoint duration p50", ratios["checkpoint_ms_p50"], bound),
        ("scale_state_ratio", "state bytes p50", ratios["state_bytes_p50"], bound),
        (
            "scale_final_state_ratio",
            "state bytes at the final checkpoint (every split finished)",
            ratios["state_bytes_final"],
            2,
        ),
    ):
        if ratio is None or vs is None:
            continue
        summary[f"{key}_{vs}_{suffix}"] = ratio
        reason = "finished splits cost nothing" if target == 2 and key == "scale_final_state_ratio" else why
        targets.append(
            {
                "figure": f"{label} {figure}, {high:,} {unit} / {low:,} {unit} ({reason})",
                "target": f"<= {target:g}",
                "value": ratio,
                "met": ratio <= target,
            }
        )
    return summary, targets


# ---- the result document ------------------------------------------------------------------------
NOTES = [
    "After this run (Kafka at 5a31a2c): runs of finished splits are merged again when splits finish out of "
    "order (engine/split_book.py FinishedRuns.compact, at the next checkpoint and whenever the runs double), "
    "so the 213-221 runs per subtask of the 1,000-partition job become one once its share is finished.",
    "Tried and not kept: gc.freeze() after the plan is built, on the driver and in each subtask (a full "
    "collection walks the plan's ~0.5 M objects, 170-250 ms in isolation). LocalFile at 100,000 files, "
    "same machine, back to back: checkpoint p50 77 / max 173 ms with it, 75 / 185 ms without; no gain.",
    "results.<N>.checkpoints.retained[].subtasks shows what each subtask state holds: entries for the "
    "splits it started (in progress or finished); splits not started are left out of the state.",
    "The split plan is stored once per attempt (plans/, engine/split_plan.py); each _metadata refers to it "
    "(metadata_bytes): before, every _metadata carried it (17 MB at 100,000 files, 76 % of the driver's time).",
    "Before the split plan left _metadata and unstarted splits left the state (commits d6050a4, bb5ae7b), the "
    "same run at 100,000 files measured: checkpoint p50 1,448 ms (2,476 ms under load), max 2,034 ms, state p50 "
    "6.3 MB from the first checkpoint on, driver peak RSS 355 MiB, driver CPU 23.9 s, wall 48.5 s.",
    "At bb5ae7b each subtask state kept an entry (about 60 B) per split it finished, so the state and the "
    "checkpoint time grew with the files read (scale_ckpt_time_ratio_100k_vs_1k_files 9.06, state p50 3.2 MB "
    "at 100,000 files).",
    "Since 6ee70ba a finished split that keeps no transform state leaves the subtask state and is kept as its "
    "plan index in [start, step, count] runs (engine/split_book.py; retained[].subtasks.*.finished_runs): one "
    "run per subtask when it finishes its share in plan order (files, key ranges), up to one run per split "
    "when splits finish in any order (Kafka partitions read together).",
    "S3File at 100,000 objects on moto is not in the curve: measured apart (--discovery-only), the upload took "
    "351 s (285 objects/s, 16 threads), listing the objects with boto3 alone 82.5 s and our split discovery "
    "68.4 s (moto answers each page of 1,000 keys in time that grows with the bucket), and the read runs at "
    "about 140 objects/s: about 20 minutes for one job.",
    "Other curves (curves.s3, curves.jdbc, curves.kafka; tables in extra_tables): the same job shape with "
    "S3File on moto, Jdbc on PostgreSQL in N key ranges, Kafka on librdkafka's mock cluster over N "
    "partitions; each curve records its own machine and git_commit. Kafka reads every partition of a "
    "subtask together, through one consumer per subtask, so all its splits are unfinished until the end.",
    "Checkpoint duration follows the rows of the epoch, not the finished splits: its async part is the File "
    "sink's pre-commit of the epoch's gathered rows (py-spy, LocalFile at 100,000 files: _complete_barrier 6.2 % "
    "of the workers' samples, 6.1 % of it FileSinkWriter.prepare_commit; state encoding and upload too small to "
    "show). The 1,000-file job's one periodic checkpoint covered 200 rows (23 ms); at 100,000 files the p50 "
    "epoch held ~22,700 rows (~4 ms per 1,000 rows), and within that run the second half's checkpoints are as "
    "fast as the first half's (ratios.*.checkpoint_ms_late_vs_early).",
    "Kafka, one consumer per subtask (issue #51; docs/kafka.md, the reading model): before, each open "
    "partition had its own librdkafka consumer (500 per subtask at 1,000 partitions, each with its threads, "
    "connections and fetch queue). 1,000 partitions, the old code (the commit before) and the new one run "
    "back to back on the same shared machine, --partitions 1000, in the order old, new, new, old: PySpark "
    "workers' peak RSS 2,669 / 455 / 523 / 2,972 MiB (issue's target <= 600: met); workers' CPU 189 / 35 / "
    "25 / 81 s; reading (attempt line -> final checkpoint) 231 / 40 / 25 / 75 s; attempt line -> first "
    "checkpoint 27.2 / 10.9 / 2.9 / 6.5 s; job start (driver start -> first completed checkpoint) 76.0 / "
    "47.7 / 17.1 / 24.1 s, of which driver start -> attempt line (the claim and Spark's start, before any "
    "reader exists) 48.8 / 36.8 / 14.2 / 17.6 s. The load average swung from 3 to 117 over these runs "
    "(other jobs, and the old code's own ~2,000 librdkafka threads per worker: it rose to 56-74 during each "
    "old run); the pairs of a similar load are the 2nd/3rd and 4th. The rest of the job start was the "
    "driver's own start: an earlier run of this curve (load 11-14) took 23.3 s for 10 partitions (driver "
    "start -> attempt line 17.5 s) and 29.6 s for 1,000 (19.8 s). This curve's run (2026-12-05, load "
    "0.3-0.7), with the venv's bytecode kept and a SparkContext instead of a SparkSession "
    "(bench/results/peers.json, the recovery notes): 5.98 s and 5.38 s (driver start -> attempt line 3.98 "
    "and 3.63 s), the issue's target (<= 10 s) met.",
    "Kafka state: ~84 B per open partition (its split id, its position {offset, skipped}, its operator "
    "states), 98-120 B at 10 partitions: per-split, whatever the consumer; the state holds nothing of the "
    "consumer. The state p50 ratio (225.5 before, 188-190 after) compares the 10-partition job's p50 state, "
    "taken before or while it opened its few partitions, with the 1,000-partition job's, whose 1,000 "
    "partitions are open at most checkpoints; it grows with the open splits (100x) and the share of "
    "checkpoints that see them all, not with consumers. The final state (every partition finished) is now "
    "flat (214 B at 1,000 vs 210 B at 10): FinishedRuns.compact merges the runs.",
    "Sequence at equal rows per epoch (curves.sequence, issue #51 item 5): 2,000,000 ids at 40,000 rows/s in "
    "batches of 20 rows, cut into 1,000, 10,000 or 100,000 splits; checkpoint p50 24 / 24 / 27 ms, state p50 "
    "344 / 346 / 348 B. A first run let the batches follow the splits' size (the rate's 0.1 s of rows at 1,000 "
    "splits, 20 rows at 100,000): p50 80 / 20 / 24 ms, the 1,000-split job's barriers waiting behind its "
    "rate-limited reader's sleep inside a 2,000-row batch, which is why the batch size is now fixed.",
    "Figures come from one run per N on a shared 2-core machine: compare machine.loadavg_* (per curve).",
]


def describe(curve: str, settings: dict[str, Any]) -> str:
    interval = settings["interval_ms"]
    tail = (
        f"-> LocalFile parquet sink, parallelism {PARALLELISM}, checkpoints every {interval} ms on local "
        "disk, one seatunnel-ckpt run per N"
    )
    if curve == "local":
        return f"LocalFile source over N small csv files {tail}"
    if curve == "s3":
        return f"S3File source over N small csv objects on moto (own process, fresh per N) {tail}"
    if curve == "jdbc":
        return f"Jdbc source over a PostgreSQL table read in N key ranges of {settings['rows_per_range']} rows {tail}"
    if curve == "sequence":
        return (
            f"Sequence source of {settings['rows']:,} ids at {settings['rows_per_second']:,} rows/s in batches of "
            f"{settings['batch_size']} rows, cut into N splits (the same rows and batches per epoch whatever N) {tail}"
        )
    return (
        f"Kafka source over a topic of N partitions on librdkafka's mock cluster, {settings['records']:,} "
        f"records in all, bounded (end offsets at start) {tail}"
    )


def previous_curves() -> dict[str, dict[str, Any]]:
    """The curves in the result file already there: LocalFile's at its top level."""
    try:
        doc = json.loads((RESULTS_DIR / f"{NAME}.json").read_text())
    except (OSError, ValueError):
        return {}
    curves = {name: c for name, c in (doc.get("curves") or {}).items() if name in CURVES}
    if isinstance(doc.get("results"), dict):
        curves["local"] = {key: doc.get(key) for key in ("description", "machine", "settings", "results")}
    return curves


def document(curves: dict[str, dict[str, Any]], plots: bool) -> dict[str, Any]:
    """One result document of every curve (LocalFile's at the top level, as before), with
    ``table``, ``extra_tables``, ``ratios``, ``summary``, ``targets``, ``plots`` and ``notes``."""
    local = curves.get("local") or {}
    doc: dict[str, Any] = {
        "benchmark": NAME,
        "description": local.get("description"),
        "machine": local.get("machine"),
        "settings": local.get("settings"),
        "results": local.get("results") or {},
    }
    doc["table"] = table_of("local", doc["results"])
    doc["curves"], doc["ratios"], doc["extra_tables"] = {}, {}, []
    summary: dict[str, Any] = {}
    targets: list[dict[str, Any]] = []
    figures: list[str] = []
    for name in SOURCES:
        curve = curves.get(name)
        if curve is None:
            continue
        results = curve["results"]
        doc["ratios"][name] = ratios_of(results)
        part, goals = summary_and_targets(name, results)
        summary.update(part)
        targets += goals
        if name != "local":
            table = table_of(name, results)
            doc["curves"][name] = {**curve, "table": table, "ratios": doc["ratios"][name]}
            commit = _get(curve, "machine", "git_commit")
            doc["extra_tables"].append({"title": f"{CURVES[name].title} ({curve['description']}; {commit})", **table})
        if plots:
            figures += make_plot(name, results, curve["settings"]["interval_ms"])
    ratio_rows = [
        [
            name,
            r["n_min"],
            r["n_max"],
            r["splits"],
            r["checkpoint_ms_p50"],
            r["state_bytes_p50"],
            r["state_bytes_final"],
            r["driver_peak_rss_mib"],
            r["job_start_s"],
            r.get("checkpoint_ms_late_vs_early"),
        ]
        for name, r in doc["ratios"].items()
        if r
    ]
    doc["extra_tables"].append(
        {
            "title": "per curve: the largest N's figure / the smallest N's (last column: within "
            "the largest N's run, checkpoint p50 of its second half / its first half)",
            "columns": [
                "curve",
                "N min",
                "N max",
                "splits",
                "ckpt ms p50",
                "state bytes p50",
                "state bytes final",
                "driver peak RSS",
                "job start",
                "ckpt ms late / early",
            ],
            "rows": ratio_rows,
        }
    )
    doc["summary"], doc["targets"], doc["plots"], doc["notes"] = summary, targets, figures, NOTES
    return doc


def make_plot(curve: str, results: dict[str, Any], interval_ms: int) -> list[str]:
    """One figure per curve: checkpoint duration, state size, driver memory and job start against N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = done(results)
    if len(points) < 2:
        return []
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    series = [
        (
            axes[0],
            "checkpoint duration (ms)",
            [("p50", ("checkpoints", "duration_ms", "median")), ("max", ("checkpoints", "duration_ms", "max"))],
        ),
        (
            axes[1],
            "subtask state per checkpoint (bytes)",
            [("p50", ("checkpoints", "state_bytes", "median")), ("final", ("checkpoints", "final", "state_bytes"))],
        ),
        (
            axes[2],
            "driver",
            [("peak RSS (MiB)", ("process", "driver_peak_rss_mib")), ("job start (s)", ("timings", "job_start_s"))],
        ),
    ]
    for ax, title, lines in series:
        for label, keys in lines:
            xy = [(n, _get(r, *keys)) for n, r in points if _get(r, *keys)]
            ax.plot([x for x, _ in xy], [y for _, y in xy], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"{CURVES[curve].unit} (splits)")
        ax.set_title(title)
        ax.grid(True, which="both", lw=0.3)
        ax.legend()
    fig.suptitle(f"{CURVES[curve].title}, parallelism {PARALLELISM}, {interval_ms / 1000:g} s checkpoints")
    return save_figure(fig, "scale_splits.png" if curve == "local" else f"scale_splits_{curve}.png")


# ---- one N ----------------------------------------------------------------------------------------
def run_one(
    work: Path,
    data: Any,
    n: int,
    timeout_s: float,
    profile: bool,
    interval_ms: int = INTERVAL_MS,
    discovery_only: bool = False,
) -> dict[str, Any]:
    tag = f"scale-{n}" if data.name == "local" else f"scale-{data.name}-{n}"
    output_dir = work / f"output-{tag}"
    what = f"{data.name} N={n:,}"
    log(f"{what}: preparing {n:,} {data.unit}")
    source, made = data.prepare(n)
    log(f"{what}: prepared {made}; timing split discovery")
    discovery = time_discovery(source)
    log(
        f"{what}: discovery {discovery['seconds']['median']} s, {discovery['splits']:,} splits, "
        f"plan {discovery['plan_json_bytes'] / 1e6:.2f} MB (stored once per attempt)"
    )
    if discovery_only:  # the data and the split plan only, no job
        return {unit_key(data.name): n, **made, "split_discovery_in_process": discovery}
    job_path, config_path = write_job(work, tag, source, output_dir, interval_ms)
    command = [
        str(VENV_BIN / "seatunnel-ckpt"),
        "run",
        str(job_path),
        "--config",
        str(config_path),
        "--job-id",
        tag,
        "--master",
        f"local[{PARALLELISM}]",
    ]
    proc = Proc(command, spark_env(), work / "logs" / f"{tag}.log")
    sampler = Sampler(proc.pid)
    profiler = Profiler(proc.pid, work / f"pyspy-{tag}.txt") if profile else None
    result: dict[str, Any] = {
        unit_key(data.name): n,
        **made,
        "split_discovery_in_process": discovery,
        "profiled": profile,
    }
    code = None
    try:
        code = proc.wait(timeout_s)
    finally:
        ended = time.time()
        result["process"] = sampler.stop()
        if profiler is not None:
            result["profile"] = profiler.stop()
        if proc.poll() is None:
            kill_tree(proc.pid)
    start = proc.started_wall
    result["exit_code"] = code
    result["wall_s"] = round(ended - start, 2)
    no_ckpt = proc.first(NO_CHECKPOINT)
    attempt = proc.first(ATTEMPT)
    lines = [(wall, m) for wall, m in proc.all(COMPLETED.pattern)]
    first_ckpt = next(((w, m) for w, m in lines if m.group(2) == "checkpoint"), lines[0] if lines else None)
    timings = {
        "driver_start_to_claimed_s": round(no_ckpt[0] - start, 2) if no_ckpt else None,
        "driver_start_to_attempt_line_s": round(attempt[0] - start, 2) if attempt else None,
        "attempt_line_to_first_checkpoint_s": round(first_ckpt[0] - attempt[0], 2) if attempt and first_ckpt else None,
        "job_start_s": round(first_ckpt[0] - start, 2) if first_ckpt else None,
        "first_checkpoint_id": int(first_ckpt[1].group(1)) if first_ckpt else None,
        "first_checkpoint_kind": first_ckpt[1].group(2) if first_ckpt else None,
        "last_checkpoint_to_exit_s": round(ended - lines[-1][0], 2) if lines else None,
        "splits_in_attempt_line": int(attempt[1].group(3)) if attempt else None,
    }
    if attempt and lines:
        reading = lines[-1][0] - attempt[0]
        timings["attempt_line_to_final_checkpoint_s"] = round(reading, 2)
        timings[f"{unit_key(data.name)}_per_s"] = round(n / reading, 1) if reading > 0 else None
    result["timings"] = timings
    # "completed in" (trigger -> durable, the _metadata write included) and "persisted in"
    # from the progress lines: the history's duration ends before the _metadata write
    result["progress_lines"] = {
        "completed_in_ms": stats([float(m.group(3)) for _, m in lines if m.group(2) == "checkpoint"], 0),
        "persisted_in_ms": stats([float(m.group(7)) for _, m in lines if m.group(2) == "checkpoint" and m.group(7)], 0),
        "count": len(lines),
    }
    if code != 0:
        result["error_tail"] = proc.tail(30)
        log(f"{what}: driver exited {code}:\n{proc.tail(15)}")
    try:
        result["checkpoints"] = checkpoint_figures(config_path, tag)
    except Exception as err:  # the rest of the result still counts
        result["checkpoints"] = {"error": f"{type(err).__name__}: {err}"}
    result["output"] = count_output(output_dir, rows_in(data, n))
    ck = result["checkpoints"]
    log(
        f"{what}: exit {code}, wall {result['wall_s']} s, job start {timings['job_start_s']} s, "
        f"{ck.get('completed')} checkpoints, duration {ck.get('duration_ms')}, state {ck.get('state_bytes')}, "
        f"final state {_get(ck, 'final', 'state_bytes')}, driver peak RSS {result['process']['driver_peak_rss_mib']} "
        f"MiB, output {result['output']}"
    )
    return result


def run_curve(name: str, counts: list[int], args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Every N of one curve, one job each; the curve's servers live as long as it runs."""
    settings: dict[str, Any] = {"axis": args.axis, "source": name, unit_key(name): counts}
    if name == "local":  # LocalFile's settings as they always were
        settings = {"axis": args.axis, "files": counts, "rows_per_file": args.rows_per_file}
        data: Any = LocalFiles(work, args.rows_per_file)
    elif name == "s3":
        settings.update(rows_per_file=args.rows_per_file, upload_threads=args.upload_threads)
        data = S3Files(work, args.rows_per_file, args.upload_threads)
    elif name == "jdbc":
        settings.update(rows_per_range=args.rows_per_range)
        data = JdbcRanges(work, args.rows_per_range)
    elif name == "sequence":
        settings.update(rows=args.sequence_rows, rows_per_second=args.sequence_rate, batch_size=args.sequence_batch)
        data = SequenceSplits(work, args.sequence_rows, args.sequence_rate, args.sequence_batch)
    else:
        settings.update(records=args.kafka_records)
        data = KafkaPartitions(work, args.kafka_records)
    settings.update(
        parallelism=PARALLELISM, interval_ms=args.interval_ms, master=f"local[{PARALLELISM}]", profile=args.profile
    )
    machine = machine_info(
        extra_libraries={"jdbc": ("psycopg", "adbc-driver-postgresql"), "kafka": ("confluent_kafka",)}.get(name, ())
    )
    results: dict[str, Any] = {}
    with data:
        for n in counts:
            try:
                results[str(n)] = run_one(
                    work, data, n, args.timeout, args.profile, args.interval_ms, args.discovery_only
                )
            except Exception as err:  # report it, go on with the next N
                log(f"{name} N={n:,} failed: {type(err).__name__}: {err}")
                results[str(n)] = {unit_key(name): n, "error": f"{type(err).__name__}: {err}"}
            finally:
                data.release(n)  # the input and output of one N are not needed by the next
                if not args.keep:
                    shutil.rmtree(
                        work / f"output-scale-{n}" if name == "local" else work / f"output-scale-{name}-{n}",
                        ignore_errors=True,
                    )
    with contextlib.suppress(OSError):
        machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return {"description": describe(name, settings), "machine": machine, "settings": settings, "results": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--axis", default="splits", choices=["splits"], help="what grows (only splits so far)")
    parser.add_argument(
        "--source",
        default="local",
        choices=[*SOURCES, "all"],
        help="which curve (default local: LocalFile); all: every one",
    )
    parser.add_argument(
        "--files", help=f"comma-separated file counts, local and s3 (default {LocalFiles.default_counts})"
    )
    parser.add_argument("--ranges", help=f"comma-separated Jdbc key range counts (default {JdbcRanges.default_counts})")
    parser.add_argument(
        "--partitions", help=f"comma-separated Kafka partition counts (default {KafkaPartitions.default_counts})"
    )
    parser.add_argument(
        "--splits", help=f"comma-separated Sequence split counts (default {SequenceSplits.default_counts})"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: small N of each curve (bench/run_all.py --quick)"
    )
    parser.add_argument(
        "--out", action="store_true", help="write the result file (the default; bench/run_all.py passes it)"
    )
    parser.add_argument("--rows-per-file", type=int, default=4)
    parser.add_argument("--rows-per-range", type=int, default=4)
    parser.add_argument("--kafka-records", type=int, default=200_000, help="records in the topic, whatever N")
    parser.add_argument("--sequence-rows", type=int, default=2_000_000, help="Sequence's ids, whatever N")
    parser.add_argument(
        "--sequence-rate", type=float, default=40_000.0, help="Sequence's rows per second (the job's), whatever N"
    )
    parser.add_argument(
        "--sequence-batch",
        type=int,
        default=20,
        help="Sequence's rows per batch, whatever N (default: the rows of a split at 100,000 splits)",
    )
    parser.add_argument("--upload-threads", type=int, default=16, help="boto3 threads uploading the S3 objects")
    parser.add_argument(
        "--interval-ms",
        type=int,
        default=INTERVAL_MS,
        help="checkpoint interval (default 1000; 1000000000 = no periodic checkpoint, a control run)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds one job may take (then killed)")
    parser.add_argument("--profile", action="store_true", help="py-spy the driver and the PySpark workers")
    parser.add_argument(
        "--discovery-only",
        action="store_true",
        help="make the data and time split discovery, run no job (implies --no-out)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated data, checkpoints and logs")
    parser.add_argument(
        "--no-out", action="store_true", help="write neither bench/results/scale_splits.json nor the plots"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: rebuild the result file's table, summary, targets and plots from its curves",
    )
    args = parser.parse_args()
    if args.report_only:
        emit(document(previous_curves(), plots=True), NAME, True, rebuilt=True)
        return 0
    given = {
        "local": args.files,
        "s3": args.files,
        "jdbc": args.ranges,
        "kafka": args.partitions,
        "sequence": args.splits,
    }
    names = list(SOURCES) if args.source == "all" else [args.source]
    work = Path(tempfile.mkdtemp(prefix="scale_bench_", dir="/tmp"))
    log(f"work directory {work}")
    measured: dict[str, dict[str, Any]] = {}
    try:
        for name in names:
            counts = CURVES[name].quick_counts if args.quick else (given[name] or CURVES[name].default_counts)
            measured[name] = run_curve(
                name, [int(x.replace("_", "")) for x in counts.split(",") if x.strip()], args, work
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"kept {work}")
    write = not (args.no_out or args.discovery_only)
    # the result file keeps the curves not measured now as they were measured
    curves = {**(previous_curves() if write else {}), **measured}
    result = document(curves, plots=write)
    emit(result, NAME, write, rebuilt=True)  # each curve's machine has its own loadavg_at_end
    failed = [
        r
        for c in measured.values()
        for r in c["results"].values()
        if "error" in r or (r.get("exit_code") != 0 and not args.discovery_only)
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
