"""The REST calls the deployment tests make, as a person's clicks would: connections,
triggering, clearing, polling runs, reading task instances and XComs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import httpx

from tests.example_runs import example_storage

from .deployment import AirflowDeployment

#: how long a run of an example may take on the 2-core CI machine
RUN_TIMEOUT = 420


def ensure_connection(deployment: AirflowDeployment, body: dict[str, Any]) -> None:
    """Create a connection (or replace it, when an earlier test made it)."""
    response = deployment.api("POST", "/connections", json=body)
    if response.status_code == 409:
        deployment.ok("PATCH", f"/connections/{body['connection_id']}", json=body)
    elif response.status_code >= 300:
        raise AssertionError(
            f"creating connection {body['connection_id']}: HTTP {response.status_code}: {response.text}"
        )


def trigger(
    deployment: AirflowDeployment, dag_id: str, conf: dict[str, Any], logical_date: dt.datetime | None = None
) -> str:
    """Unpause ``dag_id`` (once the DAG processor has parsed it) and trigger a run (at
    ``logical_date``, default now); its id."""
    deployment.wait_until(
        lambda: deployment.api("GET", f"/dags/{dag_id}").status_code == 200, 180, f"DAG {dag_id} parsed"
    )
    deployment.ok("PATCH", f"/dags/{dag_id}", json={"is_paused": False})
    when = (logical_date or dt.datetime.now(dt.UTC)).isoformat()
    run = deployment.ok("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": when, "conf": conf})
    return run["dag_run_id"]


def clear(deployment: AirflowDeployment, dag_id: str, run_id: str, task_id: str) -> None:
    """What a person does in the grid: clear a task (and what depends on it) of one run."""
    deployment.ok(
        "POST",
        f"/dags/{dag_id}/clearTaskInstances",
        json={
            "dag_run_id": run_id,
            "task_ids": [task_id],
            "include_downstream": True,
            "only_failed": False,
            "dry_run": False,
            "reset_dag_runs": True,
        },
    )


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


def xcom_or_none(deployment: AirflowDeployment, dag_id: str, run_id: str, task_id: str, key: str) -> Any:
    response = deployment.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}")
    return response.json()["value"] if response.status_code == 200 else None


def start_slow_job(deployment: AirflowDeployment, workdir: Path, dag_id: str, rows: int) -> tuple[str, str, Any]:
    """Trigger (c) at 40,000 rows/s without its planned failure and wait until the job has
    a completed checkpoint; its run id, job id and checkpoint storage."""
    conf = {"workdir": str(workdir), "rows": rows, "rows_per_second": 40_000, "fail_after_rows": 10**12}
    run_id = trigger(deployment, dag_id, conf)
    job_id = deployment.wait_until(
        lambda: xcom_or_none(deployment, dag_id, run_id, "etl", "job_id"), 180, "the job id", every=0.5
    )
    storage = example_storage(workdir)
    deployment.wait_until(
        lambda: storage.get_latest_checkpoint_by_job_id_and_pipeline_id(job_id, 1),
        180,
        "a completed checkpoint",
        every=0.5,
    )
    return run_id, job_id, storage


def view(
    deployment: AirflowDeployment,
    path: str,
    dag_id: str,
    run_id: str,
    task_id: str,
    token: str | None = None,
    **params: Any,
) -> httpx.Response:
    """GET a route of the checkpoint view (ui/app.py) for a task instance, as the admin user
    (or with ``token``; "" sends none)."""
    token = deployment.token() if token is None else token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    query = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, **params}
    return httpx.get(f"{deployment.base_url}/seatunnel-ckpt/{path}", params=query, headers=headers, timeout=60)


def act(
    deployment: AirflowDeployment,
    action: str,
    dag_id: str,
    run_id: str,
    task_id: str,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    body: str = "{}",
) -> httpx.Response:
    """POST an action of the checkpoint view (ui/actions.py) as a script would: a bearer
    token (the admin's, or ``token``; "" sends none) and a JSON body unless ``headers``
    say otherwise."""
    token = deployment.token() if token is None else token
    sent = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    query = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id}
    return httpx.post(
        f"{deployment.base_url}/seatunnel-ckpt/api/{action}",
        params=query,
        headers={**sent, **(headers or {})},
        content=body,
        timeout=60,
    )


def audit_log(deployment: AirflowDeployment, event: str, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """Airflow's audit log entries of ``event`` for one run, as its UI lists them."""
    found = deployment.ok("GET", "/eventLogs", params={"event": event, "dag_id": dag_id, "run_id": run_id})
    return found["event_logs"]
