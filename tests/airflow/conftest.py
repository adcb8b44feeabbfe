"""Real Airflow for the tests in this directory, on a throw-away AIRFLOW_HOME.

The environment is set when this module is imported, before anything imports
Airflow (Airflow reads AIRFLOW_HOME and its config once, at import). No other test
directory imports Airflow, so this holds for the whole session; the guard below says
so loudly if that ever changes. ``airflow db migrate`` runs once per session, in a
subprocess; connections come from ``AIRFLOW_CONN_<ID>`` JSON environment variables,
``spark_default`` is ``local[2]``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
EXAMPLE_DAGS = ROOT / "dags_examples"
TEST_DAGS = Path(__file__).resolve().parent / "dags"

if "airflow" in sys.modules and not os.environ.get("AIRFLOW_HOME", "").startswith(tempfile.gettempdir()):
    raise pytest.UsageError(
        "Airflow was imported before tests/airflow/conftest.py could point AIRFLOW_HOME at a throw-away "
        "directory; run these tests in their own pytest process"
    )

AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="seatunnel-ckpt-airflow-home-"))
# Only by this process: Airflow's supervisors fork (WatchedSubprocess), and a forked child
# that exited through sys.exit would run the parent's atexit handlers.
_SESSION_PID = os.getpid()
atexit.register(lambda: os.getpid() == _SESSION_PID and shutil.rmtree(AIRFLOW_HOME, True))
DAGS_FOLDER = AIRFLOW_HOME / "dags"
DAGS_FOLDER.mkdir()
for source in [*EXAMPLE_DAGS.glob("*.py"), *TEST_DAGS.glob("*.py")]:
    shutil.copy(source, DAGS_FOLDER / source.name)

os.environ.update(
    {
        "AIRFLOW_HOME": str(AIRFLOW_HOME),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "SEATUNNEL_CKPT_CACHE_DIR": str(AIRFLOW_HOME / "cache"),
    }
)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """Migrate the metadata database once per session; returns AIRFLOW_HOME."""
    marker = AIRFLOW_HOME / ".migrated"
    if not marker.exists():
        done = subprocess.run(
            [str(VENV_BIN / "airflow"), "db", "migrate"], capture_output=True, text=True, timeout=300, env=os.environ
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        marker.touch()
    return AIRFLOW_HOME


#: how long a test that runs ``airflow dags test`` may take (``pytestmark`` of its module):
#: above pytest-timeout's 600 s, for the example DAGs' runs below
DAGS_TEST_PYTEST_TIMEOUT = 1000


def airflow_dags_test(dag_id: str, conf: dict[str, Any], env: dict[str, str] | None = None, timeout: float = 900):
    """``airflow dags test DAG_ID -c CONF`` in a subprocess; the CompletedProcess.

    ``timeout`` stays under DAGS_TEST_PYTEST_TIMEOUT, so a run that is too slow fails here,
    with its output. Fresh-clone CIs at a load of 8-17 took 247-300 s, then 313-501 s, for
    each example DAG (two recovery examples past the 300 s, and then within 40 s of the
    540 s, this once was), where the project CI's run of 4f1dbf3 took 59-137 s for them."""
    return subprocess.run(
        [str(VENV_BIN / "airflow"), "dags", "test", dag_id, "-c", json.dumps(conf)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def task_states(dag_id: str) -> dict[str, tuple[str, int]]:
    """task_id -> (state, try_number) of the DAG's latest run, straight from the DB."""
    ((run_id,),) = metadata_rows("SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", dag_id)
    rows = metadata_rows(
        "SELECT task_id, state, try_number FROM task_instance WHERE dag_id = ? AND run_id = ?", dag_id, run_id
    )
    return {task_id: (state, try_number) for task_id, state, try_number in rows}


def xcom_values(dag_id: str) -> dict[tuple[str, str], Any]:
    """(task_id, key) -> value of the DAG's latest run."""
    ((run_id,),) = metadata_rows("SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", dag_id)
    rows = metadata_rows("SELECT task_id, key, value FROM xcom WHERE dag_id = ? AND run_id = ?", dag_id, run_id)
    # sqlite hands JSON numbers back as numbers, everything else as JSON text
    return {(task_id, key): json.loads(v) if isinstance(v, (str, bytes)) else v for task_id, key, v in rows}


def metadata_rows(sql: str, *args: Any) -> list[tuple]:
    """The rows of a query (``?`` placeholders) on the metadata DB, through Airflow's own
    engine, the connections dag.test() in this process wrote with."""
    from airflow.utils.session import create_session
    from sqlalchemy import text

    pieces = sql.split("?")
    assert len(pieces) == len(args) + 1, "one argument per placeholder"
    named = "".join(piece + (f":p{i}" if i < len(args) else "") for i, piece in enumerate(pieces))
    with create_session() as session:
        return [tuple(row) for row in session.execute(text(named), {f"p{i}": a for i, a in enumerate(args)})]


def output(process: subprocess.CompletedProcess) -> str:
    return f"--- stdout ---\n{process.stdout[-6000:]}\n--- stderr ---\n{process.stderr[-6000:]}"
