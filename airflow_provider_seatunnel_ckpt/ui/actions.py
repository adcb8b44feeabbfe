"""The checkpoint view's actions: trigger a savepoint, and stop with a savepoint, over
``POST {URL_PREFIX}/api/savepoint`` and ``POST {URL_PREFIX}/api/stop-with-savepoint``
(the page's buttons call them too; docs/airflow.md, "Actions").

Who: a user the auth manager lets edit the DAG (``is_authorized_dag(method="PUT")`` on
its task instances, what Airflow's own API asks to clear or mark a task instance);
reading the view is not enough (403).

Cross-site requests: the page authenticates with Airflow's session cookie, which a
browser also sends on a request another site makes it send. So an action is POST only,
its body must be JSON (``Content-Type: application/json``: an HTML form cannot send it,
and a cross-site script that tries must pass a CORS preflight Airflow does not grant),
and a request that carries an ``Origin`` header (every browser's POST does) must come
from Airflow's own origin. Clients with a bearer token (curl, scripts) send no Origin.

Audit: each action that reaches the job is recorded in Airflow's audit log (the ``Log``
model, the UI's "Audit Log" and ``GET /api/v2/eventLogs``), with the user, the task
instance and the job, as Airflow records the actions of its own API.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, HTTPException, Request

from ..errors import CheckpointError, ConfigError
from . import base_url

#: audit log events, one per action
EVENTS = {"savepoint": "seatunnel_ckpt.trigger_savepoint", "stop-with-savepoint": "seatunnel_ckpt.stop_with_savepoint"}
JSON = "application/json"


def _edit_check() -> Any:
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return Depends(requires_access_dag("PUT", DagAccessEntity.TASK_INSTANCE))


def _user_dependency() -> Any:
    from airflow.api_fastapi.core_api.security import get_user

    return Depends(get_user)


def add_actions(app: FastAPI, open_job: Any) -> None:
    """``open_job(dag_id, run_id, task_id, map_index)``: the task's job and hook (the
    view's own lookup, with its 400, 404 and 502)."""
    user_dependency = _user_dependency()

    def act(action: str, user: Any, ids: tuple[str, str, str, str]) -> dict[str, Any]:
        job, hook = open_job(*ids)
        name = user.get_name() if user is not None else "anonymous"
        request_of = hook.trigger_savepoint if action == "savepoint" else hook.request_savepoint
        try:
            status = (hook.get_job_status(job.job_id) or {}).get("status")
            if status != "running":  # no driver polls for it: the request would wait for the next run
                raise HTTPException(
                    409, f"job {job.job_id} is {status or 'not started'}: only a running job takes a {action}"
                )
            requested_ms = request_of(job.job_id, by=f"airflow user {name}")
        except (ConfigError, CheckpointError) as err:
            raise HTTPException(502, f"the checkpoint storage of job {job.job_id} cannot be written: {err}") from None
        _audit(EVENTS[action], name, ids, {"job_id": job.job_id, "requested_ms": requested_ms})
        return {
            "action": action,
            "job_id": job.job_id,
            "requested_ms": requested_ms,
            "message": f"{action} requested of job {job.job_id}: its driver takes it within a second",
        }

    guards = [_edit_check(), Depends(_same_origin_json)]

    @app.post("/api/savepoint", dependencies=guards)
    def savepoint(
        dag_id: str, run_id: str, task_id: str, map_index: str = "-1", user: Any = user_dependency
    ) -> dict[str, Any]:
        return act("savepoint", user, (dag_id, run_id, task_id, map_index))

    @app.post("/api/stop-with-savepoint", dependencies=guards)
    def stop_with_savepoint(
        dag_id: str, run_id: str, task_id: str, map_index: str = "-1", user: Any = user_dependency
    ) -> dict[str, Any]:
        return act("stop-with-savepoint", user, (dag_id, run_id, task_id, map_index))


async def _same_origin_json(request: Request) -> None:
    """Refuse what a cross-site page could make a browser send (see the module's doc)."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != JSON:
        raise HTTPException(415, f"an action's body is JSON: send Content-Type: {JSON} (and a body such as {{}})")
    origin = request.headers.get("origin")
    if origin is not None and origin not in _own_origins(request):
        raise HTTPException(403, f"cross-site request refused: origin {origin} is not Airflow's")
    try:
        await request.json()
    except ValueError:
        raise HTTPException(400, "an action's body is JSON, e.g. {}") from None


def _own_origins(request: Request) -> set[str]:
    own = {f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"}
    configured = urlsplit(base_url())
    if configured.scheme and configured.netloc:
        own.add(f"{configured.scheme}://{configured.netloc}")
    return own


def _audit(event: str, user: str, ids: tuple[str, str, str, str], extra: dict[str, Any]) -> None:
    from airflow.models.log import Log
    from airflow.utils.session import create_session

    dag_id, run_id, task_id, map_index = ids
    with create_session() as session:
        session.add(
            Log(
                event=event,
                owner=user,
                owner_display_name=user,
                extra=json.dumps({**extra, "method": "POST", "at_ms": int(time.time() * 1000)}),
                dag_id=dag_id,
                run_id=run_id,
                task_id=task_id,
                map_index=_int(map_index),
            )
        )


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return -1
