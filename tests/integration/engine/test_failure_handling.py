"""Failures the engine must handle with a clear message: tolerable-failure, a corrupt
latest checkpoint, and secrets that must never leak into output or process arguments.

Tolerable-failure runs a real job against the S3 test server, whose fault proxy fails
the ``_metadata`` uploads (and only those) of chosen checkpoints: every checkpoint's
subtasks ACK, and the coordinator's write of the completed checkpoint is what fails.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.errors import FailureReason
from airflow_provider_seatunnel_ckpt.history import read_history
from airflow_provider_seatunnel_ckpt.storage.layout import Layout
from tests.support.workspace import (
    Workspace,
    assert_exactly_once,
    checkpoint_dir,
    cmdline,
    committed_files,
    completed_ids,
    descendants,
    open_storage,
    read_output,
)

from .conftest import OSS_ACCESS_KEY_SECRET, S3_SECRET_KEY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CHECKPOINT_IN_PATH = re.compile(r"/chk-(\d+)/_metadata")


def _metadata_puts(proxy: Any) -> dict[str, set[int]]:
    """Checkpoint ids whose ``_metadata`` PUT the proxy failed or forwarded."""
    seen: dict[str, set[int]] = {"fail": set(), "forward": set()}
    for method, path, outcome in list(proxy.requests):
        match = CHECKPOINT_IN_PATH.search(path)
        if method == "PUT" and match:
            seen.setdefault(outcome, set()).add(int(match.group(1)))
    return seen


def _fail_metadata_of(proxy: Any, spared: set[int]) -> None:
    def when(method: str, path: str) -> bool:
        match = CHECKPOINT_IN_PATH.search(path)
        return method == "PUT" and match is not None and int(match.group(1)) not in spared

    proxy.fail_next(100_000, status=503, when=when)


@pytest.mark.parametrize(
    ("spared", "failed", "completed"),
    [
        pytest.param(set(), {1, 2}, [], id="every-checkpoint-fails"),
        pytest.param({2}, {1, 3, 4}, [2], id="a-success-resets-the-count"),
    ],
)
def test_tolerable_failure(
    workspace: Workspace,
    s3_server: Any,
    s3_plugin_config: dict[str, str],
    spared: set[int],
    failed: set[int],
    completed: list[int],
) -> None:
    """tolerable-failure: 1 -> the job fails at the 2nd *consecutive* failed checkpoint.

    With checkpoint 2 spared, 1 fails, 2 completes (the count resets), 3 and 4 fail:
    the job fails at 4, not at 3 as a lifetime count would.
    """
    config = workspace.write_config(s3_plugin_config, interval=300, tolerable_failure=1)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": 50_000_000, "rows_per_second": 50_000})
    _fail_metadata_of(s3_server.proxy, spared)
    result = workspace.run(job, config, "tolerable", timeout=240)
    assert result.returncode == 1, result.explain()
    message = "error: job tolerable failed: 2 consecutive checkpoints failed, more than tolerable-failure=1 allows"
    assert message in result.stderr, result.explain()
    assert "Traceback" not in result.stderr
    puts = _metadata_puts(s3_server.proxy)
    assert puts["fail"] == failed, (puts, result.explain())
    assert puts["forward"] == set(completed), puts
    assert completed_ids(config, "tolerable") == completed
    job_doc = open_storage(config).read_document("tolerable", "job.json")
    assert job_doc["status"] == "failed" and "tolerable-failure=1" in job_doc["error"]
    # The checkpoint history holds every failure with its reason, and the successes.
    history = read_history(open_storage(config), "tolerable")
    assert {c.id for c in history.checkpoints if c.status == "failed"} == failed
    assert {c.reason.split(":")[0] for c in history.checkpoints if c.status == "failed"} == {
        FailureReason.IO_ERROR.message
    }
    assert [c.id for c in history.checkpoints if c.status == "completed"] == completed
    assert [(r.attempt, r.id) for r in history.restores] == [(1, None)]


def _flip_byte(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _epoch(name: str) -> int:
    return int(name.split("-")[4])


@pytest.mark.parametrize("damage", ["state-file", "metadata"])
def test_corrupt_latest_checkpoint_falls_back(workspace: Workspace, damage: str) -> None:
    rows = 400_000
    config = workspace.write_config(interval=500, max_retained=5)
    # 2,000 splits of 200 rows, each with 16 running counts: each subtask's state is too big
    # to inline by checkpoint 4, so it is a file of its own.
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "splits": 2_000, "batch_size": 4_000, "rows_per_second": 50_000},
        transforms=[
            {"plugin_name": "Python", "function": "airflow_provider_seatunnel_ckpt.examples.transforms:add_bucket"},
            {"plugin_name": "CountByKey", "key": "bucket"},
        ],
    )
    with workspace.start(job, config, "corrupt") as first:
        assert first.wait_for(r"checkpoint 4 \(checkpoint\) completed", 120), first.stderr()
        deadline = time.monotonic() + 20  # kill once the latest checkpoint's output is committed
        while time.monotonic() < deadline:
            latest = max(completed_ids(config, "corrupt"))
            if any(_epoch(n) == latest for n in committed_files(workspace.output)):
                break
            time.sleep(0.01)
        first.kill()
    ids = completed_ids(config, "corrupt")
    latest, previous = ids[-1], ids[-2]
    directory = checkpoint_dir(config, "corrupt", latest)
    target = directory / (
        Layout.task_state_name(0, 0, 1) if damage == "state-file" else "_metadata"
    )  # the first run claims attempt 1
    assert target.exists(), sorted(p.name for p in directory.iterdir())
    _flip_byte(target)
    # Output committed after the previous checkpoint: normally the damaged one's (a
    # checkpoint completing between the check above and the kill may not be committed).
    newer_output = [n for n in committed_files(workspace.output) if _epoch(n) > previous]

    result = workspace.run(job, config, "corrupt", "--restore", "latest")
    assert result.returncode == 0, result.explain()
    assert re.search(
        rf"checkpoint {latest} is damaged, not restoring from it: .*(sha256|checksum|corrupt)",
        result.stderr,
        re.IGNORECASE,
    ), result.explain()
    assert f"from checkpoint {previous};" in result.stderr, result.explain()
    if newer_output:
        assert re.search(
            rf"removed {len(newer_output)} committed file\(s\) newer than checkpoint {previous}\b", result.stderr
        ), result.explain()
    else:
        assert "committed file(s) newer than" not in result.stderr, result.explain()
    assert "Traceback" not in result.stderr
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
    assert latest not in completed_ids(config, "corrupt")  # discarded with its rolled-back output


def test_secrets_never_leak(
    workspace: Workspace, s3_server: Any, s3_plugin_config: dict[str, str], oss_plugin_config: dict[str, str]
) -> None:
    """S3 checkpoint storage and an OSS sink, both with secrets in configuration files:
    neither secret may show in the driver's output (debug logging on, storage retries
    logged) nor in the arguments of any process the run starts (JVM, Python workers)."""
    bucket = oss_plugin_config["oss.bucket"]
    sink = {
        "plugin_name": "File",
        "path": f"{bucket}/out/",
        "format": "jsonl",
        **{k: v for k, v in oss_plugin_config.items() if k.startswith("fs.oss.")},
    }
    config = workspace.write_config(s3_plugin_config, interval=400)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": 150_000, "rows_per_second": 50_000}, sink)
    s3_server.proxy.fail_next(3, status=503)  # retries are logged: with the bucket, never the key
    command = workspace.command(job, config, "secrets")
    command.insert(1, "--verbose")  # seatunnel-ckpt --verbose run ...
    from tests.support.workspace import Driver

    arguments: list[str] = []
    with Driver(command, workspace.env, workspace.logs, "secrets") as driver:
        while driver.poll() is None:
            arguments += [cmdline(pid) for pid in [driver.pid, *descendants(driver.pid)]]
            time.sleep(0.5)
        result = driver.wait()
    assert result.returncode == 0, result.explain()
    assert any("SparkSubmit" in a for a in arguments) and any("pyspark" in a for a in arguments), arguments
    for secret in (S3_SECRET_KEY, OSS_ACCESS_KEY_SECRET):
        assert secret not in result.stdout and secret not in result.stderr
        assert not [a for a in arguments if secret in a]
    assert "DEBUG" in result.stderr or "debug" in result.stderr.lower()
    table = read_output(
        f"{bucket}/out/", "jsonl", {k: v for k, v in oss_plugin_config.items() if k.startswith("fs.oss.")}
    )
    assert_exactly_once(table, 150_000)


def test_storage_outage_during_restore_is_not_damage(
    workspace: Workspace, s3_server: Any, s3_plugin_config: dict[str, str]
) -> None:
    """Reading the latest ``_metadata`` fails on every retry while a run restores: the
    run must fail (and be retried later), not take the checkpoint for damaged, fall back
    to an older one (or to the start) and roll back committed output."""
    rows = 300_000
    config = workspace.write_config(s3_plugin_config, interval=500)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 50_000})
    with workspace.start(job, config, "outage") as first:
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 120), first.stderr()
        first.kill()
    ids = completed_ids(config, "outage")
    files = committed_files(workspace.output)
    s3_server.proxy.fail_next(1_000, status=503, when=lambda method, path: method == "GET" and "/_metadata" in path)
    try:
        failed = workspace.run(job, config, "outage")
    finally:
        s3_server.proxy.reset()
    assert failed.returncode == 1, failed.explain()
    assert "_metadata" in failed.stderr and "damaged" not in failed.stderr, failed.explain()
    assert completed_ids(config, "outage") == ids and committed_files(workspace.output) == files
    result = workspace.run(job, config, "outage")
    assert result.returncode == 0, result.explain()
    assert f"from checkpoint {ids[-1]};" in result.stderr, result.explain()
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)


def test_spark_failing_to_start_records_the_attempt_as_failed(workspace: Workspace) -> None:
    """The job is claimed (job.json, attempts/) before Spark starts; when Spark cannot
    start, both records say failed, with the reason, instead of "running" forever."""
    config = workspace.write_config()
    job = workspace.write_job({"plugin_name": "Sequence", "rows": 100})
    result = workspace.run(job, config, "no-spark", master="bogus://nowhere", timeout=180)
    assert result.returncode == 1, result.explain()
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: job no-spark failed: "), result.explain()
    assert "Traceback" not in result.stderr and "Master must" in result.stderr, result.explain()  # Spark's own reason
    storage = open_storage(config)
    attempt = storage.read_document("no-spark", "attempts/000001.json")
    assert attempt["outcome"] == "failed", attempt
    assert attempt["error"] == errors[0].removeprefix("error: job no-spark failed: "), attempt
    assert attempt["end_ms"] >= attempt["start_ms"]
    assert storage.read_document("no-spark", "job.json")["status"] == "failed"
