"""Helpers shared by the engine's integration suite and the chaos suite (real Spark).

Jobs run the way users run them: ``seatunnel-ckpt run JOB --config seatunnel.yaml`` as a
subprocess, in its own session so a test can SIGKILL the whole driver (Python driver,
its JVM and the JVM's Python workers) at once. Inputs and checks go through the
package's own storage layer, so the same helpers read committed output from the local
disk or an object store.

Nothing here starts Spark in the test process: one SparkContext per process is all
PySpark allows, and a SIGKILL must never take pytest with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import yaml

from airflow_provider_seatunnel_ckpt.engine.preload import DAEMON_MODULE

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
JOB_ID_RE = re.compile(r"[A-Za-z0-9_.-]+")

try:  # psutil finds the driver's descendants; /proc is the fallback
    import psutil
except ImportError:  # pragma: no cover - psutil ships with the dev environment
    psutil = None  # type: ignore[assignment]


# ---- environment ----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spark_environment() -> dict[str, str]:
    """The environment every Spark process of the tests runs with: loopback only, the
    venv's Python for executors, no user-level settings leaking in."""
    env = dict(os.environ)
    for key in (
        "SEATUNNEL_CKPT_CONFIG",
        "SEATUNNEL_CKPT_MASTER",
        "SPARK_HOME",
        "PYSPARK_PYTHON",
        "PYSPARK_DRIVER_PYTHON",
        "SPARK_CONF_DIR",
        "SPARK_ENV_LOADED",
    ):
        env.pop(key, None)
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
        SEATUNNEL_CKPT_SPARK_LOG_LEVEL="ERROR",
    )
    return env


# ---- processes ------------------------------------------------------------------------------
def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (children first), by psutil or /proc."""
    if psutil is not None:
        try:
            return [p.pid for p in psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return []
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


#: the Python daemon Spark starts per executor (``python -m MODULE``): the stock one, or the
#: engine's preloading one (engine/worker_daemon.py, the default with a local master). The
#: "-m" matters: the JVM's own command line names the module too (its --conf).
DAEMON_MODULES = ("-m pyspark.daemon", f"-m {DAEMON_MODULE}")


def is_daemon(line: str) -> bool:
    return any(module in line for module in DAEMON_MODULES)


def is_python_worker(pid: int) -> bool:
    """A PySpark daemon or worker process (``python -m pyspark.daemon`` / ``pyspark.worker``)."""
    line = cmdline(pid)
    return is_daemon(line) or "pyspark.worker" in line


def pyspark_workers(root_pid: int) -> list[int]:
    """PySpark worker processes below ``root_pid`` that run tasks.

    The JVM starts one daemon that forks a worker per task; killing a forked worker fails
    exactly one task (killing the daemon would only make Spark start a new one). Without
    the daemon (worker reuse off) the workers are ``pyspark.worker`` processes started by
    the JVM directly.
    """
    workers = []
    for pid in descendants(root_pid):
        if not is_python_worker(pid):
            continue
        ppid = parent_pid(pid)
        if not is_daemon(cmdline(pid)) or (ppid is not None and is_daemon(cmdline(ppid))):
            workers.append(pid)
    return workers


def without_venv_on_path(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` as a user has it who runs ``.venv/bin/seatunnel-ckpt`` without activating
    the venv: ``python3`` on PATH is not the venv's."""
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != VENV_BIN]
    return {**env, "PATH": os.pathsep.join(path)}


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal ``pid``'s process group and every descendant (they may have left it)."""
    family = descendants(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    for child in family:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, sig)


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float

    def explain(self) -> str:
        return f"exit {self.returncode} after {self.elapsed_s:.1f} s\n--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-8000:]}"


class Driver:
    """One ``seatunnel-ckpt run`` in its own session; output goes to files."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str], log_dir: Path, name: str):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.args = list(args)
        self.stdout_path = log_dir / f"{name}.stdout"
        self.stderr_path = log_dir / f"{name}.stderr"
        self._stdout = open(self.stdout_path, "wb")
        self._stderr = open(self.stderr_path, "wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.args,
            env=dict(env),
            cwd=str(log_dir),
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            start_new_session=True,
        )
        self.killed = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait_for(self, pattern: str, timeout: float, stream: str = "stderr") -> re.Match[str] | None:
        """Wait until ``stream`` (stderr, or stdout: spark-submit hands the Python driver's
        stderr to its stdout) matches ``pattern`` (None when the run ended or time is up)."""
        regex = re.compile(pattern, re.MULTILINE)
        read = self.stdout if stream == "stdout" else self.stderr
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = regex.search(read())
            if match:
                return match
            if self.proc.poll() is not None:
                return regex.search(read())
            time.sleep(0.1)
        return None

    def completed(self) -> int:
        """How many checkpoints this run completed (its log lines)."""
        return len(re.findall(r"\(checkpoint\) completed", self.stderr()))

    def wait_for_completed(self, count: int, timeout: float) -> bool:
        """Until ``count`` checkpoints completed in this run. Counted, not named by id: a
        checkpoint in flight when a fault struck may be aborted, and ids are never reused."""
        deadline = time.monotonic() + timeout
        while self.completed() < count and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        return self.completed() >= count

    def kill(self) -> None:
        """SIGKILL the whole driver: Python, its JVM, the JVM's Python workers."""
        self.killed = True
        kill_tree(self.proc.pid)
        self.proc.wait(timeout=30)
        self._close()

    def wait(self, timeout: float = 600) -> RunResult:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as err:
            kill_tree(self.proc.pid)
            self.proc.wait(timeout=30)
            self._close()
            raise AssertionError(
                f"{' '.join(self.args)} still running after {timeout} s\n{self.stderr()[-8000:]}"
            ) from err
        self._close()
        # whatever the driver left behind (it should leave nothing) goes too
        kill_tree(self.proc.pid)
        return RunResult(code, self.stdout(), self.stderr(), time.monotonic() - self.started)

    def _close(self) -> None:
        for f in (self._stdout, self._stderr):
            with contextlib.suppress(OSError):
                f.close()

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.kill()
        else:
            self._close()


# ---- job and config files -------------------------------------------------------------------
def checkpoint_config(
    plugin_config: Mapping[str, Any] | None,
    *,
    storage_type: str = "hdfs",
    interval: int = 1000,
    timeout: int = 60_000,
    tolerable_failure: int = 2,
    max_retained: int = 3,
    **extra: Any,
) -> dict[str, Any]:
    storage: dict[str, Any] = {"type": storage_type, "max-retained": max_retained}
    if plugin_config is not None:
        storage["plugin-config"] = dict(plugin_config)
    checkpoint = {
        "interval": interval,
        "timeout": timeout,
        "tolerable-failure": tolerable_failure,
        "storage": storage,
        **extra,
    }
    return {"seatunnel": {"engine": {"checkpoint": checkpoint}}}


@dataclass
class Workspace:
    """A directory for one test: config files, jobs, checkpoints, output, driver logs."""

    root: Path
    env: dict[str, str]
    master: str = "local[2]"
    runs: int = field(default=0)

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def local_storage(self) -> dict[str, Any]:
        """plugin-config of a local checkpoint storage, as SeaTunnel users write it."""
        return {"storage.type": "hdfs", "fs.defaultFS": "file:///", "namespace": f"{self.checkpoints}/"}

    def write_config(
        self, plugin_config: Mapping[str, Any] | None = None, name: str = "seatunnel.yaml", **kwargs: Any
    ) -> Path:
        if plugin_config is None and kwargs.get("storage_type", "hdfs") == "hdfs":
            plugin_config = self.local_storage()
        path = self.root / name
        path.write_text(yaml.safe_dump(checkpoint_config(plugin_config, **kwargs), sort_keys=False))
        return path

    def write_job(
        self,
        source: Mapping[str, Any],
        sink: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        transforms: Sequence[Mapping[str, Any]] = (),
        *,
        name: str = "job",
        parallelism: int = 2,
        env: Mapping[str, Any] | None = None,
        file_name: str | None = None,
    ) -> Path:
        if sink is None:
            sink = {"plugin_name": "File", "path": f"file://{self.output}/", "format": "parquet"}
        doc: dict[str, Any] = {
            "env": {"job.name": name, "parallelism": parallelism, **(env or {})},
            "source": [dict(source)],
        }
        if transforms:
            doc["transform"] = [dict(t) for t in transforms]
        doc["sink"] = [dict(sink)] if isinstance(sink, Mapping) else [dict(s) for s in sink]
        path = self.root / (file_name or f"{name}.yaml")
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def command(
        self, job: Path, config: Path | None, job_id: str | None, *extra: str, master: str | None = None
    ) -> list[str]:
        args = [str(VENV_BIN / "seatunnel-ckpt"), "run", str(job)]
        if config is not None:
            args += ["--config", str(config)]
        if job_id is not None:
            args += ["--job-id", job_id]
        return args + ["--master", master or self.master, *extra]

    def start(
        self,
        job: Path,
        config: Path | None,
        job_id: str | None,
        *extra: str,
        master: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Driver:
        self.runs += 1
        return Driver(
            self.command(job, config, job_id, *extra, master=master), env or self.env, self.logs, f"run{self.runs:03d}"
        )

    def run(
        self,
        job: Path,
        config: Path | None,
        job_id: str | None,
        *extra: str,
        timeout: float = 300,
        master: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        return self.start(job, config, job_id, *extra, master=master, env=env).wait(timeout)


# ---- checkpoint storage and committed output ---------------------------------------------
def open_storage(config: Path) -> Any:
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.storage import create_storage

    return create_storage(load_config(config).storage)


def completed_ids(config: Path, job_id: str, pipeline_id: int = 1) -> list[int]:
    storage = open_storage(config)
    return sorted(e.checkpoint_id for e in storage.list_checkpoint_entries(job_id, pipeline_id) if e.completed)


def checkpoint_dir(config: Path, job_id: str, checkpoint_id: int, pipeline_id: int = 1) -> Path:
    """The local directory of a checkpoint (local storage only)."""
    storage = open_storage(config)
    return Path(storage.describe(job_id, pipeline_id, checkpoint_id).removeprefix("file://"))


def read_output(
    url: str, fmt: str = "parquet", options: Mapping[str, Any] | None = None, columns: Sequence[str] | None = None
) -> pa.Table:
    """Every committed (visible) file under ``url``, read with pyarrow into one table."""
    from airflow_provider_seatunnel_ckpt.storage.urls import filesystem_for_url

    fs, root = filesystem_for_url(url, dict(options or {}))
    tables = []
    for entry in sorted(fs.list_dir(root), key=lambda e: e.name):
        if entry.is_dir or entry.name.startswith(("_", ".")):
            continue
        data = fs.read(entry.path)
        tables.append(_decode(data, fmt, columns))
    if not tables:
        return pa.table({"id": pa.array([], pa.int64())})
    return pa.concat_tables(tables, promote_options="permissive")


def _decode(data: bytes, fmt: str, columns: Sequence[str] | None) -> pa.Table:
    buffer = pa.BufferReader(data)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(buffer, columns=list(columns) if columns else None)
    if fmt == "csv":
        import pyarrow.csv as pacsv

        table = pacsv.read_csv(buffer)
    elif fmt == "jsonl":
        import pyarrow.json as pajson

        table = pajson.read_json(buffer)
    else:
        raise ValueError(fmt)
    return table.select(list(columns)) if columns else table


def committed_files(directory: Path) -> list[str]:
    return (
        sorted(p.name for p in directory.iterdir() if not p.name.startswith(("_", "."))) if directory.exists() else []
    )


@dataclass(frozen=True)
class Tally:
    rows: int  #: rows in the committed output
    expected: int  #: ids 0..expected-1 should each appear once
    lost: int
    duplicated: int
    unexpected: int  #: ids outside 0..expected-1

    @property
    def exactly_once(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.unexpected == 0 and self.rows == self.expected

    def __str__(self) -> str:
        return (
            f"{self.rows:,} rows for {self.expected:,} ids: lost {self.lost:,}, "
            f"duplicated {self.duplicated:,}, unexpected {self.unexpected:,}"
        )


def tally(ids: Any, expected: int | Iterable[int]) -> Tally:
    """Count every id: how many of the expected ones are missing or appear twice or more."""
    values = np.asarray(ids.to_numpy() if hasattr(ids, "to_numpy") else ids, dtype=np.int64)
    if isinstance(expected, int):
        inside = values[(values >= 0) & (values < expected)]
        counts = np.bincount(inside, minlength=expected)
        return Tally(
            len(values),
            expected,
            int((counts == 0).sum()),
            int((counts[counts > 1] - 1).sum()),
            len(values) - len(inside),
        )
    wanted = np.unique(np.asarray(list(expected), dtype=np.int64))
    uniq, counts = np.unique(values, return_counts=True)
    present = np.isin(wanted, uniq)
    return Tally(
        len(values),
        len(wanted),
        int((~present).sum()),
        int((counts[counts > 1] - 1).sum()),
        int((~np.isin(uniq, wanted)).sum()),
    )


def assert_exactly_once(table: pa.Table, expected: int | Iterable[int], column: str = "id") -> Tally:
    result = tally(table.column(column).combine_chunks(), expected)
    assert result.exactly_once, f"not exactly once: {result}"
    return result


# ---- standalone cluster ---------------------------------------------------------------------
@dataclass
class StandaloneCluster:
    master_url: str
    webui_url: str
    processes: list[subprocess.Popen]
    log_dir: Path

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as response:
            return json.loads(response.read())

    def alive_workers(self) -> int:
        state = self.state()
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def wait_idle(self, timeout: float = 60) -> None:
        """Until no application holds the worker's cores (a killed driver's app is gone)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if master_is_idle(self.state()):
                return
            time.sleep(0.5)
        raise AssertionError(f"the standalone cluster is still busy after {timeout} s: {self.state()}")

    def stop(self) -> None:
        for proc in reversed(self.processes):
            if proc.poll() is None:
                kill_tree(proc.pid, signal.SIGTERM)
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                kill_tree(proc.pid)
                proc.wait(timeout=10)
            kill_tree(proc.pid)  # executors started by the worker, if any are left


def master_is_idle(state: Mapping[str, Any]) -> bool:
    """A Spark master's ``/json/`` state: no application, and no live worker's cores in use
    (a lost worker stays listed as DEAD with the cores it had)."""
    return not state.get("activeapps") and all(
        w.get("coresused", 0) == 0 for w in state.get("workers", []) if w.get("state") == "ALIVE"
    )


def start_standalone_cluster(
    root: Path, env: Mapping[str, str], cores: int = 2, memory: str = "2g", timeout: float = 120
) -> StandaloneCluster:
    """``spark-class`` Master and one Worker on 127.0.0.1; returns once the worker registered."""
    root.mkdir(parents=True, exist_ok=True)
    port, webui = free_port(), free_port()
    env = {**env, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(root / "work")}
    spark_class = str(VENV_BIN / "spark-class")
    procs: list[subprocess.Popen] = []
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{webui}", procs, root)

    def spawn(name: str, args: list[str]) -> None:
        out = open(root / f"{name}.log", "wb")
        procs.append(
            subprocess.Popen(
                [spark_class, *args],
                env=env,
                cwd=str(root),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        out.close()

    try:
        spawn(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(webui),
            ],
        )
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError, ValueError):
                cluster.state()
                break
            if time.monotonic() > deadline or procs[0].poll() is not None:
                raise RuntimeError(f"the Spark master did not start:\n{(root / 'master.log').read_text()[-4000:]}")
            time.sleep(0.3)
        spawn(
            "worker",
            [
                "org.apache.spark.deploy.worker.Worker",
                cluster.master_url,
                "--host",
                "127.0.0.1",
                "--webui-port",
                str(free_port()),
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--work-dir",
                str(root / "work"),
            ],
        )
        while cluster.alive_workers() < 1:
            if time.monotonic() > deadline or procs[1].poll() is not None:
                raise RuntimeError(f"the Spark worker did not register:\n{(root / 'worker.log').read_text()[-4000:]}")
            time.sleep(0.3)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextlib.contextmanager
def standalone_cluster(root: Path, env: Mapping[str, str]) -> Iterator[StandaloneCluster]:
    cluster = start_standalone_cluster(root, env)
    try:
        yield cluster
    finally:
        cluster.stop()


# ---- a subtask's control channel, faked -------------------------------------------------------
class FakeChannel:
    """Stands in for a subtask's ControlClient (``client_factory``): records what the
    subtask sends; the test delivers the driver's messages and plays the reader thread's
    reconnect (``on_reconnect``)."""

    def __init__(self, *args: Any, on_message: Any, on_reconnect: Any = None, **kwargs: Any):
        from airflow_provider_seatunnel_ckpt.engine.messages import decode

        self._decode = decode
        self.on_message = on_message
        self.on_reconnect = on_reconnect
        self.sent: list[Any] = []
        self.lock = threading.Lock()

    def connect(self) -> None:
        pass

    def send(self, raw: dict[str, Any]) -> None:
        with self.lock:
            self.sent.append(self._decode(raw))

    def close(self) -> None:
        pass

    def deliver(self, message: Any) -> None:
        from airflow_provider_seatunnel_ckpt.engine.messages import encode

        self.on_message(encode(message))

    def find(self, predicate: Any) -> Any:
        with self.lock:
            return next((m for m in self.sent if predicate(m)), None)

    def wait_for(self, predicate: Any, timeout: float = 10) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = [m for m in self.sent if predicate(m)]
            if found:
                return found[-1]
            time.sleep(0.01)
        raise AssertionError(f"nothing matched; sent: {self.sent}")
