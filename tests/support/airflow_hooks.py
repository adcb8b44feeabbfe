"""What the storage-hook suites share (tests/airflow/test_hooks.py, test_connections_aws.py):
an Airflow connection set for one test, every hook operation run against a backend, and
the check that a secret is registered with Airflow's masker."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.history import HistoryRecorder, failed_entry, restore_entry
from airflow_provider_seatunnel_ckpt.hooks import CheckpointStorageHook
from airflow_provider_seatunnel_ckpt.storage import CheckpointKind, PipelineState

JOB = "orders"


def connection(monkeypatch: pytest.MonkeyPatch, conn: dict[str, Any]) -> str:
    conn_id = f"ckpt_{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    return conn_id


def exercise(hook: CheckpointStorageHook) -> None:
    """Every hook operation, as operators and sensors use them."""
    ok, message = hook.test_connection()
    assert ok, message
    storage = hook.get_conn()
    for checkpoint_id in (1, 2):
        storage.store_checkpoint(
            PipelineState(job_id=JOB, pipeline_id=1, checkpoint_id=checkpoint_id, states=b"s%d" % checkpoint_id)
        )
    storage.store_checkpoint(
        PipelineState(job_id=JOB, pipeline_id=1, checkpoint_id=3, states=b"final", kind=CheckpointKind.FINAL)
    )
    storage.write_document(
        JOB, "job.json", {"status": "finished", "attempt": 1, "final_checkpoint_id": 3, "fencing_token": "t0k3n"}
    )
    storage.write_document(
        JOB, "attempts/000001.json", {"attempt": 1, "outcome": "finished", "checkpoints_completed": 3}
    )

    assert [c["checkpoint_id"] for c in hook.list_checkpoints(JOB)] == [1, 2, 3]
    assert hook.get_latest_checkpoint_id(JOB) == 3
    summary = hook.inspect(JOB)
    assert (summary["checkpoint_id"], summary["kind"]) == (3, "final")
    assert summary["location"] == hook.describe(JOB) + "/pipeline-1/chk-00000000000000000003"
    assert hook.verify(JOB) == []
    assert hook.get_job_status(JOB) == {"status": "finished", "attempt": 1, "final_checkpoint_id": 3}  # no token
    assert [a["outcome"] for a in hook.get_attempts(JOB)] == ["finished"]
    recorder = HistoryRecorder(storage, JOB, 1, max_entries=10)  # the history, over this backend's protocol
    recorder.record(restore_entry(1, 1_700_000_000_000, None))
    recorder.record(failed_entry(1, 1, "checkpoint", 1_700_000_000_100, 1_700_000_000_200, "declined", True))
    recorder.close()
    history = hook.get_history(JOB)
    assert [(c.id, c.status) for c in history.checkpoints] == [(1, "failed")]
    assert history.job == hook.get_job_status(JOB) and [r.id for r in history.restores] == [None]
    assert hook.check_checkpoint(JOB, wait_for_final=True)["checkpoint_id"] == 3
    assert hook.check_checkpoint(JOB, newer_than=3) is None
    hook.request_savepoint(JOB)
    assert storage.read_document(JOB, "requests/stop-with-savepoint.json")["by"] == "airflow"
    asked = hook.trigger_savepoint(JOB, by="oncall")  # a savepoint without the stop (the checkpoint view)
    assert storage.read_document(JOB, "requests/savepoint.json") == {"requested_ms": asked, "by": "oncall"}
    hook.delete(JOB, checkpoint_id=1)
    assert [c["checkpoint_id"] for c in hook.list_checkpoints(JOB)] == [2, 3]
    hook.delete(JOB)
    assert hook.list_checkpoints(JOB) == [] and hook.get_job_status(JOB) is None


def assert_masked(*secrets: str) -> None:
    from airflow.sdk._shared.secrets_masker import redact

    for secret in secrets:
        assert secret not in redact(f"value: {secret}"), "secret not registered with the masker"
