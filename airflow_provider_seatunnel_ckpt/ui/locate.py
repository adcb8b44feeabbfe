"""From a task instance to its job and checkpoint storage.

The operator pushes ``VIEW_XCOM_KEY`` as it starts: the job id (templated, or derived from
the task instance), the storage connection id and the effective checkpoint configuration
with its secrets masked. The view opens storage with that configuration and the
connection's credentials, exactly as the task's hook did: credentials live only in the
connection, and no XCom, page or response ever holds one.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..hooks import CheckpointStorageHook, get_checkpoint_hook
from . import VIEW_XCOM_KEY


class NoCheckpointedJob(LookupError):
    """The task instance has no job of ours (another operator, or it has not started)."""


class TaskJob(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    storage_conn_id: str | None = None
    #: the effective checkpoint configuration, secrets masked (``CheckpointConfig.masked()``)
    config: dict[str, Any]


def task_job(dag_id: str, run_id: str, task_id: str, map_index: int) -> TaskJob:
    """The job of a task instance, from the XCom its operator pushed (the api-server's
    metadata database)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.scalars(
            XComModel.get_many(
                run_id=run_id,
                key=VIEW_XCOM_KEY,
                task_ids=task_id,
                dag_ids=dag_id,
                map_indexes=map_index,
                limit=1,
            )
        ).first()
        value = XComModel.deserialize_value(row) if row is not None else None
    if value is None:
        raise NoCheckpointedJob(
            f"task {task_id} of run {run_id} has no checkpointed job: it is not one of this provider's "
            "operators, or it has not started yet"
        )
    try:
        return TaskJob.model_validate(value)
    except ValidationError:
        raise NoCheckpointedJob(
            f"task {task_id} of run {run_id}: its {VIEW_XCOM_KEY} XCom is not one this provider wrote"
        ) from None


def storage_hook(job: TaskJob) -> CheckpointStorageHook:
    return get_checkpoint_hook(job.storage_conn_id, job.config)
