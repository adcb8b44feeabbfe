"""A Spark standalone cluster on loopback: master + one worker (2 cores).

Executors are separate JVMs started by the worker, with their own Python workers, so
the control channel crosses processes exactly as in production (subtasks reach the
driver at ``spark.driver.host``), and the checkpoint storage travels pickled in the
task closure.
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from tests.support.workspace import (
    StandaloneCluster,
    Workspace,
    assert_exactly_once,
    cmdline,
    completed_ids,
    descendants,
    is_python_worker,
    parent_pid,
    pyspark_workers,
    read_output,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def _python_workers_below(pid: int) -> list[int]:
    return [p for p in descendants(pid) if is_python_worker(p)]


def test_parallelism_2_runs_exactly_once(workspace: Workspace, standalone: StandaloneCluster) -> None:
    rows = 300_000
    standalone.wait_idle()
    config = workspace.write_config(interval=500)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 50_000})
    with workspace.start(job, config, "standalone", master=standalone.master_url) as driver:
        assert driver.wait_for(r"checkpoint 2 \(checkpoint\) completed", 180), driver.stderr()
        # The subtasks run in the cluster's executor, not below the driver.
        assert _python_workers_below(driver.pid) == []
        assert len(_python_workers_below(standalone.processes[1].pid)) >= 2
        result = driver.wait(300)
    assert result.returncode == 0, result.explain()
    assert "2 subtasks" in result.stderr
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
    apps = standalone.state().get("completedapps", [])
    assert any(app.get("name", "").startswith("seatunnel-ckpt:") for app in apps), apps


def test_driver_killed_and_resumed_on_the_cluster(workspace: Workspace, standalone: StandaloneCluster) -> None:
    rows = 500_000
    standalone.wait_idle()
    config = workspace.write_config(interval=500)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 50_000})
    with workspace.start(job, config, "standalone-kill", master=standalone.master_url) as first:
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 180), first.stderr()
        first.kill()
    latest = max(completed_ids(config, "standalone-kill"))
    # The master notices the dead driver and frees the worker's cores for the next run.
    standalone.wait_idle(90)
    started = time.monotonic()
    result = workspace.run(job, config, "standalone-kill", "--restore", "latest", master=standalone.master_url)
    assert result.returncode == 0, result.explain()
    assert re.search(rf"attempt 2: 2 subtasks, 2 splits, from checkpoint {latest}\b", result.stderr), result.explain()
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
    assert time.monotonic() - started < 300


def test_the_preloading_daemon_on_the_cluster_with_killed_workers(
    workspace: Workspace, standalone: StandaloneCluster
) -> None:
    """``spark.seatunnel.preloadDaemon=true`` (the package is installed where the executors
    run): the executor forks its Python workers from the engine's daemon, and subtasks
    killed there are retried from it, exactly once."""
    rows = 600_000
    standalone.wait_idle()
    config = workspace.write_config(interval=500)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 50_000})
    with workspace.start(
        job,
        config,
        "standalone-preload",
        "--conf",
        "spark.seatunnel.preloadDaemon=true",
        "--conf",
        "spark.task.maxFailures=20",
        master=standalone.master_url,
    ) as driver:
        assert driver.wait_for(r"checkpoint 2 \(checkpoint\) completed", 180), driver.stderr()
        for kill in range(2):
            workers = pyspark_workers(standalone.processes[1].pid)
            assert workers, "no forked Python worker on the cluster's executor"
            daemon = parent_pid(workers[0])
            assert daemon is not None and "-m airflow_provider_seatunnel_ckpt.engine.worker_daemon" in cmdline(daemon)
            os.kill(workers[0], signal.SIGKILL)
            assert driver.wait_for(rf"(subtask-\d+/attempt-[1-9].*connected[\s\S]*){{{kill + 1}}}", 120), (
                driver.stderr()
            )
        result = driver.wait(300)
    assert result.returncode == 0, result.explain()
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
