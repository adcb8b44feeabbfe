"""Throughput: what checkpointing costs, how close we are to the limit, how we scale.

One SparkSession (``local[2]``) runs the engine's real job (``JobRun(...).run(spark)``):
``Sequence`` (payload 100 B) -> ``Python`` transform (``bench.workloads:transform``,
pyarrow.compute) -> ``File`` parquet sink, with these variants, interleaved in ABBA order
(the variant order is reversed on every other repetition):

* ``off``        2 subtasks, interval 10^9 ms: no periodic checkpoint, only the job's
                 final checkpoint (the engine has no off switch: a job always ends with
                 its final checkpoint, which is what commits the 2PC sink's output);
* ``1s``         2 subtasks, checkpoint every 1000 ms;
* ``100ms``      2 subtasks, checkpoint every 100 ms;
* ``p1_1s``      1 subtask, checkpoint every 1000 ms (scaling: p2/p1 uses ``1s``);
* ``pyarrow``    the limit: the same batches and transform and a ``pyarrow.parquet.ParquetWriter``
                 loop, one process (this one), one thread, no Spark, no checkpoints.
* ``pyarrow_like_sink``  the same loop writing its output the way the File sink does: a new
                 file every 16 MiB, fsynced, its pages then dropped from the page cache. Not
                 a goal's denominator: it tells what the engine costs beyond the writing
                 discipline that exactly-once output needs.

Throughput = rows / seconds of the Spark job (from the moment the engine submits it to
the moment ``collect()`` returns: after the final checkpoint is durable and committed).
The SparkSession and its JVM start once before all runs and are not timed; the engine's
driver-side setup before the Spark job (restore choice, job claim: a few ms on local
disk) is timed separately (``run_s``). Every run has its own job id, checkpoint
directory and output directory; its output is counted after the timing (every id once).

``python bench/throughput_bench.py [--quick] [--out] [--repeat N] [--rows N]``
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import emit, freed_memory_held, machine_info, progress, ratio, save_figure, summary
from bench.workloads import (
    BATCH_SIZE,
    PAYLOAD_BYTES,
    TRANSFORM_FUNCTION,
    make_importable_on_executors,
    parquet_ids_once,
    sequence_batches,
    throughput_job,
    transform,
)

NAME = "throughput"
MASTER = "local[2]"
OFF_INTERVAL_MS = 1_000_000_000  # 11.6 days: never reached, only the final checkpoint happens
TIMEOUT_MS = 120_000
TARGET_OVERHEAD_1S = 0.97
TARGET_CPU_EFFICIENCY = 0.9

VARIANTS: dict[str, dict[str, Any]] = {
    "off": {"parallelism": 2, "interval_ms": OFF_INTERVAL_MS, "label": "checkpointing off (final only), p=2"},
    "1s": {"parallelism": 2, "interval_ms": 1000, "label": "interval 1 s, p=2"},
    "1s_no_history": {
        "parallelism": 2,
        "interval_ms": 1000,
        "history_size": 0,
        "label": "interval 1 s, p=2, no checkpoint history (history-size: 0)",
    },
    "100ms": {"parallelism": 2, "interval_ms": 100, "label": "interval 100 ms, p=2"},
    "p1_1s": {"parallelism": 1, "interval_ms": 1000, "label": "interval 1 s, p=1"},
    "pyarrow": {"label": "pyarrow loop, 1 process (limit)"},
    "pyarrow_like_sink": {
        "label": "pyarrow loop writing as the File sink does (16 MiB files, fsync, pages dropped), 1 process"
    },
    "pyarrow_p2": {"label": "pyarrow loop, 2 processes at once (half the rows each)"},
    "pyarrow_like_sink_p2": {"label": "pyarrow loop writing as the File sink does, 2 processes at once"},
}
#: the loops without Spark: variant -> (writes as the File sink does, processes at once)
PYARROW_LOOP_SHAPES: dict[str, tuple[bool, int]] = {
    "pyarrow": (False, 1),
    "pyarrow_like_sink": (True, 1),
    "pyarrow_p2": (False, 2),
    "pyarrow_like_sink_p2": (True, 2),
}
PYARROW_LOOPS = tuple(PYARROW_LOOP_SHAPES)


def _log(message: str) -> None:
    progress(NAME, message)


# ---- CPU time of this process and everything it started (the Spark JVM, Python workers) ----------
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def settle_page_cache() -> bool:
    """Write back every dirty page and, when allowed (root), drop the clean ones, so
    each measured run starts from the same page cache: a run that writes gigabytes
    into a full cache pays for reclaiming it in its own system time, and one after a
    big writer pays for that writer's write-back, which spread the CPU figures by up
    to 1.7x between repetitions. True when the cache was dropped."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
    except OSError:
        return False
    return True


def tree_cpu_seconds(roots: Iterable[int] = ()) -> dict[str, float]:
    """user+sys CPU seconds of this process ("driver": the engine's driver side runs here),
    the Spark JVMs ("jvm") and the Python workers ("workers"), plus their reaped children:
    everything below this process and below ``roots`` (a standalone cluster's master and
    worker, whose executors run the tasks).

    Less sensitive than wall time to other work on a shared machine: it is what the run
    cost, not how long it waited for a core."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    system: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                head, _, rest = f.read().rpartition(")")
            fields = rest.split()
        except OSError:
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        # utime, stime, cutime, cstime (fields 14-17): reaped children count in their parent
        times[pid] = sum(int(x) for x in fields[11:15]) / _TICK
        system[pid] = (int(fields[12]) + int(fields[14])) / _TICK
        if "(java" in head:
            times[-pid] = 1.0  # marker: a JVM
    root = os.getpid()
    tops = {root, *roots}
    out = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
    kernel = 0.0
    for pid, cpu in times.items():
        if pid < 0:
            continue
        p = pid
        while p > 1 and p not in tops:
            p = parents.get(p, 0)
        if p not in tops:
            continue
        kind = "driver" if pid == root else ("jvm" if -pid in times else "workers")
        out[kind] += cpu
        kernel += system[pid]
    out["total"] = sum(out.values())
    # of the total, the kernel's share (page faults, writes, fsync): on this VM the part
    # that swings with the host's memory state, so a wide spread can be told apart
    out["system"] = kernel
    return out


def _cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: round(after[k] - before[k], 3) for k in before}


# ---- one run of each kind ------------------------------------------------------------------
def run_engine(
    spark: Any,
    variant: str,
    rows: int,
    workdir: Path,
    tag: str,
    *,
    spec: dict[str, Any] | None = None,
    master: str = MASTER,
    cpu_roots: Iterable[int] = (),
) -> dict[str, Any]:
    """One job run of ``variant`` (or of ``spec``: parallelism, interval_ms) on ``spark``;
    CPU counted below this process and ``cpu_roots``."""
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.engine.runner import JobRun, RunRequest
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    spec = spec or VARIANTS[variant]
    run_dir = workdir / tag
    output = run_dir / "out"
    job = load_job(
        throughput_job(
            rows,
            str(output),
            parallelism=spec["parallelism"],
            interval_ms=spec["interval_ms"],
            timeout_ms=TIMEOUT_MS,
            name=f"bench-{tag}",
        )
    )
    config = load_config(
        {
            "checkpoint": {
                "history-size": spec.get("history_size", 1000),
                "storage": {
                    "type": "hdfs",
                    "max-retained": 3,
                    "plugin-config": {"storage.type": "local", "namespace": f"{run_dir}/ckpt/"},
                },
            }
        },
        job_env=job.env,
    )
    request = RunRequest(job=job, config=config, job_id=f"bench-{tag}", master=master)
    lines: list[tuple[float, str]] = []
    job_run = JobRun(request, progress=lambda line: lines.append((time.perf_counter(), line)))
    marks: dict[str, float] = {}
    original = job_run._run_spark_job

    def timed_spark_job(*args: Any) -> None:  # the engine's own method, with timestamps around it
        marks["spark_start"] = time.perf_counter()
        try:
            original(*args)
        finally:
            marks["spark_end"] = time.perf_counter()

    job_run._run_spark_job = timed_spark_job  # type: ignore[method-assign]
    gc.collect()
    cpu_before = tree_cpu_seconds(cpu_roots)
    started = time.perf_counter()
    outcome = job_run.run(spark)
    run_s = time.perf_counter() - started
    cpu = _cpu_delta(cpu_before, tree_cpu_seconds(cpu_roots))
    cpu_s = cpu["total"]
    if not outcome.finished:
        raise RuntimeError(f"{tag}: job failed: {outcome.error}\n" + "\n".join(line for _, line in lines[-5:]))
    # the Spark job's window; the whole run() if the engine's method was renamed
    spark_s = marks["spark_end"] - marks["spark_start"] if "spark_end" in marks else run_s
    # from the final checkpoint being durable (the driver's progress line) to the end of
    # the Spark job: the driver commits (publishes) the final epoch's output, then FinishJob
    final_done = [t for t, line in lines if "(final) completed" in line]
    commit_tail_s = round(marks["spark_end"] - final_done[-1], 3) if final_done and "spark_end" in marks else None
    output_files = parquet_ids_once(output, rows)
    periodic = [c for c in outcome.completed if c.kind == "checkpoint"]
    durations = [c.duration_ms for c in outcome.completed]
    result = {
        "rows": rows,
        "spark_job_s": round(spark_s, 4),
        "run_s": round(run_s, 4),
        "rows_per_s": round(rows / spark_s, 1),
        "cpu_s": round(cpu_s, 3),
        "cpu_s_by_process": cpu,
        "rows_per_cpu_s": round(rows / cpu_s, 1) if cpu_s > 0 else None,
        "checkpoints_completed": len(outcome.completed),
        "periodic_checkpoints": len(periodic),
        "checkpoint_duration_ms_median": sorted(durations)[len(durations) // 2] if durations else None,
        "checkpoint_duration_ms_max": max(durations) if durations else None,
        "final_checkpoint_ms": outcome.completed[-1].duration_ms if outcome.completed else None,
        "final_commit_tail_s": commit_tail_s,
        "output_files": output_files,
        # the checkpoint history's writer thread (history/recorder.py): its share of cpu_s
        # is what the history can cost at most, below the noise of a throughput ratio
        "history_cpu_s": round(job_run._history.cpu_s, 4) if job_run._history is not None else 0.0,
    }
    shutil.rmtree(run_dir, ignore_errors=True)
    return result


def profile_run(spark: Any, rows: int, workdir: Path) -> dict[str, Any]:
    """One more ``1s`` run, not among the measured ones, with py-spy sampling the Python
    workers: their CPU split by what the code is doing (bench/cpu_profile.py), next to
    the driver's and the JVM's CPU of the same run and the pyarrow loop's whole."""
    from bench.cpu_profile import CATEGORY_SOURCE, CATEGORY_TRANSFORM, breakdown, daemon_of, record

    daemon = daemon_of(os.getpid())
    if daemon is None:
        return {"error": "no PySpark daemon found below this process"}
    _log("profiled 1 s run (py-spy on the Python workers; not a measured run)")
    with record(daemon) as recorded:
        run = run_engine(spark, "1s", rows, workdir, "profile")
    limit = run_pyarrow(min(rows, 10_000_000), workdir, "profile-pyarrow")
    if "raw" not in recorded:
        return {"error": recorded.get("error", "py-spy wrote nothing"), "run": run}
    shares = breakdown(recorded["raw"])
    per_million = 1e6 / rows
    rows_out = [[name, f"{pct:.1f} %"] for name, pct in shares["percent"].items()]
    cpu = run["cpu_s_by_process"]
    totals = [
        ["the Python workers (all of the above)", f"{cpu['workers'] * per_million:.3f}"],
        ["the Spark JVM (scheduler, task plumbing, heartbeats)", f"{cpu['jvm'] * per_million:.3f}"],
        ["the driver process (the engine's coordinator, this benchmark)", f"{cpu['driver'] * per_million:.3f}"],
        [
            "the pyarrow loop, whole (generate, transform, parquet; one process, no fsync)",
            f"{limit['cpu_s'] * 1e6 / limit['rows']:.3f}",
        ],
    ]
    percent = shares["percent"]
    writing = percent.get("sink: writing the files (write, fsync, rename)", 0.0)
    encoding = percent.get("sink: parquet encoding", 0.0)
    engine = sum(v for k, v in percent.items() if k.startswith(("checkpoint", "control", "engine")))
    note = (
        f"Where the CPU goes (the tables 'Where the Python workers' time goes' and 'CPU by process'; one extra "
        f"profiled 1 s run with py-spy, {shares['samples']:,} samples): the File sink is {encoding + writing:.0f} % "
        f"of the workers' samples ({encoding:.0f} % parquet encoding, {writing:.0f} % writing the files with "
        f"write + fsync), the transform and the source {percent.get(CATEGORY_TRANSFORM, 0.0) + percent.get(CATEGORY_SOURCE, 0.0):.0f} %, "
        f"and the engine's own work (checkpoints, control channel, read loop) {engine:.1f} %. py-spy counts a "
        "thread that runs or sits in a system call other than a wait, so time blocked in write() and fsync() "
        "(dirty-page throttling, the disk) is in the writing share; the pyarrow loop it is compared with "
        "writes its file without fsync, so its kernel write-back is done later by the kernel's flusher "
        "threads and is not charged to it. What separates the two CPU figures is therefore in the File "
        "sink (its parquet encoding and its fsynced writes), not in the engine's bookkeeping."
    )
    return {
        "how": "py-spy record --subprocesses --nonblocking --rate 100 of the PySpark daemon and its forked "
        "workers for one extra 1 s run; each sample counted for the first category (in order) that a "
        "frame of its stack matches (bench/cpu_profile.py CATEGORIES)",
        "samples": shares["samples"],
        "percent": percent,
        "top_leaf_frames": shares["top_leaf_frames"],
        "run": run,
        "pyarrow": limit,
        "note": note,
        "tables": [
            {
                "title": "Where the Python workers' time goes (one extra profiled 1 s run, p=2)",
                "columns": ["part", "share of the workers' active samples"],
                "rows": rows_out,
            },
            {"title": "CPU by process in that run", "columns": ["process", "CPU s per million rows"], "rows": totals},
        ],
    }


def run_loop(variant: str, rows: int, workdir: Path, tag: str, loops: ParallelLoops) -> dict[str, Any]:
    """One run of a pyarrow loop variant (PYARROW_LOOP_SHAPES)."""
    like_sink, processes = PYARROW_LOOP_SHAPES[variant]
    if processes == 1:
        return run_pyarrow(rows, workdir, tag, like_sink)
    return loops.run(rows, workdir, tag, like_sink, processes)


def id_shares(rows: int, processes: int) -> list[tuple[int, int]]:
    """(first id, rows) of each of ``processes`` loops: every id once, the shares within one row."""
    counts = [rows // processes + (1 if i < rows % processes else 0) for i in range(processes)]
    return [(sum(counts[:i]), count) for i, count in enumerate(counts)]


class ParallelLoops:
    """Long-lived processes that run the pyarrow loop at once, each on its share of the
    ids: the limit run on the cores the way ours runs its subtasks, so that what sharing
    the machine costs is in the limit too. Like the engine's Python workers they live
    across runs and are warmed up with the rest, so no run pays imports or heap growth.
    Spawned, not forked: this process has a JVM and its threads. Each loop counts its own
    CPU from the moment all have started; the time is the slowest loop's. A failed run
    stops the pool (the next run starts a new one), so no answer is left in a pipe."""

    #: a loop that has not answered by then is stuck (a full-size run takes seconds)
    ANSWER_TIMEOUT_S = 600

    def __init__(self) -> None:
        self._loops: list[tuple[Any, Any]] = []  # (process, connection)
        # held while the loops live: a spawned process opens the barrier's semaphores by
        # name as it starts, and they are unlinked once the parent's object is collected
        self._ready: Any = None

    def run(self, rows: int, workdir: Path, tag: str, like_sink: bool, processes: int) -> dict[str, Any]:
        self._start(processes)
        try:
            for i, ((_, connection), (start, count)) in enumerate(zip(self._loops, id_shares(rows, processes))):
                connection.send((count, start, str(workdir), f"{tag}-{i}", like_sink))
            found = [self._answer(process, connection, tag) for process, connection in self._loops]
        except BaseException:
            self.close()
            raise
        errors = [answer["error"] for answer in found if "error" in answer]
        if errors:
            self.close()
            raise RuntimeError(f"{tag}: a pyarrow loop failed: {errors[0]}")
        by_process: dict[str, float] = {}
        for answer in found:
            for key, value in answer["cpu_s_by_process"].items():
                by_process[key] = round(by_process.get(key, 0.0) + value, 3)
        result = loop_result(
            rows,
            max(answer["run_s"] for answer in found),
            sum(answer["cpu_s"] for answer in found),
            by_process,
            sum(answer["output_bytes"] for answer in found),
            sum(answer["files"] for answer in found),
        )
        return {**result, "processes": processes, "ids": [answer["ids"] for answer in found]}

    def _answer(self, process: Any, connection: Any, tag: str) -> dict[str, Any]:
        from multiprocessing.connection import wait

        if not wait([connection, process.sentinel], timeout=self.ANSWER_TIMEOUT_S):
            raise RuntimeError(f"{tag}: a pyarrow loop gave no answer in {self.ANSWER_TIMEOUT_S} s")
        try:
            return connection.recv()  # its answer, or its pipe's end when it died
        except (EOFError, OSError):
            process.join(timeout=10)
            raise RuntimeError(f"{tag}: a pyarrow loop died (exit code {process.exitcode})") from None

    def _start(self, processes: int) -> None:
        if len(self._loops) == processes and all(process.is_alive() for process, _ in self._loops):
            return
        self.close()
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self._ready = context.Barrier(processes)
        for _ in range(processes):
            ours, theirs = context.Pipe()
            process = context.Process(target=_loop_process, args=(theirs, self._ready), daemon=True)
            process.start()
            theirs.close()
            self._loops.append((process, ours))

    def close(self) -> None:
        for _, connection in self._loops:
            connection.close()  # an idle loop's recv() ends: it exits
        deadline = time.monotonic() + 30
        for process, _ in self._loops:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(timeout=10)
        self._loops = []
        self._ready = None


def _loop_process(connection: Any, ready: Any) -> None:
    while True:
        try:
            rows, start, workdir, tag, like_sink = connection.recv()
        except (EOFError, OSError):
            return
        try:
            ready.wait(timeout=120)  # all loops start together
            answer = run_pyarrow(rows, Path(workdir), tag, like_sink, start=start)
            answer["ids"] = [start, start + rows]
        except Exception as err:  # reported to the parent, which raises it
            answer = {"error": f"{type(err).__name__}: {err}"}
        try:
            connection.send(answer)
        except (BrokenPipeError, OSError):
            return  # the parent is gone


def run_pyarrow(rows: int, workdir: Path, tag: str, like_sink: bool = False, start: int = 0) -> dict[str, Any]:
    """The limit: generate the same batches, apply the same transform, ParquetWriter to one
    file (``like_sink``: to a new file every DEFAULT_MAX_FILE_BYTES, each fsynced and its
    pages dropped, as the File sink writes on local disk). ``start``: the first id."""
    import pyarrow.parquet as pq

    from airflow_provider_seatunnel_ckpt.connectors.file.sink import DEFAULT_MAX_FILE_BYTES

    paths: list[Path] = []
    gc.collect()
    cpu_before = tree_cpu_seconds()
    started = time.perf_counter()
    writer = out_file = None

    def finish() -> None:
        writer.close()
        if out_file is not None:
            out_file.flush()
            os.fsync(out_file.fileno())
            os.posix_fadvise(out_file.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            out_file.close()

    for batch in sequence_batches(rows, PAYLOAD_BYTES, BATCH_SIZE, start=start):
        out = transform(batch)
        if writer is None:
            paths.append(workdir / f"{tag}-{len(paths)}.parquet")
            out_file = open(paths[-1], "xb") if like_sink else None
            writer = pq.ParquetWriter(out_file or str(paths[-1]), out.schema, compression="snappy")
        writer.write_batch(out)
        if like_sink and out_file.tell() >= DEFAULT_MAX_FILE_BYTES:
            finish()
            writer = None
    if writer is not None:
        finish()
    elapsed = time.perf_counter() - started
    cpu = _cpu_delta(cpu_before, tree_cpu_seconds())
    # the loop's own process: not the idle Spark JVM and Python workers (or loop processes)
    # that the benchmark process also has below it
    cpu_s = cpu["driver"]
    written = sum(pq.ParquetFile(str(path)).metadata.num_rows for path in paths)
    if written != rows:
        raise RuntimeError(f"pyarrow baseline wrote {written} rows, expected {rows}")
    size = sum(path.stat().st_size for path in paths)
    for path in paths:
        path.unlink()
    return loop_result(rows, elapsed, cpu_s, cpu, size, len(paths))


def loop_result(
    rows: int, elapsed: float, cpu_s: float, cpu_by_process: dict[str, float], output_bytes: int, files: int
) -> dict[str, Any]:
    """A pyarrow loop run's result, in the shape of an engine run's (no Spark job time)."""
    return {
        "rows": rows,
        "spark_job_s": None,
        "run_s": round(elapsed, 4),
        "rows_per_s": round(rows / elapsed, 1),
        "cpu_s": round(cpu_s, 3),
        "cpu_s_by_process": cpu_by_process,
        "rows_per_cpu_s": round(rows / cpu_s, 1) if cpu_s > 0 else None,
        "output_bytes": output_bytes,
        "files": files,
    }


def combine_rounds(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One repetition from its interleaved rounds: rows per second and per CPU-second from
    the totals, times and CPU as per-run means (so per-row figures read as for one run),
    the checkpoint counts as medians; the rounds themselves kept under ``rounds``."""
    n = len(runs)
    rows = runs[0]["rows"]
    elapsed = sum(r["rows"] / r["rows_per_s"] for r in runs)
    cpu_s = sum(r["cpu_s"] for r in runs)

    def mean(key: str) -> float | None:
        values = [r[key] for r in runs if r.get(key) is not None]
        return round(sum(values) / len(values), 4) if len(values) == n else None

    def median(key: str) -> Any:
        values = sorted(r[key] for r in runs if r.get(key) is not None)
        return values[len(values) // 2] if values else None

    combined = {
        "rows": rows,
        "spark_job_s": mean("spark_job_s"),
        "run_s": mean("run_s"),
        "rows_per_s": round(rows * n / elapsed, 1),
        "cpu_s": round(cpu_s / n, 3),
        "cpu_s_by_process": {
            k: round(sum(r["cpu_s_by_process"][k] for r in runs) / n, 3) for k in runs[0]["cpu_s_by_process"]
        },
        "rows_per_cpu_s": round(rows * n / cpu_s, 1) if cpu_s > 0 else None,
    }
    if any("history_cpu_s" in r for r in runs):
        combined["history_cpu_s"] = round(sum(r.get("history_cpu_s", 0.0) for r in runs) / n, 4)
    for key in (
        "checkpoints_completed",
        "periodic_checkpoints",
        "checkpoint_duration_ms_median",
        "checkpoint_duration_ms_max",
        "final_checkpoint_ms",
        "final_commit_tail_s",
    ):
        if any(key in r for r in runs):
            combined[key] = median(key)
    combined["rounds"] = runs
    return combined


# ---- the benchmark ------------------------------------------------------------------------
def paired(
    results: dict[str, list[dict[str, Any]]], numerator: str, denominator: str, field: str = "rows_per_s"
) -> list[float]:
    return [
        round(a[field] / b[field], 4)
        for a, b in zip(results[numerator], results[denominator])
        if a.get(field) and b.get(field)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run")
    parser.add_argument("--out", action="store_true", help="write bench/results/throughput.json and the plot")
    parser.add_argument("--repeat", type=int, help="repetitions per variant (default 5; quick: 5)")
    parser.add_argument(
        "--rows",
        type=int,
        help="rows per run (default 40,000,000: runs of several seconds, so a checkpoint interval of 1 s means several checkpoints; quick: 600,000)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="runs per variant in one repetition, interleaved with the other variants' (default 4: "
        "an even number, so every repetition is a whole ABBA and each variant's mean position "
        "in it is the same): a repetition's figures are totals over its rounds, so a few "
        "seconds of noise from the host weigh a quarter as much",
    )
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ",".join(VARIANTS)
    )
    parser.add_argument(
        "--name",
        default=NAME,
        help=f"results file bench/results/NAME.json with --out (default {NAME}: "
        "give a run of a few variants a name of its own, so it does not replace the full result)",
    )
    parser.add_argument(
        "--let-host-reclaim",
        dest="hold_memory",
        action="store_false",
        help="leave the VM's free page reporting as it is (by default freed pages are held in the guest "
        "while the benchmark runs: bench/common.py freed_memory_held)",
    )
    parser.add_argument(
        "--no-profile",
        dest="profile",
        action="store_false",
        help="skip the extra profiled 1 s run (py-spy on the Python workers: where the CPU goes)",
    )
    args = parser.parse_args(argv)

    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    rows = args.rows or (600_000 if args.quick else 40_000_000)
    repeat = args.repeat or 5
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {sorted(unknown)}")
    machine = machine_info()
    bench_started = time.perf_counter()

    make_importable_on_executors()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    workdir = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    spark = None
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    profile: dict[str, Any] | None = None
    host = contextlib.ExitStack()
    host_memory = host.enter_context(freed_memory_held(args.hold_memory))
    loops = ParallelLoops()
    try:
        engine_variants = [v for v in variants if v not in PYARROW_LOOPS]
        if engine_variants:
            from airflow_provider_seatunnel_ckpt.engine.run_state import RunRequest
            from airflow_provider_seatunnel_ckpt.engine.spark_start import build_spark

            _log(f"starting Spark ({MASTER})")
            t0 = time.perf_counter()
            warm = throughput_job(1000, str(workdir / "w"), parallelism=2)
            from airflow_provider_seatunnel_ckpt.config import load_config
            from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

            spark = build_spark(
                RunRequest(
                    job=load_job(warm),
                    config=load_config({}),
                    job_id="warm",
                    master=MASTER,
                    spark_conf={"spark.ui.enabled": "false"},
                )
            )
            spark_start_s = time.perf_counter() - t0
            _log(f"Spark up in {spark_start_s:.1f} s; warm-up runs (not measured)")
            # warm-up at full size: Python workers started and modules imported for both
            # parallelisms, and every process's heap and the page cache grown to what a run
            # uses (a first run that grows them paid up to 1.2x the CPU per row of the next)
            for v in dict.fromkeys(["off", *engine_variants]):
                if v in VARIANTS and v not in PYARROW_LOOPS:
                    run_engine(spark, v, rows, workdir, f"warmup-{v}")
        else:
            spark_start_s = None
        for v in PYARROW_LOOPS:
            if v in variants:
                run_loop(v, rows, workdir, f"warmup-{v}", loops)

        for rep in range(repeat):
            rounds: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
            for round_ in range(args.rounds):
                # ABBA over the whole sequence: every other round runs the variants backwards
                backwards = (rep * args.rounds + round_) % 2 == 1
                for v in list(reversed(variants)) if backwards else variants:
                    tag = f"{v}-r{rep}-{round_}"
                    settle_page_cache()
                    if v in PYARROW_LOOPS:
                        result = run_loop(v, rows, workdir, tag, loops)
                    else:
                        result = run_engine(spark, v, rows, workdir, tag)
                    rounds[v].append(result)
                    extra = (
                        ""
                        if v in PYARROW_LOOPS
                        else (
                            f", {result['checkpoints_completed']} checkpoints, median {result['checkpoint_duration_ms_median']} ms"
                        )
                    )
                    _log(
                        f"rep {rep + 1}/{repeat} round {round_ + 1}/{args.rounds} {v:8s}: "
                        f"{result['rows_per_s']:>12,.0f} rows/s ({result['spark_job_s'] or result['run_s']:.2f} s{extra})"
                    )
            for v, runs in rounds.items():
                results[v].append(combine_rounds(runs))
        if args.profile and spark is not None and "1s" in variants:
            profile = profile_run(spark, rows, workdir)
    finally:
        try:
            host.close()  # first: stopping a JVM that run_all's timeout is killing may raise or hang
        finally:
            loops.close()
            if spark is not None:
                spark.stop()
            shutil.rmtree(workdir, ignore_errors=True)

    # ---- figures --------------------------------------------------------------------------
    throughput = {v: summary([r["rows_per_s"] for r in rs], digits=0) for v, rs in results.items()}
    figures: dict[str, dict[str, Any]] = {}

    def figure(key: str, numerator: str, denominator: str) -> None:
        if numerator in results and denominator in results:
            per_rep = paired(results, numerator, denominator)
            figures[key] = {
                "numerator": numerator,
                "denominator": denominator,
                "paired": summary(per_rep),
                "per_rep": per_rep,
                "ratio_of_medians": ratio(throughput[numerator]["median"], throughput[denominator]["median"]),
            }

    figure("overhead_ratio_interval_1s", "1s", "off")
    figure("overhead_ratio_interval_100ms", "100ms", "off")
    figure("history_cost_ratio_interval_1s", "1s", "1s_no_history")  # issue #33: goal >= 0.99
    figure("ratio_vs_pyarrow_limit", "1s", "pyarrow")
    figure("ratio_off_vs_pyarrow_limit", "off", "pyarrow")
    figure("scaling_ratio_p2_vs_p1", "1s", "p1_1s")
    cpu_figures: dict[str, dict[str, Any]] = {}
    for key, num, den in (
        ("cpu_efficiency_ratio_interval_1s", "1s", "off"),
        ("cpu_efficiency_ratio_interval_100ms", "100ms", "off"),
        ("cpu_efficiency_ratio_vs_pyarrow_limit", "1s", "pyarrow"),
        ("cpu_efficiency_ratio_vs_pyarrow_like_sink", "1s", "pyarrow_like_sink"),
        # diagnostics: the gap to the limit, split into its parts
        ("cpu_efficiency_ratio_vs_pyarrow_p2", "1s", "pyarrow_p2"),
        ("cpu_efficiency_ratio_vs_pyarrow_like_sink_p2", "1s", "pyarrow_like_sink_p2"),
        ("cpu_efficiency_ratio_p1_vs_pyarrow_like_sink", "p1_1s", "pyarrow_like_sink"),
        ("cpu_efficiency_ratio_pyarrow_p2_vs_pyarrow", "pyarrow_p2", "pyarrow"),
        ("cpu_efficiency_ratio_pyarrow_like_sink_p2_vs_pyarrow_like_sink", "pyarrow_like_sink_p2", "pyarrow_like_sink"),
        ("cpu_efficiency_ratio_pyarrow_like_sink_vs_pyarrow", "pyarrow_like_sink", "pyarrow"),
    ):
        if num in results and den in results:
            per_rep = paired(results, num, den, "rows_per_cpu_s")
            if per_rep:
                cpu_figures[key] = {
                    "numerator": num,
                    "denominator": den,
                    "paired": summary(per_rep),
                    "per_rep": per_rep,
                }
    cpu_per_row = {v: summary([r["cpu_s"] * 1e6 / r["rows"] for r in rs], digits=3) for v, rs in results.items()}

    summary_out: dict[str, float] = {}
    for key, fig in figures.items():
        summary_out[key] = fig["paired"]["median"]
        summary_out[f"{key}_min"] = fig["paired"]["min"]
        summary_out[f"{key}_max"] = fig["paired"]["max"]
    for key, fig in cpu_figures.items():
        summary_out[key] = fig["paired"]["median"]
        summary_out[f"{key}_min"] = fig["paired"]["min"]
        summary_out[f"{key}_max"] = fig["paired"]["max"]
    for v, s in throughput.items():
        summary_out[f"throughput_rows_per_s_{v}"] = s["median"]
    if results.get("1s"):  # issue #33: the history's writer thread's share of the job's CPU
        shares = sorted(r.get("history_cpu_s", 0.0) / r["cpu_s"] for r in results["1s"] if r["cpu_s"])
        if shares:
            summary_out["history_cpu_share_interval_1s"] = round(shares[len(shares) // 2], 6)
            summary_out["history_cpu_share_interval_1s_max"] = round(shares[-1], 6)

    targets = []
    if "cpu_efficiency_ratio_vs_pyarrow_limit" in cpu_figures:  # issue #15
        value = cpu_figures["cpu_efficiency_ratio_vs_pyarrow_limit"]["paired"]["median"]
        targets.append(
            {
                "figure": "cpu_efficiency_ratio_vs_pyarrow_limit",
                "target": f">= {TARGET_CPU_EFFICIENCY}",
                "value": value,
                "met": bool(value >= TARGET_CPU_EFFICIENCY),
            }
        )
    if "overhead_ratio_interval_1s" in figures:
        value = figures["overhead_ratio_interval_1s"]["paired"]["median"]
        targets.append(
            {
                "figure": "overhead_ratio_interval_1s",
                "target": f">= {TARGET_OVERHEAD_1S}",
                "value": value,
                "met": bool(value >= TARGET_OVERHEAD_1S),
            }
        )

    table_rows = []
    base = throughput.get("off", {}).get("median")
    for v in variants:
        s = throughput[v]
        ckpts = [r.get("checkpoints_completed") for r in results[v] if r.get("checkpoints_completed") is not None]
        dur = [
            r["checkpoint_duration_ms_median"] for r in results[v] if r.get("checkpoint_duration_ms_median") is not None
        ]
        seconds = [r["spark_job_s"] if r["spark_job_s"] is not None else r["run_s"] for r in results[v]]
        table_rows.append(
            [
                VARIANTS[v]["label"],
                f"{s['median']:,.0f}",
                f"{s['min']:,.0f} - {s['max']:,.0f}",
                f"{sorted(seconds)[len(seconds) // 2]:.2f}",
                f"{ratio(s['median'], base):.3f}" if base else "",
                f"{sorted(ckpts)[len(ckpts) // 2]}" if ckpts else "-",
                f"{sorted(dur)[len(dur) // 2]}" if dur else "-",
                f"{cpu_per_row[v]['median']:.2f}",
                _median_text([r.get("final_commit_tail_s") for r in results[v]], "{:.2f}"),
            ]
        )
    figure_rows = [
        [
            key,
            f"{VARIANTS[f['numerator']]['label']} / {VARIANTS[f['denominator']]['label']}",
            f["paired"]["median"],
            f"{f['paired']['min']} - {f['paired']['max']}",
            f["ratio_of_medians"],
        ]
        for key, f in figures.items()
    ] + [
        [
            key,
            f"rows per CPU-second: {VARIANTS[f['numerator']]['label']} / {VARIANTS[f['denominator']]['label']}",
            f["paired"]["median"],
            f"{f['paired']['min']} - {f['paired']['max']}",
            "",
        ]
        for key, f in cpu_figures.items()
    ]

    total_s = round(time.perf_counter() - bench_started, 1)
    notes = _notes(figures, throughput, results, rows, machine)
    notes.append(_quiet_note(host_memory, args.rounds))
    medians = cpu_medians(results)  # unrounded, for the gap's factors
    gap = _gap_note(medians)
    if gap:
        notes.append(gap)
    plots = _plot(variants, results, throughput, figures, args.name) if args.out else []
    result = {
        "benchmark": "Engine throughput: checkpointing off vs every 1 s / 100 ms, vs a plain pyarrow loop, "
        "and 1 vs 2 subtasks (Sequence -> pyarrow.compute transform -> parquet File sink, local[2])",
        "description": (
            f"Each run pushes {rows:,} rows (an int64 id and a {PAYLOAD_BYTES}-byte payload) from the `Sequence` "
            f"source through the vectorised `{TRANSFORM_FUNCTION}` transform into the exactly-once parquet `File` "
            "sink, through the engine's Python API in one long-lived `local[2]` SparkSession. Throughput is rows "
            "divided by the Spark job's wall time (submit to the end of `collect()`, i.e. after the final checkpoint "
            "is committed); JVM start-up is excluded. The limit is the same batches, transform and parquet encoding "
            "in a single-threaded pyarrow loop without Spark. Variants are interleaved (ABBA); "
            f"{repeat} repetitions of {args.rounds} rounds each (a repetition's figures are totals over its rounds); "
            "each figure is the median of the per-repetition ratios, with min and max."
        ),
        "machine": {**machine, "host_memory": host_memory},
        "settings": {
            "rows": rows,
            "payload_bytes": PAYLOAD_BYTES,
            "batch_size": BATCH_SIZE,
            "repeat": repeat,
            "rounds_per_repetition": args.rounds,
            "master": MASTER,
            "transform": TRANSFORM_FUNCTION,
            "sink": "File parquet (snappy), local disk",
            "checkpoint_storage": "local disk (hdfs plugin, storage.type local), max-retained 3",
            "off_means": f"checkpoint.interval {OFF_INTERVAL_MS} ms: no periodic checkpoint; the final checkpoint "
            "(which commits the sink output) still runs",
            "checkpoint_timeout_ms": TIMEOUT_MS,
            "timed": "Spark job: from the engine's submission of the job to collect() returning (after the final "
            "checkpoint is committed); SparkSession start excluded; pyarrow: the whole loop incl. file close",
            "order": "ABBA: variant order reversed on every other round, after one unmeasured full-size warm-up run each",
            "page_cache": (
                "written back (sync) before every measured run, and dropped (vm.drop_caches = 1) when the "
                "benchmark may (root): " + ("dropped" if settle_page_cache() else "not dropped (no permission)")
            ),
            "quick": bool(args.quick),
            "spark_session_start_s": round(spark_start_s, 2) if spark_start_s is not None else None,
            "total_seconds": total_s,
        },
        "results": {
            "throughput_rows_per_s": throughput,
            "figures": figures,
            "cpu_figures": cpu_figures,
            "cpu_s_per_million_rows": cpu_per_row,
            "runs": results,
        },
        "summary": summary_out,
        "targets": targets,
        "table": {
            "columns": [
                "variant",
                "rows/s (median)",
                "rows/s (min - max)",
                "Spark job s (median)",
                "vs off (medians)",
                "checkpoints (median)",
                "checkpoint duration ms (median)",
                "CPU s per million rows (median)",
                "final commit tail s (median)",
            ],
            "rows": table_rows,
        },
        "figures_table": {
            "columns": ["figure", "ratio of", "median of paired ratios", "min - max", "ratio of medians"],
            "rows": figure_rows,
        },
        "plots": plots,
        "notes": notes,
    }
    gap_table = _gap_table(medians)
    result["extra_tables"] = ([gap_table] if gap_table else []) + [
        {
            "title": "What each change did to the CPU per row (measured when it landed)",
            "columns": CPU_HISTORY_COLUMNS,
            "rows": CPU_HISTORY,
        }
    ]
    if profile is not None:
        result["cpu_profile"] = profile
        if "tables" in profile:
            result["extra_tables"] += profile["tables"]
            result["notes"].append(profile["note"])
    emit(result, args.name, args.out)
    _log(f"done in {total_s:.0f} s")
    return 0


def _median_text(values: list[Any], fmt: str) -> str:
    values = sorted(v for v in values if v is not None)
    return fmt.format(values[len(values) // 2]) if values else "-"


def _quiet_note(host_memory: dict[str, Any], rounds: int) -> str:
    held = host_memory.get("held")
    how = (
        f"this run held freed pages in the guest ({held}, was {host_memory.get('free_page_reporting')}; "
        "restored afterwards)"
        if held
        else f"this run did NOT hold freed pages ({host_memory.get('note') or 'asked not to'}), so its CPU figures "
        "swing with the host"
    )
    return (
        "Quiet measurements (issue #15). The machine these figures were first taken on is a VM that hands every "
        "page its guest frees back to the host (free page reporting with min_free_ms 0; this machine's settings: "
        f"{host_memory.get('free_page_reporting') or 'none'}), and touching such a page again is a fault the host "
        "serves, charged to the guest as user or system time. With that VM as configured, identical runs' CPU "
        "per row swung by up to 1.3x, and the plain pyarrow loop paid 0.07-0.11 CPU-s per million rows of system time for its page "
        "cache (0.03 when freed pages are held). So the benchmark holds freed pages while it runs "
        "(bench/common.py freed_memory_held; --let-host-reclaim skips it), warms every variant up at full size "
        f"and makes each repetition of {rounds} interleaved rounds (ABBA over all rounds); {how}. What is left is "
        "the machine's own run-to-run noise: six back-to-back runs of the single-process pyarrow_like_sink loop "
        "with nothing else running spread 1.10 (0.110-0.122 CPU-s per million rows). A ratio of two such "
        "figures carries about 1.4 times one figure's noise. The plain pyarrow limit gained most from held pages, "
        "which is why cpu_efficiency_ratio_vs_pyarrow_limit is lower than in runs before 2026-11-27 (0.99 then, "
        "with the host reclaiming freed memory). What separates ours from that limit (measured 2026-11-27 with "
        "freed pages held): (1) durable output. The same loop writing as the sink must (pyarrow_like_sink: "
        "16 MiB files, fsynced, pages dropped) used 0.114-0.124 CPU-s per million rows against the plain "
        "loop's 0.098-0.114, about 16 % more, and the file size is not the cause (16, 64 and 128 MiB files "
        "cost the same within the noise). Part of that is where the cost is charged: the plain loop's "
        "write-back runs later in the kernel's flusher threads, outside its process tree; counted machine-wide "
        "(/proc/stat, with a final sync) the plain loop used 0.109-0.123 and the like-sink loop 0.119-0.123. "
        "(2) Two processes sharing the 2 cores, as ours runs its 2 subtasks (the pyarrow_p2 and "
        "pyarrow_like_sink_p2 loops, since 2026-11-27). (3) What the engine adds beyond both: ours / "
        "pyarrow_like_sink_p2, since the preloading daemon freezes its imports (gc.freeze; PySpark's workers "
        "run a full gc.collect() after every task); the Spark JVM (0.002-0.004 CPU-s per million rows) and "
        "the driver (0.0014-0.0015) are about 40 % of it. Located with perf stat -a over 3 runs of each "
        "(system-wide counts per 40M-row run, ours at 1 s against the 2-process like-sink loop): 859 fsyncs "
        "against 204 (a subtask fsyncs each output file and its staging directory, and the driver's publish "
        "fsyncs the source and target directories of each), 1,429 fadvise calls against 204 (write-back started "
        "every 8 MiB, pages dropped once durable), about 6,000 futex calls against 460 (GIL hand-offs with the "
        "sink's writer and control-channel threads; about 300 on each of 10 driver threads) and 18,600 page "
        "faults against 13,900, with fewer write calls (6,956 against 18,126: a 1 MiB buffer). No single hot "
        "spot: py-spy puts the engine's own Python (checkpoints, control channel, read loop, PySpark) under 1 % "
        "of the workers' samples. The next note puts this run's figures on the three factors."
    )


#: what each change did to CPU per row, as measured when it landed (issue #15's "before and after")
CPU_HISTORY_COLUMNS = ["commit", "change", "1 s variant, CPU s per million rows: before -> after"]
CPU_HISTORY = [
    [
        "a576262",
        "the File sink's commit is a rename on local disk (a server-side copy on S3), not a read and "
        "rewrite of every byte in the driver",
        "with 383f7d3: 'off' ~0.97M -> ~7M rows/s (CPU not recorded)",
    ],
    ["383f7d3", "full files are staged by a background writer; 16 MiB files by default", "(with a576262)"],
    ["230a4cb", "the sink encodes straight into its staging file, not a growing memory buffer", "0.29 -> 0.18"],
    ["7e203e3", "written files leave the page cache once fsynced", "0.18 -> 0.145"],
    [
        "f3ca8e7",
        "the preloading daemon freezes its imports (gc.freeze): a worker's gc.collect() after each task "
        "no longer walks them",
        "0.135-0.141 -> 0.130-0.136",
    ],
]


def cpu_medians(results: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """Each variant's median CPU-s per million rows, unrounded (ratios of rounded medians
    would carry the rounding)."""
    return {v: statistics.median(r["cpu_s"] * 1e6 / r["rows"] for r in runs) for v, runs in results.items() if runs}


def _gap_factors(cpu: dict[str, float]) -> dict[str, float] | None:
    """cpu_efficiency_ratio_vs_pyarrow_limit as a product of three factors, each a ratio of
    two variants' median CPU per row (``cpu_medians``): writing durably, two processes
    sharing the machine, and the engine."""
    if not all(v in cpu for v in ("pyarrow", "pyarrow_like_sink", "pyarrow_like_sink_p2", "1s")):
        return None
    return {
        "durable": cpu["pyarrow"] / cpu["pyarrow_like_sink"],
        "sharing": cpu["pyarrow_like_sink"] / cpu["pyarrow_like_sink_p2"],
        "engine": cpu["pyarrow_like_sink_p2"] / cpu["1s"],
    }


def _gap_table(cpu: dict[str, float]) -> dict[str, Any] | None:
    factors = _gap_factors(cpu)
    if factors is None:
        return None
    rows = [
        [
            "(1) writing durably, as an exactly-once sink must",
            f"pyarrow {cpu['pyarrow']:.4f} -> pyarrow_like_sink {cpu['pyarrow_like_sink']:.4f}",
            f"{factors['durable']:.3f}",
        ],
        [
            "(2) two processes at once on the 2 cores, as ours runs its 2 subtasks",
            f"pyarrow_like_sink {cpu['pyarrow_like_sink']:.4f} -> pyarrow_like_sink_p2 {cpu['pyarrow_like_sink_p2']:.4f}",
            f"{factors['sharing']:.3f}",
        ],
        [
            "(3) the engine: Spark's JVM, the driver, PySpark and our plumbing",
            f"pyarrow_like_sink_p2 {cpu['pyarrow_like_sink_p2']:.4f} -> ours (1 s, p=2) {cpu['1s']:.4f}",
            f"{factors['engine']:.3f}",
        ],
        [
            "all three: cpu_efficiency_ratio_vs_pyarrow_limit (as the ratio of medians)",
            f"pyarrow {cpu['pyarrow']:.4f} -> ours {cpu['1s']:.4f}",
            f"{factors['durable'] * factors['sharing'] * factors['engine']:.3f}",
        ],
    ]
    return {
        "title": "What separates ours from the pyarrow limit, in this run (ratios of medians; the paired "
        "per-repetition figures are in the table above)",
        "columns": ["factor", "CPU s per million rows (medians): without it -> with it", "factor (without / with)"],
        "rows": rows,
    }


def _gap_note(cpu: dict[str, float]) -> str | None:
    """What separates ours from the pyarrow limit in this run, in words (the table: _gap_table)."""
    factors = _gap_factors(cpu)
    if factors is None:
        return None
    durable, sharing, engine = factors["durable"], factors["sharing"], factors["engine"]
    plain_sharing = (
        (
            f"; the plain loop alike: {cpu['pyarrow_p2']:.3f} in 2 processes against {cpu['pyarrow']:.3f} "
            f"in one, x{cpu['pyarrow'] / cpu['pyarrow_p2']:.2f}"
        )
        if "pyarrow_p2" in cpu
        else ""
    )
    alone = (
        (
            f" With one subtask against the like-sink loop alone, one process each: {cpu['p1_1s']:.3f} against "
            f"{cpu['pyarrow_like_sink']:.3f}, x{cpu['pyarrow_like_sink'] / cpu['p1_1s']:.2f}."
        )
        if "p1_1s" in cpu
        else ""
    )
    return (
        "Where the gap to the pyarrow limit goes, in this run (CPU-s per million rows, medians; every x is a ratio "
        "of medians, so it can differ a little from the paired figures above; cpu_efficiency_ratio_vs_pyarrow_limit "
        "is the product of three factors, each measured side by side): "
        f"(1) writing durably: the loop writing as the sink must ({cpu['pyarrow_like_sink']:.3f}) against the plain "
        f"loop ({cpu['pyarrow']:.3f}), x{durable:.2f}; (2) two processes at once: ours runs 2 subtasks on the 2 "
        f"cores, the limit is one process; the like-sink loop in 2 processes at once, half the ids each, needs "
        f"{cpu['pyarrow_like_sink_p2']:.3f} against {cpu['pyarrow_like_sink']:.3f} alone, x{sharing:.2f}"
        f"{plain_sharing} (what the two share, caches, memory bandwidth or the host, is not measured separately); "
        f"(3) the engine: ours ({cpu['1s']:.3f}, Spark's JVM, the driver and both workers counted) against that "
        f"2-process like-sink loop, x{engine:.2f}. Product: {durable * sharing * engine:.3f}.{alone} Factors (1) "
        "and (2) are what any durable sink running 2 subtasks on this machine pays before doing anything else: an "
        f"engine that cost nothing would score {durable * sharing:.2f}. The figure's definition (a single-process "
        "loop that writes into the page cache) is kept as the issue states it; the quiet-measurements note says "
        "what factor (3) is made of."
    )


def _notes(
    figures: dict[str, Any], throughput: dict[str, Any], results: dict[str, Any], rows: int, machine: dict[str, Any]
) -> list[str]:
    notes = [
        "'Off' is not a real off switch (the engine has none): the interval is set to 10^9 ms so no periodic "
        "checkpoint is triggered, but every job still ends with its final checkpoint, which stages the sink "
        "output and commits it (2PC). So the ratios measure the cost of the *periodic* checkpoints.",
        "Throughput is measured over the Spark job only (inside one SparkSession created before all runs); "
        "the driver JVM start (the same for every variant) is excluded. Python workers are reused between runs "
        "(spark.python.worker.reuse), which is why each variant gets one unmeasured warm-up run first.",
        "The engine runs 2 subtasks on the 2 cores of local[2] (p=2) while the pyarrow limit is ONE thread in "
        "ONE process: ratio_vs_pyarrow_limit compares 2 cores of ours with 1 core of pyarrow; a ratio of 2.0 "
        "would be perfect scaling of the limit.",
        "The 2-core machine is shared (other engineers' jobs run at the same time): look at the min-max spreads "
        f"and machine.loadavg (start {machine.get('loadavg_at_start')}). Wall-time ratios then mostly measure "
        "who got the cores; the cpu_efficiency_* figures (rows per CPU-second of this process and every process "
        "it started: Spark JVM and Python workers, user+sys from /proc) are much steadier under contention and "
        "say what the checkpointing itself costs, though not what it costs in latency.",
    ]
    tails = {
        v: _median_text([r.get("final_commit_tail_s") for r in results.get(v, [])], "{:.2f}")
        for v in ("off", "1s", "100ms")
    }
    driver = {
        v: _median_text([(r.get("cpu_s_by_process") or {}).get("driver") for r in results.get(v, [])], "{:.2f}")
        for v in ("off", "1s", "pyarrow")
    }
    notes.append(
        "Where the time went, and what was fixed (profiled with py-spy on an earlier run of this benchmark): "
        "(1) publishing the File sink's output copied it: FileSystem.move had no native version on local disk, "
        "so the driver read every staged file back, rewrote it with fsync and deleted the source; it is now a "
        "rename on local disk and a server-side copy on S3 (commit a576262). (2) The File sink wrote and "
        "fsynced a full 128 MiB file on the processing thread; full files now go to a background writer (one "
        "in flight, backpressure) and the default max_file_bytes is 16 MiB (commit 383f7d3). Together they "
        "took the 'off' variant from ~0.97M to ~7M rows/s on this machine. (3) The File sink encoded each file "
        "into a growing in-memory buffer (pyarrow BufferOutputStream) and wrote it out when full; the buffer's "
        "page faults and the extra copy cost more system time than the encoding itself (in one process, 10M rows: "
        "2.6-3.3 CPU-s against 0.9-1.3 for a ParquetWriter on a path). It now encodes straight into its staging "
        "file (FileSystem.open_new, written as encoded on local disk): 1.1-1.3 CPU-s there, and in this "
        "benchmark 0.29 -> 0.18 CPU-s per million rows at 1 s (2026-11-27). (4) The written files stayed in "
        "the page cache after their fsync: a run's 4 GB of output grew the cache, and on this VM, which hands "
        "free memory back to its host (free page reporting), every new cache page is a fault on the host "
        "that shows up as system time (a pyarrow loop writing 40M rows: 4.6 s of system time, 1.5 s when "
        "each 16 MiB file's pages are dropped once fsynced). Local open_new files now drop their pages once "
        "durable (nothing in the job reads its output back): 0.18 -> 0.13-0.15 CPU-s per million rows at 1 s "
        "(2026-11-27). The plain pyarrow limit still writes into the cache; the pyarrow_like_sink loop "
        "writes as the sink does, so ours / it is what the engine costs beyond the writing. Measured now: the tail from the "
        f"final checkpoint being durable to the end of the Spark job is {tails['off']} s with checkpointing "
        f"off, {tails['1s']} s at 1 s and {tails['100ms']} s at 100 ms; the benchmark process, which hosts the "
        f"driver, used {driver['off']} / {driver['1s']} CPU-s per run (off / 1 s; the pyarrow loop itself "
        f"used {driver['pyarrow']} CPU-s)."
    )
    notes.append(
        "What remains on a subtask's processing thread is mostly parquet encoding (pyarrow ParquetWriter, "
        "70-77% of the thread in the earlier profile), the same work the pyarrow limit does; the transform and "
        "the source are ~5%. The barrier itself costs the processing thread a shallow snapshot of the split "
        "positions (sync_ms ~0 here)."
    )
    notes.append(
        "An overhead ratio above 1 means the periodic checkpoints cost less than the noise between runs, and "
        "that 'off' still does all of its last staging and committing at the end, serially, where periodic "
        "checkpoints overlap them with processing. Read the min-max spread before reading anything into a "
        "ratio a few percent away from 1. The pyarrow limit writes into the page cache without fsync and "
        "without two-phase commit."
    )
    if "1s" in results and results["1s"] and results["1s"][0].get("checkpoints_completed") is not None:
        ck = sorted(r["periodic_checkpoints"] for r in results["1s"])
        notes.append(
            f"With interval 1 s each run completed {ck[len(ck) // 2]} periodic checkpoints (median) before its final "
            "one; each checkpoint cuts a new parquet file per subtask (the sink stages its in-memory file at every "
            "barrier), so shorter intervals mean more, smaller files and more row groups."
        )
    if "1s" in results and "p1_1s" in results and results["1s"] and results["p1_1s"]:
        scale = figures.get("scaling_ratio_p2_vs_p1", {}).get("paired", {})
        cpu = {v: _median_text([r["cpu_s"] * 1e6 / r["rows"] for r in results[v]], "{:.2f}") for v in ("1s", "p1_1s")}
        notes.append(
            f"Scaling: 2 subtasks / 1 subtask = {scale.get('median')} ({scale.get('min')} - {scale.get('max')}). "
            "Perfect use of local[2] would be close to 2 minus the driver's share; what limits it here is the "
            f"machine: its load average was {machine.get('loadavg_at_start')} on 2 cores, so a second subtask "
            "mostly competes with other work for the same CPU time. The CPU cost per row hardly depends on the "
            f"parallelism ({cpu['p1_1s']} CPU-s per million rows with 1 subtask, {cpu['1s']} with 2), so the engine "
            "adds no per-subtask overhead worth measuring; run it on an idle machine for a meaningful wall-clock "
            "scaling figure."
        )
    for v, interval in (("1s", 1000), ("100ms", 100)):
        runs = [r for r in results.get(v, []) if r.get("periodic_checkpoints") is not None]
        if not runs or sorted(r["periodic_checkpoints"] for r in runs)[len(runs) // 2] == 0:
            continue
        effective = sorted(r["spark_job_s"] * 1000 / (r["periodic_checkpoints"] + 1) for r in runs)
        duration = sorted(
            r["checkpoint_duration_ms_median"] for r in runs if r["checkpoint_duration_ms_median"] is not None
        )
        notes.append(
            f"Interval {interval} ms: median checkpoint duration {duration[len(duration) // 2] if duration else '?'} ms, "
            f"effective time between checkpoints {effective[len(effective) // 2]:.0f} ms (job time / (periodic "
            "checkpoints + 1)). With max-concurrent 1 a checkpoint is not triggered while the previous one is in "
            "flight, so when staging an epoch's file takes longer than the interval, checkpoints come less often "
            "than configured."
        )
    return notes


def _plot(
    variants: list[str], results: dict[str, Any], throughput: dict[str, Any], figures: dict[str, Any], name: str = NAME
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    labels = [VARIANTS[v]["label"].replace(", ", "\n", 1) for v in variants]
    med = [throughput[v]["median"] / 1e6 for v in variants]
    low = [(throughput[v]["median"] - throughput[v]["min"]) / 1e6 for v in variants]
    high = [(throughput[v]["max"] - throughput[v]["median"]) / 1e6 for v in variants]
    colors = ["#7f7f7f" if v in PYARROW_LOOPS else "#1f77b4" for v in variants]
    left.bar(range(len(variants)), med, yerr=[low, high], capsize=5, color=colors)
    left.set_xticks(range(len(variants)), labels, fontsize=8)
    left.set_ylabel("million rows/s (median, min-max)")
    left.set_title("Throughput per variant")
    for i, m in enumerate(med):
        left.text(i + 0.08, m, f"{m:.2f}", ha="left", va="bottom", fontsize=8)

    keys = [
        k
        for k in (
            "overhead_ratio_interval_1s",
            "overhead_ratio_interval_100ms",
            "ratio_vs_pyarrow_limit",
            "scaling_ratio_p2_vs_p1",
        )
        if k in figures
    ]
    names = {
        "overhead_ratio_interval_1s": "1 s / off",
        "overhead_ratio_interval_100ms": "100 ms / off",
        "ratio_vs_pyarrow_limit": "ours (p=2, 1 s)\n/ pyarrow (1 core)",
        "scaling_ratio_p2_vs_p1": "p=2 / p=1",
    }
    vals = [figures[k]["paired"]["median"] for k in keys]
    lo = [figures[k]["paired"]["median"] - figures[k]["paired"]["min"] for k in keys]
    hi = [figures[k]["paired"]["max"] - figures[k]["paired"]["median"] for k in keys]
    right.bar(range(len(keys)), vals, yerr=[lo, hi], capsize=5, color="#2ca02c")
    right.axhline(1.0, color="black", linewidth=0.8)
    if "overhead_ratio_interval_1s" in keys:
        right.axhline(
            TARGET_OVERHEAD_1S, color="red", linestyle="--", linewidth=0.8, label=f"target 1 s: {TARGET_OVERHEAD_1S}"
        )
        right.legend(fontsize=8, loc="upper right")
    right.set_xticks(range(len(keys)), [names[k] for k in keys], fontsize=8)
    right.set_ylabel("ratio (median of paired ratios, min-max)")
    right.set_title("Ratios")
    for i, v in enumerate(vals):
        right.text(i + 0.08, v, f"{v:.3f}", ha="left", va="bottom", fontsize=8)
    return save_figure(fig, f"bench_{name}.png")


if __name__ == "__main__":
    sys.exit(main())
