"""A checkpointed job on a real YARN: Hadoop's MiniYARNCluster (a ResourceManager and a
NodeManager over a MiniDFSCluster, tests/servers/hadoop.py), submitted as
docs/deployment.md says, ``--master yarn`` in client mode with ``HADOOP_CONF_DIR`` naming
the cluster's configuration. The executors are YARN containers; the checkpoints and the
output are on the cluster's HDFS. An executor container is SIGKILLed while the job runs
(YARN gives Spark a new one, the subtask restarts from the latest checkpoint), then the
driver; the rerun restores the latest checkpoint and every id is counted once."""

from __future__ import annotations

import os
import re
import signal
from typing import Any

import pytest

from tests.support.workspace import VENV_BIN, Workspace, assert_exactly_once, open_storage

from .yarn_apps import read_ids, sequence_job_on_hdfs, yarn_jvm_pids

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROWS = 200_000


def test_client_mode_is_exact_through_an_executor_container_kill_and_a_driver_kill(
    yarn_cluster: Any, workspace: Workspace
) -> None:
    config, job, output = sequence_job_on_hdfs(workspace, yarn_cluster, ROWS)
    # what a YARN client needs: the cluster's configuration, and the executors' Python
    env = {**workspace.env, "HADOOP_CONF_DIR": yarn_cluster.conf_dir, "PYSPARK_PYTHON": str(VENV_BIN / "python")}
    job_id = "yarn-client"
    with workspace.start(job, config, job_id, master="yarn", env=env) as first:
        started = first.wait_for(r"attempt 1: .* Spark application (application_\d+_\d+)", 180)
        assert started, first.stderr()
        application_id = started.group(1)
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 180), first.stderr()
        executors = yarn_jvm_pids(application_id)
        assert len(executors) == 2, executors  # one subtask each
        os.kill(executors[0], signal.SIGKILL)
        # YARN starts a new container; the subtask that ran there registers again
        assert first.wait_for(r"subtask-\d/attempt-1 .* connected", 180), first.stderr()
        assert first.wait_for_completed(first.completed() + 2, 180), first.stderr()
        assert executors[0] not in yarn_jvm_pids(application_id)
        first.kill()

    storage = open_storage(config)
    latest = max(e.checkpoint_id for e in storage.list_checkpoint_entries(job_id, 1) if e.completed)
    result = workspace.run(job, config, job_id, master="yarn", env=env)
    assert result.returncode == 0, result.explain()
    assert re.search(
        rf"attempt 2: .* from checkpoint {latest};.* Spark application application_\d+_\d+", result.stderr
    ), result.explain()
    assert_exactly_once(read_ids(output), ROWS)
