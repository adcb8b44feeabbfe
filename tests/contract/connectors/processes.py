"""Driver processes forked from one that has already imported the engine and the connectors.

Each run of a case is a process of its own, so a kill is a real SIGKILL; starting a fresh
interpreter and importing the engine, PyArrow and a connector's client takes about 2.5 s,
which the suite would pay some 200 times. A ``multiprocessing`` fork server imports them
once; every run is a fork of it (milliseconds), with its own environment, working
directory and output files.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.workspace import RunResult

#: imported once by the fork server: what every run needs before its job is read
PRELOAD = [
    "tests.contract.connectors.driver",
    "airflow_provider_seatunnel_ckpt.cli",
    "airflow_provider_seatunnel_ckpt.engine.runner",
    "airflow_provider_seatunnel_ckpt.engine.subtask",
    "airflow_provider_seatunnel_ckpt.engine.transport",
    "airflow_provider_seatunnel_ckpt.connectors",
    "pyspark",
    "pyarrow.parquet",
]

_context: Any = None


def _fork_context() -> Any:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _child(argv: Sequence[str], env: Mapping[str, str], cwd: str, stdout: str, stderr: str) -> None:
    os.setsid()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    for fd, path in ((1, stdout), (2, stderr)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    from tests.contract.connectors.driver import main

    code = 1
    try:
        code = main(list(argv))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # the subtasks' threads end with the process, as executors do with a driver


class ForkedDriver:
    """One run: ``tests.contract.connectors.driver`` with ``argv``, output to ``log_dir/name.*``."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], log_dir: Path, name: str):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.args = list(argv)
        self.stdout_path = log_dir / f"{name}.stdout"
        self.stderr_path = log_dir / f"{name}.stderr"
        self.started = time.monotonic()
        self.process = _fork_context().Process(
            target=_child,
            args=(self.args, dict(env), str(log_dir), str(self.stdout_path), str(self.stderr_path)),
            daemon=False,
        )
        self.process.start()

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace") if self.stdout_path.exists() else ""

    def poll(self) -> int | None:
        return self.process.exitcode

    def kill(self) -> None:
        if self.process.exitcode is None:
            os.kill(self.pid, 9)
        self.process.join(30)

    def wait(self, timeout: float = 120) -> RunResult:
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.kill()
            raise AssertionError(f"run {' '.join(self.args)} still running after {timeout} s\n{self.stderr()[-8000:]}")
        return RunResult(int(self.process.exitcode), self.stdout(), self.stderr(), time.monotonic() - self.started)

    def __enter__(self) -> ForkedDriver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()
