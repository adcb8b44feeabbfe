"""CheckpointTrigger: its serialize() contract, the round trip through Airflow's real
serializers, and run() on local storage (success, error, storage calls off the loop)."""

from __future__ import annotations

import asyncio
import inspect
import threading

import pytest

from airflow_provider_seatunnel_ckpt.storage import CheckpointKind, PipelineState
from airflow_provider_seatunnel_ckpt.triggers import CheckpointTrigger

CLASSPATH = "airflow_provider_seatunnel_ckpt.triggers.checkpoint.CheckpointTrigger"


def config(namespace: str) -> str:
    return f"checkpoint:\n  storage:\n    plugin-config:\n      storage.type: local\n      namespace: {namespace}\n"


def make(tmp_path, **kwargs) -> CheckpointTrigger:
    return CheckpointTrigger(job_id="j", config_file=config(f"{tmp_path}/ckpt/"), poke_interval=0.01, **kwargs)


def test_serialize_matches_init_exactly():
    trigger = CheckpointTrigger(
        job_id="j",
        config_file="/etc/seatunnel.yaml",
        storage_conn_id="s3",
        newer_than=7,
        wait_for_final=True,
        poke_interval=5.0,
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == CLASSPATH
    assert kwargs == {
        "job_id": "j",
        "config_file": "/etc/seatunnel.yaml",
        "storage_conn_id": "s3",
        "newer_than": 7,
        "wait_for_final": True,
        "poke_interval": 5.0,
    }
    assert list(kwargs) == [p for p in inspect.signature(CheckpointTrigger.__init__).parameters if p != "self"]


def test_round_trip_through_airflows_serializers():
    from airflow.models.trigger import Trigger
    from airflow.sdk._shared.module_loading import import_string
    from airflow.sdk.serde import deserialize, serialize

    trigger = CheckpointTrigger(
        job_id="j", config_file="/c.yaml", storage_conn_id=None, newer_than=3, wait_for_final=False
    )
    # the task runner's DeferTask message (serde), then the triggerer's stored row (encrypted)
    classpath, kwargs = trigger.serialize()
    kwargs = deserialize(serialize(kwargs))
    row = Trigger.from_object(import_string(classpath)(**kwargs))
    rebuilt = import_string(row.classpath)(**row.kwargs)
    assert rebuilt.serialize() == trigger.serialize()


def first_event(trigger: CheckpointTrigger) -> dict:
    async def main():
        agen = trigger.run()
        try:
            return (await asyncio.wait_for(agen.__anext__(), timeout=30)).payload
        finally:
            await agen.aclose()

    return asyncio.run(main())


def test_fires_on_a_newer_checkpoint_calling_storage_off_the_event_loop(tmp_path):
    trigger = make(tmp_path, newer_than=1)
    storage = trigger.hook.storage
    storage.store_checkpoint(PipelineState(job_id="j", pipeline_id=1, checkpoint_id=1, states=b"a"))
    threads: list[int] = []
    original = trigger.hook.check_checkpoint

    def check(*args):
        threads.append(threading.get_ident())
        if len(threads) == 2:  # the first check found nothing new; now checkpoint 2 completes
            storage.store_checkpoint(PipelineState(job_id="j", pipeline_id=1, checkpoint_id=2, states=b"b"))
        return original(*args)

    trigger.hook.check_checkpoint = check
    loop_thread: list[int] = []

    async def main():
        loop_thread.append(threading.get_ident())
        agen = trigger.run()
        try:
            return (await asyncio.wait_for(agen.__anext__(), timeout=30)).payload
        finally:
            await agen.aclose()

    event = asyncio.run(main())
    assert event["status"] == "success" and event["checkpoint"]["checkpoint_id"] == 2
    assert len(threads) >= 2 and loop_thread[0] not in threads


def test_fires_on_the_final_checkpoint(tmp_path):
    trigger = make(tmp_path, wait_for_final=True)
    trigger.hook.storage.store_checkpoint(
        PipelineState(job_id="j", pipeline_id=1, checkpoint_id=5, states=b"f", kind=CheckpointKind.FINAL)
    )
    trigger.hook.storage.write_document("j", "job.json", {"status": "finished", "final_checkpoint_id": 5, "attempt": 1})
    event = first_event(trigger)
    assert event["status"] == "success"
    assert (event["checkpoint"]["checkpoint_id"], event["checkpoint"]["kind"]) == (5, "final")


def test_turns_any_failure_into_an_error_event(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_BROKEN_CKPT", '{"conn_type": "postgres", "host": "db"}')
    event = first_event(CheckpointTrigger(job_id="j", storage_conn_id="broken_ckpt", poke_interval=0.01))
    assert event["status"] == "error" and "has type 'postgres'" in event["message"]


def test_sensor_raises_on_an_error_event():
    from airflow.sdk.exceptions import AirflowException

    from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

    sensor = CheckpointSensor(task_id="wait", job_id="j", deferrable=True)
    with pytest.raises(AirflowException, match="waiting for a checkpoint failed: boom"):
        sensor.execute_complete({}, {"status": "error", "job_id": "j", "message": "boom"})
    assert (
        sensor.execute_complete(
            {},
            {
                "status": "success",
                "job_id": "j",
                "checkpoint": {"checkpoint_id": 1, "kind": "final", "location": "file:///x"},
            },
        )["checkpoint_id"]
        == 1
    )


def test_a_deferred_sensor_hands_the_triggerer_the_config_not_a_worker_path(tmp_path, monkeypatch):
    """A relative config_file is found next to the DAG file on the worker; the triggerer,
    maybe on another host, gets its text, so it needs neither the DAG folder nor the
    worker's working directory."""
    from airflow.models.trigger import Trigger
    from airflow.sdk import DAG
    from airflow.sdk._shared.module_loading import import_string
    from airflow.sdk.exceptions import TaskDeferred
    from airflow.sdk.serde import deserialize, serialize

    from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

    dag_folder = tmp_path / "dags"
    dag_folder.mkdir()
    text = config(f"{tmp_path}/ckpt/")
    (dag_folder / "seatunnel.yaml").write_text(text)
    with DAG("portable", schedule=None) as dag:
        sensor = CheckpointSensor(
            task_id="wait", job_id="j", config_file="seatunnel.yaml", newer_than=1, deferrable=True, poke_interval=0.01
        )
    dag.fileloc = str(dag_folder / "portable.py")
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})  # nothing newer than 1 yet: the sensor defers
    classpath, kwargs = deferred.value.trigger.serialize()
    assert kwargs["config_file"] == text and kwargs["storage_conn_id"] is None

    # as the task runner sends it and the triggerer's table stores it
    row = Trigger.from_object(import_string(classpath)(**deserialize(serialize(kwargs))))

    (dag_folder / "seatunnel.yaml").unlink()  # another host: no DAG folder,
    monkeypatch.chdir(tmp_path)  # another working directory
    rebuilt = import_string(row.classpath)(**row.kwargs)
    rebuilt.hook.storage.store_checkpoint(PipelineState(job_id="j", pipeline_id=1, checkpoint_id=2, states=b"b"))
    event = first_event(rebuilt)
    assert event["status"] == "success" and event["checkpoint"]["checkpoint_id"] == 2


def test_a_sensor_fails_without_retry_on_a_connection_of_the_wrong_type(monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

    monkeypatch.setenv("AIRFLOW_CONN_BROKEN_CKPT", '{"conn_type": "postgres", "host": "db"}')
    sensor = CheckpointSensor(task_id="wait", job_id="j", storage_conn_id="broken_ckpt", retries=3)
    with pytest.raises(AirflowFailException, match="'broken_ckpt'.*has type 'postgres'"):
        sensor.poke({})


def test_credentials_in_a_config_file_never_reach_the_trigger_kwargs(tmp_path):
    """Trigger kwargs land in the metadata DB, in clear unless a Fernet key is set (as
    here): a config file with credentials is handed over by path, never by content."""
    from airflow.models.trigger import Trigger
    from airflow.sdk.exceptions import TaskDeferred

    from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

    path = tmp_path / "seatunnel.yaml"
    path.write_text(config(f"{tmp_path}/ckpt/") + "      fs.s3a.secret.key: sk-7f3a\n")
    sensor = CheckpointSensor(task_id="wait", job_id="j", config_file=str(path), deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    _, kwargs = deferred.value.trigger.serialize()
    assert kwargs["config_file"] == str(path)
    assert "sk-7f3a" not in Trigger.from_object(deferred.value.trigger).encrypted_kwargs
