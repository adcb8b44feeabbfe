"""spark-submit in client mode from the driver host, as the Airflow operator submits a
job (the engine archive in ``--py-files``, ``spark_app.py`` as the application), with
checkpoints on the storage host's WebHDFS and output on its S3; and the control channel
refusing a connection from another host that does not hold the job's token."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.engine import spark_app
from airflow_provider_seatunnel_ckpt.operators.engine_archive import engine_archive
from tests.support.cluster_job import COMPLETED, SPARK_CONF
from tests.support.workspace import VENV_BIN, Driver, Workspace

from .cluster import NetCluster

pytestmark = pytest.mark.slow

ROWS = 1_200_000
CONTROL_PORT = 47321


def test_spark_submit_from_the_driver_host_and_a_stranger_is_refused(net_cluster: NetCluster, tmp_path: Path) -> None:
    cluster = net_cluster
    bucket = cluster.ready_for_a_job("submit")
    options = cluster.s3_options()
    output = f"s3://{bucket}/out/"
    storage = cluster.address("storage")
    workspace = Workspace(tmp_path, cluster.env("driver"), master=cluster.master_url)
    config = workspace.write_config(
        {
            "storage.type": "hdfs",
            "fs.defaultFS": f"hdfs://{storage}:8020",
            "seatunnel.hadoop.dfs.namenode.http-address": f"{storage}:{cluster.webhdfs_port}",
            "namespace": "/seatunnel/checkpoint/",
        },
        interval=1000,
    )
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": ROWS, "splits": 8, "rows_per_second": 40_000},
        {"plugin_name": "File", "path": output, "format": "parquet", **options},
        name="submitted",
        parallelism=4,
    )
    conf = [
        arg
        for item in (
            *SPARK_CONF,
            f"spark.seatunnel.control.port={CONTROL_PORT}",
            f"spark.pyspark.driver.python={VENV_BIN / 'python'}",
            "spark.log.level=WARN",
        )
        for arg in ("--conf", item)
    ]
    submit = [
        str(VENV_BIN / "spark-submit"),
        "--master",
        cluster.master_url,
        "--deploy-mode",
        "client",
        "--name",
        "submitted",
        "--py-files",
        str(engine_archive()),
        *conf,
        spark_app.__file__,
        str(job),
        "--config",
        str(config),
        "--job-id",
        "submitted",
        "--restore",
        "latest",
    ]
    with Driver(cluster.hosts.command("driver", submit), cluster.env("driver"), workspace.logs, "submit") as driver:
        assert driver.wait_for(COMPLETED.pattern, 180, stream="stdout"), driver.stdout()[-6000:]
        listening = cluster.hosts.run("driver", ["ss", "-Hltn", f"sport = :{CONTROL_PORT}"]).stdout
        assert f"{cluster.address('driver')}:{CONTROL_PORT}" in listening, listening

        stranger = cluster.probe("worker-a", "intrude", cluster.address("driver"), str(CONTROL_PORT))
        assert stranger["wrong_token"].startswith("rejected"), stranger
        assert stranger["garbage"] == "closed", stranger
        result = driver.wait(300)
    assert result.returncode == 0, result.explain()
    # spark-submit hands the Python driver's stderr to its stdout
    refused = re.findall(
        rf"control channel: rejected connection \d+ from {re.escape(cluster.address('worker-a'))}:\d+"
        r"(?: \(claims to be 'intruder'\))?: .+",
        result.stdout,
    )
    assert len(refused) == 2, result.stdout[-6000:]
    assert "0" * 64 not in result.stdout + result.stderr

    counted = cluster.tally(output, ROWS, options)
    assert counted["lost"] == counted["duplicated"] == counted["unexpected"] == 0 and counted["rows"] == ROWS, counted[
        "text"
    ]
