"""The operator on a real YARN in cluster mode (Hadoop's MiniYARNCluster, the session's
``yarn_cluster``), run as Airflow runs it (``airflow dags test``): the driver runs in the
application master, its files shipped with ``--files``. The application master is
SIGKILLed after two checkpoints; with one application attempt allowed the application
fails, the task's retry submits a new one, which resumes from the latest checkpoint, and
every id of the output on HDFS is there once. Both application ids are in the task log and
in the checkpoint view's answer (and in the task's return value)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_seatunnel_ckpt.history import read_history
from airflow_provider_seatunnel_ckpt.history.attempts import read_attempts
from airflow_provider_seatunnel_ckpt.ui.responses import history_page
from tests.integration.yarn.yarn_apps import APPLICATION_MASTER_CLASS, hdfs_settings, read_ids, yarn_jvm_pids
from tests.support.workspace import assert_exactly_once, checkpoint_config, descendants, open_storage

from .conftest import VENV_BIN, metadata_rows, task_states, xcom_values

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(600)]

DAG_ID = "test_yarn_cluster_retry"
JOB_ID = "yarn-operator"
ROWS = 100_000


def _first_attempt(storage: Any, process: subprocess.Popen, log: Path, timeout: float = 240) -> tuple[str, int]:
    """(application id, latest completed checkpoint) once attempt 1 completed two checkpoints."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = storage.read_document(JOB_ID, "attempts/000001.json") or {}
        done = [e.checkpoint_id for e in storage.list_checkpoint_entries(JOB_ID, 1) if e.completed]
        if record.get("application_id") and len(done) >= 2:
            return record["application_id"], max(done)
        assert process.poll() is None, log.read_text()[-6000:]
        time.sleep(0.5)
    raise AssertionError(f"attempt 1 completed no two checkpoints in {timeout} s\n{log.read_text()[-6000:]}")


def test_a_retry_resumes_a_job_whose_driver_died_in_yarn_cluster_mode(
    airflow_db: Path, yarn_cluster: Any, tmp_path: Path
) -> None:
    plugin_config, output = hdfs_settings(yarn_cluster)
    config = tmp_path / "seatunnel.yaml"
    config.write_text(yaml.safe_dump(checkpoint_config(plugin_config, interval=500, tolerable_failure=10)))
    job = {
        "env": {"job.name": "yarn-etl", "parallelism": 2},
        "source": [{"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 5_000, "batch_size": 1_000}],
        "sink": [output],
    }
    params = {"job": yaml.safe_dump(job), "config": config.read_text(), "python": sys.executable, "job_id": JOB_ID}
    env = {
        **os.environ,
        "HADOOP_CONF_DIR": yarn_cluster.conf_dir,
        "AIRFLOW_CONN_SPARK_YARN": json.dumps(
            {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}
        ),
    }
    log = tmp_path / "dags-test.log"
    storage = open_storage(config)
    started = time.monotonic()
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [str(VENV_BIN / "airflow"), "dags", "test", DAG_ID, "-c", json.dumps(params)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        first_application, latest = _first_attempt(storage, process, log)
        (master,) = yarn_jvm_pids(first_application, APPLICATION_MASTER_CLASS)
        for pid in [*descendants(master), master]:  # the AM's JVM and the Python driver it runs
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # checkpoints come every 500 ms: one may have completed since the look above (a CI
        # run restored from 3 where 2 was seen); the retry restores the newest at the kill
        latest = max(e.checkpoint_id for e in storage.list_checkpoint_entries(JOB_ID, 1) if e.completed)
        returncode = process.wait(timeout=420)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    text = log.read_text(errors="replace")
    print(f"dags test took {time.monotonic() - started:.0f} s")
    assert returncode == 0, text[-8000:]
    assert task_states(DAG_ID) == {"etl": ("success", 2)}

    first, second = read_attempts(storage, JOB_ID)  # the second claim folded the first record
    assert second["restored_from"] == latest and second["outcome"] == "finished", second
    second_application = second["application_id"]
    assert second_application and second_application != first_application
    for application in (first_application, second_application):
        assert f"the driver ran in YARN application {application}" in text, text[-8000:]
    returned = xcom_values(DAG_ID)[("etl", "return_value")]
    assert [a["application_id"] for a in returned["attempts"]] == [first_application, second_application]
    assert_exactly_once(read_ids(output), ROWS)

    # the checkpoint view's /api/history answer, as its route builds it from the task's XCom
    from airflow_provider_seatunnel_ckpt.ui.locate import storage_hook, task_job

    ((run,),) = metadata_rows("SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", DAG_ID)
    task = task_job(DAG_ID, run, "etl", -1)
    hook = storage_hook(task)
    page = history_page(read_history(hook.storage, JOB_ID), hook.describe(JOB_ID), task.config, 1, 20)
    assert [a.get("application_id") for a in page["attempts"]] == [first_application, second_application]
