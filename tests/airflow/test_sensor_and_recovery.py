"""CheckpointSensor (deferrable, through its trigger) and CheckpointRecoveryOperator,
run with ``dag.test()`` against a real metadata DB, on local checkpoint storage."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.hooks import CheckpointStorageHook
from airflow_provider_seatunnel_ckpt.storage import CheckpointKind, PipelineState

from .conftest import DAGS_FOLDER, metadata_rows, task_states


def local_hook(namespace: str, tolerable_failure: int = 0) -> CheckpointStorageHook:
    return CheckpointStorageHook(
        config_file={
            "checkpoint": {
                "tolerable-failure": tolerable_failure,
                "storage": {"plugin-config": {"storage.type": "local", "namespace": namespace}},
            }
        }
    )


def store(hook: CheckpointStorageHook, job_id: str, checkpoint_id: int, final: bool = False) -> None:
    kind = CheckpointKind.FINAL if final else CheckpointKind.CHECKPOINT
    hook.storage.store_checkpoint(
        PipelineState(job_id=job_id, pipeline_id=1, checkpoint_id=checkpoint_id, states=b"s", kind=kind)
    )


def write_attempt(hook: CheckpointStorageHook, job_id: str, number: int, **record) -> None:
    hook.storage.write_document(job_id, f"attempts/{number:06d}.json", {"attempt": number, **record})


def load_dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER / "test_provider_dags.py"))
    assert not bag.import_errors
    return bag.get_dag(dag_id)


@pytest.mark.slow
def test_deferrable_sensor_completes_through_its_trigger(airflow_db, tmp_path, monkeypatch):
    from airflow_provider_seatunnel_ckpt.sensors.checkpoint import CheckpointSensor
    from airflow_provider_seatunnel_ckpt.triggers.checkpoint import CheckpointTrigger

    namespace, job_id = f"{tmp_path}/ckpt/", "sensed-job"
    hook = local_hook(namespace)
    store(hook, job_id, 1)  # a checkpoint, but the job has not finished: the first poke waits

    checks_in_trigger: list[object] = []
    original_check = CheckpointTrigger._check

    def check_then_finish(self):
        found = original_check(self)
        checks_in_trigger.append(found)
        if len(checks_in_trigger) == 1:  # the trigger is polling: now the job finishes
            store(hook, job_id, 2, final=True)
            hook.storage.write_document(
                job_id, "job.json", {"status": "finished", "attempt": 1, "final_checkpoint_id": 2}
            )
        return found

    events: list[dict] = []
    original_complete = CheckpointSensor.execute_complete

    def record_event(self, context, event):
        events.append(event)
        return original_complete(self, context, event)

    monkeypatch.setattr(CheckpointTrigger, "_check", check_then_finish)
    monkeypatch.setattr(CheckpointSensor, "execute_complete", record_event)

    run = load_dag("test_sensor_deferrable").test(run_conf={"namespace": namespace, "job_id": job_id})
    assert run.state == "success"
    assert checks_in_trigger[0] is None and checks_in_trigger[-1]["checkpoint_id"] == 2
    (event,) = events
    assert event["status"] == "success" and event["job_id"] == job_id
    assert (event["checkpoint"]["checkpoint_id"], event["checkpoint"]["kind"]) == (2, "final")
    assert task_states("test_sensor_deferrable") == {"wait_final": ("success", 1)}


@pytest.mark.slow
def test_sensor_in_reschedule_mode_waits_for_a_newer_checkpoint(airflow_db, tmp_path, monkeypatch):
    from airflow_provider_seatunnel_ckpt.sensors.checkpoint import CheckpointSensor

    namespace, job_id = f"{tmp_path}/ckpt/", "rescheduled-job"
    hook = local_hook(namespace)
    store(hook, job_id, 1)  # not newer than 1: the first poke reschedules the task
    pokes: list[bool] = []
    original = CheckpointSensor.poke

    def poke_then_checkpoint(self, context):
        result = original(self, context)
        pokes.append(result.is_done)
        if len(pokes) == 1:
            store(hook, job_id, 2)
        return result

    monkeypatch.setattr(CheckpointSensor, "poke", poke_then_checkpoint)
    run = load_dag("test_sensor_reschedule").test(run_conf={"namespace": namespace, "job_id": job_id})
    assert run.state == "success" and pokes == [False, True]
    assert task_states("test_sensor_reschedule") == {"wait_newer": ("success", 1)}
    ((reschedules,),) = metadata_rows(
        "SELECT count(*) FROM task_reschedule r JOIN task_instance t ON r.ti_id = t.id "
        "WHERE t.dag_id = 'test_sensor_reschedule'"
    )
    assert reschedules == 1


@pytest.mark.slow
def test_recovery_operator_gives_up_after_the_limit_without_retrying(airflow_db, tmp_path, monkeypatch):
    from airflow_provider_seatunnel_ckpt.operators.recovery import CheckpointRecoveryOperator

    namespace, job_id = f"{tmp_path}/ckpt/", "flaky-job"
    hook = local_hook(namespace)
    store(hook, job_id, 1)
    write_attempt(hook, job_id, 1, outcome="failed", restored_from=None, checkpoints_completed=1, error="disk full")
    write_attempt(hook, job_id, 2, outcome="failed", restored_from=1, checkpoints_completed=0, error="OOM")
    write_attempt(hook, job_id, 3, outcome="failed", restored_from=1, checkpoints_completed=0, error="OOM again")
    write_attempt(hook, job_id, 4, outcome="running", restored_from=1)  # driver killed: no outcome
    hook.storage.write_document(job_id, "job.json", {"status": "running", "attempt": 4})

    raised: list[BaseException] = []
    original = CheckpointRecoveryOperator._restore_argument

    def record(self, hook, job_id):
        try:
            return original(self, hook, job_id)
        except BaseException as err:
            raised.append(err)
            raise

    monkeypatch.setattr(CheckpointRecoveryOperator, "_restore_argument", record)
    run = load_dag("test_recovery_gives_up").test(run_conf={"namespace": namespace, "job_id": job_id})
    assert run.state == "failed"
    # retries=3, but AirflowFailException is final: one try, and Spark never started
    assert task_states("test_recovery_gives_up") == {"recover": ("failed", 1)}
    assert len(hook.get_attempts(job_id)) == 4
    (error,) = raised
    assert type(error).__name__ == "AirflowFailException"
    assert "3 consecutive attempt(s) failed" in str(error) and "tolerable-failure=2" in str(error)
    assert "the driver stopped without recording an outcome" in str(error)


# ---- the decision itself, without a DAG run ------------------------------------------------------
def recovery_operator(**kwargs):
    from airflow_provider_seatunnel_ckpt.operators import CheckpointRecoveryOperator

    return CheckpointRecoveryOperator(task_id="recover", job_file="job.yaml", job_id="j", **kwargs)


def test_recovery_message_says_how_many_attempts_failed_and_where_the_checkpoint_is(tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    hook = local_hook(f"{tmp_path}/ckpt/", tolerable_failure=1)
    store(hook, "j", 4)
    write_attempt(hook, "j", 1, outcome="failed", restored_from=None, checkpoints_completed=4, error="first")
    write_attempt(hook, "j", 2, outcome="failed", restored_from=4, checkpoints_completed=0, error="second")
    write_attempt(hook, "j", 3, outcome="failed", restored_from=4, checkpoints_completed=0, error="third")
    with pytest.raises(AirflowFailException) as raised:
        recovery_operator()._restore_argument(hook, "j")  # limit from the config: 1
    message = str(raised.value)
    assert "2 consecutive attempt(s) failed without completing a new checkpoint" in message
    assert "tolerable-failure=1" in message and "last error: third" in message
    assert f"last completed checkpoint is 4 at file://{tmp_path}/ckpt/j/pipeline-1/chk-00000000000000000004" in message

    # an explicit limit wins over the config's
    assert recovery_operator(tolerable_failure=2)._restore_argument(hook, "j") == "latest"


def test_progress_resets_the_count(tmp_path):
    hook = local_hook(f"{tmp_path}/ckpt/")
    store(hook, "j", 7)
    write_attempt(hook, "j", 1, outcome="failed", restored_from=None, checkpoints_completed=0, error="x")
    write_attempt(hook, "j", 2, outcome="failed", restored_from=None, checkpoints_completed=0, error="y")
    # killed before recording anything, but storage shows it completed checkpoints 1..7
    write_attempt(hook, "j", 3, outcome="running", restored_from=None)
    streak = hook.failure_streak("j")
    assert (streak.failed_attempts, streak.latest_checkpoint_id) == (0, 7)
    write_attempt(hook, "j", 4, outcome="failed", restored_from=7, checkpoints_completed=0, error="z")
    assert hook.failure_streak("j").failed_attempts == 1
    write_attempt(hook, "j", 5, outcome="finished", restored_from=7, checkpoints_completed=2)
    assert hook.failure_streak("j").failed_attempts == 0


def test_recovery_needs_a_checkpoint_unless_a_fresh_start_is_allowed(tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    hook = local_hook(f"{tmp_path}/ckpt/")
    with pytest.raises(AirflowFailException, match="nothing to recover from.*allow_fresh_start=True"):
        recovery_operator()._restore_argument(hook, "never-ran")
    assert recovery_operator(allow_fresh_start=True)._restore_argument(hook, "never-ran") == "latest"


def test_recovery_of_a_finished_job_does_nothing(tmp_path):
    hook = local_hook(f"{tmp_path}/ckpt/")
    store(hook, "done", 3, final=True)
    hook.storage.write_document("done", "job.json", {"status": "finished", "attempt": 2, "final_checkpoint_id": 3})
    assert recovery_operator()._restore_argument(hook, "done") is None
