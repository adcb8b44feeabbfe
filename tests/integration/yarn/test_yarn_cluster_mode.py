"""YARN cluster mode: the driver runs in the application master, submitted as
docs/deployment.md says (``spark-submit --deploy-mode cluster``, the job file and
seatunnel.yaml shipped with ``--files`` and named by their names). An executor container
is SIGKILLed while the job runs (YARN gives Spark a new one, the subtask restarts from the
latest checkpoint), then the application master with the driver in it: YARN starts
attempt 2 of the same application, which resumes from the latest checkpoint attempt 1
completed, and spark-submit ends with the application's success; every id is counted once.

The job is submitted with ``--restore none`` (start from the beginning, refuse
checkpoints): the arguments of attempt 1, which YARN repeats for attempt 2, so this also
proves a re-attempt resumes instead of refusing (engine/yarn_attempt.py). The staging
directory the configuration travels through is checked to be 700 while the job runs."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from typing import Any

import pytest
import requests

from airflow_provider_seatunnel_ckpt.engine import spark_app
from airflow_provider_seatunnel_ckpt.history.attempts import read_attempts
from tests.support.workspace import VENV_BIN, Driver, Workspace, assert_exactly_once, descendants, open_storage

from .yarn_apps import APPLICATION_MASTER_CLASS, read_ids, sequence_job_on_hdfs, yarn_jvm_pids

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1000)]

ROWS = 200_000
JOB_ID = "yarn-cluster"


def _completed(storage: Any) -> list[int]:
    return sorted(e.checkpoint_id for e in storage.list_checkpoint_entries(JOB_ID, 1) if e.completed)


def _wait_for_checkpoint(storage: Any, above: int, submit: Driver, timeout: float = 360) -> int:
    """The newest completed checkpoint once one above ``above`` exists (the driver's own
    log is in its YARN container, so the test reads the storage). 180 s were too few in a
    CI at a load of 14-17: the application waited 78 s in ACCEPTED for its master's
    container, and had no third checkpoint 102 s after it started running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = _completed(storage)
        if done and done[-1] > above:
            return done[-1]
        assert submit.poll() is None, submit.stderr()[-6000:]
        time.sleep(0.5)
    raise AssertionError(f"no checkpoint above {above} in {timeout} s\n{submit.stderr()[-6000:]}")


def test_cluster_mode_is_exact_through_an_executor_container_kill_and_an_application_master_kill(
    yarn_cluster: Any, workspace: Workspace
) -> None:
    config, job, output = sequence_job_on_hdfs(workspace, yarn_cluster, ROWS)
    python = str(VENV_BIN / "python")
    submit_args = [
        str(VENV_BIN / "spark-submit"),
        "--master", "yarn", "--deploy-mode", "cluster",
        # the driver's container and the executors' fit the NodeManager's 4 GB together
        "--conf", "spark.driver.memory=512m",
        "--conf", f"spark.pyspark.python={python}",
        "--conf", "spark.yarn.maxAppAttempts=2",
        "--files", f"{job},{config}",
        spark_app.__file__, job.name, "--config", config.name, "--job-id", JOB_ID, "--restore", "none",
    ]  # fmt: skip
    env = {**workspace.env, "HADOOP_CONF_DIR": yarn_cluster.conf_dir}
    storage = open_storage(config)
    with Driver(submit_args, env, workspace.logs, "submit") as submit:
        submitted = submit.wait_for(r"Submitted application (application_\d+_\d+)", 120)
        assert submitted, submit.stderr()[-6000:]
        application_id = submitted.group(1)
        # the configuration travelled through the application's staging directory: only
        # its owner may enter it
        staging = re.search(
            r"-> hdfs://[^/]+(/\S+/\.sparkStaging/" + application_id + r")/seatunnel\.yaml", submit.stderr()
        )
        assert staging, submit.stderr()[-6000:]
        status = requests.get(
            f"{yarn_cluster.webhdfs_url}/webhdfs/v1{staging.group(1)}", params={"op": "GETFILESTATUS"}, timeout=30
        ).json()["FileStatus"]
        assert status["permission"] == "700", status
        _wait_for_checkpoint(storage, 2, submit)
        executors = yarn_jvm_pids(application_id)
        assert len(executors) == 2, executors  # one subtask each
        os.kill(executors[0], signal.SIGKILL)
        # two checkpoints after the kill: the restarted subtask acknowledged them
        _wait_for_checkpoint(storage, _completed(storage)[-1] + 1, submit)
        assert executors[0] not in yarn_jvm_pids(application_id)
        (master,) = yarn_jvm_pids(application_id, APPLICATION_MASTER_CLASS)
        for pid in [*descendants(master), master]:  # the AM's JVM and the Python driver it runs
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        latest = _completed(storage)[-1]
        result = submit.wait(420)

    assert result.returncode == 0, result.explain()
    first, second = read_attempts(storage, JOB_ID)  # the second claim folded the first record
    assert second["restored_from"] == latest, (latest, second)
    # one application, two YARN attempts of it
    assert first["application_id"] == second["application_id"] == application_id
    assert storage.read_document(JOB_ID, "job.json")["status"] == "finished"
    assert_exactly_once(read_ids(output), ROWS)
