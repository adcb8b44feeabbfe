"""Every checkpoint storage backend under a real job, configured through seatunnel.yaml.

For each backend the job checkpoints (state files are written by the *executors*, so
the job keeps a running count per split, CountByKey over 16 buckets in each of 2,000
splits, to make each subtask's state larger than what is inlined in ``_metadata``: a
finished split without state costs next to nothing), the driver is SIGKILLed, and a second run resumes
from the latest checkpoint, reading that state back on the executors. The memory
backend lives inside the driver process, so it only has to carry one run: its state
travels inline over the control channel.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.history.attempts import read_attempts
from airflow_provider_seatunnel_ckpt.storage.model import INLINE_STATE_LIMIT
from tests.support.workspace import Workspace, assert_exactly_once, open_storage, read_output

from .conftest import S3_SECRET_KEY, s3_options

pytestmark = [pytest.mark.slow, pytest.mark.timeout(480)]

ROWS = 300_000
# 2,000 splits of 150 rows, each with 16 running counts: by checkpoint 3 each subtask has
# finished enough of them that its state is too big to inline, so it is a file of its own
SOURCE = {"plugin_name": "Sequence", "rows": ROWS, "splits": 2_000, "batch_size": 3_000, "rows_per_second": 50_000}
# A completed checkpoint, 3 or later, where both subtasks' states are files: over 4 KiB
# each (the log prints each subtask's state size). Not "checkpoint 3": on a loaded machine
# one subtask can get far fewer rows than the other by then (600 against 26,250 in one CI
# run), and its state is still inlined.
BOTH_STATES_FILES = re.compile(
    r"checkpoint (?:[3-9]|[1-9]\d+) \(checkpoint\) completed[^\n]*"
    + "".join(rf"subtask {n}: [^;\n]*, (?:(?:[5-9]|[1-9]\d+)(?:\.\d+)? KiB|[\d.]+ MiB), [^\n]*" for n in (0, 1))
).pattern
COUNTS = [
    {"plugin_name": "Python", "function": "airflow_provider_seatunnel_ckpt.examples.transforms:add_bucket"},
    {"plugin_name": "CountByKey", "key": "bucket"},
]


@pytest.fixture(params=["local", "s3", "hdfs", "oss"])
def persistent_backend(request: pytest.FixtureRequest, workspace: Workspace) -> tuple[str, dict[str, Any]]:
    name = request.param
    if name == "local":
        return name, workspace.local_storage()
    if name == "s3":
        return name, request.getfixturevalue("s3_plugin_config")
    if name == "hdfs":  # Hadoop's own NameNode (MiniDFSCluster), as a SeaTunnel user configures it
        cluster = request.getfixturevalue("hdfs_cluster")
        return name, {
            "storage.type": "hdfs",
            "fs.defaultFS": cluster.fs_default,
            "seatunnel.hadoop.dfs.namenode.http-address": cluster.webhdfs_url.removeprefix("http://"),
            "namespace": f"/seatunnel-{uuid.uuid4().hex[:8]}/checkpoint/",
        }
    return name, request.getfixturevalue("oss_plugin_config")


def test_checkpoint_kill_and_restore(workspace: Workspace, persistent_backend: tuple[str, dict[str, Any]]) -> None:
    name, plugin_config = persistent_backend
    config = workspace.write_config(plugin_config, interval=500)
    job = workspace.write_job(SOURCE, transforms=COUNTS)
    job_id = f"backend-{name}"
    with workspace.start(job, config, job_id) as first:
        assert first.wait_for(BOTH_STATES_FILES, 240), first.stderr()
        first.kill()

    storage = open_storage(config)
    completed = [e.checkpoint_id for e in storage.list_checkpoint_entries(job_id, 1) if e.completed]
    assert len(completed) >= 3, completed
    latest = max(completed)
    assert storage.verify_checkpoint(job_id, 1, latest) == []
    manifest = storage.read_manifest(job_id, 1, latest)
    # The executors uploaded their state as files (too big to inline), verified above.
    assert sorted(manifest.subtask_states) == [0, 1]
    assert all(h.file and h.size > INLINE_STATE_LIMIT for h in manifest.subtask_states.values()), (
        manifest.subtask_states
    )
    assert storage.read_document(job_id, "job.json")["status"] == "running"  # killed, never released

    result = workspace.run(job, config, job_id)
    assert result.returncode == 0, result.explain()
    assert re.search(rf"attempt 2: 2 subtasks, 2000 splits, from checkpoint {latest}\b", result.stderr), (
        result.explain()
    )
    assert_exactly_once(read_output(f"file://{workspace.output}/"), ROWS)
    job_doc = storage.read_document(job_id, "job.json")
    assert job_doc["status"] == "finished" and job_doc["attempt"] == 2
    # the second claim folded the first attempt's record (history/attempts.py)
    assert storage.list_documents(job_id, "attempts") == ["000002.json", "earlier-000002.json"]
    assert [record["attempt"] for record in read_attempts(storage, job_id)] == [1, 2]
    # Retention ran from storage contents: at most max-retained completed checkpoints.
    left = [e for e in storage.list_checkpoint_entries(job_id, 1) if e.completed]
    assert 1 <= len(left) <= 3, left


def test_memory_storage_inlines_state(workspace: Workspace) -> None:
    """``type: memory`` lives in the driver process; executors (other processes) never
    touch it: the state of its splits travels inline in the ACKs."""
    config = workspace.write_config({"namespace": "/seatunnel/checkpoint/"}, storage_type="memory", interval=500)
    job = workspace.write_job(SOURCE, transforms=COUNTS)
    result = workspace.run(job, config, "backend-memory")
    assert result.returncode == 0, result.explain()
    assert "to memory://" in result.stderr or "memory" in result.stderr, result.explain()
    sizes = [int(float(s) * 1024) for s in re.findall(r"completed in \d+ ms, ([\d.]+) KiB state", result.stderr)]
    assert len(sizes) >= 3 and max(sizes) > 2 * INLINE_STATE_LIMIT, result.explain()
    assert "state upload failed" not in result.stderr and "declines" not in result.stderr, result.explain()
    assert_exactly_once(read_output(f"file://{workspace.output}/"), ROWS)


def test_file_sink_writes_to_s3(workspace: Workspace, s3_server: Any, s3_bucket: str) -> None:
    rows = 150_000
    url = f"s3://{s3_bucket}/out/"
    config = workspace.write_config(interval=500)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 50_000},
        {"plugin_name": "File", "path": url, "format": "parquet", **s3_options(s3_server)},
    )
    with workspace.start(job, config, "s3-sink") as first:
        assert first.wait_for(r"checkpoint 2 \(checkpoint\) completed", 120), first.stderr()
        first.kill()
    result = workspace.run(job, config, "s3-sink")
    assert result.returncode == 0, result.explain()
    assert S3_SECRET_KEY not in result.stderr + result.stdout
    table = read_output(url, "parquet", s3_options(s3_server))
    assert_exactly_once(table, rows)
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(Bucket=s3_bucket).get("Contents", [])]
    visible = [k for k in keys if not k.split("/")[-1].startswith(("_", "."))]
    assert visible and all(k.startswith("out/part-") for k in visible), keys
    assert not [k for k in keys if "/_staging/" in k], "staged objects left after the job finished"
