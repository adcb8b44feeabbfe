"""Scale, duration axis (issue #34): a soak of Kafka -> Sql -> File at 1 s checkpoints
with a driver SIGKILL every ``--kill-every-s`` and a restart with ``--restore latest``.

The job: the ``Kafka`` source, unbounded (``stop_mode: unbounded``, the default) on a topic
of 6 partitions of librdkafka's mock cluster (tests/servers/kafka.py, its own process on
loopback) or, with ``--kafka real``, of Apache Kafka's own broker (tests/servers/kafka_broker.py,
one KRaft node in a JVM; CI's 5-minute form runs on it), a ``Sql`` transform, the ``File`` sink (parquet, two-phase commit), parallelism
2 on ``local[2]``, a checkpoint every second to local disk with the default retention
(``max-retained`` 3, ``history-size`` 1000). Each run is a real ``seatunnel-ckpt run``
driver in its own session (bench/_procs.py ``Proc``), as a user runs it. A producer thread
in this process writes small JSON records ``{"id": N, "s": N % 100}`` with unique ids at a
steady ``--rate`` (default 2,000/s, well below what the source reads on two cores, and
small enough for the mock's ~5 MB per partition to hold a few minutes of records: a
restarted driver finds its checkpointed offsets still there).

Every ``--kill-every-s`` (default 600, counted from the first driver's start) the driver's
whole process tree (Python driver, JVM, PySpark workers) gets SIGKILL and a new driver is
started at once with ``--restore latest``. At the end the producer stops, the job is
given time to catch up (the consumer group's committed offsets, which every completed
checkpoint commits, reach the topic's end offsets), it is stopped with a savepoint
(``requests/stop-with-savepoint.json``, docs/jobs.md), and every id in the File output is
counted: every acknowledged id exactly once.

Per window of ``--window-s`` (default 300 s, from the first driver's start):

* **process figures**, sampled every 2 s (psutil, ``/proc``): RSS of the driver's Python
  process, of its JVM, of the PySpark processes below the JVM (the daemon and its forked
  workers: the largest one and the sum), open file descriptors (``/proc/PID/fd`` entries)
  and threads (``num_threads``) of each role and in total. The window's figure is the
  **median of its samples** (robust to the short spikes of a checkpoint or a restart);
* **checkpoint duration** p50 / p99 (nearest rank) of the periodic checkpoints completed in
  the window, from the drivers' progress lines (``completed in N ms``: trigger -> durable,
  ``_metadata`` included). The progress lines are used rather than the history in storage
  because the history keeps only the last ``history-size`` (1000) entries, fewer than an
  hour at 1 s checkpoints;
* **objects in checkpoint storage**: the files under the storage namespace at the window's
  end (the last count taken in it, counted every 5 s), with a breakdown by directory
  pattern (digits as ``N``) so that whatever accumulates shows where it lives.

Windows that contain a kill are measured like the others: the samples of both drivers go
into the median (there is no sample while no driver runs, and a fresh driver's process
figures are what the first window starts with too, since the first window also starts
with a fresh driver); the checkpoints both drivers completed in the window count.
The restart's cost is reported on its own: kill -> the new driver's first completed
checkpoint.

Ratios: last window / first window per metric; ``soak_last_vs_first_window_max`` is the
worst of them (goal <= 1.10). Because a driver is killed every 10 minutes, the last window's
driver is older (5-10 minutes) than the first window's (0-5); when the kill period is a
multiple of the window, the result also gives each metric's ratio against the first window
whose driver had the same age (``age_matched``), which separates growth across restarts
(a leak that survives a restart: storage, output) from a process warming up.

``python bench/scale_soak.py [--minutes 60] [--kill-every-s 600] [--window-s 300] [--rate 2000] [--kafka real]``;
``--quick``: 3 minutes, 60 s windows, a kill every 90 s. CI runs a 5-minute form through
:func:`run` (tests/chaos/test_soak.py) and asserts its counts, not its timings. The result is printed as JSON and
written to ``bench/results/scale_soak.json`` (``--no-out``: not written), the plot to
``docs/img/scale_soak.png``. Work files live in ``/tmp/scale_soak_*`` and are deleted at the
end (``--keep`` keeps them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._procs import VENV_BIN, Proc, kill_tree, spark_env
from bench.common import emit, machine_info, percentiles, progress, save_figure, write_local_job

NAME = "scale_soak"
JOB_ID = "soak"
TOPIC = "soak-events"
PARTITIONS = 6
PARALLELISM = 2
INTERVAL_MS = 1000
GOAL = 1.10
SAMPLE_PERIOD_S = 2.0
OBJECTS_PERIOD_S = 5.0
COMPLETED = re.compile(r"checkpoint (\d+) \((checkpoint|final|savepoint)\) completed in (\d+) ms")
STOPPED = r"job \S+ stopped with savepoint (\d+)"

#: (key, label) of every per-window metric whose last/first ratio is judged
METRICS = [
    ("driver_rss_mib", "driver RSS"),
    ("jvm_rss_mib", "JVM RSS"),
    ("workers_rss_max_mib", "PySpark worker RSS (max)"),
    ("workers_rss_sum_mib", "PySpark workers RSS (sum)"),
    ("driver_fds", "driver fds"),
    ("jvm_fds", "JVM fds"),
    ("workers_fds", "PySpark workers fds"),
    ("total_fds", "fds (all)"),
    ("driver_threads", "driver threads"),
    ("jvm_threads", "JVM threads"),
    ("total_threads", "threads (all)"),
    ("ckpt_p50_ms", "checkpoint p50"),
    ("ckpt_p99_ms", "checkpoint p99"),
    ("storage_objects", "storage objects"),
]


def log(message: str) -> None:
    progress(NAME, message)


# ---- the producer --------------------------------------------------------------------------------
class SteadyProducer:
    """Produces ``{"id": N, "s": N % 100}`` (ids 0, 1, 2, ...) at ``rate`` records/s in
    ticks of 50 ms, partition ``id % PARTITIONS``. Ids whose delivery failed are kept
    apart: they are not expected in the output."""

    TICK_S = 0.05

    def __init__(self, bootstrap: str, rate: int):
        from confluent_kafka import Producer

        self.rate = rate
        self.next_id = 0
        self.failed: list[int] = []
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all", "queue.buffering.max.messages": 1_000_000}
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SteadyProducer:
        self._thread.start()
        return self

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed.append(json.loads(msg.value())["id"])

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.is_set():
            # catch up to where the clock says we should be: a steady average rate even
            # when a tick runs late (GC, a busy machine)
            due = int((time.monotonic() - started) * self.rate)
            while self.next_id < due:
                i = self.next_id
                value = json.dumps({"id": i, "s": i % 100}, separators=(",", ":")).encode()
                try:
                    self._producer.produce(TOPIC, value, partition=i % PARTITIONS, on_delivery=self._delivered)
                except BufferError:
                    self._producer.poll(0.05)
                    continue
                self.next_id += 1
            self._producer.poll(0)
            self._stop.wait(self.TICK_S)

    def stop(self) -> int:
        """Stop producing, wait for every acknowledgement; returns how many ids were sent."""
        self._stop.set()
        self._thread.join(timeout=30)
        remaining = self._producer.flush(120)
        if remaining:
            log(f"producer: {remaining} records not acknowledged after 120 s")
        return self.next_id


# ---- job and config ---------------------------------------------------------------------------------
def write_files(work: Path, bootstrap: str) -> tuple[Path, Path, Path, Path]:
    """The job file, the engine config, the output directory and the storage namespace."""
    output, namespace = work / "output", work / "checkpoints"
    job = {
        "env": {"job.name": JOB_ID, "parallelism": PARALLELISM, "checkpoint.interval": INTERVAL_MS},
        "source": [
            {
                "plugin_name": "Kafka",
                "bootstrap.servers": bootstrap,
                "topic": TOPIC,
                "consumer.group": "soak",
                "start_mode": "earliest",
                "stop_mode": "unbounded",
                "format": "json",
                "schema": {"fields": {"id": "bigint", "s": "int"}},
            }
        ],
        "transform": [{"plugin_name": "Sql", "query": "select id, s * 10 as score10 from events"}],
        "sink": [{"plugin_name": "File", "path": f"file://{output}/", "format": "parquet"}],
    }
    # retention and history at their defaults: what a user's long-running job gets
    checkpoint = {"interval": INTERVAL_MS, "timeout": 60_000, "tolerable-failure": 5}
    job_path, config_path = write_local_job(work, job, checkpoint, f"{namespace}/")
    return job_path, config_path, output, namespace


def open_storage(config_path: Path) -> Any:
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.storage.registry import create_storage

    return create_storage(load_config(config_path))


# ---- process and storage sampling -------------------------------------------------------------------
def _fds(proc: psutil.Process) -> int:
    return len(os.listdir(f"/proc/{proc.pid}/fd"))


def sample_processes(driver_pid: int) -> dict[str, Any] | None:
    """One sample of the driver tree: per role RSS (MiB), fds and threads. The JVM is the
    ``java`` child; every Python process below it is a PySpark process (daemon or worker)."""
    try:
        driver = psutil.Process(driver_pid)
        sample: dict[str, Any] = {
            "driver_rss_mib": driver.memory_info().rss / 2**20,
            "driver_fds": _fds(driver),
            "driver_threads": driver.num_threads(),
        }
        children = driver.children(recursive=True)
    except (psutil.Error, OSError):
        return None
    jvm: dict[str, float] = {}
    workers: list[dict[str, float]] = []
    for child in children:
        with contextlib.suppress(psutil.Error, OSError):
            figures = {"rss": child.memory_info().rss / 2**20, "fds": _fds(child), "threads": child.num_threads()}
            if child.name() == "java":
                jvm = figures
            elif "python" in child.name() or child.name().startswith("seatunnel"):
                workers.append(figures)
    if jvm:
        sample.update(jvm_rss_mib=jvm["rss"], jvm_fds=jvm["fds"], jvm_threads=jvm["threads"])
    if workers:
        sample.update(
            workers_rss_max_mib=max(w["rss"] for w in workers),
            workers_rss_sum_mib=sum(w["rss"] for w in workers),
            workers_fds=sum(w["fds"] for w in workers),
            workers_n=len(workers),
        )
    sample["total_fds"] = sample["driver_fds"] + jvm.get("fds", 0) + sum(w["fds"] for w in workers)
    sample["total_threads"] = sample["driver_threads"] + jvm.get("threads", 0) + sum(w["threads"] for w in workers)
    return sample


def count_objects(root: Path) -> tuple[int, dict[str, int]]:
    """Files under ``root`` and how many per directory pattern (digits as ``N``)."""
    total, by_dir = 0, {}
    for directory, _dirs, files in os.walk(root):
        if not files:
            continue
        pattern = re.sub(r"\d+", "N", os.path.relpath(directory, root))
        by_dir[pattern] = by_dir.get(pattern, 0) + len(files)
        total += len(files)
    return total, by_dir


class Sampler:
    """A thread sampling the current driver (``soak.driver`` changes at each restart) every
    SAMPLE_PERIOD_S and the storage namespace every OBJECTS_PERIOD_S."""

    def __init__(self, soak: Soak):
        self.soak = soak
        self.processes: list[tuple[float, dict[str, Any]]] = []
        self.objects: list[tuple[float, int, dict[str, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last_objects = 0.0
        while not self._stop.is_set():
            driver = self.soak.driver
            if driver is not None and driver.poll() is None:
                sample = sample_processes(driver.pid)
                if sample is not None:
                    self.processes.append((time.time(), sample))
            if time.time() - last_objects >= OBJECTS_PERIOD_S:
                last_objects = time.time()
                with contextlib.suppress(OSError):
                    total, by_dir = count_objects(self.soak.namespace)
                    self.objects.append((last_objects, total, by_dir))
            self._stop.wait(SAMPLE_PERIOD_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


# ---- the soak -----------------------------------------------------------------------------------------
class Soak:
    """The driver runs: the first one, a kill and restart every ``kill_every_s``, the stop."""

    def __init__(self, work: Path, job: Path, config: Path, namespace: Path):
        self.work, self.job, self.config, self.namespace = work, job, config, namespace
        self.driver: Proc | None = None
        self.runs: list[Proc] = []
        self.events: list[dict[str, Any]] = []  #: kills, unexpected exits, restarts

    def start_driver(self, restore: bool) -> Proc:
        command = [
            str(VENV_BIN / "seatunnel-ckpt"),
            "run",
            str(self.job),
            "--config",
            str(self.config),
            "--job-id",
            JOB_ID,
            "--master",
            f"local[{PARALLELISM}]",
        ]
        if restore:
            command += ["--restore", "latest"]
        proc = Proc(command, spark_env(), self.work / "logs" / f"run-{len(self.runs) + 1}.log")
        self.runs.append(proc)
        self.driver = proc
        return proc

    def kill_and_restart(self) -> None:
        old = self.driver
        assert old is not None
        killed = old.kill()
        self.events.append({"event": "kill", "at": killed, "run": len(self.runs)})
        self.start_driver(restore=True)

    def restart_after_exit(self) -> None:
        old = self.driver
        assert old is not None
        code = old.wait(10)
        log(f"driver run {len(self.runs)} exited by itself ({code}):\n{old.tail(15)}")
        self.events.append(
            {"event": "unexpected_exit", "at": time.time(), "run": len(self.runs), "code": code, "tail": old.tail(10)}
        )
        self.start_driver(restore=True)

    def kill_worker(self, t0: float) -> bool:
        """SIGKILL one PySpark worker (a forked task process, not the daemon) of the driver:
        its task fails and the subtask restarts from the latest completed checkpoint. False
        when the driver has no worker yet (a driver just restarted on a busy machine)."""
        from tests.support.workspace import pyspark_workers

        workers = sorted(pyspark_workers(self.driver.pid))
        if not workers:
            return False
        try:
            os.kill(workers[0], signal.SIGKILL)
        except ProcessLookupError:
            return False
        log(f"t={time.time() - t0:.0f} s: SIGKILL of a PySpark worker of driver run {len(self.runs)}")
        self.events.append({"event": "worker_kill", "at": time.time(), "run": len(self.runs), "of": len(workers)})
        return True

    def soak(self, seconds: float, kill_every_s: float, worker_kills_at: list[float] = ()) -> float:
        """Run for ``seconds`` from the first driver's start (a worker SIGKILL at each of
        ``worker_kills_at`` seconds); returns that start (wall)."""
        self.start_driver(restore=False)
        t0 = self.driver.started_wall
        next_kill = t0 + kill_every_s
        worker_kills = sorted(t0 + at for at in worker_kills_at)
        while time.time() < t0 + seconds:
            # a worker kill that finds no worker yet stays due until the driver has one
            if worker_kills and time.time() >= worker_kills[0] and self.kill_worker(t0):
                worker_kills.pop(0)
            elif time.time() >= next_kill:
                log(
                    f"t={time.time() - t0:.0f} s: SIGKILL of driver run {len(self.runs)}, restart with --restore latest"
                )
                self.kill_and_restart()
                next_kill += kill_every_s
            elif self.driver.poll() is not None:
                self.restart_after_exit()
            time.sleep(0.2)
        return t0

    def stop_with_savepoint(self, timeout_s: float = 180) -> dict[str, Any]:
        from airflow_provider_seatunnel_ckpt.engine.driver import STOP_REQUEST

        if self.driver.poll() is not None:
            self.restart_after_exit()
            self.driver.wait_for(COMPLETED.pattern, 180)
        storage = open_storage(self.config)
        requested = time.time()
        storage.write_document(JOB_ID, STOP_REQUEST, {"requested_ms": int(requested * 1000), "by": NAME})
        code = self.driver.wait(timeout_s)
        stopped = self.driver.first(STOPPED)
        return {
            "exit_code": code,
            "savepoint_id": int(stopped[1].group(1)) if stopped else None,
            "request_to_exit_s": round(time.time() - requested, 2),
            "tail": None if stopped else self.driver.tail(15),
        }

    def kill_all(self) -> None:
        for proc in self.runs:
            if proc.poll() is None:
                kill_tree(proc.pid)
            with contextlib.suppress(Exception):
                proc.proc.wait(timeout=10)


def committed_lag(bootstrap: str) -> int:
    """End offsets minus the consumer group's committed offsets, over the partitions (the
    group's offsets are those of the latest completed checkpoint)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak", "enable.auto.commit": False})
    try:
        parts = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        committed = consumer.committed(parts, timeout=10)
        lag = 0
        for tp in committed:
            high = consumer.get_watermark_offsets(TopicPartition(TOPIC, tp.partition), timeout=10)[1]
            lag += high - max(tp.offset, 0)
        return lag
    finally:
        consumer.close()


def wait_caught_up(bootstrap: str, timeout_s: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        with contextlib.suppress(Exception):
            if committed_lag(bootstrap) == 0:
                return round(time.monotonic() - started, 1)
        time.sleep(1.0)
    return None


# ---- counting the output ---------------------------------------------------------------------------
def count_output(output: Path, sent: int, failed: list[int]) -> dict[str, Any]:
    """Every id of the committed parquet files against the acknowledged ids."""
    import numpy as np
    import pyarrow.parquet as pq

    files = [
        p
        for p in output.rglob("*.parquet")
        if not any(part.startswith(("_", ".")) for part in p.relative_to(output).parts)
    ]
    parts = [pq.read_table(p, columns=["id"]).column("id").to_numpy() for p in files]
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    expected = np.ones(sent, dtype=bool)
    expected[np.asarray(failed, dtype=np.int64)] = False
    inside = ids[(ids >= 0) & (ids < sent)]
    counts = np.bincount(inside, minlength=sent)
    lost = int(((counts == 0) & expected).sum())
    duplicated = int((counts[counts > 1] - 1).sum())
    unexpected = int(len(ids) - len(inside) + ((counts > 0) & ~expected).sum())
    return {
        "ids_sent": sent,
        "ids_not_acknowledged": len(failed),
        "ids_expected": int(expected.sum()),
        "rows_out": int(len(ids)),
        "lost": lost,
        "duplicated": duplicated,
        "unexpected": unexpected,
        "output_files": len(files),
        "exactly_once": lost == 0 and duplicated == 0 and unexpected == 0 and len(ids) == int(expected.sum()),
    }


# ---- windows ----------------------------------------------------------------------------------------
def checkpoint_lines(runs: list[Proc]) -> list[tuple[float, int]]:
    """(wall time, duration ms) of every periodic checkpoint any driver completed."""
    out = []
    for proc in runs:
        out += [(wall, int(m.group(3))) for wall, m in proc.all(COMPLETED.pattern) if m.group(2) == "checkpoint"]
    return sorted(out)


def window_figures(
    t0: float,
    window_s: float,
    count: int,
    sampler: Sampler,
    ckpts: list[tuple[float, int]],
    events: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    windows = []
    for i in range(count):
        start, end = t0 + i * window_s, t0 + (i + 1) * window_s
        row: dict[str, Any] = {"window": i, "from_s": round(i * window_s), "to_s": round((i + 1) * window_s)}
        samples = [s for t, s in sampler.processes if start <= t < end]
        row["process_samples"] = len(samples)
        for key in (
            "driver_rss_mib",
            "jvm_rss_mib",
            "workers_rss_max_mib",
            "workers_rss_sum_mib",
            "driver_fds",
            "jvm_fds",
            "workers_fds",
            "total_fds",
            "driver_threads",
            "jvm_threads",
            "total_threads",
            "workers_n",
        ):
            values = [s[key] for s in samples if key in s]
            row[key] = round(statistics.median(values), 1) if values else None
        durations = [ms for t, ms in ckpts if start <= t < end]
        pct = percentiles(durations, 0) if durations else None
        row["checkpoints"] = len(durations)
        row["ckpt_p50_ms"] = pct["p50"] if pct else None
        row["ckpt_p99_ms"] = pct["p99"] if pct else None
        objects = [(total, by_dir) for t, total, by_dir in sampler.objects if start <= t < end]
        row["storage_objects"] = objects[-1][0] if objects else None
        # the most at any count in the window: what comes and goes (a driver's unpruned
        # reservations, a checkpoint in flight) is in every window's peak, at any phase
        row["storage_objects_peak"] = max(total for total, _ in objects) if objects else None
        row["storage_objects_by_dir"] = objects[-1][1] if objects else None
        row["kills"] = sum(1 for e in events if e["event"] == "kill" and start <= e["at"] < end)
        row["unexpected_exits"] = sum(1 for e in events if e["event"] == "unexpected_exit" and start <= e["at"] < end)
        windows.append(row)
    return windows


def ratios(last: dict[str, Any], first: dict[str, Any]) -> dict[str, float | None]:
    out = {}
    for key, _label in METRICS:
        a, b = last.get(key), first.get(key)
        out[key] = round(a / b, 3) if a is not None and b else None
    return out


def age_matched_window(windows: list[dict[str, Any]], window_s: float, kill_every_s: float) -> int | None:
    """The first window whose driver was as old as the last window's (kills at multiples of
    ``kill_every_s``): only defined when the kill period is a multiple of the window."""
    if not windows or kill_every_s % window_s:
        return None
    last_start = windows[-1]["from_s"]
    offset = last_start - (last_start // kill_every_s) * kill_every_s
    index = int(offset // window_s)
    return index if index < len(windows) - 1 else None


def first_window_after_restart(windows: list[dict[str, Any]], kill_every_s: float) -> int | None:
    """The first window that starts after the first driver kill (None: no such window
    before the last)."""
    index = next((i for i, w in enumerate(windows) if w["from_s"] >= kill_every_s), None)
    return index if index is not None and index < len(windows) - 1 else None


def recoveries(soak: Soak) -> list[float]:
    """Kill -> the next driver's first completed checkpoint, per kill (s)."""
    out = []
    for event in soak.events:
        if event["event"] != "kill" or event["run"] >= len(soak.runs):
            continue
        found = soak.runs[event["run"]].first(COMPLETED.pattern)
        if found:
            out.append(round(found[0] - event["at"], 1))
    return out


# ---- plot ---------------------------------------------------------------------------------------------
def make_plot(windows: list[dict[str, Any]], window_s: float, kafka: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
    x = [w["to_s"] / 60 for w in windows]
    first = windows[0]
    for key, label in METRICS:
        if first.get(key):
            ax.plot(
                x,
                [w[key] / first[key] if w.get(key) is not None else None for w in windows],
                marker="o",
                ms=3,
                label=label,
            )
    ax.axhline(GOAL, color="red", ls="--", lw=1, label=f"goal {GOAL}")
    ax.set_xlabel(f"end of the {window_s / 60:g}-minute window (min)")
    ax.set_ylabel("value / first window's")
    ax.set_title("per-window figures, normalized to the first window")
    ax.grid(True, lw=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax2.plot(x, [w["storage_objects"] for w in windows], marker="o", label="storage objects")
    ax2.set_ylabel("objects in checkpoint storage")
    ax2.set_xlabel(ax.get_xlabel())
    ax3 = ax2.twinx()
    ax3.plot(x, [w["ckpt_p50_ms"] for w in windows], color="tab:green", marker="s", ms=3, label="checkpoint p50 ms")
    ax3.plot(x, [w["ckpt_p99_ms"] for w in windows], color="tab:red", marker="s", ms=3, label="checkpoint p99 ms")
    ax3.set_ylabel("checkpoint duration (ms)")
    ax2.set_title("storage objects and checkpoint duration")
    ax2.grid(True, lw=0.3)
    handles = ax2.get_legend_handles_labels()[0] + ax3.get_legend_handles_labels()[0]
    ax2.legend(handles, [h.get_label() for h in handles], fontsize=7)
    fig.suptitle(f"Soak: Kafka ({kafka}) -> Sql -> File, 1 s checkpoints, driver SIGKILL + restore latest periodically")
    return save_figure(fig, "scale_soak.png")


# ---- main ---------------------------------------------------------------------------------------------
def low_watermarks(bootstrap: str) -> list[int]:
    """The topic's first offset per partition (the mock drops old records past ~5 MB)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "low-watermarks"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[0] for p in range(PARTITIONS)]
    finally:
        consumer.close()


@contextlib.contextmanager
def own_kafka(kind: str) -> Iterator[Any]:
    """A Kafka of the soak's own: librdkafka's mock (``mock``) or the real broker (``real``)."""
    if kind == "real":
        from tests.servers.kafka_broker import KafkaBroker

        with KafkaBroker(nodes=1) as broker:
            yield broker
    else:
        from tests.servers.kafka import KafkaMockCluster

        with KafkaMockCluster(brokers=1) as cluster:
            yield cluster


def run(args: argparse.Namespace, work: Path, kafka: Any = None) -> dict[str, Any]:
    """The soak on ``kafka`` (anything with ``bootstrap_servers`` and ``create_topic``: the
    test's broker), or on a Kafka of its own (``args.kafka``)."""
    seconds = args.minutes * 60
    with contextlib.ExitStack() as stack:
        if kafka is None:
            kafka = stack.enter_context(own_kafka(getattr(args, "kafka", "mock")))
        kafka.create_topic(TOPIC, PARTITIONS)
        job, config, output, namespace = write_files(work, kafka.bootstrap_servers)
        soak = Soak(work, job, config, namespace)
        sampler = Sampler(soak)
        producer = SteadyProducer(kafka.bootstrap_servers, args.rate).start()
        try:
            log(
                f"soak of {args.minutes:g} min: {args.rate:,} records/s, kill every {args.kill_every_s:g} s, "
                f"{args.window_s:g} s windows; work {work}"
            )
            t0 = soak.soak(seconds, args.kill_every_s, getattr(args, "worker_kills_at", []))
            sent = producer.stop()
            log(f"producer stopped after {sent:,} ids ({len(producer.failed)} not acknowledged); catching up")
            catch_up_s = wait_caught_up(kafka.bootstrap_servers, 300)
            log(f"caught up in {catch_up_s} s; stopping with a savepoint")
            stop = soak.stop_with_savepoint()
            log(f"stop: {stop}")
        finally:
            sampler.stop()
            soak.kill_all()
            with contextlib.suppress(Exception):
                producer.stop()
        low = low_watermarks(kafka.bootstrap_servers)
    counted = count_output(output, sent, producer.failed)
    log(f"output: {counted}")
    count = int(seconds // args.window_s)
    windows = window_figures(t0, args.window_s, count, sampler, checkpoint_lines(soak.runs), soak.events)
    final_objects = sampler.objects[-1] if sampler.objects else None
    return {
        "t0": t0,
        "sent": sent,
        "catch_up_s": catch_up_s,
        "stop": stop,
        "output": counted,
        "windows": windows,
        "events": soak.events,
        "recovery_s": recoveries(soak),
        "driver_runs": len(soak.runs),
        "low_watermarks_at_end": low,
        "storage_objects_after_stop": {"total": final_objects[1], "by_dir": final_objects[2]}
        if final_objects
        else None,
    }


def summarize(raw: dict[str, Any], args: argparse.Namespace) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    windows = raw["windows"]
    first, last = windows[0], windows[-1]
    per_metric = ratios(last, first)
    judged = {k: v for k, v in per_metric.items() if v is not None}
    worst_key = max(judged, key=judged.get) if judged else None
    summary: dict[str, Any] = {
        "soak_last_vs_first_window_max": judged[worst_key] if worst_key else None,
        "soak_worst_metric": worst_key,
        "soak_every_id_once": raw["output"]["exactly_once"],
        "soak_minutes": args.minutes,
        "soak_driver_kills": sum(1 for e in raw["events"] if e["event"] == "kill"),
        "soak_unexpected_exits": sum(1 for e in raw["events"] if e["event"] == "unexpected_exit"),
        "soak_recovery_s_max": max(raw["recovery_s"]) if raw["recovery_s"] else None,
        **{f"soak_ratio_{k}": v for k, v in per_metric.items()},
    }
    settled = first_window_after_restart(windows, args.kill_every_s)
    if settled is not None:
        # Growth across restarts, apart from the bounded stores filling up once (the
        # history to history-size entries, the newest two heartbeats and split plans):
        # the last window against the first that starts after the first restart.
        for key in ("storage_objects", "storage_objects_peak"):
            a, b = last.get(key), windows[settled].get(key)
            summary[f"soak_{key}_last_vs_after_first_restart"] = round(a / b, 3) if a is not None and b else None
        summary["soak_after_first_restart_window"] = settled
    matched = age_matched_window(windows, args.window_s, args.kill_every_s)
    if matched is not None:
        age = {k: v for k, v in ratios(last, windows[matched]).items() if v is not None}
        summary["soak_age_matched_window"] = matched
        summary["soak_last_vs_age_matched_window_max"] = max(age.values()) if age else None
        summary["soak_age_matched_ratios"] = age
    targets = [
        {
            "figure": "soak: worst last-window / first-window ratio (RSS, fds, threads, checkpoint p50/p99, objects)",
            "target": f"<= {GOAL}",
            "value": summary["soak_last_vs_first_window_max"],
            "met": bool(worst_key) and judged[worst_key] <= GOAL,
        },
        {
            "figure": "soak: every acknowledged id once in the File output",
            "target": "every id once",
            "value": raw["output"]["rows_out"],
            "met": raw["output"]["exactly_once"],
        },
    ]
    targets += [
        {
            "figure": f"soak: {label}, last / first window",
            "target": f"<= {GOAL}",
            "value": per_metric[key],
            "met": per_metric[key] is not None and per_metric[key] <= GOAL,
        }
        for key, label in METRICS
        if per_metric.get(key) is not None
    ]
    notes = [
        "Process figures per window: the median of samples every 2 s; checkpoint p50/p99: periodic checkpoints "
        "completed in the window (drivers' progress lines); storage objects: files under the namespace at the "
        "window's end (storage_objects_peak: the most at any count in the window, every 5 s).",
        "The last window's driver is older than the first window's (kills every "
        f"{args.kill_every_s:g} s): see soak_age_matched_ratios for the same-age comparison.",
    ]
    return summary, targets, notes


TABLE = [
    "window",
    "from_s",
    "to_s",
    "driver_rss_mib",
    "jvm_rss_mib",
    "workers_rss_max_mib",
    "workers_rss_sum_mib",
    "workers_n",
    "driver_fds",
    "jvm_fds",
    "workers_fds",
    "total_fds",
    "driver_threads",
    "jvm_threads",
    "total_threads",
    "checkpoints",
    "ckpt_p50_ms",
    "ckpt_p99_ms",
    "storage_objects",
    "storage_objects_peak",
    "kills",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--kill-every-s", type=float, default=600.0)
    parser.add_argument("--window-s", type=float, default=300.0)
    parser.add_argument("--rate", type=int, default=2000, help="records/s the producer writes")
    parser.add_argument(
        "--kafka",
        choices=("mock", "real"),
        default="mock",
        help="librdkafka's mock cluster (the published figures) or Apache Kafka's broker (a JVM, built on first use)",
    )
    parser.add_argument("--quick", action="store_true", help="3 minutes, 60 s windows, a kill every 90 s")
    parser.add_argument("--out", action="store_true", help="write the result file (the default)")
    parser.add_argument("--no-out", action="store_true", help="do not write bench/results/scale_soak.json")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.window_s, args.kill_every_s = 3.0, 60.0, 90.0
    work = Path(tempfile.mkdtemp(prefix="scale_soak_", dir="/tmp"))
    machine = machine_info(["confluent-kafka"])
    try:
        raw = run(args, work)
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    summary, targets, notes = summarize(raw, args)
    result = {
        "benchmark": NAME,
        "description": f"Kafka ({args.kafka}, {PARTITIONS} partitions) -> Sql -> File (parquet), parallelism {PARALLELISM}, "
        f"{INTERVAL_MS} ms checkpoints on local disk, {args.rate:,} records/s produced for "
        f"{args.minutes:g} min, driver SIGKILL + --restore latest every {args.kill_every_s:g} s",
        "machine": machine,
        "settings": {
            "minutes": args.minutes,
            "window_s": args.window_s,
            "kill_every_s": args.kill_every_s,
            "rate": args.rate,
            "kafka": args.kafka,
            "partitions": PARTITIONS,
            "parallelism": PARALLELISM,
            "interval_ms": INTERVAL_MS,
            "max_retained": 3,
            "history_size": "default (1000)",
            "quick": args.quick,
        },
        "results": {k: v for k, v in raw.items() if k != "t0"},
        "table": {"columns": TABLE, "rows": [[w.get(c) for c in TABLE] for w in raw["windows"]]},
        "summary": summary,
        "targets": targets,
        # --no-out runs (trials) leave docs/img alone too
        "plots": make_plot(raw["windows"], args.window_s, args.kafka) if raw["windows"] and not args.no_out else [],
        "notes": notes,
    }
    emit(result, NAME, not args.no_out)
    return 0 if raw["output"]["exactly_once"] and raw["stop"].get("exit_code") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
