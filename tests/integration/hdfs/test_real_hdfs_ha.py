"""HDFS on Hadoop's own HA pair (MiniDFSCluster, two NameNodes, tests/servers/hadoop.py),
configured as a SeaTunnel user configures it, with fail-overs while the data moves:

* the ``HdfsFile`` sink and source with SeaTunnel's options (``fs.defaultFS: hdfs://<name
  service>`` and ``hdfs_site_path``, the cluster's own ``hdfs-site.xml``): a two-phase
  commit whose NameNodes swap between the prepare and the commit;
* a real job whose checkpoint storage is that name service, configured with the
  ``seatunnel.yaml`` HA keys of SeaTunnel's example (docs/storage.md, "HDFS HA"), writing
  through ``HdfsFile``: the NameNodes swap while it checkpoints, its driver is killed,
  and the rerun, on the other NameNode, ends with every id once;
* the checkpoint storage with the NameNodes swapping at a chosen step inside one
  checkpoint's write.

Every fail-over is undone at the end: the session's cluster leaves nn1 active.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.storage.model import PipelineState
from tests.support.workspace import Workspace, assert_exactly_once, open_storage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCHEMA = {"fields": {"id": "bigint", "name": "string"}}
#: what the Sequence source writes
IDS = {"fields": {"id": "bigint"}}
ROWS = 200_000


@pytest.fixture
def cluster(hdfs_ha_cluster: Any) -> Iterator[Any]:
    """The session's HA pair, nn1 active again after the test whatever it did."""
    yield hdfs_ha_cluster
    if hdfs_ha_cluster.active_namenode["id"] != "nn1":
        hdfs_ha_cluster.failover()


def _hdfs_file(cluster: Any, path: str, **options: Any) -> dict[str, Any]:
    """HdfsFile as in SeaTunnel's docs: the name service and the cluster's hdfs-site.xml."""
    return {
        "plugin_name": "HdfsFile",
        "fs.defaultFS": cluster.fs_default,
        "hdfs_site_path": str(Path(cluster.conf_dir) / "hdfs-site.xml"),
        "path": path,
        **options,
    }


def _ha_plugin_config(cluster: Any, namespace: str) -> dict[str, str]:
    """SeaTunnel's seatunnel.yaml HA keys, with the mini cluster's addresses; its NameNodes
    serve HTTP on their own ports, not 9870, so their http-address keys are given too."""
    service = cluster.fs_default.removeprefix("hdfs://")
    config = {
        "storage.type": "hdfs",
        "fs.defaultFS": cluster.fs_default,
        "seatunnel.hadoop.dfs.nameservices": service,
        f"seatunnel.hadoop.dfs.ha.namenodes.{service}": "nn1,nn2",
        f"seatunnel.hadoop.dfs.client.failover.proxy.provider.{service}": (
            "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"
        ),
        "namespace": namespace,
    }
    for namenode in cluster.namenodes:
        nn = namenode["id"]
        config[f"seatunnel.hadoop.dfs.namenode.rpc-address.{service}.{nn}"] = f"127.0.0.1:{namenode['rpc_port']}"
        config[f"seatunnel.hadoop.dfs.namenode.http-address.{service}.{nn}"] = f"127.0.0.1:{namenode['http_port']}"
    return config


def _read_back(options: dict[str, Any], schema: dict[str, Any] = SCHEMA) -> pa.Table:
    source = load_source({**options, "schema": schema}, "source[0]")
    batches = [
        batch
        for split in source.splits(1)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
    ]
    return pa.Table.from_batches(batches) if batches else pa.table({"id": pa.array([], pa.int64())})


def _listing(cluster: Any, path: str) -> list[str]:
    """The NameNode's own answer (plain WebHDFS), not our client's."""
    answer = requests.get(
        f"{cluster.webhdfs_url}/webhdfs/v1{path}", params={"op": "LISTSTATUS", "user.name": "tester"}, timeout=30
    )
    answer.raise_for_status()
    return sorted(s["pathSuffix"] for s in answer.json()["FileStatuses"]["FileStatus"])


@pytest.mark.parametrize("file_format", ["text", "parquet"])
def test_hdfs_file_commits_across_a_failover_between_prepare_and_commit(cluster: Any, file_format: str) -> None:
    path = f"/seatunnel-{uuid.uuid4().hex[:8]}/{file_format}"
    options = _hdfs_file(cluster, path, file_format_type=file_format)
    sink = load_sink(options, "sink[0]")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    infos = []
    for subtask in range(2):
        writer = sink.create_writer("hdfs-ha", subtask, 0)
        writer.open(0)
        ids = range(subtask * 500, subtask * 500 + 500)
        writer.write(pa.RecordBatch.from_pylist([{"id": i, "name": f"n{i}"} for i in ids], schema=schema))
        infos.append(writer.prepare_commit(1))
    assert _listing(cluster, path) == ["_staging"], "staged files must stay invisible until the commit"

    assert [nn["state"] for nn in cluster.failover()] == ["standby", "active"]
    committer = sink.create_committer("hdfs-ha")
    committer.commit(infos)
    committer.commit(infos)  # a replay after a restore: the same files, no second copy

    visible = [name for name in _listing(cluster, path) if not name.startswith(("_", "."))]
    assert len(visible) == 2, visible
    assert_exactly_once(_read_back(options), 1_000)


def test_a_job_on_hdfs_ha_survives_a_failover_and_a_driver_kill(cluster: Any, workspace: Workspace) -> None:
    """Checkpoints every 300 ms while the NameNodes swap: a checkpoint write meets the
    standby (or the pair half-way) and goes to the new active one; then the driver is
    killed and the rerun restores from what the new active NameNode holds."""
    base = f"/seatunnel-{uuid.uuid4().hex[:8]}"
    config = workspace.write_config(_ha_plugin_config(cluster, f"{base}/checkpoint/"), interval=300)
    output = _hdfs_file(cluster, f"{base}/out", file_format_type="parquet")
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 20_000, "batch_size": 2_000}, output
    )
    job_id = "hdfs-ha-failover"
    failed_over: list[int] = []
    with workspace.start(job, config, job_id) as first:
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 120), first.stderr()

        def fail_over() -> None:
            cluster.failover()
            failed_over.append(first.completed())

        swap = threading.Thread(target=fail_over)
        swap.start()
        swap.join(120)
        assert failed_over, "the fail-over did not finish"
        after = failed_over[0] + 3  # completed checkpoints, counted: ids only go up, so also an id floor
        assert first.wait_for_completed(after, 120), first.stderr()
        first.kill()
    assert cluster.active_namenode["id"] == "nn2"

    storage = open_storage(config)
    completed = [e.checkpoint_id for e in storage.list_checkpoint_entries(job_id, 1) if e.completed]
    assert completed and max(completed) >= after, completed
    assert storage.verify_checkpoint(job_id, 1, max(completed)) == []

    result = workspace.run(job, config, job_id)
    assert result.returncode == 0, result.explain()
    assert re.search(r"attempt 2: .* from checkpoint \d+", result.stderr), result.explain()
    assert_exactly_once(_read_back(output, IDS), ROWS)


#: where, inside one checkpoint write, the NameNodes swap: after the NameNode's answer to
#: (WebHDFS operation, a file whose name holds this)
FAILOVER_POINTS = {
    "state-file-redirected-to-its-datanode": ("CREATE", "coordinator.state"),
    "state-file-in-place-before-_metadata": ("RENAME", "coordinator.state"),
    "_metadata-redirected-to-its-datanode": ("CREATE", "_metadata"),
}


@pytest.mark.parametrize("point", FAILOVER_POINTS)
def test_a_failover_inside_one_checkpoint_write_leaves_it_complete_and_readable(
    cluster: Any, workspace: Workspace, point: str
) -> None:
    """The NameNodes swap at a chosen step of one checkpoint's write (the state file's
    data on its way to the DataNode, the state file renamed into place but no
    ``_metadata`` yet, ``_metadata``'s data on its way): the write goes on against the new
    active NameNode, and the checkpoint is complete, verified and read back byte for byte
    by a second client. The swap is triggered from the client's own HTTP session (a
    response hook), so it falls at that step every time, not by timing."""
    op, name_part = FAILOVER_POINTS[point]
    config = workspace.write_config(_ha_plugin_config(cluster, f"/seatunnel-{uuid.uuid4().hex[:8]}/checkpoint/"))
    storage = open_storage(config)
    swapped: list[str] = []

    def fail_over_once(response: Any, *args: Any, **kwargs: Any) -> None:
        url = response.url
        if not swapped and f"op={op}".lower() in url.lower() and name_part in url:
            cluster.failover()
            swapped.append(url)

    storage.fs._client()._session.hooks["response"].append(fail_over_once)
    state = PipelineState(job_id="ha-write", pipeline_id=1, checkpoint_id=7, states=os.urandom(3 * 1024 * 1024))
    storage.store_checkpoint(state)

    assert swapped, f"no {op} of a {name_part} file was seen: the failover point was never reached"
    assert cluster.active_namenode["id"] == "nn2"
    reader = open_storage(config)
    assert [(e.checkpoint_id, e.completed) for e in reader.list_checkpoint_entries("ha-write", 1)] == [(7, True)]
    assert reader.verify_checkpoint("ha-write", 1, 7) == []
    latest = reader.get_latest_checkpoint_by_job_id_and_pipeline_id("ha-write", 1)
    assert latest is not None and latest.states == state.states
