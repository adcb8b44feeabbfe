"""A real Airflow deployment on loopback: PostgreSQL as the metadata database, then the
API server, the scheduler (LocalExecutor), the DAG processor and the triggerer, each in
its own process, as an operator of Airflow would run them.

Nothing here imports Airflow: the components are ``airflow`` commands in subprocesses, and
the tests talk to them only through the REST API (v2, with a JWT from the simple auth
manager's ``/auth/token``) and a browser. Every component writes its log to
``<home>/logs/<component>.log``; ``explain()`` shows their tails when a test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

VENV_BIN = Path(sys.executable).parent
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
#: the health endpoint's names of the components that report a heartbeat
HEARTBEATS = ("scheduler", "triggerer", "dag_processor")
ADMIN = "admin"
#: a user with no role: the simple auth manager lets it read no DAG (the view's 403)
OUTSIDER = "outsider"
#: a user with the viewer role: reads every DAG and edits none (the view's actions' 403)
VIEWER = "viewer"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AirflowDeployment:
    """``start()`` migrates the database and starts every component; ``stop()`` stops
    them (SIGTERM to each process group, SIGKILL after a grace period)."""

    def __init__(self, home: Path, database_uri: str, dags_folder: Path, env: Mapping[str, str] | None = None):
        self.home = home
        self.dags_folder = dags_folder
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.password = "pw-" + secrets.token_hex(12)
        self.outsider_password = "pw-" + secrets.token_hex(12)
        self.viewer_password = "pw-" + secrets.token_hex(12)
        self.logs = home / "logs"
        self.processes: dict[str, subprocess.Popen] = {}
        passwords = home / "passwords.json"
        # nothing from this process's Airflow settings (tests/airflow sets its own): only ours
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        self.env = {
            **inherited,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            # psycopg 3 (the Jdbc connector's driver) for both of Airflow's engines, so the
            # deployment needs neither psycopg2 nor asyncpg
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_uri.replace("postgresql://", "postgresql+psycopg://", 1),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": database_uri.replace(
                "postgresql://", "postgresql+psycopg_async://", 1
            ),
            "AIRFLOW__CORE__FERNET_KEY": _fernet_key(),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
            "AIRFLOW__API__BASE_URL": self.base_url,
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            # one secret for every component: the API server signs the tokens the workers use
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN}:admin,{OUTSIDER}:,{VIEWER}:viewer",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            # the connection form's "Test" button (off by default in Airflow 3)
            "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
            # runs only when triggered: unpausing a @daily example must not start a run of its own
            "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
            # the examples' default workdir is under the temp dir: keep it inside this deployment
            "TMPDIR": str(home / "tmp"),
            # a dead worker's task is found in about 47 s instead of Airflow's 300 + 10 s; the
            # supervisor heartbeats every 5 s, so a live one has nine chances (with 15 s, a CI
            # at a load of 15, whose API server answered nothing for 47 s, retried live tasks)
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "45",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "task-logs"),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "SPARK_LOCAL_IP": "127.0.0.1",
            **(env or {}),
        }
        home.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        (home / "tmp").mkdir(exist_ok=True)
        passwords.write_text(
            json.dumps({ADMIN: self.password, OUTSIDER: self.outsider_password, VIEWER: self.viewer_password})
        )
        self._token: str | None = None

    # ---- lifecycle ------------------------------------------------------------------------
    def start(self, timeout: float = 300) -> AirflowDeployment:
        migrated = subprocess.run(
            [str(VENV_BIN / "airflow"), "db", "migrate"], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if migrated.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed:\n{migrated.stdout[-3000:]}{migrated.stderr[-3000:]}")
        try:
            for component in COMPONENTS:
                self.start_component(component)
            self.wait_until(self._healthy, timeout, "every component healthy")
        except BaseException:
            self.stop()
            raise
        return self

    def start_component(self, component: str) -> None:
        arguments = ["--port", str(self.port), "--host", "127.0.0.1"] if component == "api-server" else []
        log = open(self.logs / f"{component}.log", "ab")
        # own process group: stop() reaches the task processes a component started
        self.processes[component] = subprocess.Popen(
            [str(VENV_BIN / "airflow"), component, *arguments],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.home,
        )
        log.close()

    def stop(self, grace: float = 20) -> None:
        for process in self.processes.values():
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(process, signal.SIGKILL)
            process.wait()
        self.processes.clear()

    def __enter__(self) -> AirflowDeployment:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- REST API -------------------------------------------------------------------------
    def token(self) -> str:
        if self._token is None:
            self._token = self.token_of(ADMIN, self.password)
        return self._token

    def token_of(self, user: str, password: str) -> str:
        response = httpx.post(f"{self.base_url}/auth/token", json={"username": user, "password": password}, timeout=30)
        response.raise_for_status()
        return response.json()["access_token"]

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call to ``/api/v2<path>`` as the admin user."""
        headers = {"Authorization": f"Bearer {self.token()}", **kwargs.pop("headers", {})}
        return httpx.request(method, f"{self.base_url}/api/v2{path}", headers=headers, timeout=60, **kwargs)

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        """``api`` that must succeed; the decoded JSON body (None when empty)."""
        response = self.api(method, path, **kwargs)
        if response.status_code >= 300:
            raise AssertionError(f"{method} {path}: HTTP {response.status_code}: {response.text[:2000]}")
        return response.json() if response.content else None

    # ---- waiting --------------------------------------------------------------------------
    def wait_until(self, condition: Callable[[], Any], timeout: float, what: str, every: float = 1.0) -> Any:
        """Poll ``condition`` until it returns something truthy; fail with the components'
        logs if it never does or a component died."""
        deadline = time.monotonic() + timeout
        while True:
            for component, process in self.processes.items():
                if process.poll() is not None:
                    raise AssertionError(
                        f"airflow {component} exited with {process.returncode} while waiting for "
                        f"{what}\n{self.explain()}"
                    )
            try:
                value = condition()
            except (httpx.TransportError, httpx.HTTPStatusError):
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} after {timeout:.0f} s\n{self.explain()}")
            time.sleep(every)

    def _healthy(self) -> bool:
        response = httpx.get(f"{self.base_url}/api/v2/monitor/health", timeout=10)
        if response.status_code != 200:
            return False
        health = response.json()
        return health.get("metadatabase", {}).get("status") == "healthy" and all(
            (health.get(name) or {}).get("status") == "healthy" for name in HEARTBEATS
        )

    def explain(self, lines: int = 40) -> str:
        parts = []
        for path in sorted(self.logs.glob("*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(parts)


def spark_submit_processes(job_id: str) -> list[Any]:
    """The spark-submit processes (JVM and Python driver) of ``job_id``."""
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if job_id in cmdline and "--job-id" in cmdline:
            found.append(process)
    return found


@contextlib.contextmanager
def paused_worker(job_id: str) -> Iterator[int]:
    """SIGSTOP one PySpark worker of ``job_id``'s driver, SIGCONT on leaving: its subtask
    stops acknowledging, as a subtask stuck on a slow sink or a GC pause would."""
    from tests.support.workspace import pyspark_workers

    workers = sorted({pid for root in spark_submit_processes(job_id) for pid in pyspark_workers(root.pid)})
    if not workers:
        raise AssertionError(f"no PySpark worker of job {job_id} to pause")
    os.kill(workers[0], signal.SIGSTOP)
    try:
        yield workers[0]
    finally:
        try:
            os.kill(workers[0], signal.SIGCONT)
        except ProcessLookupError:
            pass


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass


def _fernet_key() -> str:
    import base64

    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
