"""Resumable tracking in a real deployment (operators/attach.py, engine/heartbeat.py): the
worker running a Spark task dies; its retry attaches to the driver that is still alive
instead of taking the job over, or takes over when the driver died too.

Both cases run at once (two runs of example_fail_and_retry, without its planned failure),
so the suite pays the scheduler's heartbeat timeout (45 s, found within 2 s) once."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from pathlib import Path

import pytest

from tests.example_runs import attempts, committed_ids, example_storage

from .deployment import AirflowDeployment, spark_submit_processes
from .rest import task_instances, trigger, wait_for_runs, xcom, xcom_or_none

pytestmark = pytest.mark.slow

DAG_ID = "example_fail_and_retry"
#: the attached run must outlive the kill (after its first checkpoint), the scheduler's
#: heartbeat timeout (45 s + up to 2 s to notice), the retry's start and its attach: 150 s
#: of rows. At a CI's load the retry's start alone can take a minute, and 85 s of rows
#: (3,400,000 at 40,000 rows/s) once ended first. A lower rate, not more rows: a row costs
#: CPU, a second of waiting little.
ATTACHED_ROWS, ATTACHED_RATE = 2_400_000, 16_000
#: the taken-over run only has to be running when it is killed
TAKEN_OVER_ROWS, TAKEN_OVER_RATE = 1_600_000, 40_000


def _path_safe(run_id: str) -> str:
    """The example's ``path_safe`` filter: its output directory of a run."""
    return re.sub(r"[^A-Za-z0-9_.=-]", "-", run_id)


def _task_log(deployment: AirflowDeployment, run_id: str, try_number: int) -> str:
    log = deployment.ok(
        "GET",
        f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/etl/logs/{try_number}",
        params={"full_content": "true"},
        headers={"Accept": "application/json"},
    )
    return json.dumps(log["content"])


def test_a_retry_attaches_to_a_live_driver_and_takes_over_a_dead_one(
    deployment: AirflowDeployment, spark_connection: None, tmp_path: Path
) -> None:
    """Run A: the worker (task process and its supervisor) is SIGKILLed, spark-submit lives
    on: the retry attaches, the first driver finishes the job, no second attempt ever runs
    (nothing after the last checkpoint is done twice) and the retry succeeds with the
    job's result. Run B: the worker and spark-submit are SIGKILLed: the retry sees the
    heartbeat stand still and takes over from the latest checkpoint. Every id once."""
    import psutil

    started = time.monotonic()
    day = dt.datetime(2026, 4, 1, tzinfo=dt.UTC)
    conf = {"workdir": str(tmp_path), "fail_after_rows": 10**12}
    runs = {
        "attached": trigger(deployment, DAG_ID, {**conf, "rows": ATTACHED_ROWS, "rows_per_second": ATTACHED_RATE}, day),
        "taken_over": trigger(
            deployment,
            DAG_ID,
            {**conf, "rows": TAKEN_OVER_ROWS, "rows_per_second": TAKEN_OVER_RATE},
            day + dt.timedelta(days=1),
        ),
    }
    storage = example_storage(tmp_path)
    jobs = {
        case: deployment.wait_until(
            lambda r=run_id: xcom_or_none(deployment, DAG_ID, r, "etl", "job_id"),
            180,
            f"the job id of run {case}",
            every=0.5,
        )
        for case, run_id in runs.items()
    }
    for case, job_id in jobs.items():
        deployment.wait_until(
            lambda j=job_id: storage.get_latest_checkpoint_by_job_id_and_pipeline_id(j, 1),
            180,
            f"a completed checkpoint of run {case}",
            every=0.5,
        )
        deployment.wait_until(
            lambda j=job_id: storage.read_document(j, "heartbeat/000001.json"),
            30,
            f"the driver's heartbeat of run {case}",
            every=0.5,
        )

    # A: the worker dies, spark-submit lives on
    (jvm,) = [p for p in spark_submit_processes(jobs["attached"]) if "java" in p.name()]
    attached_drivers = spark_submit_processes(jobs["attached"])
    task_process = jvm.parent()
    for process in (task_process.parent(), task_process):
        process.kill()
    # B: the worker and spark-submit (its JVM, Python driver and workers) die
    (jvm,) = [p for p in spark_submit_processes(jobs["taken_over"]) if "java" in p.name()]
    task_process = jvm.parent()
    victims = [task_process.parent(), task_process, jvm, *jvm.children(recursive=True)]
    for process in victims:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    killed_at = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(jobs["taken_over"], 1).checkpoint_id

    ended = wait_for_runs(deployment, *[(DAG_ID, run_id) for run_id in runs.values()])
    assert [ended[run_id][0] for run_id in runs.values()] == ["success", "success"], deployment.explain()

    # ---- A: attached ----
    run_id, job_id = runs["attached"], jobs["attached"]
    assert task_instances(deployment, DAG_ID, run_id)["etl"] == ("success", 2)
    tries = attempts(storage, job_id)
    assert [(a["attempt"], a["outcome"], a["restored_from"]) for a in tries] == [(1, "finished", None)], tries
    for process in attached_drivers:  # the first try's driver ended the job itself
        try:
            process.wait(timeout=60)
        except psutil.TimeoutExpired:
            raise AssertionError(f"the first try's driver {process.pid} still runs") from None
    result = xcom(deployment, DAG_ID, run_id, "etl")
    assert result["status"] == "finished" and result["attempt"] == 1 and result["ran"] is True
    assert [a["attempt"] for a in result["attempts"]] == [1]
    assert result["final_checkpoint"]["kind"] == "final"
    run_dir = tmp_path / "output" / DAG_ID / _path_safe(run_id)
    everything = sorted(i for part in committed_ids(run_dir).values() for i in part)
    assert everything == list(range(ATTACHED_ROWS)), "not every row exactly once"
    heartbeat = storage.read_document(job_id, "heartbeat/000001.json")
    assert heartbeat["state"] == "finished", heartbeat
    retry_log = _task_log(deployment, run_id, 2)
    assert "attaching to it instead of taking the job over" in retry_log, retry_log[-3000:]
    assert "completed by attempt 1" in retry_log  # the checkpoints it reported while attached

    # ---- B: taken over ----
    run_id, job_id = runs["taken_over"], jobs["taken_over"]
    assert task_instances(deployment, DAG_ID, run_id)["etl"] == ("success", 2)
    tries = attempts(storage, job_id)
    assert [a["attempt"] for a in tries] == [1, 2], tries
    first, second = tries
    assert first["outcome"] == "running"  # killed: nothing recorded its end
    assert second["outcome"] == "finished" and second["restored_from"] is not None
    assert second["restored_from"] == killed_at  # the newest checkpoint the killed driver completed
    run_dir = tmp_path / "output" / DAG_ID / _path_safe(run_id)
    everything = sorted(i for part in committed_ids(run_dir).values() for i in part)
    assert everything == list(range(TAKEN_OVER_ROWS)), "not every row exactly once"
    retry_log = _task_log(deployment, run_id, 2)
    assert "no heartbeat from attempt 1's driver" in retry_log, retry_log[-3000:]
    print(f"\nresumable tracking in the deployment: {time.monotonic() - started:.0f} s")
