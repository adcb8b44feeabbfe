"""Exactly once across hosts: a parallelism-4 job on two worker hosts, checkpointing to
the storage host's S3, while whole hosts are lost or cut off (tests/cluster/cluster.py).

One job, one run through every fault, in this order (each bounded in time):

1. worker-b cut off for 20 s (its switch port down), then back;
2. the storage host cut off for 10 s, then back;
3. worker-a lost whole: every process on it SIGKILLed; the job goes on with worker-b;
4. the driver host's processes SIGKILLed; the job is rerun with ``--restore latest``.

Then every id of the output is counted. The figures (time to the next completed
checkpoint after each fault) are printed in the chaos report and quoted in
docs/deployment.md.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.chaos import ChaosRecord
from tests.support.cluster_job import COMPLETED, SPARK_CONF
from tests.support.workspace import Driver, Workspace

from .cluster import S3_SECRET_KEY, WORKERS, NetCluster

pytestmark = pytest.mark.slow

ROWS = 3_000_000
PARALLELISM = 4


def start_on_driver_host(
    cluster: NetCluster, workspace: Workspace, job: Path, config: Path, job_id: str, *extra: str
) -> Driver:
    workspace.runs += 1
    conf = [arg for item in SPARK_CONF for arg in ("--conf", item)]
    args = workspace.command(job, config, job_id, *conf, *extra, master=cluster.master_url)
    return Driver(
        cluster.hosts.command("driver", args), cluster.env("driver"), workspace.logs, f"run{workspace.runs:03d}"
    )


def completed(driver: Driver) -> list[int]:
    return [int(n) for n in COMPLETED.findall(driver.stderr())]


def wait_for_a_new_checkpoint(driver: Driver, after: int, timeout: float, what: str) -> float:
    """Seconds until a checkpoint newer than ``after`` completes; fails the test (with the
    driver's log) when none does within ``timeout`` or the run ends."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if any(n > after for n in completed(driver)):
            return time.monotonic() - started
        assert driver.poll() is None, f"the run ended after {what}:\n{driver.stderr()[-6000:]}"
        time.sleep(0.2)
    raise AssertionError(f"no checkpoint completed within {timeout} s after {what}:\n{driver.stderr()[-6000:]}")


def test_a_job_across_hosts_survives_host_loss_partitions_and_a_driver_kill(
    net_cluster: NetCluster, tmp_path: Path, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    rng, record = chaos
    cluster = net_cluster
    started = time.monotonic()
    bucket = cluster.ready_for_a_job("cluster")
    options = cluster.s3_options()
    output = f"s3://{bucket}/out/"
    workspace = Workspace(tmp_path, cluster.env("driver"), master=cluster.master_url)
    config = workspace.write_config(
        {"storage.type": "s3", "s3.bucket": f"s3a://{bucket}", "namespace": "/seatunnel/checkpoint/", **options},
        interval=1000,
        timeout=60_000,
        tolerable_failure=10,
    )
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": ROWS, "splits": 16, "rows_per_second": 40_000},
        {"plugin_name": "File", "path": output, "format": "parquet", **options},
        name="across-hosts",
        parallelism=PARALLELISM,
    )
    figures: dict[str, float] = {}
    with start_on_driver_host(cluster, workspace, job, config, "across-hosts") as driver:
        record.driver_runs += 1
        assert driver.wait_for(COMPLETED.pattern, 180), driver.stderr()[-6000:]
        subtasks_on = {w: len(cluster.forked_python_workers(w)) for w in WORKERS}
        assert all(subtasks_on.values()), f"the subtasks did not spread over both workers: {subtasks_on}\n" + "\n".join(
            line for line in driver.stderr().splitlines() if "subtask-" in line or "executor" in line.lower()
        )
        assert not _secret_on_a_command_line(cluster), "the S3 secret is on a command line or in an environment"

        time.sleep(rng.uniform(0.5, 2.0))
        record.kill_points.append(f"partition: worker-b cut off for 20 s at {time.monotonic() - driver.started:.1f} s")
        figures["worker-b cut off 20 s: from reconnect to the next completed checkpoint (s)"] = _cut_off(
            cluster, driver, "worker-b", 20
        )
        record.kill_points.append(f"partition: storage cut off for 10 s at {time.monotonic() - driver.started:.1f} s")
        figures["storage cut off 10 s: from reconnect to the next completed checkpoint (s)"] = _cut_off(
            cluster, driver, "storage", 10
        )

        last = max(completed(driver))
        time.sleep(rng.uniform(0.2, 1.0))
        moved_from = {
            int(n)
            for n in re.findall(
                rf"subtask-(\d+)/attempt-\d+ at {re.escape(cluster.address('worker-a'))}:", driver.stderr()
            )
        }
        assert moved_from, "no subtask ran on worker-a"
        lost_at = time.monotonic()
        killed = cluster.hosts.kill_host("worker-a")
        record.kill_points.append(
            f"host loss: worker-a, {killed} processes SIGKILLed at {time.monotonic() - driver.started:.1f} s"
        )
        _wait_for_subtasks_on(driver, moved_from, cluster.address("worker-b"), 180)
        last = max(completed(driver))
        wait_for_a_new_checkpoint(driver, last, 120, f"subtasks {sorted(moved_from)} moved to worker-b")
        figures["worker host lost: first checkpoint with its subtasks on worker-b (s)"] = time.monotonic() - lost_at

        cluster.start_worker("worker-a")  # for the rerun
        last = max(completed(driver))
        wait_for_a_new_checkpoint(driver, last, 120, "worker-a restarted")
        time.sleep(rng.uniform(0.2, 1.5))
        assert driver.poll() is None, f"the run ended before the driver kill:\n{driver.stderr()[-6000:]}"
        killed = cluster.hosts.kill_host("driver")
        driver.killed = True
        record.kill_points.append(
            f"driver host: {killed} processes SIGKILLed at {time.monotonic() - driver.started:.1f} s"
        )
    cluster.wait_workers(len(WORKERS))
    cluster.wait_idle()

    rerun_started = time.monotonic()
    with start_on_driver_host(cluster, workspace, job, config, "across-hosts", "--restore", "latest") as driver:
        record.driver_runs += 1
        assert driver.wait_for(COMPLETED.pattern, 180), driver.stderr()[-6000:]
        figures["rerun after the driver host's loss: start to its first checkpoint (s)"] = (
            time.monotonic() - rerun_started
        )
        result = driver.wait(600)
    assert result.returncode == 0, result.explain()
    figures["rerun after the driver host's loss: start to the end of the job (s)"] = time.monotonic() - rerun_started

    counted = cluster.tally(output, ROWS, options)
    record.rows, record.lost, record.duplicated = counted["rows"], counted["lost"], counted["duplicated"]
    record.elapsed_s = time.monotonic() - started
    record.notes.extend(f"{name}: {value:.1f}" for name, value in figures.items())
    assert counted["lost"] == counted["duplicated"] == counted["unexpected"] == 0 and counted["rows"] == ROWS, (
        f"seed {record.seed}: not exactly once: {counted['text']}"
    )


def _cut_off(cluster: NetCluster, driver: Driver, host: str, seconds: float) -> float:
    """Cut ``host`` off for ``seconds``; returns the seconds from its reconnection to the
    next checkpoint completed (one stuck during the cut counts)."""
    cluster.hosts.cut(host)
    try:
        time.sleep(seconds)
        last = max(completed(driver))
    finally:
        cluster.hosts.reconnect(host)
    return wait_for_a_new_checkpoint(driver, last, 120, f"{host} came back")


def _wait_for_subtasks_on(driver: Driver, subtasks: set[int], address: str, timeout: float) -> None:
    """Until a later attempt of each of ``subtasks`` has connected from ``address``."""
    pattern = re.compile(rf"subtask-(\d+)/attempt-([1-9]\d*) at {re.escape(address)}:\d+\) connected")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subtasks <= {int(n) for n, _ in pattern.findall(driver.stderr())}:
            return
        assert driver.poll() is None, f"the run ended:\n{driver.stderr()[-6000:]}"
        time.sleep(0.2)
    raise AssertionError(
        f"subtasks {sorted(subtasks)} did not restart on {address} within {timeout} s:\n{driver.stderr()[-6000:]}"
    )


def _secret_on_a_command_line(cluster: NetCluster) -> list[Any]:
    """Processes on any host with the S3 secret in their command line or environment."""
    found = []
    for host in cluster.hosts.hosts:
        for pid in cluster.hosts.pids(host):
            for part in ("cmdline", "environ"):
                try:
                    if S3_SECRET_KEY.encode() in Path(f"/proc/{pid}/{part}").read_bytes():
                        found.append((host, pid, part))
                except OSError:
                    continue
    return found
