"""Build, classpath and launch of the JVM test servers (tests/servers/jvm, docs/testing.md).

``scripts/jvm-servers`` resolves ``tests/servers/jvm/pom.xml`` into ``.cache/m2`` and
builds the launcher jar into ``.cache/jvm-servers`` the first time a JVM server is wanted
(30-45 s and 200 MB from an empty cache; afterwards a stamp check of a few ms).

Every JVM is started with a pipe as its stdin that Python never writes to (except
MiniClusters' commands): the launchers (``servers.Lifeline``, ``servers.MiniClusters``)
end their JVM when it closes. :meth:`JvmProcess.stop` closes it; if pytest dies, the
kernel closes it, so no test leaves a JVM behind either way.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "jvm-servers"
# Short-lived test servers on 2 cores: one GC thread, and the quick (C1) JIT only.
JVM_OPTIONS = [
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.net.preferIPv4Stack=true",
    "-Djava.awt.headless=true",
]

_built: dict[str, str] | None = None
_build_lock = threading.Lock()


class JvmServerError(RuntimeError):
    pass


def build() -> dict[str, str]:
    """The launcher jar and the classpath of each profile (``kafka``, ``hadoop``)."""
    global _built
    with _build_lock:
        if _built is None:
            done = subprocess.run(["bash", str(ROOT / "scripts" / "jvm-servers")], capture_output=True, text=True)
            if done.returncode != 0:
                lines = done.stderr.strip().splitlines()
                if len(lines) == 1:  # a missing tool: the one line says what to install
                    raise JvmServerError(lines[0])
                raise JvmServerError("scripts/jvm-servers failed:\n" + "\n".join(lines[-40:]))
            _built = {"jar": str(CACHE / "jvm-test-servers.jar")}
            for profile in ("kafka", "hadoop"):
                _built[profile] = (CACHE / f"{profile}.classpath").read_text().strip()
    return _built


def classpath(profile: str) -> str:
    built = build()
    return f"{built['jar']}{os.pathsep}{built[profile]}"


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (held together while choosing, so all differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with closing(socket.socket()) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


class JvmProcess:
    """One JVM: ``java [options] -cp <profile's classpath> MAIN ARGS``, stdin a lifeline,
    stderr (the server's log) to ``log_path``, stdout's lines readable with :meth:`read_line`."""

    def __init__(
        self,
        profile: str,
        main_class: str,
        args: Sequence[str],
        *,
        log_path: Path,
        cwd: Path | None = None,
        heap: str = "512m",
        options: Sequence[str] = (),
    ):
        self.profile, self.main_class, self.args = profile, main_class, list(args)
        self.log_path, self.cwd, self.heap, self.options = Path(log_path), cwd, heap, list(options)
        self.process: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> JvmProcess:
        java = shutil.which("java")
        if java is None:
            raise JvmServerError(
                "Java 17 or newer is required for the JVM test servers "
                "(Debian/Ubuntu: apt-get install openjdk-17-jdk-headless)"
            )
        command = [
            java,
            f"-Xmx{self.heap}",
            *JVM_OPTIONS,
            *self.options,
            "-cp",
            classpath(self.profile),
            self.main_class,
            *self.args,
        ]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.cwd,
                text=True,
                start_new_session=True,
            )
        threading.Thread(target=self._read_stdout, daemon=True, name=f"jvm-stdout-{self.pid}").start()
        return self

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def read_line(self, timeout: float) -> str:
        """The next line the JVM prints; JvmServerError (with the log's tail) if none in time."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise JvmServerError(f"{self.main_class} printed nothing in {timeout:.0f} s\n{self.log_tail()}") from None
        if line is None:
            self._lines.put(None)
            raise JvmServerError(f"{self.main_class} exited ({self.process.poll()})\n{self.log_tail()}")
        return line

    def send(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return f"(no log at {self.log_path})"
        return f"--- last {min(lines, len(text))} lines of {self.log_path} ---\n" + "\n".join(text[-lines:])

    def close_stdin(self) -> None:
        if self.process is not None and self.process.stdin and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except OSError:
                pass

    def stop(self, timeout: float = 30) -> int | None:
        """Close stdin (the launcher shuts the server down and exits); kill after timeout."""
        if self.process is None:
            return None
        self.close_stdin()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return self.kill()

    def kill(self) -> int:
        """SIGKILL, as a crash would (no shutdown of the server)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        return self.process.wait(timeout=30)


class JvmServer:
    """A server of one or more JVMs in its own working directory (a temporary one, removed
    at stop, unless given): ``with Server(...) as server:`` starts and stops it."""

    def __init__(self, workdir: Path | None, prefix: str):
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=prefix))

    def start(self) -> JvmServer:
        raise NotImplementedError

    def processes_to_stop(self) -> list[JvmProcess]:
        raise NotImplementedError

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes_to_stop() if p.pid is not None]

    def stop(self, timeout: float = 60) -> None:
        processes = self.processes_to_stop()
        for process in processes:  # close every lifeline first: they stop together
            process.close_stdin()
        for process in processes:
            process.stop(timeout=timeout)
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_main(
    profile: str,
    main_class: str,
    args: Sequence[str],
    *,
    timeout: float = 120,
    heap: str = "256m",
    cwd: Path | None = None,
) -> str:
    """Run a short JVM program (StorageTool, Kinit) to its end; its stdout, or JvmServerError."""
    command = [
        shutil.which("java") or "java",
        f"-Xmx{heap}",
        *JVM_OPTIONS,
        "-cp",
        classpath(profile),
        main_class,
        *args,
    ]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if done.returncode != 0:
        raise JvmServerError(
            f"{main_class} {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        )
    return done.stdout


def wait_until(check, timeout: float, what: str, process: JvmProcess | None = None, interval: float = 0.2):
    """Poll check() until it returns a true value; JvmServerError with the log's tail at timeout."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        if process is not None and not process.alive():
            raise JvmServerError(f"{what}: the JVM exited ({process.process.poll()})\n{process.log_tail()}")
        try:
            result = check()
            if result:
                return result
        except Exception as exc:  # not ready yet
            last_error = exc
        time.sleep(interval)
    tail = process.log_tail() if process is not None else ""
    raise JvmServerError(f"{what}: not ready in {timeout:.0f} s (last error: {last_error!r})\n{tail}")
