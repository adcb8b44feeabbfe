"""A peer's JVM (or PyFlink's Python, which starts one) as a child process: logged to a
file, killed with everything it started when the time is up or when we die; and what
every peer's run reports."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


class PeerError(RuntimeError):
    pass


@dataclass
class PeerRun:
    """One run of a peer: ``exit_code`` (0: the job finished), ``wall_s`` (the whole
    process), its work directory, log and checkpoint directory."""

    exit_code: int
    wall_s: float
    work_dir: Path
    log: Path
    checkpoint_dir: Path
    timed_out: bool = False
    command: list[str] = field(default_factory=list)
    #: the largest resident memory of the process and all it started, together
    peak_rss_mib: float | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("work_dir", "log", "checkpoint_dir"):
            data[key] = str(data[key])
        return data


def ensure_installed(peer: str) -> None:
    """``scripts/jvm-servers <peer>``: installs the peer on first use, then a stamp check."""
    done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "jvm-servers"), peer], capture_output=True, text=True)
    if done.returncode != 0:
        raise PeerError(f"scripts/jvm-servers {peer} failed:\n" + "\n".join(done.stderr.strip().splitlines()[-40:]))


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the child gets SIGKILL when the Python process that started it dies; and it
    leads a process group of its own, so a timeout can kill what it started too."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    os.setsid()


class PeakMemory(threading.Thread):
    """Samples the resident memory of ``pid`` and every process under it (a JVM, Python
    workers) every ``period_s``; ``peak_mib`` is the largest sum seen."""

    def __init__(self, pid: int, period_s: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.period_s = pid, period_s
        self.peak_mib = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.done.is_set():
            try:
                root = psutil.Process(self.pid)
                tree = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            total = 0
            for process in tree:
                with contextlib.suppress(psutil.Error):
                    total += process.memory_info().rss
            self.peak_mib = max(self.peak_mib, total / 2**20)
            self.done.wait(self.period_s)


@dataclass
class Finished:
    exit_code: int
    wall_s: float
    timed_out: bool
    peak_rss_mib: float

    def run_fields(self) -> dict[str, Any]:
        """What a ``PeerRun`` takes from the finished process."""
        return asdict(self)


class Started:
    """A peer's process, started by ``start_logged``: still running until ``wait``."""

    def __init__(self, command: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Path):
        self.log = log
        self.started = time.monotonic()
        #: wall clock of the start (time.time()), for comparing with file times
        self.started_wall = time.time()
        self._out = open(log, "wb")
        self.process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            start_new_session=not sys.platform.startswith("linux"),
        )
        self.pid = self.process.pid
        self.memory = PeakMemory(self.process.pid)
        self.memory.start()
        self.timed_out = False

    def poll(self) -> int | None:
        return self.process.poll()

    def kill(self) -> None:
        """SIGKILL the process and everything it started (its process group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def wait(self, timeout_s: float) -> Finished:
        """Wait for the process; after ``timeout_s`` it is killed (exit code -9, ``timed_out``)."""
        try:
            exit_code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self.kill()
            exit_code = self.process.wait()
        finally:
            self.memory.done.set()
            self.memory.join(5)
            self._out.close()
        return Finished(
            exit_code, round(time.monotonic() - self.started, 3), self.timed_out, round(self.memory.peak_mib, 1)
        )


def start_logged(command: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Path) -> Started:
    """Start ``command`` with stdout and stderr into ``log``, sampling the memory of its
    process tree, in a process group of its own that dies with us."""
    return Started(command, cwd=cwd, env=env, log=log)


def run_logged(command: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Path, timeout_s: float) -> Finished:
    """Run ``command`` with stdout and stderr into ``log``, sampling the memory of its
    process tree. After ``timeout_s`` its process group is SIGKILLed (exit code -9)."""
    return start_logged(command, cwd=cwd, env=env, log=log).wait(timeout_s)
