"""``CheckpointRecoveryOperator``: resume a failed job from its latest completed checkpoint,
within the tolerable-failure limit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import AssetAlias
from airflow.sdk.exceptions import AirflowFailException

from ..hooks import CheckpointStorageHook
from .spark_submit import CheckpointedSparkSubmitOperator


class CheckpointRecoveryOperator(CheckpointedSparkSubmitOperator):
    """Resume a job whose run failed, from its latest completed checkpoint.

    Put it downstream of the Spark task with ``trigger_rule="one_failed"`` (it runs only
    when that task failed for good), or run it alone with a job id. Before submitting,
    it reads the job's run attempts (``attempts/`` in checkpoint storage):

    * the job already finished: nothing to do (the task succeeds);
    * more consecutive attempts failed *without completing a new checkpoint* than
      ``tolerable_failure`` allows: ``AirflowFailException`` (no retry), naming how many
      attempts failed, the last error and where the last checkpoint is. Attempts that
      completed checkpoints reset the count, so a slow job that keeps making progress
      is resumed as often as the task's ``retries`` allow;
    * no completed checkpoint at all: ``AirflowFailException`` unless
      ``allow_fresh_start=True``, which runs the job from the beginning;
    * otherwise: spark-submit with ``--restore latest``.

    :param job_id: the job to recover (templated), e.g.
        ``"{{ ti.xcom_pull(task_ids='etl', key='job_id') }}"``.
    :param tolerable_failure: the limit; None (default) uses the config's
        ``tolerable-failure``.
    :param allow_fresh_start: run from the beginning when there is no checkpoint.
    :param recovered_task_id: the task whose job this recovers (e.g. ``"etl"``). The
        recovered output is then announced on *that* task's asset alias
        (``seatunnel-ckpt/<dag_id>.<recovered_task_id>``), so DAGs scheduled on the job's
        output run after a recovery as after a run that needed none. Without it the
        output goes to this task's own alias.

    Other arguments as :class:`CheckpointedSparkSubmitOperator` (``restore`` excepted),
    ``allow_non_restored_state`` among them: a job whose sink blocks changed since its
    latest checkpoint resumes only with it, dropping the output of the sinks it no longer has.
    """

    def __init__(
        self,
        *,
        job_file: str,
        job_id: str,
        config_file: str | None = None,
        storage_conn_id: str | None = None,
        tolerable_failure: int | None = None,
        allow_fresh_start: bool = False,
        recovered_task_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if "restore" in kwargs:
            raise TypeError(
                f"{type(self).__name__} always restores the latest completed checkpoint; it takes no 'restore'"
            )
        if tolerable_failure is not None and (not isinstance(tolerable_failure, int) or tolerable_failure < 0):
            raise ValueError(f"tolerable_failure must be an integer >= 0 or None, got {tolerable_failure!r}")
        super().__init__(
            job_file=job_file,
            job_id=job_id,
            config_file=config_file,
            storage_conn_id=storage_conn_id,
            restore="latest",
            **kwargs,
        )
        self.tolerable_failure = tolerable_failure
        self.allow_fresh_start = allow_fresh_start
        self.recovered_task_id = recovered_task_id
        if recovered_task_id and self.sink_alias is not None:
            own = self.sink_alias
            self.sink_alias = self._alias_for(
                self.dag_id if self.has_dag() else None, self.task_id, {"recovered_task_id": recovered_task_id}
            )
            self.outlets = [o for o in self.outlets if o != own and o != self.sink_alias] + [self.sink_alias]

    @classmethod
    def _alias_for(cls, dag_id: str | None, task_id: str, kwargs: Mapping[str, Any]) -> AssetAlias:
        return super()._alias_for(dag_id, kwargs.get("recovered_task_id") or task_id, kwargs)

    def _restore_argument(self, hook: CheckpointStorageHook, job_id: str) -> str | None:
        status = hook.get_job_status(job_id) or {}
        if status.get("status") == "finished":
            self.log.info(
                "job %s already finished (final checkpoint %s); nothing to recover",
                job_id,
                status.get("final_checkpoint_id"),
            )
            return None
        if status.get("status") == "running":
            self.log.warning(
                "job %s is marked running (attempt %s); if that driver is still alive, this run takes the job "
                "over and the old driver stops at its next checkpoint without committing",
                job_id,
                status.get("attempt"),
            )
        limit = self.tolerable_failure if self.tolerable_failure is not None else hook.config.tolerable_failure
        streak = hook.failure_streak(job_id)
        where = (
            f"the last completed checkpoint is {streak.latest_checkpoint_id} at {streak.latest_location}"
            if streak.latest_checkpoint_id is not None
            else f"there is no completed checkpoint in {hook.describe(job_id)}"
        )
        if streak.failed_attempts > limit:
            raise AirflowFailException(
                f"job {job_id}: {streak.failed_attempts} consecutive attempt(s) failed without completing a new "
                f"checkpoint, more than tolerable-failure={limit} allows; {where}; last error: "
                f"{streak.last_error or 'unknown'}. Not retrying: fix the cause, then clear this task "
                "(or raise tolerable_failure)"
            )
        if streak.latest_checkpoint_id is None:
            if not self.allow_fresh_start:
                raise AirflowFailException(
                    f"job {job_id}: nothing to recover from: {where}. "
                    "Pass allow_fresh_start=True to run the job from the beginning"
                )
            self.log.info("job %s: no completed checkpoint; starting from the beginning (allow_fresh_start)", job_id)
            return "latest"  # the engine starts from the beginning when there is none
        self.log.info(
            "job %s: recovering from checkpoint %s (%d failed attempt(s) without progress so far, limit %d)",
            job_id,
            streak.latest_checkpoint_id,
            streak.failed_attempts,
            limit,
        )
        return "latest"
