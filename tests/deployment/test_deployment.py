"""The Airflow face in a real deployment (conftest.py): scheduler, DAG processor, triggerer
and API server on PostgreSQL, driven only through the REST API; results checked in the
checkpoint storage and the output, id by id."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tests.example_runs import check_resumed_exactly_once, committed_ids, example_storage

from .deployment import AirflowDeployment

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 420


# ---- helpers: the REST API ---------------------------------------------------------------------
def ensure_connection(deployment: AirflowDeployment, body: dict[str, Any]) -> None:
    """Create a connection (or replace it, when an earlier test made it)."""
    response = deployment.api("POST", "/connections", json=body)
    if response.status_code == 409:
        deployment.ok("PATCH", f"/connections/{body['connection_id']}", json=body)
    elif response.status_code >= 300:
        raise AssertionError(f"creating connection {body['connection_id']}: HTTP {response.status_code}: {response.text}")


def trigger(deployment: AirflowDeployment, dag_id: str, conf: dict[str, Any]) -> str:
    """Unpause ``dag_id`` (once the DAG processor has parsed it) and trigger a run; its id."""
    deployment.wait_until(lambda: deployment.api("GET", f"/dags/{dag_id}").status_code == 200, 180,
                          f"DAG {dag_id} parsed")
    deployment.ok("PATCH", f"/dags/{dag_id}", json={"is_paused": False})
    logical_date = dt.datetime.now(dt.timezone.utc).isoformat()
    run = deployment.ok("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": logical_date, "conf": conf})
    return run["dag_run_id"]


def task_instances(deployment: AirflowDeployment, dag_id: str, run_id: str) -> dict[str, tuple[str | None, int]]:
    """task id -> (state, try number)."""
    listed = deployment.ok("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
    return {ti["task_id"]: (ti["state"], ti["try_number"]) for ti in listed["task_instances"]}


def wait_for_runs(deployment: AirflowDeployment, *runs: tuple[str, str]) -> dict[str, tuple[str, set[tuple[str, str]]]]:
    """Poll runs ``(dag id, run id)`` together to their end states; for each run id, its end
    state and every (task, state) seen on the way."""
    seen: dict[str, set[tuple[str, str]]] = {run_id: set() for _, run_id in runs}
    ended: dict[str, str] = {}

    def all_ended() -> bool:
        for dag_id, run_id in runs:
            if run_id in ended:
                continue
            for task_id, (state, _) in task_instances(deployment, dag_id, run_id).items():
                if state:
                    seen[run_id].add((task_id, state))
            state = deployment.ok("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"]
            if state in ("success", "failed"):
                ended[run_id] = state
        return len(ended) == len(runs)

    deployment.wait_until(all_ended, RUN_TIMEOUT, f"end of runs {runs}", every=0.5)
    return {run_id: (ended[run_id], seen[run_id]) for _, run_id in runs}


def wait_for_run(deployment: AirflowDeployment, dag_id: str, run_id: str) -> tuple[str, set[tuple[str, str]]]:
    return wait_for_runs(deployment, (dag_id, run_id))[run_id]


def xcom(deployment: AirflowDeployment, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
    return deployment.ok("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}")["value"]


@pytest.fixture
def spark_connection(deployment: AirflowDeployment) -> None:
    ensure_connection(deployment, {"connection_id": "spark_default", "conn_type": "spark", "host": "local[2]"})


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


def test_example_c_is_recovered_while_a_deferred_sensor_waits_in_the_triggerer(
    deployment: AirflowDeployment, spark_connection: None, tmp_path: Path
) -> None:
    """(c) with the recovery operator: the first try of the Spark task fails on purpose and
    ``recover`` resumes the job from its latest completed checkpoint. Meanwhile a second
    DAG's deferrable sensor, started while the job runs, waits in the real triggerer
    through the failure and the recovery, and completes with the final checkpoint."""
    dag_id = "example_fail_and_recover"
    run_id = trigger(deployment, dag_id, {"workdir": str(tmp_path)})
    job_id = deployment.wait_until(lambda: _xcom_or_none(deployment, dag_id, run_id, "etl", "job_id"), 180,
                                   "the job id of example (c)", every=0.5)
    watch_run = trigger(deployment, "watch_job_checkpoints", {"job_id": job_id, "workdir": str(tmp_path)})

    ended = wait_for_runs(deployment, (dag_id, run_id), ("watch_job_checkpoints", watch_run))
    assert ended[run_id][0] == "success", deployment.explain()
    assert task_instances(deployment, dag_id, run_id) == {
        "etl": ("failed", 1), "recover": ("success", 1), "final_checkpoint": ("success", 1)}
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
    log = deployment.ok("GET", f"/dags/watch_job_checkpoints/dagRuns/{watch_run}/taskInstances/wait_for_final/logs/1",
                        params={"full_content": "true"}, headers={"Accept": "application/json"})
    events = [e for e in log["content"] if isinstance(e, dict)]
    waits = [e for e in events if e.get("logger", "").endswith("CheckpointTrigger")
             and e.get("event", "").startswith(f"job {job_id}: waiting for the final checkpoint")]
    assert waits, f"no trigger lines in the task log: {events[-20:]}"
    assert any(e.get("filename") == "triggerer_job_runner.py" and "starting" in e.get("event", "") for e in events)


def _xcom_or_none(deployment: AirflowDeployment, dag_id: str, run_id: str, task_id: str, key: str) -> Any:
    response = deployment.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}")
    return response.json()["value"] if response.status_code == 200 else None
