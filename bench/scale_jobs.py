"""Scale, "jobs at once" (issue #34): 1, 2, 4, 8 checkpointed jobs submitted at once by one
Airflow deployment on the same checkpoint storage.

The deployment is the deployment suite's (tests/deployment/deployment.py): a throw-away
PostgreSQL as the metadata database, then the API server, the scheduler with
LocalExecutor, the DAG processor and the triggerer, each an ``airflow`` process on
loopback; the bench drives it only over the REST API. It is started once, with LocalExecutor
parallelism and ``max_active_tasks`` above the largest N. Its DAGs folder holds
bench/dags/scale_jobs_dag.py: DAG ``scale_jobs_<N>`` has N tasks, each a
``CheckpointedSparkSubmitOperator`` submitting one job (``Sequence`` -> ``Sql`` transform
hashing every id (the job's per-row work, see QUERY) -> ``File`` parquet sink, parallelism 2
on ``local[2]``, a checkpoint every 1 s) with its own output directory and
its own default job id, every job checkpointing into the SAME local storage namespace.
One DAG run per N, in order (N=1 first: the solo figures every ratio divides by).

Per job:

* **rows**: every id of its output counted (``read_output`` + ``tally`` of
  tests/support/workspace.py): lost, duplicated, unexpected;
* **Spark job window**: from its attempt record in checkpoint storage (``attempts/``):
  ``start_ms`` (the driver claims the job, after spark-submit's JVM and the Python driver
  have started, before the SparkContext) to ``end_ms`` (the final checkpoint committed
  and the outcome recorded); the **task window** (Airflow's task instance start -> end,
  i.e. the Airflow task process, spark-submit's JVM start and the result read) is
  reported beside it;
* **checkpoints**: the job's history (``history.reader.read_history``): every completed
  checkpoint's duration (trigger -> durable), p50 / p99 (nearest rank) / max, failed or
  aborted ones, ids contiguous, all of attempt 1, rows summed = rows of the job;
* **processes** (psutil, every second): the job's spark-submit tree (JVM, Python
  driver, PySpark workers): when it started, its CPU seconds (before the claim; before
  its first checkpoint was triggered = start-up; after = running), by role, peak RSS and
  its listening TCP ports.

Per N: total throughput = total rows / (last job end - first job start), for both
windows, as a ratio to the solo job's rows/s; each job's checkpoint p99 / the solo p99
(max over jobs); all finished; every id once per job; collisions: job ids, output
directories and output file tags distinct, the storage's job list = the jobs run,
listening ports disjoint; where the CPU went (jobs' start-up, jobs running, Airflow's
processes, PostgreSQL, the rest of the machine, iowait), and rows per CPU second of ours
against the solo run's (a figure other people's load on the machine does not move).

Before the deployment starts, a control (``bare_data_path.py``): the same per-row work
without the engine, in P plain processes and in N x P at once. Its throughput ratio is
what the machine itself loses with that many busy processes on its cores; the jobs'
ratio is reported against it too (``--bare-path-rounds 0``: no control).

With ``--fixed-too`` the same deployment then runs every N again with fixed batches
(``env.batch_time_ms: 0``, the engine before batches were sized by time), tagged
``fixed_n<N>``, each against the fixed solo run: before and after side by side, at one load.

``python bench/scale_jobs.py [--jobs 1,2,4,8] [--rows N] [--quick] [--solo-again] [--fixed-too] [--bare-path-rounds R] [--no-out]``
(``--report-only`` rebuilds the table, summary and plot of the saved result)
(results: bench/results/scale_jobs.json and docs/img/scale_jobs.png)
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bare_data_path
from bench.common import REPO_ROOT, emit, machine_info, percentiles, progress, save_figure

NAME = "scale_jobs"
DAG_FILE = REPO_ROOT / "bench" / "dags" / "scale_jobs_dag.py"
DEFAULT_JOBS = "1,2,4,8"
QUICK_JOBS = "1,2"
#: the job's per-row work: a Sql transform (DuckDB) that hashes every id and keeps every row.
#: Without it the engine moves Sequence -> File at ~20-30 M rows/s: a 30-60 s job would
#: write ~1-2 billion rows, ~6-10 GB of parquet per job, 80 GB for 8 jobs. With it a job does
#: ~4-6 M rows/s alone, so 100 M rows (~570 MB of output) keep a solo job's task ~30 s busy,
#: and the output of 8 jobs stays under 5 GB (each N's output is deleted once counted).
#: ``--query ''`` runs Sequence -> File alone.
QUERY = "select id from source where sha256(cast(id as varchar)) <> ''"
DEFAULT_ROWS = 100_000_000
QUICK_ROWS = 3_000_000
BATCH_SIZE = 65_536  #: the engine's default
PARALLELISM = 2
GOAL_THROUGHPUT_RATIO = 0.9
GOAL_P99_RATIO = 3.0
#: the bare data path control (bare_data_path.py): seconds of each run, rounds
BARE_PATH_SECONDS = 12.0
BARE_PATH_ROUNDS = 3
#: ``part-<job tag>-<subtask>-<attempt>-<checkpoint id>-<n>.parquet`` (the File sink's names)
PART = re.compile(r"part-([0-9a-f]{8})-\d{5,}-\d+-\d{10,}-\d+\.parquet$")


def log(message: str) -> None:
    progress(NAME, message)


def _ms(iso: str | None) -> int | None:
    """An Airflow REST timestamp as epoch milliseconds."""
    return int(dt.datetime.fromisoformat(iso).timestamp() * 1000) if iso else None


# ---- process sampling ----------------------------------------------------------------------------
class JobProcesses:
    """What the sampler saw of one job's spark-submit tree."""

    def __init__(self) -> None:
        self.first_seen_ms: int | None = None  #: the tree's oldest process's start (the JVM's)
        self.cpu: dict[int, float] = {}  #: pid -> last CPU seconds seen
        self.roles: dict[int, str] = {}
        self.timeline: list[tuple[int, float]] = []  #: (epoch ms, tree CPU seconds so far)
        self.peak_rss_mib = 0.0
        self.ports: set[int] = set()

    def cpu_at(self, when_ms: int) -> float | None:
        """Tree CPU seconds at ``when_ms``, interpolated between samples."""
        before = [(t, c) for t, c in self.timeline if t <= when_ms]
        after = [(t, c) for t, c in self.timeline if t >= when_ms]
        if not before or not after:
            return None
        (t0, c0), (t1, c1) = before[-1], after[0]
        return c0 if t1 == t0 else c0 + (c1 - c0) * (when_ms - t0) / (t1 - t0)


def _job_id_of(cmdline: list[str]) -> str | None:
    if "--job-id" in cmdline:
        index = cmdline.index("--job-id")
        if index + 1 < len(cmdline) and cmdline[index + 1].startswith("scale_jobs_"):
            return cmdline[index + 1]
    return None


def _role(name: str, cmdline: list[str]) -> str:
    """A process of a job's tree by what it runs now (spark-submit's bash script execs the
    JVM under the same pid, so a pid's role is taken afresh at every sample)."""
    if name == "java":
        return "jvm"
    if "python" in name:
        return "python_driver" if "spark_app.py" in " ".join(cmdline) else "pyspark_worker"
    return "launcher"


class Sampler:
    """Every ``period`` s, every process of the machine: its CPU seconds, attributed to a
    job (its spark-submit tree, found by ``--job-id`` on a command line), an Airflow
    component's tree (the scheduler's holds LocalExecutor's workers and the task
    processes), PostgreSQL, this bench, or the rest of the machine (other people's work);
    every third sample the listening ports of the jobs' JVMs and Python drivers. A
    process's CPU is its last figure seen (one that ends loses at most one period), less
    its figure at the first sample when it was already running then."""

    def __init__(self, groups: dict[str, int], period: float = 1.0):
        self.groups = groups  #: name -> root pid (airflow components, postgres)
        self.period = period
        self.jobs: dict[str, JobProcesses] = {}
        #: (pid, start time) -> [label, CPU s at the first sample or 0, last CPU s seen]
        self.cpu: dict[tuple[int, float], list[Any]] = {}
        self.samples = 0
        self._cpu_start = psutil.cpu_times()
        self._cpu_end: Any = None
        self.started_ms = int(time.time() * 1000)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a sample may race with exiting processes
                self._sample()
            self._stop.wait(self.period)

    def _sample(self) -> None:
        now_ms = int(time.time() * 1000)
        table = {p.pid: p for p in psutil.process_iter(["ppid", "name", "cmdline", "create_time", "cpu_times"])}
        children: dict[int, list[int]] = {}
        for pid, process in table.items():
            children.setdefault(process.info["ppid"], []).append(pid)

        def tree(root: int) -> list[int]:
            found, todo = [], [root]
            while todo:
                pid = todo.pop()
                found.append(pid)
                todo.extend(children.get(pid, []))
            return found

        # one system-wide socket listing per port sample (cheaper than one per process)
        listening: dict[int, set[int]] = {}
        if self.samples % 3 == 0:
            for conn in psutil.net_connections("inet"):
                if conn.status == psutil.CONN_LISTEN and conn.pid:
                    listening.setdefault(conn.pid, set()).add(conn.laddr.port)
        labels: dict[int, str] = {}
        for name, root in self.groups.items():
            labels.update((pid, name) for pid in tree(root))
        labels[os.getpid()] = "bench process"
        for pid, process in table.items():
            job_id = _job_id_of(process.info["cmdline"] or [])
            parent = table.get(process.info["ppid"])
            if job_id and not (parent and _job_id_of(parent.info["cmdline"] or []) == job_id):
                pids = tree(pid)
                labels.update((p, f"job {job_id}") for p in pids)
                self._sample_job(self.jobs.setdefault(job_id, JobProcesses()), pids, table, now_ms, listening)
        for pid, process in table.items():
            times = process.info["cpu_times"]
            if times is None:
                continue
            cpu = times.user + times.system
            key = (pid, process.info["create_time"])
            label = labels.get(pid) or f"other: {process.info['name']}"
            entry = self.cpu.setdefault(key, [label, cpu if self.samples == 0 else 0.0, cpu])
            entry[0], entry[2] = label, cpu
        self.samples += 1

    def _sample_job(
        self, job: JobProcesses, pids: list[int], table: dict[int, Any], now_ms: int, listening: dict[int, set[int]]
    ) -> None:
        rss = 0
        for pid in pids:
            process = table.get(pid)
            if process is None or process.info["cpu_times"] is None:
                continue
            with contextlib.suppress(psutil.Error):
                times = process.info["cpu_times"]
                job.cpu[pid] = times.user + times.system
                job.roles[pid] = _role(process.info["name"], process.info["cmdline"] or [])
                rss += process.memory_info().rss
                started = int(process.info["create_time"] * 1000)
                job.first_seen_ms = started if job.first_seen_ms is None else min(job.first_seen_ms, started)
                job.ports.update(listening.get(pid, ()))
        job.timeline.append((now_ms, sum(job.cpu.values())))  # exited processes keep their last figure
        job.peak_rss_mib = max(job.peak_rss_mib, rss / 2**20)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._cpu_end = psutil.cpu_times()
        self.stopped_ms = int(time.time() * 1000)

    def machine_cpu(self) -> dict[str, float]:
        """CPU seconds of the whole machine between start and stop: busy, idle, iowait."""
        a, b = self._cpu_start, self._cpu_end
        total = sum(b) - sum(a)
        idle = b.idle - a.idle
        iowait = getattr(b, "iowait", 0.0) - getattr(a, "iowait", 0.0)
        return {
            "total_s": round(total, 1),
            "busy_s": round(total - idle - iowait, 1),
            "idle_s": round(idle, 1),
            "iowait_s": round(iowait, 1),
        }

    def cpu_by_label(self) -> dict[str, float]:
        """CPU seconds used while sampling, per label, largest first."""
        totals: dict[str, float] = {}
        for label, first, last in self.cpu.values():
            totals[label] = totals.get(label, 0.0) + last - first
        return {k: round(v, 1) for k, v in sorted(totals.items(), key=lambda kv: -kv[1]) if v >= 0.05}


# ---- the deployment --------------------------------------------------------------------------------
class Deployment:
    """PostgreSQL and the Airflow deployment of tests/deployment, with this bench's DAG."""

    def __init__(self, work: Path, counts: list[int], parallelism: int):
        from tests.deployment.deployment import AirflowDeployment
        from tests.servers.postgres import PostgresServer

        self.postgres = PostgresServer()
        self.work = work
        home = work / "airflow"
        dags = home / "dags"
        dags.mkdir(parents=True)
        shutil.copy(DAG_FILE, dags / DAG_FILE.name)
        self.postgres.start()
        database = self.postgres.create_database("airflow_metadata")
        slots = max(16, 2 * max(counts))
        self.airflow = AirflowDeployment(
            home,
            self.postgres.uri(database),
            dags,
            env={
                "SEATUNNEL_CKPT_CACHE_DIR": str(home / "cache"),
                "SCALE_JOBS_COUNTS": ",".join(map(str, counts)),
                # LocalExecutor's worker processes, and tasks of one DAG at once: above the largest N
                "AIRFLOW__CORE__PARALLELISM": str(slots),
                "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": str(slots),
            },
        )
        self.spark_parallelism = parallelism

    def start(self) -> None:
        from tests.deployment.rest import ensure_connection

        started = time.perf_counter()
        self.airflow.start()
        ensure_connection(
            self.airflow,
            {"connection_id": "spark_default", "conn_type": "spark", "host": f"local[{self.spark_parallelism}]"},
        )
        log(f"deployment healthy in {time.perf_counter() - started:.0f} s at {self.airflow.base_url}")

    def groups(self) -> dict[str, int]:
        """Root pids of the processes whose CPU the sampler attributes: each Airflow
        component (the scheduler's tree holds LocalExecutor's workers and the task
        processes) and the PostgreSQL postmaster."""
        roots = {f"airflow {name}": process.pid for name, process in self.airflow.processes.items()}
        with contextlib.suppress(OSError, ValueError):
            roots["postgres"] = int((self.postgres.data_dir / "postmaster.pid").read_text().split()[0])
        return roots

    def stop(self) -> None:
        try:
            self.airflow.stop()
        finally:
            self.postgres.stop()


def storage_of(work: Path) -> Any:
    from airflow_provider_seatunnel_ckpt.storage import get_factory

    return get_factory("hdfs").create({"storage.type": "local", "namespace": f"{work}/checkpoints/"})


# ---- one N -------------------------------------------------------------------------------------------
def run_n(deployment: Deployment, work: Path, n: int, tag: str, args: argparse.Namespace) -> dict[str, Any]:
    """Trigger ``scale_jobs_<n>``, wait for its end, and measure every job."""
    from tests.deployment.rest import trigger

    airflow = deployment.airflow
    dag_id = f"scale_jobs_{n}"
    conf = {
        "workdir": str(work),
        "rows": args.rows,
        "batch_size": args.batch_size,
        "parallelism": args.parallelism,
        "query": args.query,
        "tag": tag,
        # fixed batches for a fixed_ run; else --batch-time-ms, or the engine's default ("")
        "batch_time_ms": 0 if tag.startswith("fixed_") else ("" if args.batch_time_ms is None else args.batch_time_ms),
    }
    # parsed and unpaused before the sampler starts: the window holds the run only
    airflow.wait_until(lambda: airflow.api("GET", f"/dags/{dag_id}").status_code == 200, 180, f"DAG {dag_id} parsed")
    sampler = Sampler(deployment.groups())
    try:
        run_id = trigger(airflow, dag_id, conf)
        log(f"{tag}: triggered {dag_id} run {run_id}")
        state = airflow.wait_until(
            lambda: _run_state(airflow, dag_id, run_id), args.timeout, f"end of {dag_id}", every=2.0
        )
    finally:
        sampler.stop()
    tis = airflow.ok("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
    jobs = [
        measure_job(airflow, work, dag_id, run_id, ti, tag, args.rows, sampler)
        for ti in sorted(tis, key=lambda t: t["task_id"])
    ]
    result = {
        "n": n,
        "tag": tag,
        "dag_id": dag_id,
        "run_id": run_id,
        "run_state": state,
        "jobs": jobs,
        "cpu": cpu_split(jobs, sampler),
        "samples": sampler.samples,
    }
    result.update(totals(jobs))
    log(
        f"{tag}: run {state}; {result['total_rows']:,} rows, Spark-job span {result['span_s']} s "
        f"({result['rows_per_s']:,} rows/s), task span {result['task_span_s']} s; "
        f"p99 per job {[j['checkpoints'].get('p99_ms') for j in jobs]} ms; "
        f"every id once: {all(j['output'].get('exactly_once') for j in jobs)}"
    )
    return result


def _run_state(airflow: Any, dag_id: str, run_id: str) -> str | None:
    state = airflow.ok("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"]
    return state if state in ("success", "failed") else None


def measure_job(
    airflow: Any, work: Path, dag_id: str, run_id: str, ti: dict[str, Any], tag: str, rows: int, sampler: Sampler
) -> dict[str, Any]:
    from tests.deployment.rest import xcom_or_none

    task_id = ti["task_id"]
    job_id = xcom_or_none(airflow, dag_id, run_id, task_id, "job_id")
    job: dict[str, Any] = {
        "task_id": task_id,
        "job_id": job_id,
        "task_state": ti["state"],
        "task_start_ms": _ms(ti.get("start_date")),
        "task_end_ms": _ms(ti.get("end_date")),
    }
    if job_id:
        job.update(storage_figures(storage_of(work), job_id))
    job["output"] = count_output(work / "output" / tag / task_id, rows)
    seen = sampler.jobs.get(job_id or "", JobProcesses())
    job["processes"] = process_figures(seen, job.get("start_ms"), job.get("first_checkpoint_trigger_ms"))
    job["phases_s"] = phases(job, seen)
    return job


def storage_figures(storage: Any, job_id: str) -> dict[str, Any]:
    """The job's status, attempt window and checkpoint history, from checkpoint storage."""
    from airflow_provider_seatunnel_ckpt.history.reader import read_history

    history = read_history(storage, job_id)
    attempt = history.attempts[-1] if history.attempts else {}
    completed = sorted((c for c in history.checkpoints if c.status == "completed"), key=lambda c: c.id)
    durations = [c.duration_ms for c in completed if c.duration_ms is not None]
    ids = [c.id for c in completed]
    figures: dict[str, Any] = {
        "status": (history.job or {}).get("status"),
        "attempts": [a.get("attempt") for a in history.attempts],
        "start_ms": attempt.get("start_ms"),
        "end_ms": attempt.get("end_ms"),
        "checkpoints": {
            "completed": len(completed),
            "failed_or_aborted": sum(1 for c in history.checkpoints if c.status != "completed"),
            **({f"{k}_ms": v for k, v in percentiles(durations, 0).items() if k != "n"} if durations else {}),
            "ids_contiguous": ids == list(range(ids[0], ids[0] + len(ids))) if ids else False,
            "all_of_attempt_1": all(c.attempt == 1 for c in history.checkpoints),
            "rows_in_history": sum(c.rows for c in completed),
            "history_skipped": history.skipped,
        },
    }
    if completed:
        first, last = completed[0], completed[-1]
        figures["first_checkpoint_trigger_ms"] = first.trigger_ms
        figures["first_checkpoint_end_ms"] = first.end_ms
        figures["checkpoints"].update(checkpoint_parts(completed))
        # rows/s once running: past the first checkpoint (SparkContext and workers started)
        running_ms = last.end_ms - first.end_ms
        figures["running_rows_per_s"] = (
            round((figures["checkpoints"]["rows_in_history"] - first.rows) * 1000 / running_ms)
            if running_ms > 0
            else None
        )
    return figures


def checkpoint_parts(completed: list[Any]) -> dict[str, Any]:
    """Where a checkpoint's time goes (median of the acks: trigger -> every subtask's ack,
    and of the persist: acks -> durable) and the p99 once the job runs: over the
    checkpoints after the first one in which every subtask reported rows (the earlier ones
    wait for subtasks that are still starting)."""
    import statistics

    rows_column = 6  # history.entries.SUBTASK_COLUMNS: subtask, attempt, ack_ms, sync_ms, async_ms, state_bytes, rows
    running = next(
        (i for i, c in enumerate(completed) if c.subtasks and all(row[rows_column] > 0 for row in c.subtasks)), None
    )
    after = completed[running + 1 :] if running is not None else []
    steady = [c.duration_ms for c in after if c.duration_ms is not None]
    acks = [c.ack_duration_ms for c in completed if c.ack_duration_ms is not None]
    persists = [c.persist_ms for c in completed if c.persist_ms is not None]
    return {
        "ack_median_ms": round(statistics.median(acks)) if acks else None,
        "persist_median_ms": round(statistics.median(persists)) if persists else None,
        "steady_p99_ms": percentiles(steady, 0)["p99"] if steady else None,
        "steady_count": len(steady),
    }


def count_output(directory: Path, rows: int) -> dict[str, Any]:
    """Every id of the job's committed output, counted; the job tags of its part files."""
    from tests.support.workspace import read_output, tally

    if not directory.is_dir():
        return {"error": f"no output directory {directory}", "exactly_once": False}
    tags = sorted({m.group(1) for name in os.listdir(directory) if (m := PART.search(name))})
    table = read_output(f"file://{directory}/", columns=["id"])
    counted = tally(table.column("id").combine_chunks(), rows)
    del table
    return {
        "rows_out": counted.rows,
        "lost": counted.lost,
        "duplicated": counted.duplicated,
        "unexpected": counted.unexpected,
        "exactly_once": counted.exactly_once,
        "file_tags": tags,
        "files": sum(1 for name in os.listdir(directory) if name.endswith(".parquet")),
    }


def process_figures(seen: JobProcesses, claim_ms: int | None, first_trigger_ms: int | None) -> dict[str, Any]:
    """CPU seconds of the job's spark-submit tree: before its claim (JVM, Python driver),
    before its first checkpoint was triggered (also the SparkContext, the split plan and
    the PySpark workers: the whole start-up) and in all, by role; peak RSS; listening ports."""
    by_role: dict[str, float] = {}
    for pid, cpu in seen.cpu.items():
        by_role[seen.roles.get(pid, "?")] = by_role.get(seen.roles.get(pid, "?"), 0.0) + cpu
    startup = seen.cpu_at(claim_ms) if claim_ms else None
    before_first = seen.cpu_at(first_trigger_ms) if first_trigger_ms else None
    total = sum(seen.cpu.values())
    return {
        "submit_ms": seen.first_seen_ms,
        "cpu_s": round(total, 1),
        "cpu_s_before_claim": round(startup, 1) if startup is not None else None,
        "cpu_s_before_first_checkpoint": round(before_first, 1) if before_first is not None else None,
        "cpu_s_by_role": {k: round(v, 1) for k, v in sorted(by_role.items())},
        "peak_rss_mib": round(seen.peak_rss_mib),
        "listening_ports": sorted(seen.ports),
    }


def phases(job: dict[str, Any], seen: JobProcesses) -> dict[str, float | None]:
    """Seconds of each stage of the job: Airflow task start -> spark-submit (task process),
    -> claim (JVM + Python driver), -> first checkpoint triggered (SparkContext, split
    plan, PySpark workers started and connected), -> end (rows), -> task end (result read,
    task exit)."""
    points = [
        job.get("task_start_ms"),
        seen.first_seen_ms,
        job.get("start_ms"),
        job.get("first_checkpoint_trigger_ms"),
        job.get("end_ms"),
        job.get("task_end_ms"),
    ]
    names = [
        "airflow_task_to_submit",
        "submit_to_claim",
        "claim_to_first_checkpoint",
        "first_checkpoint_to_end",
        "end_to_task_end",
    ]
    return {name: round((b - a) / 1000, 2) if a and b else None for name, a, b in zip(names, points, points[1:])}


def totals(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Total rows and the two spans: Spark jobs (first claim -> last end) and tasks."""
    rows = sum(
        j["output"].get("rows_out", 0) - j["output"].get("duplicated", 0) - j["output"].get("unexpected", 0)
        for j in jobs
    )
    starts = [j.get("start_ms") for j in jobs]
    ends = [j.get("end_ms") for j in jobs]
    task_starts = [j.get("task_start_ms") for j in jobs]
    task_ends = [j.get("task_end_ms") for j in jobs]
    out: dict[str, Any] = {"total_rows": rows}
    span = (max(ends) - min(starts)) / 1000 if all(starts) and all(ends) else None
    task_span = (max(task_ends) - min(task_starts)) / 1000 if all(task_starts) and all(task_ends) else None
    out["span_s"] = round(span, 2) if span else None
    out["rows_per_s"] = round(rows / span) if span else None
    out["task_span_s"] = round(task_span, 2) if task_span else None
    out["task_rows_per_s"] = round(rows / task_span) if task_span else None
    out["task_start_skew_s"] = round((max(task_starts) - min(task_starts)) / 1000, 2) if all(task_starts) else None
    out["claim_skew_s"] = round((max(starts) - min(starts)) / 1000, 2) if all(starts) else None
    return out


def cpu_split(jobs: list[dict[str, Any]], sampler: Sampler) -> dict[str, Any]:
    """Where the machine's CPU went while the run was sampled."""
    by_label = sampler.cpu_by_label()
    startup = sum(j["processes"].get("cpu_s_before_first_checkpoint") or 0 for j in jobs)
    jobs_total = sum(v for k, v in by_label.items() if k.startswith("job "))
    others = {k[len("other: ") :]: v for k, v in by_label.items() if k.startswith("other: ")}
    rows = sum(j["output"].get("rows_out", 0) for j in jobs)
    window_s = (sampler.stopped_ms - sampler.started_ms) / 1000
    ours = jobs_total + sum(v for k, v in by_label.items() if k.startswith("airflow ") or k == "postgres")
    return {
        "window_s": round(window_s, 1),
        "machine": sampler.machine_cpu(),
        # cores the rest of the machine (other people's work) kept busy on average
        "other_cores_busy": round(sum(others.values()) / window_s, 2) if window_s else None,
        # rows per CPU second of the jobs, Airflow and PostgreSQL: independent of others' load
        "rows_per_cpu_s": round(rows / ours) if ours else None,
        "jobs_s": round(jobs_total, 1),
        "jobs_startup_s": round(startup, 1),
        "jobs_running_s": round(jobs_total - startup, 1),
        "airflow_s": {k: v for k, v in by_label.items() if k.startswith("airflow ")},
        "postgres_s": by_label.get("postgres", 0.0),
        "bench_process_s": by_label.get("bench process", 0.0),
        "rest_of_machine_s": round(sum(others.values()), 1),
        "rest_of_machine_top": dict(list(others.items())[:6]),
        "job_cpu_s_per_million_rows_running": round((jobs_total - startup) / max(1, rows) * 1e6, 3),
    }


# ---- checks ------------------------------------------------------------------------------------------
def collisions(runs: dict[str, dict[str, Any]], storage_jobs: list[str]) -> dict[str, Any]:
    """Anything two jobs shared that they should not: job ids, output tags, ports (per run:
    the jobs of one run ran at the same time); the storage holding other jobs than ours."""
    runs = {tag: run for tag, run in runs.items() if "error" not in run}
    every_job = [j for run in runs.values() for j in run["jobs"]]
    job_ids = [j["job_id"] for j in every_job]
    out: dict[str, Any] = {
        "job_ids_distinct": len(set(job_ids)) == len(job_ids) and None not in job_ids,
        "storage_jobs_equal_jobs_run": sorted(storage_jobs) == sorted(i for i in job_ids if i),
        "one_file_tag_per_job": all(len(j["output"].get("file_tags", [])) == 1 for j in every_job),
        "file_tags_distinct": len({t for j in every_job for t in j["output"].get("file_tags", [])}) == len(every_job),
        "shared_ports_within_a_run": {},
    }
    for tag, run in runs.items():
        seen: dict[int, str] = {}
        shared = []
        for job in run["jobs"]:
            for port in job["processes"]["listening_ports"]:
                if port in seen and seen[port] != job["task_id"]:
                    shared.append([port, seen[port], job["task_id"]])
                seen[port] = job["task_id"]
        out["shared_ports_within_a_run"][tag] = shared
    out["no_collision"] = bool(
        out["job_ids_distinct"]
        and out["storage_jobs_equal_jobs_run"]
        and out["one_file_tag_per_job"]
        and out["file_tags_distinct"]
        and not any(out["shared_ports_within_a_run"].values())
    )
    return out


def job_ok(job: dict[str, Any], rows: int) -> bool:
    """Finished, every id once, a complete history of one attempt."""
    ck = job.get("checkpoints", {})
    return bool(
        job["task_state"] == "success"
        and job.get("status") == "finished"
        and job.get("attempts") == [1]
        and job["output"].get("exactly_once")
        and ck.get("ids_contiguous")
        and ck.get("all_of_attempt_1")
        and ck.get("rows_in_history") == rows
    )


# ---- result ------------------------------------------------------------------------------------------
COLUMNS = [
    "N",
    "all finished",
    "every id once per job",
    "history complete",
    "rows total",
    "Spark-job span s",
    "rows/s",
    "throughput ratio",
    "task span s",
    "task throughput ratio",
    "task start skew s",
    "ckpt p99 ms (max job)",
    "p99 ratio (max job)",
    "running rows/s per job (median)",
    "start-up CPU s per job (median, to the first checkpoint)",
    "steady p99 ratio (max job)",
    "ckpt ack median ms (max job)",
    "ckpt persist median ms (max job)",
    "rows per CPU s vs solo",
    "cores busy with others' work",
    "bare data path throughput ratio (no engine)",
]


def finish(result: dict[str, Any], rows: int) -> None:
    """Per N figures against the solo run, then ``table``, ``summary``, ``targets``, ``plots``."""
    import statistics

    runs = result["results"]
    #: N -> the bare data path's ratios at N x P processes (bare_data_path.py), if measured
    bare = (result.get("bare_data_path") or {}).get("ratios", {})
    rows_table, summary, targets = [], {}, []
    for tag, run in runs.items():
        # a fixed_ run (--fixed-too) against the fixed solo run
        solo_tag = "fixed_n1" if tag.startswith("fixed_") else "n1"
        solo = runs.get(solo_tag) if "error" not in runs.get(solo_tag, {"error": 1}) else None
        solo_rate = solo.get("rows_per_s") if solo else None
        solo_task_rate = solo.get("task_rows_per_s") if solo else None
        solo_p99 = solo["jobs"][0]["checkpoints"].get("p99_ms") if solo and solo["jobs"] else None
        if "error" in run:
            targets.append(
                {
                    "figure": f"{run['n']} jobs at once ({tag}): the run",
                    "target": "completes",
                    "value": run["error"][:200],
                    "met": False,
                }
            )
            continue
        jobs = run["jobs"]
        p99s = [j.get("checkpoints", {}).get("p99_ms") for j in jobs]
        run["all_finished"] = all(j["task_state"] == "success" and j.get("status") == "finished" for j in jobs)
        run["every_id_once"] = all(j["output"].get("exactly_once") for j in jobs)
        run["history_complete"] = all(job_ok(j, rows) for j in jobs)
        run["throughput_ratio"] = round(run["rows_per_s"] / solo_rate, 3) if solo_rate and run["rows_per_s"] else None
        run["task_throughput_ratio"] = (
            round(run["task_rows_per_s"] / solo_task_rate, 3) if solo_task_rate and run["task_rows_per_s"] else None
        )
        run["p99_ratio_max"] = round(max(p99s) / solo_p99, 2) if solo_p99 and p99s and None not in p99s else None
        run["p99_ms_max"] = max((p for p in p99s if p is not None), default=None)
        solo_efficiency = solo["cpu"].get("rows_per_cpu_s") if solo else None
        run["cpu_efficiency_ratio"] = (
            round(run["cpu"]["rows_per_cpu_s"] / solo_efficiency, 3)
            if solo_efficiency and run["cpu"].get("rows_per_cpu_s")
            else None
        )
        bare_ratio = bare.get(str(run["n"]), {}).get("throughput_ratio") if run["n"] > 1 else None
        running = [j.get("running_rows_per_s") for j in jobs if j.get("running_rows_per_s")]
        startup = [
            j["processes"].get("cpu_s_before_first_checkpoint")
            for j in jobs
            if j["processes"].get("cpu_s_before_first_checkpoint")
        ]
        steady = [j["checkpoints"].get("steady_p99_ms") for j in jobs]
        solo_steady = solo["jobs"][0]["checkpoints"].get("steady_p99_ms") if solo and solo["jobs"] else None
        run["steady_p99_ratio_max"] = (
            round(max(steady) / solo_steady, 2) if solo_steady and steady and None not in steady else None
        )
        rows_table.append(
            [
                f"{run['n']} (fixed batches)" if tag.startswith("fixed_") else run["n"],
                run["all_finished"],
                run["every_id_once"],
                run["history_complete"],
                run["total_rows"],
                run["span_s"],
                run["rows_per_s"],
                run["throughput_ratio"],
                run["task_span_s"],
                run["task_throughput_ratio"],
                run["task_start_skew_s"],
                run["p99_ms_max"],
                run["p99_ratio_max"],
                round(statistics.median(running)) if running else None,
                round(statistics.median(startup), 1) if startup else None,
                run["steady_p99_ratio_max"],
                _max_of(jobs, "ack_median_ms"),
                _max_of(jobs, "persist_median_ms"),
                run["cpu_efficiency_ratio"],
                run["cpu"].get("other_cores_busy"),
                bare_ratio,
            ]
        )
        key = tag.replace("n", "", 1)
        for name, value in (
            ("throughput_ratio", run["throughput_ratio"]),
            ("task_throughput_ratio", run["task_throughput_ratio"]),
            ("p99_ratio", run["p99_ratio_max"]),
            ("steady_p99_ratio", run["steady_p99_ratio_max"]),
            ("cpu_efficiency_ratio", run["cpu_efficiency_ratio"]),
            ("all_finished", run["all_finished"]),
            ("every_id_once", run["every_id_once"]),
        ):
            summary[f"jobs_at_once_{key}_{name}"] = value
        if bare_ratio and run["throughput_ratio"] and tag.startswith("n") and tag[1:].isdigit():
            summary[f"jobs_at_once_{key}_bare_path_throughput_ratio"] = bare_ratio
            # what the engine keeps of what the machine leaves: 1.0 = it loses nothing of its own
            summary[f"jobs_at_once_{key}_throughput_vs_bare_path"] = round(run["throughput_ratio"] / bare_ratio, 3)
        if run["n"] > 1 and tag.startswith("n") and tag[1:].isdigit():
            targets.append(
                {
                    "figure": f"{run['n']} jobs at once: total rows/s / one job's (Spark-job span)",
                    "target": f">= {GOAL_THROUGHPUT_RATIO}",
                    "value": run["throughput_ratio"],
                    "met": run["throughput_ratio"] is not None and run["throughput_ratio"] >= GOAL_THROUGHPUT_RATIO,
                }
            )
            targets.append(
                {
                    "figure": f"{run['n']} jobs at once: max over jobs of checkpoint p99 / solo p99",
                    "target": f"<= {GOAL_P99_RATIO}",
                    "value": run["p99_ratio_max"],
                    "met": run["p99_ratio_max"] is not None and run["p99_ratio_max"] <= GOAL_P99_RATIO,
                }
            )
        targets.append(
            {
                "figure": f"{run['n']} jobs at once ({tag}): all finished, every id once per job, history complete",
                "target": "true",
                "value": run["history_complete"],
                "met": run["history_complete"],
            }
        )
    if "n8" in runs and "error" not in runs["n8"]:
        summary["jobs_at_once_8_throughput_ratio"] = runs["n8"]["throughput_ratio"]
    # --fixed-too: batches sized by time against fixed batches, at the same N and load
    for tag, run in runs.items():
        fixed = runs.get(f"fixed_{tag}")
        if not tag.startswith("n") or not tag[1:].isdigit() or not fixed or "error" in fixed or "error" in run:
            continue
        ours, theirs = run["cpu"].get("rows_per_cpu_s"), fixed["cpu"].get("rows_per_cpu_s")
        if ours and theirs:
            summary[f"jobs_at_once_{run['n']}_rows_per_cpu_s_vs_fixed_batches"] = round(ours / theirs, 3)
        if run["p99_ms_max"] and fixed["p99_ms_max"]:
            summary[f"jobs_at_once_{run['n']}_p99_vs_fixed_batches"] = round(run["p99_ms_max"] / fixed["p99_ms_max"], 3)
    checks = result["collisions"]
    targets.append(
        {
            "figure": "no port or file collision (job ids, output tags, storage job list, listening ports)",
            "target": "true",
            "value": checks["no_collision"],
            "met": checks["no_collision"],
        }
    )
    summary["jobs_at_once_no_collision"] = checks["no_collision"]
    result["table"] = {"columns": COLUMNS, "rows": rows_table}
    result["summary"] = summary
    result["targets"] = targets
    result["plots"] = make_plot(runs)
    result["notes"] = [
        "Throughput ratio: total rows / (last job end - first job start) over the solo job's rows / its own span; "
        "the Spark-job span comes from the attempt records (claim -> outcome), the task span from Airflow.",
        "rows per CPU s vs solo: rows over the CPU seconds of the jobs' process trees, Airflow's processes and "
        "PostgreSQL while the run was sampled, against the solo run's: it does not move with other people's load "
        "on the shared machine (cores busy with others' work), which the throughput ratio does.",
        "p99 is the nearest rank over each job's completed checkpoints (about one per second of the job): with "
        "a few dozen checkpoints (a job alone) it is the slowest one, usually the first; with about 200 (a job "
        "among eight runs about eight times longer) it is the third slowest.",
        "Start-up CPU s: the job's spark-submit tree (JVM, Python driver, PySpark workers) before its first "
        "checkpoint was triggered (claim, SparkContext, split plan, subtasks started and connected).",
        "steady p99: over the checkpoints after the first one in which every subtask reported rows; the earlier "
        "ones wait for subtasks still starting (under contention the first checkpoints are the slowest).",
        "A checkpoint's duration = ack (trigger -> the last subtask's ack: barrier delivery, the write of the "
        "batch in flight (a barrier that comes while a batch is read or transformed is taken at once, the cut "
        "before that batch), the subtask's snapshot) + persist (acks -> durable in the shared storage): the ack and persist medians "
        "show which part grows with N.",
        "Batches sized by time (env.batch_time_ms, engine/batch_sizer.py), off by default: "
        "the jobs ask their source for fewer rows while their CPU is shared (about 50 ms a batch, never below a "
        "quarter of batch_size). Rows '(fixed batches)' (--fixed-too) are the same N run with batch_time_ms 0 "
        "(the engine before) in the same deployment after the others, each against the fixed solo run: "
        "*_vs_fixed_batches compares the two at equal N (rows per CPU s: ours / fixed).",
        "Bare data path (bench/bare_data_path.py, run before the deployment starts): the jobs' per-row work "
        "without the engine (Sequence's batches, the Sql transform's BatchQuery, pyarrow's parquet writer with a "
        "new file every second; no Spark, no checkpoints, no fsync) in P plain processes and in N x P at once, "
        "in turns, rounds; the median ratio of their total rows/s. It is what the machine itself loses when N x P "
        "busy processes share its cores (caches refilled at every switch, memory reclaimed and faulted in "
        "again), which no engine can avoid. *_throughput_vs_bare_path = the jobs' throughput ratio / the bare "
        "path's (1.0: the engine loses nothing of its own as N grows). It can exceed 1: the bare path's P "
        "processes keep both cores busy for all their run, while a job alone leaves them partly idle as it "
        "starts and ends (the solo run's idle CPU), which the N jobs fill for one another.",
    ]


def _max_of(jobs: list[dict[str, Any]], key: str) -> Any:
    """The largest of a checkpoint figure over a run's jobs."""
    values = [j.get("checkpoints", {}).get(key) for j in jobs]
    return max((v for v in values if v is not None), default=None)


def make_plot(runs: dict[str, dict[str, Any]]) -> list[str]:
    """Throughput ratio and p99 ratio against N (goal lines), and the largest N's jobs as
    a timeline of their stages."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = sorted(
        ((r["n"], r) for tag, r in runs.items() if tag == f"n{r['n']}" and "error" not in r), key=lambda item: item[0]
    )
    if not curve:
        return []
    ns = [n for n, _ in curve]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    ax = axes[0]
    ax.plot(ns, [r.get("throughput_ratio") for _, r in curve], marker="o", label="Spark-job span")
    ax.plot(ns, [r.get("task_throughput_ratio") for _, r in curve], marker="s", label="task span (incl. start-up)")
    ax.axhline(GOAL_THROUGHPUT_RATIO, color="red", ls="--", lw=1, label=f"goal >= {GOAL_THROUGHPUT_RATIO}")
    ax.set(
        xscale="log",
        xticks=ns,
        xticklabels=ns,
        xlabel="jobs at once",
        ylabel="total rows/s / solo rows/s",
        title="total throughput vs one job alone",
        ylim=(0, 1.3),
    )
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.plot(ns, [r.get("p99_ratio_max") for _, r in curve], marker="o", label="p99, max over jobs")
    ax.plot(
        ns,
        [r.get("steady_p99_ratio_max") for _, r in curve],
        marker="s",
        label="p99 once running (after the start-up checkpoints)",
    )
    ax.axhline(GOAL_P99_RATIO, color="red", ls="--", lw=1, label=f"goal <= {GOAL_P99_RATIO}")
    ax.set(
        xscale="log",
        yscale="log",
        xticks=ns,
        xticklabels=ns,
        xlabel="jobs at once",
        ylabel="checkpoint p99 / solo p99",
        title="checkpoint p99 vs the solo job's",
    )
    ax.legend(fontsize=8)
    gantt(axes[2], curve[-1][1])
    for a in axes[:2]:
        a.grid(True, lw=0.3)
        a.minorticks_off()  # the log x axis: N only
    fig.suptitle(
        "Jobs at once on one Airflow deployment (LocalExecutor), Sequence -> Sql -> File, p=2 each, "
        "1 s checkpoints, shared checkpoint storage, 2 cores"
    )
    return save_figure(fig, "scale_jobs.png")


def gantt(ax: Any, run: dict[str, Any]) -> None:
    colors = {
        "airflow_task_to_submit": "tab:gray",
        "submit_to_claim": "tab:orange",
        "claim_to_first_checkpoint": "tab:purple",
        "first_checkpoint_to_end": "tab:green",
        "end_to_task_end": "tab:gray",
    }
    origin = min(j["task_start_ms"] for j in run["jobs"] if j.get("task_start_ms"))
    for row, job in enumerate(run["jobs"]):
        left = (job["task_start_ms"] - origin) / 1000 if job.get("task_start_ms") else 0
        for stage, seconds in job["phases_s"].items():
            # Airflow may record a task's start after its spark-submit started: no bar then
            if seconds is None or seconds <= 0:
                continue
            ax.barh(row, seconds, left=left, color=colors[stage], label=stage if row == 0 else None)
            left += seconds
    ax.set(
        xlabel="s since the first task started",
        yticks=range(len(run["jobs"])),
        yticklabels=[j["task_id"] for j in run["jobs"]],
        title=f"{run['n']} jobs: stages of each",
    )
    ax.legend(fontsize=7, loc="lower right")


def report_only(write: bool) -> int:
    """The derived parts of a saved result, rebuilt from its measurements."""
    import json

    from bench.common import RESULTS_DIR

    result = json.loads((RESULTS_DIR / f"{NAME}.json").read_text())
    for key in ("table", "summary", "targets", "plots", "notes"):
        result.pop(key, None)
    finish(result, result["settings"]["rows_per_job"])
    emit(result, NAME, write, rebuilt=True)
    return 0


# ---- main --------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default=DEFAULT_JOBS, help=f"comma-separated job counts (default {DEFAULT_JOBS})")
    parser.add_argument("--rows", type=int, help=f"rows per job (default {DEFAULT_ROWS:,}; quick {QUICK_ROWS:,})")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="Sequence rows per batch")
    parser.add_argument("--parallelism", type=int, default=PARALLELISM, help="subtasks per job (local[P])")
    parser.add_argument("--query", default=QUERY, help="the Sql transform's query ('': Sequence -> File alone)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_JOBS} jobs, {QUICK_ROWS:,} rows")
    parser.add_argument(
        "--solo-again",
        action="store_true",
        help="run the solo job again at the end (a control for drift of the machine's load)",
    )
    parser.add_argument(
        "--batch-time-ms", type=int, help="the jobs' env.batch_time_ms (default: the engine's; 0 = fixed batches)"
    )
    parser.add_argument(
        "--fixed-too",
        action="store_true",
        help="then every N again with fixed batches (batch_time_ms 0, tagged fixed_n<N>): before/after at one load",
    )
    parser.add_argument(
        "--bare-path-rounds",
        type=int,
        default=BARE_PATH_ROUNDS,
        help="rounds of the bare data path control before the jobs (bare_data_path.py; 0: none)",
    )
    parser.add_argument("--timeout", type=float, default=1500.0, help="seconds one DAG run may take")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, checkpoints)")
    parser.add_argument("--out", action="store_true", help="write the result (the default)")
    parser.add_argument("--no-out", action="store_true", help="do not write bench/results/scale_jobs.json")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild the table, summary, targets and plot of bench/results/scale_jobs.json",
    )
    args = parser.parse_args()
    if args.report_only:
        return report_only(not args.no_out)
    # a stopped bench (timeout, kill) still stops the deployment and PostgreSQL (finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    counts = [int(x) for x in (QUICK_JOBS if args.quick else args.jobs).split(",") if x.strip()]
    if 1 not in counts:
        parser.error("--jobs must include 1: every ratio divides by the solo job")
    counts = [1] + [n for n in counts if n != 1]
    args.rows = args.rows or (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    machine = machine_info()
    work = Path(tempfile.mkdtemp(prefix="scale_jobs_", dir="/tmp"))
    log(f"work directory {work}; N = {counts}, {args.rows:,} rows per job")
    runs: dict[str, dict[str, Any]] = {}
    bare_path = None
    if args.bare_path_rounds > 0:  # first, on a machine with nothing of ours running yet
        log(
            f"bare data path: {args.parallelism} processes against N x {args.parallelism}, {args.bare_path_rounds} rounds"
        )
        bare_path = bare_data_path.compare(
            args.parallelism, counts, BARE_PATH_SECONDS, args.bare_path_rounds, args.batch_size, args.query
        )
    deployment = Deployment(work, counts, args.parallelism)
    try:
        deployment.start()
        plan = [(n, f"n{n}") for n in counts] + ([(1, "n1_again")] if args.solo_again else [])
        plan += [(n, f"fixed_n{n}") for n in counts] if args.fixed_too else []
        for n, tag in plan:
            try:
                runs[tag] = run_n(deployment, work, n, tag, args)
            except Exception as err:  # report it, go on with the next N
                log(f"{tag} failed: {type(err).__name__}: {str(err)[:3000]}")
                runs[tag] = {"n": n, "tag": tag, "error": f"{type(err).__name__}: {str(err)[:3000]}"}
            shutil.rmtree(work / "output" / tag, ignore_errors=True)  # counted: the next N needs the disk
        storage_jobs = storage_of(work).list_jobs()
    finally:
        deployment.stop()
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    result: dict[str, Any] = {
        "benchmark": NAME,
        "description": "N checkpointed jobs submitted at once by one Airflow deployment (PostgreSQL, api-server, "
        "scheduler with LocalExecutor, dag-processor, triggerer; tests/deployment) as the N tasks "
        "of one DAG run: Sequence -> Sql (a sha256 of every id, every row kept) -> File "
        "parquet, parallelism "
        f"{args.parallelism} on local[{args.parallelism}], 1 s checkpoints, every job on the same "
        "local checkpoint storage namespace, each with its own output directory and job id.",
        "machine": machine,
        "settings": {
            "jobs": counts,
            "rows_per_job": args.rows,
            "batch_size": args.batch_size,
            "query": args.query,
            "parallelism": args.parallelism,
            "interval_ms": 1000,
            "solo_again": args.solo_again,
            "batch_time_ms": args.batch_time_ms,
            "fixed_too": args.fixed_too,
            "throughput": "total rows (distinct ids counted in the output) / (last job's end - first "
            "job's start); Spark-job span from the attempt records in checkpoint storage "
            "(claim -> outcome recorded), task span from Airflow's task instances",
            "p99": "nearest-rank p99 of the durations (trigger -> durable) of every completed "
            "checkpoint of a job (periodic and final), from its checkpoint history",
        },
        "results": runs,
        "bare_data_path": bare_path,
    }
    result["collisions"] = collisions(runs, storage_jobs)
    finish(result, args.rows)
    emit(result, NAME, not args.no_out)
    return (
        0 if all(t["met"] for t in result["targets"] if "every id" in t["figure"] or "collision" in t["figure"]) else 1
    )


if __name__ == "__main__":
    sys.exit(main())
