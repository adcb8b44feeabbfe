"""Process helpers for the recovery and streaming-comparison benchmarks.

The same ideas as tests/support/workspace.py (drivers in their own session so a
SIGKILL takes the Python driver, its JVM and the JVM's Python workers at once; PySpark
workers found below the driver with psutil), without importing the test suite.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from airflow_provider_seatunnel_ckpt.engine.preload import DAEMON_MODULE
from bench.common import REPO_ROOT

VENV_BIN = Path(sys.executable).parent


def spark_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment of a driver subprocess: loopback Spark, the venv's Python for the
    executors, the repository root importable (bench.workloads, bench._idlog)."""
    env = dict(os.environ)
    for key in (
        "SEATUNNEL_CKPT_CONFIG",
        "SEATUNNEL_CKPT_MASTER",
        "SPARK_HOME",
        "PYSPARK_PYTHON",
        "PYSPARK_DRIVER_PYTHON",
        "SPARK_CONF_DIR",
        "SPARK_ENV_LOADED",
        "BENCH_IDLOG_DIR",
    ):
        env.pop(key, None)
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p),
        SEATUNNEL_CKPT_SPARK_LOG_LEVEL="ERROR",
    )
    env.update(extra or {})
    return env


def descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _cmdline(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return ""


#: "-m MODULE": the JVM's command line names the module too (in its --conf)
DAEMONS = ("-m pyspark.daemon", f"-m {DAEMON_MODULE}")


def _is_daemon(line: str) -> bool:
    return any(name in line for name in DAEMONS)


def pyspark_workers(root_pid: int) -> list[int]:
    """Forked PySpark workers (children of the daemon: ``pyspark.daemon`` or the engine's
    preloading one) below ``root_pid``: killing one fails exactly the Spark task it runs."""
    workers = []
    for pid in descendants(root_pid):
        line = _cmdline(pid)
        if not _is_daemon(line) and "pyspark.worker" not in line:
            continue
        try:
            parent = psutil.Process(pid).ppid()
        except psutil.NoSuchProcess:
            continue
        if not _is_daemon(line) or _is_daemon(_cmdline(parent)):
            workers.append(pid)
    return workers


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> None:
    family = descendants(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    for child in family:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, sig)


class Proc:
    """A driver subprocess in its own session; stderr lines kept with their arrival time."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: Path | None = None):
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.args = list(args)
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.lines: list[tuple[float, str]] = []  #: (wall time, line)
        self._lock = threading.Lock()
        self.started_wall = time.time()
        self.proc = subprocess.Popen(
            self.args,
            env=dict(env),
            cwd=str(cwd or log_path.parent),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.killed_wall: float | None = None

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            now = time.time()
            with self._lock:
                self.lines.append((now, line))
            self._log.write(f"{now:.3f} {line}\n")
        self._log.flush()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def first(self, pattern: str, after: float = 0.0) -> tuple[float, re.Match[str]] | None:
        regex = re.compile(pattern)
        with self._lock:
            lines = list(self.lines)
        for wall, line in lines:
            if wall >= after:
                match = regex.search(line)
                if match:
                    return wall, match
        return None

    def all(self, pattern: str) -> list[tuple[float, re.Match[str]]]:
        regex = re.compile(pattern)
        with self._lock:
            lines = list(self.lines)
        return [(wall, m) for wall, line in lines for m in [regex.search(line)] if m]

    def wait_for(self, pattern: str, timeout: float, after: float = 0.0) -> tuple[float, re.Match[str]] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.first(pattern, after)
            if found:
                return found
            if self.proc.poll() is not None:
                time.sleep(0.2)
                return self.first(pattern, after)
            time.sleep(0.02)
        return None

    def text(self) -> str:
        with self._lock:
            return "\n".join(line for _, line in self.lines)

    def kill(self) -> float:
        """SIGKILL the whole driver (Python, JVM, Python workers); returns the wall time."""
        self.killed_wall = time.time()
        kill_tree(self.proc.pid)
        self.proc.wait(timeout=30)
        self._reader.join(timeout=10)
        self._log.close()
        return self.killed_wall

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(self.proc.pid)
            self.proc.wait(timeout=30)
            code = -9
        self._reader.join(timeout=10)
        with contextlib.suppress(Exception):
            self._log.close()
        kill_tree(self.proc.pid)  # anything it left behind
        return code

    def tail(self, n: int = 40) -> str:
        with self._lock:
            return "\n".join(line for _, line in self.lines[-n:])
