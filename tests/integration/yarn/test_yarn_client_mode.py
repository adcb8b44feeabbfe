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
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from tests.integration.engine.support import VENV_BIN, Workspace, assert_exactly_once, open_storage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROWS = 200_000


def _executor_pids(application_id: str) -> list[int]:
    """The executor JVMs YARN runs for the application (not the shells that start them)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args[0].endswith(b"java") and b"org.apache.spark.executor.YarnCoarseGrainedExecutorBackend" in args:
            if application_id.encode() in args:
                pids.append(int(entry.name))
    return sorted(pids)


def _read_ids(options: dict[str, Any]) -> pa.Table:
    source = load_source({**options, "schema": {"fields": {"id": "bigint"}}}, "source[0]")
    batches = [
        batch
        for split in source.splits(1)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
    ]
    return pa.Table.from_batches(batches)


def test_client_mode_is_exact_through_an_executor_container_kill_and_a_driver_kill(
    yarn_cluster: Any, workspace: Workspace
) -> None:
    cluster = yarn_cluster
    base = f"/yarn-{uuid.uuid4().hex[:8]}"
    http = cluster.webhdfs_url.removeprefix("http://")
    config = workspace.write_config(
        {
            "storage.type": "hdfs",
            "fs.defaultFS": cluster.fs_default,
            "seatunnel.hadoop.dfs.namenode.http-address": http,
            "namespace": f"{base}/checkpoint/",
        },
        interval=500,
        tolerable_failure=10,
    )
    output = {
        "plugin_name": "HdfsFile",
        "fs.defaultFS": cluster.fs_default,
        "hdfs_site_path": str(Path(cluster.conf_dir) / "hdfs-site.xml"),
        "path": f"{base}/out",
        "file_format_type": "parquet",
    }
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 10_000, "batch_size": 2_000}, output
    )
    # what a YARN client needs: the cluster's configuration, and the executors' Python
    env = {**workspace.env, "HADOOP_CONF_DIR": cluster.conf_dir, "PYSPARK_PYTHON": str(VENV_BIN / "python")}
    job_id = "yarn-client"
    with workspace.start(job, config, job_id, master="yarn", env=env) as first:
        started = first.wait_for(r"attempt 1: .* Spark application (application_\d+_\d+)", 180)
        assert started, first.stderr()
        application_id = started.group(1)
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 180), first.stderr()
        executors = _executor_pids(application_id)
        assert len(executors) == 2, executors  # one subtask each
        os.kill(executors[0], signal.SIGKILL)
        # YARN starts a new container; the subtask that ran there registers again
        assert first.wait_for(r"subtask-\d/attempt-1 .* connected", 180), first.stderr()
        completed = len(re.findall(r"\(checkpoint\) completed", first.stderr()))
        assert first.wait_for(rf"checkpoint {completed + 2} \(checkpoint\) completed", 180), first.stderr()
        assert executors[0] not in _executor_pids(application_id)
        first.kill()

    storage = open_storage(config)
    latest = max(e.checkpoint_id for e in storage.list_checkpoint_entries(job_id, 1) if e.completed)
    result = workspace.run(job, config, job_id, master="yarn", env=env)
    assert result.returncode == 0, result.explain()
    assert re.search(
        rf"attempt 2: .* from checkpoint {latest};.* Spark application application_\d+_\d+", result.stderr
    ), result.explain()
    assert_exactly_once(_read_ids(output), ROWS)
