"""The Airflow face in a real deployment (conftest.py): scheduler, DAG processor, triggerer
and API server on PostgreSQL, driven only through the REST API; results checked in the
checkpoint storage and the output, id by id."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.example_runs import attempts, check_resumed_exactly_once, committed_ids, example_storage

from .deployment import AirflowDeployment, spark_submit_processes
from .rest import (
    clear,
    ensure_connection,
    start_slow_job,
    task_instances,
    trigger,
    view,
    wait_for_run,
    wait_for_runs,
    xcom,
    xcom_or_none,
)

pytestmark = pytest.mark.slow


# ---- tests --------------------------------------------------------------------------------------
def test_every_component_reports_healthy(deployment: AirflowDeployment) -> None:
    health = deployment.ok("GET", "/monitor/health")
    assert health["metadatabase"]["status"] == "healthy"
    for component in ("scheduler", "triggerer", "dag_processor"):
        assert health[component]["status"] == "healthy", health
    version = deployment.ok("GET", "/version")
    assert version["version"].startswith("3.")


def test_rest_triggered_run_of_example_a(deployment: AirflowDeployment, spark_connection: None, tmp_path: Path) -> None:
    """(a) triggered over the REST API, scheduled by the scheduler, run by LocalExecutor."""
    dag_id, rows = "example_checkpointed_etl_local", 100_000
    deployment.wait_until(
        lambda: deployment.api("GET", "/dags/on_etl_output").status_code == 200,
        180,
        "the DAG scheduled on (a)'s output parsed",
    )
    deployment.ok("PATCH", "/dags/on_etl_output", json={"is_paused": False})
    run_id = trigger(deployment, dag_id, {"workdir": str(tmp_path), "rows": rows})
    state, _ = wait_for_run(deployment, dag_id, run_id)
    assert state == "success", deployment.explain()
    assert task_instances(deployment, dag_id, run_id) == {"etl": ("success", 1), "final_checkpoint": ("success", 1)}

    job_id = xcom(deployment, dag_id, run_id, "etl", "job_id")
    result = xcom(deployment, dag_id, run_id, "etl")
    assert job_id.startswith(f"{dag_id}.etl.")
    assert result["status"] == "finished" and result["ran"] is True
    assert result["final_checkpoint"]["kind"] == "final" and result["final_checkpoint"]["rows"] is not None
    sensed = xcom(deployment, dag_id, run_id, "final_checkpoint")
    assert (sensed["checkpoint_id"], sensed["kind"]) == (result["final_checkpoint_id"], "final")

    storage = example_storage(tmp_path)
    assert storage.read_document(job_id, "job.json")["status"] == "finished"
    (day,) = (tmp_path / "output" / dag_id).iterdir()
    ids = sorted(i for part in committed_ids(day).values() for i in part)
    assert ids == list(range(rows))

    # the output, announced as an asset on the task's alias, queues the DAG scheduled on it
    output_uri = f"file://{day}"
    events = deployment.ok("GET", "/assets/events", params={"source_dag_id": dag_id, "source_run_id": run_id})
    (event,) = [e for e in events["asset_events"] if e["uri"] == output_uri]
    assert event["extra"]["job_id"] == job_id and event["extra"]["final_checkpoint_id"] == result["final_checkpoint_id"]
    queued = deployment.ok("GET", "/dags/on_etl_output/assets/queuedEvents")
    assert event["asset_id"] in {q["asset_id"] for q in queued["queued_events"]}, queued


def test_example_c_is_recovered_while_a_deferred_sensor_waits_in_the_triggerer(
    deployment: AirflowDeployment, spark_connection: None, tmp_path: Path
) -> None:
    """(c) with the recovery operator: the first try of the Spark task fails on purpose and
    ``recover`` resumes the job from its latest completed checkpoint. Meanwhile a second
    DAG's deferrable sensor, started while the job runs, waits in the real triggerer
    through the failure and the recovery, and completes with the final checkpoint."""
    dag_id = "example_fail_and_recover"
    run_id = trigger(deployment, dag_id, {"workdir": str(tmp_path)})
    job_id = deployment.wait_until(
        lambda: xcom_or_none(deployment, dag_id, run_id, "etl", "job_id"), 180, "the job id of example (c)", every=0.5
    )
    watch_run = trigger(deployment, "watch_job_checkpoints", {"job_id": job_id, "workdir": str(tmp_path)})

    ended = wait_for_runs(deployment, (dag_id, run_id), ("watch_job_checkpoints", watch_run))
    assert ended[run_id][0] == "success", deployment.explain()
    assert task_instances(deployment, dag_id, run_id) == {
        "etl": ("failed", 1),
        "recover": ("success", 1),
        "final_checkpoint": ("success", 1),
    }
    check_resumed_exactly_once(tmp_path, dag_id, job_id)
    recovered = xcom(deployment, dag_id, run_id, "recover")
    assert recovered["status"] == "finished"
    assert [a["outcome"] for a in recovered["attempts"]] == ["failed", "finished"]
    assert xcom(deployment, dag_id, run_id, "final_checkpoint")["kind"] == "final"

    watch_state, seen = ended[watch_run]
    assert watch_state == "success", deployment.explain()
    assert ("wait_for_final", "deferred") in seen, f"the sensor was never deferred: {sorted(seen)}"
    sensed = xcom(deployment, "watch_job_checkpoints", watch_run, "wait_for_final")
    assert sensed["kind"] == "final" and sensed["attempt"] == 2  # the recovered attempt's final checkpoint
    # the task's log, as the UI shows it: the trigger's lines come from the triggerer process
    log = deployment.ok(
        "GET",
        f"/dags/watch_job_checkpoints/dagRuns/{watch_run}/taskInstances/wait_for_final/logs/1",
        params={"full_content": "true"},
        headers={"Accept": "application/json"},
    )
    events = [e for e in log["content"] if isinstance(e, dict)]
    waits = [
        e
        for e in events
        if e.get("logger", "").endswith("CheckpointTrigger")
        and e.get("event", "").startswith(f"job {job_id}: waiting for the final checkpoint")
    ]
    assert waits, f"no trigger lines in the task log: {events[-20:]}"
    assert any(e.get("filename") == "triggerer_job_runner.py" and "starting" in e.get("event", "") for e in events)


def _everything_a_run_shows(deployment: AirflowDeployment, dag_id: str, run_id: str) -> dict[str, str]:
    """Where a secret must never appear, as text: every task's XComs, rendered template
    fields and log (as the API and UI serve them), and every component's own log."""
    places: dict[str, str] = {}
    for task_id, (_, tries) in task_instances(deployment, dag_id, run_id).items():
        base = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
        places[f"{task_id} xcom"] = json.dumps(deployment.ok("GET", f"{base}/xcomEntries"))
        places[f"{task_id} rendered"] = json.dumps(deployment.ok("GET", base).get("rendered_fields"))
        # the checkpoint view's data (a 404 for a task of another operator)
        places[f"{task_id} checkpoint view"] = view(deployment, "api/history", dag_id, run_id, task_id).text
        for attempt in range(1, tries + 1):
            places[f"{task_id} log {attempt}"] = json.dumps(
                deployment.ok(
                    "GET",
                    f"{base}/logs/{attempt}",
                    params={"full_content": "true"},
                    headers={"Accept": "application/json"},
                )
            )
    for path in deployment.logs.glob("*.log"):
        places[path.name] = path.read_text(errors="replace")
    return places


def test_connections_made_over_rest_carry_the_credentials_and_never_show_them(
    deployment: AirflowDeployment, spark_connection: None, s3_process_server: Any, tmp_path: Path
) -> None:
    """The storage connections a person creates (an ``aws`` one on the moto server and the
    provider's own ``seatunnel_checkpoint`` type), made and tested over the API; example
    (b) keeps its checkpoints on S3 through the ``aws`` one; the secret key shows nowhere."""
    s3 = s3_process_server
    secret = "deploy-secret-" + secrets.token_hex(12)
    bucket = s3.create_bucket(f"deploy-{secrets.token_hex(4)}")
    ensure_connection(
        deployment,
        {
            "connection_id": "aws_checkpoints",
            "conn_type": "aws",
            "login": "AKIADEPLOYMENT",
            "password": secret,
            "extra": json.dumps({"region_name": s3.region, "endpoint_url": s3.endpoint_url}),
        },
    )
    own_type = {
        "connection_id": "checkpoints_on_s3",
        "conn_type": "seatunnel_checkpoint",
        "login": "AKIADEPLOYMENT",
        "password": secret,
        "extra": json.dumps(
            {
                "storage_type": "s3",
                "namespace": "/seatunnel/checkpoint/",
                "plugin_config": {
                    "s3.bucket": f"s3a://{bucket}",
                    "fs.s3a.endpoint": s3.endpoint_url,
                    "fs.s3a.path.style.access": "true",
                },
            }
        ),
    }
    ensure_connection(deployment, own_type)
    assert deployment.ok("GET", "/connections/checkpoints_on_s3")["conn_type"] == "seatunnel_checkpoint"
    tested = deployment.ok("POST", "/connections/test", json=own_type)
    assert tested["status"] is True, tested
    missing = json.loads(own_type["extra"])
    missing["plugin_config"]["s3.bucket"] = "s3a://no-such-bucket"
    refused = deployment.ok("POST", "/connections/test", json={**own_type, "extra": json.dumps(missing)})
    assert refused["status"] is False and "no-such-bucket" in refused["message"], refused
    assert secret not in refused["message"]

    dag_id, rows = "example_checkpointed_etl_s3", 100_000
    run_id = trigger(deployment, dag_id, {"workdir": str(tmp_path), "rows": rows, "bucket": bucket})
    state, _ = wait_for_run(deployment, dag_id, run_id)
    assert state == "success", deployment.explain()
    assert task_instances(deployment, dag_id, run_id) == {"etl": ("success", 1), "final_checkpoint": ("success", 1)}
    job_id = xcom(deployment, dag_id, run_id, "etl", "job_id")
    result = xcom(deployment, dag_id, run_id, "etl")
    assert result["status"] == "finished" and result["final_checkpoint"]["location"].startswith(f"s3://{bucket}/")
    keys = [o["Key"] for o in s3.client().list_objects_v2(Bucket=bucket, Prefix="seatunnel/checkpoint/")["Contents"]]
    assert any(key.startswith(f"seatunnel/checkpoint/{job_id}/") and key.endswith("job.json") for key in keys), keys
    (day,) = (tmp_path / "output" / dag_id).iterdir()
    assert sorted(i for part in committed_ids(day).values() for i in part) == list(range(rows))

    shown = _everything_a_run_shows(deployment, dag_id, run_id)
    assert not [where for where, text in shown.items() if secret in text]
    # the checkpoint view read this S3 storage with the connection's credentials
    seen = json.loads(shown["etl checkpoint view"])
    assert seen["job_id"] == job_id and seen["job"]["status"] == "finished" and seen["summary"]["completed"] >= 1


def test_two_runs_at_once_keep_their_own_jobs_and_a_cleared_successful_task_does_not_rerun(
    deployment: AirflowDeployment, spark_connection: None, tmp_path: Path
) -> None:
    """Two runs of (a) at once (different logical dates) never share a job id, checkpoints
    or output; clearing the finished task of one run re-runs the task under the same job
    id, which finds the job finished and does nothing (no rows written twice)."""
    dag_id, rows = "example_checkpointed_etl_local", 100_000
    first_day = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    runs = [
        trigger(deployment, dag_id, {"workdir": str(tmp_path), "rows": rows}, first_day + dt.timedelta(days=n))
        for n in range(2)
    ]
    ended = wait_for_runs(deployment, *[(dag_id, run_id) for run_id in runs])
    assert [ended[run_id][0] for run_id in runs] == ["success", "success"], deployment.explain()
    job_ids = [xcom(deployment, dag_id, run_id, "etl", "job_id") for run_id in runs]
    assert len(set(job_ids)) == 2
    storage = example_storage(tmp_path)
    assert sorted(storage.list_jobs()) == sorted(job_ids)
    for job_id in job_ids:
        assert storage.read_document(job_id, "job.json")["status"] == "finished"
        assert [a["attempt"] for a in attempts(storage, job_id)] == [1]
    for day in ("2026-03-01", "2026-03-02"):
        assert sorted(i for part in committed_ids(tmp_path / "output" / dag_id / day).values() for i in part) == list(
            range(rows)
        )

    before = xcom(deployment, dag_id, runs[0], "etl")
    clear(deployment, dag_id, runs[0], "etl")
    deployment.wait_until(lambda: task_instances(deployment, dag_id, runs[0])["etl"][1] == 2, 120, "the cleared try")
    state, _ = wait_for_run(deployment, dag_id, runs[0])
    assert state == "success", deployment.explain()
    assert task_instances(deployment, dag_id, runs[0]) == {"etl": ("success", 2), "final_checkpoint": ("success", 2)}
    again = xcom(deployment, dag_id, runs[0], "etl")
    assert again["ran"] is False and again["status"] == "finished"
    assert again["final_checkpoint_id"] == before["final_checkpoint_id"]
    assert [a["attempt"] for a in attempts(storage, job_ids[0])] == [1]  # no new attempt ran
    assert sorted(
        i for part in committed_ids(tmp_path / "output" / dag_id / "2026-03-01").values() for i in part
    ) == list(range(rows))


def test_a_task_marked_failed_then_cleared_resumes_its_job(
    deployment: AirflowDeployment, spark_connection: None, tmp_path: Path
) -> None:
    """A person marks a running Spark task failed (its spark-submit is stopped) and later
    clears it: the new try resumes the same job from its latest completed checkpoint."""
    dag_id, rows = "example_fail_and_retry", 600_000  # 15 s at 40,000 rows/s: marked failed well before the end
    run_id, job_id, storage = start_slow_job(deployment, tmp_path, dag_id, rows)
    deployment.ok("PATCH", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/etl", json={"new_state": "failed"})
    state, _ = wait_for_run(deployment, dag_id, run_id)
    assert state == "failed"
    deployment.wait_until(lambda: not spark_submit_processes(job_id), 60, "spark-submit of the failed try stopped")
    assert storage.read_document(job_id, "job.json")["status"] != "finished"
    stopped_at = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(job_id, 1).checkpoint_id

    clear(deployment, dag_id, run_id, "etl")
    deployment.wait_until(lambda: task_instances(deployment, dag_id, run_id)["etl"][1] == 2, 120, "the cleared try")
    state, _ = wait_for_run(deployment, dag_id, run_id)
    assert state == "success", deployment.explain()
    tries = attempts(storage, job_id)
    assert tries[-1]["outcome"] == "finished" and tries[-1]["restored_from"] == stopped_at, tries
    (run_dir,) = (tmp_path / "output" / dag_id).iterdir()
    assert sorted(i for part in committed_ids(run_dir).values() for i in part) == list(range(rows))
