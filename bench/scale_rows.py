"""Scale, the "rows" axis of issue #34: does a long job stay as fast at its end as at its start?

One real ``seatunnel-ckpt run`` driver (JVM start included, as a user runs it):
``Sequence`` (``--rows`` ids, int64 ``id`` only: the smallest row, so the output fits on
disk) -> ``File`` parquet sink (exactly-once, two-phase commit), parallelism 2 on
``local[2]``, a checkpoint every second to local disk, ``max-retained: 3``.

What is measured:

* **rows vs time**: every completed checkpoint's trigger time and the rows read up to its
  barrier (the job's checkpoint history, ``history.reader.read_history``: ``rows`` is the
  rows since the previous checkpoint, summed here), the final checkpoint included (all
  rows). The rows are cut into tenths and the time each tenth boundary was passed is
  interpolated on that curve; a tenth's rate = its rows / its seconds. The first tenth
  starts at the first checkpoint (the rows before it have no timestamp, and their time
  holds the Spark tasks' start-up, which is not what the axis asks about). The same
  figures from the driver's progress lines (arrival time - "completed in", "rows total")
  are kept as a cross-check.
* **per tenth**: checkpoints triggered in it, their duration p50 / p99; the peak RSS of
  the driver, its JVM and the PySpark workers, objects and bytes in checkpoint storage,
  and the cores busy with this job and with other processes (the machine is shared: a
  slow tenth may be a busy neighbour), all sampled every 0.25 s.
* **bounded**: checkpoints completed; objects in checkpoint storage, max and at the end
  (retention keeps 3 checkpoints; the fence log adds a reservation per checkpoint, which
  the driver prunes every ``fencing.PRUNE_EVERY``: neither may grow with the rows).
* **the tail**: the source's ``--splits`` (250) id ranges are dealt to the subtasks as
  they ask (engine/split_enumerator.py); one still ends before the other, by up to a
  split, and the job's last moments run on one subtask. ``tail.skew_s`` estimates how long (see
  ``tail_skew``), ``tail.last_vs_first_tenth_without_skew`` the ratio without it.
* **every id once**: the committed parquet files read one at a time (only ``id``), each
  id set in a bitmap of ``rows`` bits (62.5 MB at 500M): an id seen twice, outside
  ``0 .. rows-1`` or never seen fails the run.

Headline ``rows_500m_last_vs_first_tenth`` = rows/s of the last tenth / of the first
(goal >= 0.95). ``--repeat N`` runs the job N times: the headline is then the median
run's ratio (that run is kept in full, the others in brief under ``repeats``). ``--profile`` records the driver and the PySpark workers with py-spy (as
scale_bench.py does). Work files live under ``/tmp/scale_rows_*`` and are deleted at the end
(``--keep`` keeps them). Result: stdout and ``bench/results/scale_rows.json`` (``--no-out``:
neither the file nor the plot ``docs/img/scale_rows.png``).

``python bench/scale_rows.py [--rows 500000000] [--splits 250] [--quick] [--repeat N] [--parallelism 1] [--profile] [--keep] [--no-out]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._procs import VENV_BIN, Proc, kill_tree, spark_env
from bench.common import emit, machine_info, progress, save_figure, write_local_job
from bench.scale_bench import COMPLETED, Profiler

NAME = "scale_rows"
PARALLELISM = 2  #: the default; --parallelism 1 is the control run without a tail (one subtask)
#: Sequence splits of 2 million rows at 500 million: dealt on request (issue 51), a subtask
#: that ends its split early asks for the next, so the subtasks end within about one split
#: (~60 ms here) of each other; with one split each they ended 0.2-0.6 s apart
SPLITS = 250
MASTER = "local[2]"
INTERVAL_MS = 1000
MAX_RETAINED = 3
TENTHS = 10
GOAL_RATIO = 0.95
QUICK_ROWS = 20_000_000
#: "...; 140,000 rows total, 35,000 rows/s" in a progress line (engine/driver.py completion_line)
ROWS_TOTAL = r"; ([\d,]+) rows total"


def log(message: str) -> None:
    progress(NAME, message)


def percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


# ---- the job ------------------------------------------------------------------------------------
def write_job(work: Path, tag: str, rows: int, output: Path, parallelism: int, splits: int) -> tuple[Path, Path, Path]:
    """Job and seatunnel.yaml files; returns them and the checkpoint namespace."""
    namespace = work / "checkpoints"
    job = {
        "env": {
            "job.name": tag,
            "parallelism": parallelism,
            "checkpoint.interval": INTERVAL_MS,
            "checkpoint.timeout": 600_000,
        },
        # id only: 8 bytes a row; the splits are dealt to the subtasks as they ask
        "source": [{"plugin_name": "Sequence", "rows": rows, "splits": splits}],
        "sink": [{"plugin_name": "File", "path": f"file://{output}/", "format": "parquet"}],
    }
    # the whole history is kept (a 500M-row run makes a few hundred checkpoints at most)
    checkpoint = {
        "interval": INTERVAL_MS,
        "timeout": 600_000,
        "tolerable-failure": 3,
        "history-size": 100_000,
        "max-retained": MAX_RETAINED,
    }
    job_path, config_path = write_local_job(work, job, checkpoint, f"{namespace}/")
    return job_path, config_path, namespace


# ---- sampling during the run ------------------------------------------------------------------
def storage_size(root: Path) -> tuple[int, int]:
    """(objects, bytes) under the checkpoint namespace; files vanish while we walk (retention)."""
    objects = size = 0
    for directory, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                size += os.stat(os.path.join(directory, name)).st_size
                objects += 1
    return objects, size


class Sampler:
    """Every ``period`` s the RSS (KiB) of the driver, its JVM and its PySpark workers (sum),
    and the objects and bytes in checkpoint storage (a few dozen files: cheap to walk). Kept as time series so
    they can be cut by tenth afterwards."""

    def __init__(self, pid: int, namespace: Path, period: float = 0.25):
        self.pid, self.namespace, self.period = pid, namespace, period
        self.rss: list[tuple[float, int, int, int]] = []  # (wall, driver, jvm, workers)
        self.storage: list[tuple[float, int, int]] = []  # (wall, objects, bytes)
        #: (wall, busy CPU-s of the whole machine, CPU-s of the driver and its children):
        #: on a shared machine a slow tenth may be one where others took the cores
        self.cpu: list[tuple[float, float, float]] = []
        self._ours: dict[int, float] = {}  # last CPU-s seen per process (kept when one exits)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _rss(self) -> tuple[int, int, int]:
        driver = psutil.Process(self.pid)
        jvm = workers = 0
        self._ours[self.pid] = sum(driver.cpu_times()[:2])
        for child in driver.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                self._ours[child.pid] = sum(child.cpu_times()[:2])
                name, rss = child.name(), child.memory_info().rss // 1024
                if name == "java":
                    jvm += rss
                elif "python" in name or name.startswith("seatunnel"):
                    workers += rss
        return driver.memory_info().rss // 1024, jvm, workers

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            with contextlib.suppress(psutil.Error, OSError):
                self.rss.append((now, *self._rss()))
                times = psutil.cpu_times()
                busy = sum(times) - times.idle - getattr(times, "iowait", 0.0)
                self.cpu.append((now, busy, sum(self._ours.values())))
            self.storage.append((now, *storage_size(self.namespace)))
            self._stop.wait(self.period)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


# ---- after the run: the curve, the tenths ----------------------------------------------------------
def history_points(config_path: Path, job_id: str) -> tuple[list[dict[str, Any]], int]:
    """Completed checkpoints in id order: trigger time (s), cumulative rows, duration; and
    how many checkpoints did not complete."""
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.history.reader import read_history
    from airflow_provider_seatunnel_ckpt.storage.registry import create_storage

    history = read_history(create_storage(load_config(config_path)), job_id)
    completed = sorted((c for c in history.checkpoints if c.status == "completed"), key=lambda c: c.id)
    points, total, per_subtask = [], 0, {}
    for c in completed:
        total += c.rows  # rows since the previous checkpoint
        for sub in c.subtask_details:
            per_subtask[sub.subtask] = per_subtask.get(sub.subtask, 0) + sub.rows
        points.append(
            {
                "id": c.id,
                "kind": c.kind,
                "t": c.trigger_ms / 1000,
                "rows": total,
                "duration_ms": c.duration_ms,
                "state_bytes": c.state_bytes,
                "subtask_rows": dict(per_subtask),
            }
        )
    return points, len(history.checkpoints) - len(completed)


def tail_skew(points: list[dict[str, Any]], last_tenth: dict[str, Any]) -> dict[str, Any] | None:
    """How long one subtask ran alone at the end. The splits are equal id ranges, dealt on
    request; a subtask that started later or ran slower ends later, and the final
    checkpoint waits for the last one. Each subtask's end is projected from the rows it
    had left at the last periodic checkpoint and its rate over the interval before; while
    one of two subtasks idles the job runs at about half its rate, so the last tenth loses
    about skew / 2 (``last_tenth_rows_per_s_without_skew``)."""
    periodic = [p for p in points if p["kind"] == "checkpoint"]
    if len(periodic) < 2 or points[-1]["kind"] != "final" or not last_tenth.get("seconds"):
        return None
    before, last, final = periodic[-2], periodic[-1], points[-1]
    seconds = last["t"] - before["t"]
    ends = {}
    for sub, done in last["subtask_rows"].items():
        rate = (done - before["subtask_rows"].get(sub, 0)) / seconds
        left = final["subtask_rows"][sub] - done
        if left == 0:  # it ended before the last periodic checkpoint: at the latest then
            ends[sub] = last["t"]
        else:
            ends[sub] = last["t"] + left / rate if rate > 0 else None
    if None in ends.values():
        return None
    skew = max(ends.values()) - min(ends.values())
    corrected = last_tenth["rows"] / max(1e-3, last_tenth["seconds"] - skew / 2)
    return {
        "rows_left_at_last_checkpoint": {str(k): final["subtask_rows"][k] - v for k, v in last["subtask_rows"].items()},
        "projected_end_s_after_last_checkpoint": {str(k): round(v - last["t"], 3) for k, v in ends.items()},
        "skew_s": round(skew, 3),
        "last_tenth_rows_per_s_without_skew": round(corrected),
    }


def progress_points(proc: Proc) -> list[dict[str, Any]]:
    """The same curve from the driver's progress lines: trigger = arrival - "completed in"."""
    import re

    total = re.compile(ROWS_TOTAL)
    out = []
    for wall, m in proc.all(COMPLETED.pattern):
        rows = total.search(m.string)
        if rows:
            out.append(
                {"id": int(m.group(1)), "t": wall - int(m.group(3)) / 1000, "rows": int(rows.group(1).replace(",", ""))}
            )
    return out


def boundary_times(points: list[dict[str, Any]], rows: int) -> list[float | None]:
    """The time each tenth boundary (k * rows / 10) was passed, by linear interpolation on
    (time, cumulative rows); None before the first point (no timestamp there)."""
    ts = np.array([p["t"] for p in points], dtype=float)
    rs = np.array([p["rows"] for p in points], dtype=float)
    out: list[float | None] = []
    for k in range(TENTHS + 1):
        target = rows * k / TENTHS
        if not len(rs) or target < rs[0] or target > rs[-1]:
            out.append(None)
            continue
        # the first point at or past the target, and the one before it
        i = int(np.searchsorted(rs, target, side="left"))
        if rs[i] == target or i == 0:
            out.append(float(ts[i]))
        else:
            frac = (target - rs[i - 1]) / (rs[i] - rs[i - 1])
            out.append(float(ts[i - 1] + frac * (ts[i] - ts[i - 1])))
    return out


def tenth_rates(points: list[dict[str, Any]], rows: int) -> list[dict[str, Any]]:
    """Per tenth: the rows and seconds it is measured over and its rows/s. The first tenth
    starts at the first checkpoint when that one is inside it."""
    times = boundary_times(points, rows)
    tenths = []
    for k in range(TENTHS):
        lo_rows, hi_rows = rows * k / TENTHS, rows * (k + 1) / TENTHS
        lo_t, hi_t = times[k], times[k + 1]
        if lo_t is None and points and lo_rows < points[0]["rows"] < hi_rows:
            lo_rows, lo_t = points[0]["rows"], points[0]["t"]
        seconds = hi_t - lo_t if lo_t is not None and hi_t is not None else None
        tenths.append(
            {
                "tenth": k + 1,
                "start_t": lo_t,
                "end_t": hi_t,
                "rows": int(hi_rows - lo_rows),
                "seconds": round(seconds, 3) if seconds is not None else None,
                "rows_per_s": round((hi_rows - lo_rows) / seconds) if seconds else None,
            }
        )
    return tenths


def in_window(series: list[tuple], start: float | None, end: float | None) -> list[tuple]:
    if start is None or end is None:
        return []
    return [s for s in series if start <= s[0] < end]


def per_tenth(tenths: list[dict[str, Any]], points: list[dict[str, Any]], sampler: Sampler) -> None:
    """Add to each tenth (in place) its checkpoints' durations, the peak RSS and the storage
    objects seen while it ran."""
    for tenth in tenths:
        start, end = tenth["start_t"], tenth["end_t"]
        if tenth["tenth"] == TENTHS and end is not None:
            end += 1e-3  # the final checkpoint triggers at the last boundary: it belongs to the last tenth
        durations = [
            p["duration_ms"]
            for p in points
            if p["duration_ms"] is not None and start is not None and end is not None and start <= p["t"] < end
        ]
        rss = in_window(sampler.rss, start, end)
        storage = in_window(sampler.storage, start, end)
        tenth.update(
            {
                "checkpoints": len(durations),
                "checkpoint_ms_p50": percentile(durations, 50),
                "checkpoint_ms_p99": percentile(durations, 99),
                "driver_rss_mib_max": round(max(r[1] for r in rss) / 1024, 1) if rss else None,
                "jvm_rss_mib_max": round(max(r[2] for r in rss) / 1024, 1) if rss else None,
                "workers_rss_mib_max": round(max(r[3] for r in rss) / 1024, 1) if rss else None,
                "storage_objects_max": max(s[1] for s in storage) if storage else None,
                "storage_bytes_max": max(s[2] for s in storage) if storage else None,
                **cores_used(sampler.cpu, start, end),
            }
        )


def cores_used(cpu: list[tuple[float, float, float]], start: float | None, end: float | None) -> dict[str, Any]:
    """Cores busy with this job and with everything else between the samples closest to
    ``start`` and ``end`` (2 cores in all here)."""
    if start is None or end is None or len(cpu) < 2:
        return {"job_cores": None, "other_cores": None}
    walls = np.array([c[0] for c in cpu])
    i, j = int(np.abs(walls - start).argmin()), int(np.abs(walls - end).argmin())
    if j <= i:
        return {"job_cores": None, "other_cores": None}
    seconds = cpu[j][0] - cpu[i][0]
    busy, ours = cpu[j][1] - cpu[i][1], cpu[j][2] - cpu[i][2]
    return {"job_cores": round(ours / seconds, 2), "other_cores": round(max(0.0, busy - ours) / seconds, 2)}


def ratio_last_first(tenths: list[dict[str, Any]]) -> float | None:
    first, last = tenths[0]["rows_per_s"], tenths[-1]["rows_per_s"]
    return round(last / first, 3) if first and last else None


# ---- after the run: every id once -------------------------------------------------------------------
def count_ids(output: Path, rows: int) -> dict[str, Any]:
    """Every committed parquet file's ids into a bitmap of ``rows`` bits, one file at a time:
    sorting a file's ids finds its own duplicates and lets its bits be OR-ed per byte."""
    import pyarrow.parquet as pq

    bitmap = np.zeros((rows + 7) // 8, dtype=np.uint8)
    files = sorted(
        p
        for p in output.rglob("*.parquet")
        if not any(part.startswith(("_", ".")) for part in p.relative_to(output).parts)
    )
    rows_out = duplicated = unexpected = output_bytes = 0
    for path in files:
        output_bytes += path.stat().st_size
        ids = np.sort(pq.read_table(path, columns=["id"]).column("id").to_numpy())
        rows_out += len(ids)
        inside = (ids >= 0) & (ids < rows)
        unexpected += int(len(ids) - inside.sum())
        ids = ids[inside]
        repeated = np.diff(ids) == 0
        duplicated += int(repeated.sum())
        ids = ids[np.concatenate(([True], ~repeated))] if len(ids) else ids
        if not len(ids):
            continue
        byte = ids >> 3
        bits = (np.uint8(1) << (ids & 7).astype(np.uint8)).astype(np.uint8)
        starts = np.flatnonzero(np.diff(byte, prepend=-1))
        merged = np.bitwise_or.reduceat(bits, starts)
        where = byte[starts]
        # a bit already set: this id was in an earlier file too
        duplicated += int(np.bitwise_count(bitmap[where] & merged).sum())
        bitmap[where] |= merged
    seen = int(np.bitwise_count(bitmap).sum())
    return {
        "rows_in": rows,
        "rows_out": rows_out,
        "distinct_ids_out": seen,
        "lost": rows - seen,
        "duplicated": duplicated,
        "unexpected_ids": unexpected,
        "output_files": len(files),
        "output_bytes": output_bytes,
        "exactly_once": rows_out == rows == seen and not unexpected,
    }


# ---- one run ------------------------------------------------------------------------------------------
def run(work: Path, rows: int, parallelism: int, timeout_s: float, profile: bool, splits: int) -> dict[str, Any]:
    tag = f"scale-rows-{rows}"
    output = work / "output"
    job_path, config_path, namespace = write_job(work, tag, rows, output, parallelism, splits)
    command = [
        str(VENV_BIN / "seatunnel-ckpt"),
        "run",
        str(job_path),
        "--config",
        str(config_path),
        "--job-id",
        tag,
        "--master",
        MASTER,
    ]
    log(f"{rows:,} rows: starting the driver")
    proc = Proc(command, spark_env(), work / "logs" / f"{tag}.log")
    sampler = Sampler(proc.pid, namespace)
    profiler = Profiler(proc.pid, work / "pyspy.txt") if profile else None
    result: dict[str, Any] = {"rows": rows, "parallelism": parallelism, "splits": splits, "profiled": profile}
    code = None
    try:
        code = proc.wait(timeout_s)
    finally:
        ended = time.time()
        sampler.stop()
        if profiler is not None:
            result["profile"] = profiler.stop()
        if proc.poll() is None:
            kill_tree(proc.pid)
    result["exit_code"] = code
    result["wall_s"] = round(ended - proc.started_wall, 2)
    if code != 0:
        result["error_tail"] = proc.tail(30)
        log(f"driver exited {code}:\n{proc.tail(15)}")
    points, not_completed = history_points(config_path, tag)
    result["checkpoints"] = checkpoint_figures(points, not_completed)
    result["tenths"] = tenth_rates(points, rows)
    per_tenth(result["tenths"], points, sampler)
    result["last_vs_first_tenth"] = ratio_last_first(result["tenths"])
    result["tail"] = tail_skew(points, result["tenths"][-1])
    first = result["tenths"][0]["rows_per_s"]
    if result["tail"] and first:
        result["tail"]["last_vs_first_tenth_without_skew"] = round(
            result["tail"]["last_tenth_rows_per_s_without_skew"] / first, 3
        )
    cross = tenth_rates(progress_points(proc), rows)
    result["progress_lines_cross_check"] = {
        "rows_per_s": [t["rows_per_s"] for t in cross],
        "last_vs_first_tenth": ratio_last_first(cross),
    }
    result["storage"] = storage_figures(sampler)
    result["process"] = process_figures(sampler)
    start = points[0]["t"] if points else proc.started_wall
    result["rows_vs_time"] = [[round(p["t"] - proc.started_wall, 2), p["rows"]] for p in points]
    result["job_start_s"] = round(start - proc.started_wall, 2)
    log(
        f"driver exit {code}, wall {result['wall_s']} s, {result['checkpoints']['completed']} checkpoints; "
        f"counting the output"
    )
    started = time.perf_counter()
    result["output"] = count_ids(output, rows)
    result["output"]["count_s"] = round(time.perf_counter() - started, 1)
    log(f"output: {result['output']}")
    return result


def checkpoint_figures(points: list[dict[str, Any]], not_completed: int) -> dict[str, Any]:
    periodic = [p["duration_ms"] for p in points if p["kind"] == "checkpoint" and p["duration_ms"] is not None]
    return {
        "completed": len(points),
        "periodic": sum(1 for p in points if p["kind"] == "checkpoint"),
        "not_completed": not_completed,
        "duration_ms_p50": percentile(periodic, 50),
        "duration_ms_p99": percentile(periodic, 99),
        "duration_ms_max": max(periodic) if periodic else None,
        "state_bytes_max": max((p["state_bytes"] for p in points), default=None),
    }


def storage_figures(sampler: Sampler) -> dict[str, Any]:
    series = sampler.storage
    if not series:
        return {}
    t0 = series[0][0]
    step = max(1, len(series) // 60)
    return {
        "samples": len(series),
        "objects_max": max(s[1] for s in series),
        "objects_last": series[-1][1],
        "bytes_max": max(s[2] for s in series),
        "bytes_last": series[-1][2],
        "timeline": [[round(t - t0, 1), o, b] for t, o, b in series[::step]],
    }


def process_figures(sampler: Sampler) -> dict[str, Any]:
    rss = sampler.rss
    if not rss:
        return {}
    return {
        "samples": len(rss),
        "driver_rss_mib_max": round(max(r[1] for r in rss) / 1024, 1),
        "jvm_rss_mib_max": round(max(r[2] for r in rss) / 1024, 1),
        "workers_rss_mib_max": round(max(r[3] for r in rss) / 1024, 1),
    }


# ---- the result document ---------------------------------------------------------------------------
COLUMNS = [
    "tenth",
    "rows",
    "seconds",
    "rows/s",
    "checkpoints",
    "ckpt ms p50",
    "ckpt ms p99",
    "driver RSS MiB max",
    "JVM RSS MiB max",
    "workers RSS MiB max",
    "storage objects max",
    "storage bytes max",
    "job cores",
    "other processes' cores",
]


def table_of(tenths: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [
        "tenth",
        "rows",
        "seconds",
        "rows_per_s",
        "checkpoints",
        "checkpoint_ms_p50",
        "checkpoint_ms_p99",
        "driver_rss_mib_max",
        "jvm_rss_mib_max",
        "workers_rss_mib_max",
        "storage_objects_max",
        "storage_bytes_max",
        "job_cores",
        "other_cores",
    ]
    return {"columns": COLUMNS, "rows": [[t.get(k) for k in keys] for t in tenths]}


def headline_key(rows: int) -> str:
    """rows_500m_last_vs_first_tenth at 500M; another --rows gets its own key."""
    label = f"{rows // 1_000_000}m" if rows % 1_000_000 == 0 else str(rows)
    return f"rows_{label}_last_vs_first_tenth"


def summary_and_targets(r: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows, ratio = r["rows"], r.get("last_vs_first_tenth")
    ck, st, out = r["checkpoints"], r.get("storage", {}), r["output"]
    # checkpoint count bounded: about one per interval of the run, nothing more
    ckpt_bound = int(r["wall_s"] * 1000 / INTERVAL_MS) + 2
    # what bounds the objects: the retained checkpoints (a _metadata and at most a state file
    # per subtask each, one more while the next is written), the job's fixed files (job,
    # attempt, plan, heartbeat, history, a claim) and the fence log's reservations, one per
    # checkpoint, which the driver prunes every PRUNE_EVERY (engine/fencing.py)
    from airflow_provider_seatunnel_ckpt.engine.fencing import PRUNE_EVERY

    objects_bound = (MAX_RETAINED + 1) * (1 + r["parallelism"]) + 10 + PRUNE_EVERY
    summary = {
        headline_key(rows): ratio,
        "scale_rows_first_tenth_rows_per_s": r["tenths"][0]["rows_per_s"],
        "scale_rows_last_tenth_rows_per_s": r["tenths"][-1]["rows_per_s"],
        "scale_rows_last_vs_first_tenth_without_tail_skew": (r.get("tail") or {}).get(
            "last_vs_first_tenth_without_skew"
        ),
        "scale_rows_tail_skew_s": (r.get("tail") or {}).get("skew_s"),
        "scale_rows_checkpoints_completed": ck["completed"],
        "scale_rows_checkpoint_ms_p50": ck["duration_ms_p50"],
        "scale_rows_checkpoint_ms_p99": ck["duration_ms_p99"],
        "scale_rows_storage_objects_max": st.get("objects_max"),
        "scale_rows_storage_objects_last": st.get("objects_last"),
        "scale_rows_driver_rss_mib_max": r["process"].get("driver_rss_mib_max"),
        "scale_rows_output_files": out["output_files"],
        "scale_rows_wall_s": r["wall_s"],
    }
    targets = [
        {
            "figure": f"rows/s of the last tenth / of the first, {rows:,} rows Sequence -> File, 1 s checkpoints",
            "target": f">= {GOAL_RATIO}",
            "value": ratio,
            "met": ratio is not None and ratio >= GOAL_RATIO,
        },
        {
            "figure": "checkpoints completed (about one per interval of the run)",
            "target": f"<= {ckpt_bound}",
            "value": ck["completed"],
            "met": ck["completed"] <= ckpt_bound and ck["not_completed"] == 0,
        },
        {
            "figure": f"objects in checkpoint storage at most (max-retained {MAX_RETAINED}, fence log pruned "
            f"every {PRUNE_EVERY} reservations)",
            "target": f"<= {objects_bound}",
            "value": st.get("objects_max"),
            "met": st.get("objects_max") is not None and st["objects_max"] <= objects_bound,
        },
        {
            "figure": f"rows out = rows in ({rows:,} ids)",
            "target": "every id once",
            "value": out["rows_out"],
            "met": out["exactly_once"],
        },
    ]
    return summary, targets


def make_plot(r: dict[str, Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tenths = r["tenths"]
    x = [t["tenth"] for t in tenths]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    rates = [(t["rows_per_s"] or 0) / 1e6 for t in tenths]
    axes[0].bar(x, rates, color="tab:blue", label="rows/s")
    corrected = (r.get("tail") or {}).get("last_tenth_rows_per_s_without_skew")
    if corrected:  # the last tenth had the subtasks' end skew not cost half the job
        axes[0].bar(
            [x[-1]],
            [corrected / 1e6],
            fill=False,
            edgecolor="tab:green",
            hatch="//",
            label=f"last tenth without the tail skew ({r['tail']['skew_s']} s)",
        )
    if tenths[0]["rows_per_s"]:
        goal = GOAL_RATIO * tenths[0]["rows_per_s"] / 1e6
        axes[0].axhline(goal, color="tab:red", ls="--", label=f"goal: {GOAL_RATIO:g} x first tenth")
    axes[0].legend(loc="lower right")
    axes[0].set_title(f"throughput per tenth of the rows (last/first {r.get('last_vs_first_tenth')})")
    axes[0].set_ylabel("million rows/s")
    for key, label in (("checkpoint_ms_p50", "p50"), ("checkpoint_ms_p99", "p99")):
        # markers only: a tenth without a checkpoint (~1 s checkpoints, ~0.7 s tenths) has none
        axes[1].plot(x, [t[key] for t in tenths], "o", label=label)
    axes[1].set_title("checkpoint duration per tenth (ms)")
    axes[1].legend()
    for ax in axes:
        ax.set_xlabel("tenth of the rows")
        ax.set_xticks(x)
        ax.grid(True, lw=0.3)
    fig.suptitle(
        f"{r['rows']:,} rows, Sequence -> File parquet, parallelism {r['parallelism']}, "
        f"{INTERVAL_MS / 1000:g} s checkpoints"
    )
    return save_figure(fig, "scale_rows.png")


NOTES = [
    "Rows vs time: each completed checkpoint's trigger time (history) and the rows read up to its barrier; "
    "tenth boundaries interpolated linearly between checkpoints (about one a second).",
    "The first tenth is measured from the first completed checkpoint (its rows have no earlier timestamp; "
    "before it the Spark tasks start up); the last tenth ends at the final checkpoint's trigger.",
    "progress_lines_cross_check: the same tenths from the driver's progress lines (arrival - 'completed in').",
    "Storage objects: every file under the checkpoint namespace (checkpoints, history, plans, job files), "
    "walked every 0.5 s.",
    "One run on a shared 2-core machine: compare machine.loadavg_*; a tenth lasts a few seconds, so one "
    "neighbour's burst moves a tenth's rate.",
]


def document(r: dict[str, Any], machine: dict[str, Any], plots: bool) -> dict[str, Any]:
    summary, targets = summary_and_targets(r)
    return {
        "benchmark": NAME,
        "description": f"{r['rows']:,} rows, Sequence (int64 id) -> File parquet sink (exactly-once), "
        f"parallelism {r['parallelism']} on {MASTER}, checkpoints every {INTERVAL_MS} ms "
        f"on local disk (max-retained {MAX_RETAINED}), one seatunnel-ckpt run",
        "machine": machine,
        "settings": {
            "rows": r["rows"],
            "parallelism": r["parallelism"],
            "splits": r.get("splits"),
            "interval_ms": INTERVAL_MS,
            "max_retained": MAX_RETAINED,
            "profile": r["profiled"],
        },
        "results": r,
        "table": table_of(r["tenths"]),
        "summary": summary,
        "targets": targets,
        "plots": make_plot(r) if plots else [],
        "notes": NOTES,
    }


def repeat_figures(run: dict[str, Any]) -> dict[str, Any]:
    """What one of several runs says, in brief (the run with the median ratio is kept in full)."""
    tenths = run["tenths"]
    return {
        "last_vs_first_tenth": run.get("last_vs_first_tenth"),
        "rows_per_s": [t["rows_per_s"] for t in tenths],
        "other_cores": [t.get("other_cores") for t in tenths],
        "checkpoints": run["checkpoints"]["completed"],
        "storage_objects_max": run["storage"].get("objects_max"),
        "tail": run.get("tail"),
        "wall_s": run["wall_s"],
        "exactly_once": run["output"]["exactly_once"],
    }


def one_run(rows: int, args: argparse.Namespace) -> dict[str, Any]:
    """One job in a work directory of its own, deleted after (its output is GBs)."""
    work = Path(tempfile.mkdtemp(prefix="scale_rows_", dir="/tmp"))
    free = shutil.disk_usage(work).free
    log(f"work directory {work}, {free / 1e9:.1f} GB free (the output needs about {rows * 9 / 1e9:.1f} GB)")
    try:
        if rows * 9 > free * 0.8:  # ~6 B a row of parquet; leave the neighbours room
            raise SystemExit(f"not enough free disk under /tmp for {rows:,} rows")
        return run(work, rows, args.parallelism, args.timeout, args.profile, args.splits)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"kept {work}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=lambda s: int(s.replace("_", "")), default=500_000_000)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_ROWS:,} rows")
    parser.add_argument(
        "--parallelism",
        type=int,
        default=PARALLELISM,
        help="subtasks (default 2); 1: the control run, no subtask ends before another",
    )
    parser.add_argument(
        "--splits",
        type=int,
        default=SPLITS,
        help=f"the Sequence source's splits (default {SPLITS}), dealt to the subtasks on request",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs; the headline is the median ratio, the median run is kept in full"
    )
    parser.add_argument("--out", action="store_true", help="write the result file (the default)")
    parser.add_argument("--no-out", action="store_true", help="write neither the result file nor the plot")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds the job may take (then killed)")
    parser.add_argument("--profile", action="store_true", help="py-spy the driver and the PySpark workers")
    parser.add_argument("--keep", action="store_true", help="keep the output, checkpoints and logs")
    args = parser.parse_args()
    rows = QUICK_ROWS if args.quick else args.rows
    machine = machine_info()
    runs = [one_run(rows, args) for _ in range(max(1, args.repeat))]
    # the run with the median ratio (None counts as 0) stands for all of them
    ordered = sorted(runs, key=lambda r: r.get("last_vs_first_tenth") or 0.0)
    result = ordered[(len(ordered) - 1) // 2]
    # the result file and the plot are the configuration; a control run is printed only
    write = not args.no_out and args.parallelism == PARALLELISM
    doc = document(result, machine, plots=write)
    if len(runs) > 1:
        ratios = [r.get("last_vs_first_tenth") for r in runs]
        doc["repeats"] = [repeat_figures(r) for r in runs]
        doc["summary"][f"{headline_key(rows)}_runs"] = ratios
        doc["settings"]["repeat"] = len(runs)
    emit(doc, NAME, write)
    return 0 if all(r["exit_code"] == 0 and r["output"]["exactly_once"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
