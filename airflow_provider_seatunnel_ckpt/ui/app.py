"""The checkpoint view's FastAPI app, mounted by Airflow's api-server under ``URL_PREFIX``.

Every route names a task instance (``dag_id``, ``run_id``, ``task_id``, ``map_index``)
and runs behind Airflow's own check, the one its REST API makes for a task instance:
``requires_access_dag("GET", TASK_INSTANCE)`` (no token: 401; a user the auth manager
does not let read the DAG: 403, before anything is read). The page is static; it reads
the JSON routes from the browser with the session's cookie, as Airflow's UI does.

Storage is read through the task's hook (its connection, the configuration its operator
recorded); responses hold figures, ids, times, reasons and the configuration with secrets
masked, never a credential. Storage errors are reported by their one-line message, which
names the backend and path only (as every error of the storage layer does).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse

from ..engine.heartbeat import read_newest
from ..errors import CheckpointError, ConfigError
from ..history import read_history
from .actions import add_actions
from .locate import NoCheckpointedJob, TaskJob, storage_hook, task_job
from .oncall import oncall, restorable_of
from .responses import checkpoint_detail, history_page

MAX_PER_PAGE = 200
WILDCARD = "~"


def _access_check() -> Any:
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return Depends(requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE))


def create_app() -> FastAPI:
    app = FastAPI(
        title="SeaTunnel checkpoints", docs_url=None, redoc_url=None, openapi_url=None, dependencies=[_access_check()]
    )

    @app.get("/view", response_class=HTMLResponse)
    def view(dag_id: str, run_id: str, task_id: str) -> str:
        return resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")

    @app.get("/api/history")
    def history(
        dag_id: str,
        run_id: str,
        task_id: str,
        map_index: str = "-1",
        page: int = Query(1, ge=1),
        per_page: int = Query(20, ge=1, le=MAX_PER_PAGE),
    ) -> dict[str, Any]:
        job, hook = _open(dag_id, run_id, task_id, map_index)
        found = _read(hook, job)
        answer = history_page(found, hook.describe(job.job_id), job.config, page, per_page)
        beat, listed = _read(
            hook, job, lambda: (read_newest(hook.storage, job.job_id), hook.list_checkpoints(job.job_id))
        )
        answer["oncall"] = oncall(found, job.config, beat, restorable_of(listed), int(time.time() * 1000))
        return answer

    @app.get("/api/checkpoint")
    def checkpoint(
        dag_id: str, run_id: str, task_id: str, checkpoint_id: int = Query(..., ge=0), map_index: str = "-1"
    ) -> dict[str, Any]:
        job, hook = _open(dag_id, run_id, task_id, map_index)
        entry = _read(hook, job).checkpoint(checkpoint_id)
        if entry is None:
            raise HTTPException(404, f"checkpoint {checkpoint_id} is not in the history of job {job.job_id}")
        return checkpoint_detail(entry)

    add_actions(app, _open)
    return app


def _open(dag_id: str, run_id: str, task_id: str, map_index: str) -> tuple[TaskJob, Any]:
    if WILDCARD in (dag_id, run_id, task_id):
        # Airflow's REST API reads "~" as "every DAG / run"; here a view is of one task instance
        raise HTTPException(400, f"the view shows one task instance: {WILDCARD!r} is not a dag_id, run_id or task_id")
    try:
        job = task_job(dag_id, run_id, task_id, _map_index(map_index))
        return job, storage_hook(job)
    except NoCheckpointedJob as err:
        raise HTTPException(404, str(err)) from None
    except (ConfigError, CheckpointError) as err:
        raise HTTPException(502, f"the checkpoint storage of this task cannot be opened: {err}") from None


def _map_index(text: str) -> int:
    """The task instance's map index: Airflow's tab leaves ``{MAP_INDEX}`` as it is for a
    task that is not mapped, which is map index -1."""
    try:
        return int(text)
    except ValueError:
        return -1


def _read(hook: Any, job: TaskJob, reading: Callable[[], Any] | None = None) -> Any:
    """``reading()`` (the job's history by default), its storage errors a 502."""
    try:
        return reading() if reading is not None else read_history(hook.storage, job.job_id)
    except (ConfigError, CheckpointError) as err:
        raise HTTPException(502, f"the checkpoint storage of job {job.job_id} cannot be read: {err}") from None
