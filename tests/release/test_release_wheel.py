"""The release as a new user gets it: README's own commands, in a fresh virtualenv.

``uv build --wheel`` from this clone, the wheel (with the ``engine`` extra, which README's
DAG needs for its job) installed into an empty virtualenv, which pulls Airflow and the
Spark provider from the index as a user's ``pip install`` would, not from ``uv.lock``.
Then ``airflow providers list`` shows the provider, and README's DAG, unchanged (its
"In a DAG" block), runs with ``airflow dags test``: its ``etl`` task's driver is killed
after a checkpoint on each of its three tries, so the task fails for good,
``CheckpointRecoveryOperator`` resumes the job from the latest completed checkpoint, the
sensor sees the final checkpoint, and the run ends in success with every id written once.

Nothing here imports Airflow: it is a different installation, driven by its own commands.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pyarrow.dataset as ds
import pytest

from tests.support.workspace import assert_exactly_once

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]
ROWS = 150_000
TRIES = 3  # README's etl: retries=2

CONFIG = """\
seatunnel:
  engine:
    checkpoint:
      interval: 1000
      timeout: 60000
      tolerable-failure: 5
      storage:
        type: hdfs
        max-retained: 3
        plugin-config:
          storage.type: local
          namespace: {workdir}/checkpoints/
"""

JOB = """\
env:
  job.name: nightly-etl
  parallelism: 2
source:
  - {{plugin_name: Sequence, rows: {rows}, batch_size: 2000, rows_per_second: 15000}}
sink:
  - {{plugin_name: File, path: "file://{workdir}/output/", format: parquet}}
"""


def _uv() -> str:
    found = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    assert os.access(found, os.X_OK), "uv is missing: run scripts/bootstrap"
    return found


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _readme_dag() -> str:
    section = (ROOT / "README.md").read_text().split("\n## In a DAG\n", 1)[1].split("\n## ", 1)[0]
    (body,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return body


def _highest_checkpoint(workdir: Path) -> int:
    ids = [int(p.name.removeprefix("chk-")) for p in (workdir / "checkpoints").glob("*/pipeline-*/chk-*")]
    return max(ids, default=0)


class DriverKiller(threading.Thread):
    """SIGKILLs each of the first ``times`` drivers of this installation (the Python
    process running the engine's spark_app.py out of ``venv``) once a checkpoint newer
    than the ones before it has completed."""

    def __init__(self, venv: Path, workdir: Path, times: int):
        super().__init__(daemon=True)
        self.venv, self.workdir, self.times = str(venv), workdir, times
        self.killed: list[int] = []
        self.stopped = threading.Event()

    def _drivers(self) -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter(["cmdline"]):
            cmdline = " ".join(process.info["cmdline"] or [])
            if self.venv in cmdline and "spark_app.py" in cmdline and "java" not in cmdline.split(" ", 1)[0]:
                found.append(process)
        return found

    def run(self) -> None:
        seen_before = 0
        while not self.stopped.is_set() and len(self.killed) < self.times:
            drivers = [p for p in self._drivers() if p.pid not in self.killed]
            if drivers and _highest_checkpoint(self.workdir) > seen_before:
                for driver in drivers:
                    driver.send_signal(signal.SIGKILL)
                    self.killed.append(driver.pid)
                seen_before = _highest_checkpoint(self.workdir)
            time.sleep(0.2)


def test_the_built_wheel_installs_lists_the_provider_and_runs_readmes_dag_through_a_recovery(tmp_path: Path) -> None:
    uv = _uv()
    dist, venv, home, workdir = (tmp_path / name for name in ("dist", "venv", "home", "work"))
    _run([uv, "build", "--wheel", "--out-dir", str(dist)], cwd=ROOT, timeout=300)
    (wheel,) = dist.glob("*.whl")
    base_python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    _run([uv, "venv", "--quiet", "--python", base_python, str(venv)], timeout=120)
    _run([uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), f"{wheel}[engine]"], timeout=900)

    dags = home / "dags"
    (dags / "jobs").mkdir(parents=True)
    (dags / "readme_dag.py").write_text(_readme_dag())
    (dags / "jobs" / "etl.yaml").write_text(JOB.format(rows=ROWS, workdir=workdir))
    (dags / "seatunnel.yaml").write_text(CONFIG.format(workdir=workdir))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VIRTUAL_ENV", "PYTHON"))},
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        # README's etl has retries=2 and Airflow's default delay of 5 minutes between them
        "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "1",
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[2]"}',
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    airflow = str(venv / "bin" / "airflow")
    _run([airflow, "db", "migrate"], env=env, timeout=600)
    listed = _run([airflow, "providers", "list"], env=env, timeout=300).stdout
    assert "airflow-provider-seatunnel-ckpt" in listed, listed[-2000:]

    killer = DriverKiller(venv, workdir, TRIES)
    killer.start()
    try:
        run = subprocess.run(
            [airflow, "dags", "test", "nightly_etl"], capture_output=True, text=True, env=env, cwd=dags, timeout=1200
        )
    finally:
        killer.stopped.set()
        killer.join(10)
    log = run.stdout[-6000:] + run.stderr[-6000:]
    assert len(killer.killed) == TRIES, f"drivers killed: {killer.killed}\n{log}"
    assert run.returncode == 0, log

    states = _run(
        [airflow, "tasks", "states-for-dag-run", "nightly_etl", _latest_run_id(airflow, env), "-o", "json"],
        env=env,
        timeout=300,
    ).stdout
    assert re.search(r'"task_id": "etl".*?"state": "failed"', states), states
    assert re.search(r'"task_id": "recover".*?"state": "success"', states), states
    assert re.search(r'"task_id": "final_checkpoint".*?"state": "success"', states), states

    assert_exactly_once(ds.dataset(str(workdir / "output"), format="parquet").to_table(columns=["id"]), ROWS)


def _latest_run_id(airflow: str, env: dict[str, str]) -> str:
    listed = _run([airflow, "dags", "list-runs", "nightly_etl", "-o", "plain"], env=env, timeout=300).stdout
    runs = re.findall(r"\b(manual__\S+)", listed)
    assert runs, listed
    return runs[0]
