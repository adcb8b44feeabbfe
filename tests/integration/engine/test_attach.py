"""Resumable tracking with a real local Spark job (``seatunnel-ckpt run`` in its own
session): a second "operator" finds the running driver by its heartbeat, attaches, reports
its checkpoints and ends with its result; with the driver SIGKILLed, the same tracking
says take over (operators/attach.py, engine/heartbeat.py)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine.heartbeat import INTERVAL_KEY, job_fingerprint, read_newest
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from airflow_provider_seatunnel_ckpt.operators.attach import TAKE_OVER, DriverTracker, attach_to_live_driver
from tests.support.workspace import Workspace, assert_exactly_once, open_storage, read_output

pytestmark = pytest.mark.integration

ROWS = 60_000


class FakeTI:
    def __init__(self) -> None:
        self.xcom: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value


def _start(workspace: Workspace, job_id: str) -> tuple[Any, Path, Path]:
    config = workspace.write_config(interval=1000)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 6_000, "batch_size": 1_000},
        env={INTERVAL_KEY: 500, "spark.seatunnel.preloadDaemon": "false"},
    )
    driver = workspace.start(job, config, job_id)
    storage = open_storage(config)
    deadline = time.monotonic() + 60
    while read_newest(storage, job_id) is None:
        assert driver.poll() is None and time.monotonic() < deadline, driver.stderr()[-4000:]
        time.sleep(0.1)
    return driver, config, job


def test_a_second_operator_attaches_to_the_running_driver_and_ends_with_its_result(
    workspace: Workspace, capfd: pytest.CaptureFixture[str]
) -> None:
    from airflow_provider_seatunnel_ckpt.hooks import CheckpointStorageHook
    from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator

    job_id = "attach-live"
    driver, config, job_file = _start(workspace, job_id)
    with driver:
        operator = CheckpointedSparkSubmitOperator(task_id="etl", job_file=str(job_file), config_file=str(config))
        hook = CheckpointStorageHook(config_file=str(config))
        ti = FakeTI()
        result = attach_to_live_driver(operator, {"ti": ti}, hook, job_id, load_job(str(job_file)))
        run = driver.wait(60)
    assert run.returncode == 0, run.explain()
    assert result is not None and result["status"] == "finished" and result["ran"] is True
    assert result["final_checkpoint_id"] == ti.xcom["final_checkpoint_id"] is not None
    assert [a["attempt"] for a in result["attempts"]] == [1]  # no takeover: no second attempt, nothing redone
    assert result["final_checkpoint"]["kind"] == "final"
    logged = capfd.readouterr()  # the operator's log (Airflow's structlog) goes to the task's output
    logged = logged.out + logged.err
    assert "attaching to it instead of taking the job over" in logged
    assert "completed by attempt 1's driver" in logged  # its checkpoints, reported while waiting
    assert_exactly_once(read_output(f"file://{workspace.output}/"), ROWS)
    final = read_newest(open_storage(config), job_id)
    assert final.state == "finished" and final.job_fingerprint == job_fingerprint(load_job(str(job_file)).to_json())


def test_a_killed_driver_is_taken_over(workspace: Workspace, caplog: pytest.LogCaptureFixture) -> None:
    job_id = "attach-killed"
    driver, config, _ = _start(workspace, job_id)
    storage = open_storage(config)
    caplog.set_level(logging.INFO)
    tracker = DriverTracker(storage, job_id, logging.getLogger("attach-test"))
    with driver:
        found = tracker.find()
        assert found is not None, driver.stderr()[-4000:]
        beat, watch = found
        assert beat.pid is not None and beat.host
        driver.kill()  # spark-submit gone: the heartbeat stops
        killed = time.monotonic()
        tracked = tracker.follow(beat, watch)
    assert tracked.outcome == TAKE_OVER
    assert time.monotonic() - killed <= 13  # the stale window (10 s) and a poll
    assert "no heartbeat from attempt 1's driver" in caplog.text
