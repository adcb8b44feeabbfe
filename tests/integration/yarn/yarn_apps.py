"""What the YARN tests look at: the JVMs YARN runs for an application (to kill one), the
checkpoint and output settings on the cluster's HDFS, and the ids of the output."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches

EXECUTOR_CLASS = b"org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"
APPLICATION_MASTER_CLASS = b"org.apache.spark.deploy.yarn.ApplicationMaster"


def yarn_jvm_pids(application_id: str, main_class: bytes = EXECUTOR_CLASS) -> list[int]:
    """The JVMs of ``main_class`` YARN runs for the application (not the shells that
    start them): its executors, or its application master."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args[0].endswith(b"java") and main_class in args and application_id.encode() in b" ".join(args):
            pids.append(int(entry.name))
    return sorted(pids)


def hdfs_settings(cluster: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(checkpoint plugin-config, HdfsFile sink) under a fresh directory of the cluster's HDFS."""
    base = f"/yarn-{uuid.uuid4().hex[:8]}"
    storage = {
        "storage.type": "hdfs",
        "fs.defaultFS": cluster.fs_default,
        "seatunnel.hadoop.dfs.namenode.http-address": cluster.webhdfs_url.removeprefix("http://"),
        "namespace": f"{base}/checkpoint/",
    }
    output = {
        "plugin_name": "HdfsFile",
        "fs.defaultFS": cluster.fs_default,
        "hdfs_site_path": str(Path(cluster.conf_dir) / "hdfs-site.xml"),
        "path": f"{base}/out",
        "file_format_type": "parquet",
    }
    return storage, output


def sequence_job_on_hdfs(workspace: Any, cluster: Any, rows: int) -> tuple[Path, Path, dict[str, Any]]:
    """(seatunnel.yaml, job file, HdfsFile sink): ``rows`` ids at 10,000 rows/s into the
    cluster's HDFS, checkpoints there every 500 ms."""
    plugin_config, output = hdfs_settings(cluster)
    config = workspace.write_config(plugin_config, interval=500, tolerable_failure=10)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 10_000, "batch_size": 2_000}, output
    )
    return config, job, output


def read_ids(sink_options: dict[str, Any]) -> pa.Table:
    """The committed output of an HdfsFile sink, read back with its source."""
    source = load_source({**sink_options, "schema": {"fields": {"id": "bigint"}}}, "source[0]")
    batches = [
        batch
        for split in source.splits(1)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
    ]
    return pa.Table.from_batches(batches)
