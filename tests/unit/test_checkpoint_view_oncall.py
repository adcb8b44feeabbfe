"""The checkpoint view's panel for the person on call (ui/oncall.py): staleness, the
checkpoint in flight, the latest savepoint / failure / restore, the recovery budget and
the next step, from a history, a heartbeat and the newest restorable checkpoint."""

from __future__ import annotations

from typing import Any

from airflow_provider_seatunnel_ckpt.engine.heartbeat import Beat
from airflow_provider_seatunnel_ckpt.history import (
    CheckpointEntry,
    History,
    RestoreEntry,
    completed_entry,
    failed_entry,
    restore_entry,
)
from airflow_provider_seatunnel_ckpt.ui.oncall import next_step, oncall, restorable_of

T0 = 1_700_000_000_000
CONFIG = {"interval": 2_000, "timeout": 60_000, "tolerable-failure": 3}


def completed(cid: int, at: int, kind: str = "checkpoint", attempt: int = 1) -> CheckpointEntry:
    entry = completed_entry(attempt, cid, kind, {"trigger_ms": at}, duration_ms=100, persist_ms=5)
    return CheckpointEntry.model_validate(entry)


def failed(cid: int, at: int, reason: str, counts: bool = True) -> CheckpointEntry:
    return CheckpointEntry.model_validate(failed_entry(1, cid, "checkpoint", at, at + 50, reason, counts))


def history(
    checkpoints: list[CheckpointEntry], status: str = "running", attempts: list[dict[str, Any]] | None = None
) -> History:
    restores = [RestoreEntry.model_validate(restore_entry(1, T0 - 1_000, None))]
    ordered = sorted(checkpoints, key=lambda c: (c.trigger_ms, c.id), reverse=True)
    return History("job", {"status": status, "attempt": 1}, attempts or [], ordered, restores)


def beat(**fields: Any) -> Beat:
    found = Beat.from_document({"attempt": 1, "sequence": 7, "state": "running", **fields})
    assert found is not None
    return found


RESTORABLE = {
    "checkpoint_id": 4,
    "savepoint": False,
    "completed": True,
    "location": "file:///ckpt/job/pipeline-1/chk-4",
}


def test_the_age_of_the_last_completed_checkpoint_turns_stale_past_three_intervals() -> None:
    found = history([completed(3, T0), completed(4, T0 + 2_000)])
    end = found.summary.latest_completed.end_ms  # type: ignore[union-attr]
    fresh = oncall(found, CONFIG, beat(), RESTORABLE, now_ms=end + 6_000)["staleness"]
    assert fresh == {"id": 4, "end_ms": end, "age_ms": 6_000, "stale": False}
    assert oncall(found, CONFIG, beat(), RESTORABLE, now_ms=end + 6_001)["staleness"]["stale"] is True
    # a finished job only gets older: never stale
    done = history([completed(4, T0)], status="finished")
    assert oncall(done, CONFIG, None, RESTORABLE, now_ms=T0 + 10**9)["staleness"]["stale"] is False
    assert oncall(history([]), CONFIG, None, None, now_ms=T0)["staleness"] is None


def test_the_checkpoint_in_flight_comes_from_a_live_drivers_heartbeat_only() -> None:
    in_flight = [
        {"id": 5, "kind": "checkpoint", "state": "pending", "trigger_ms": T0, "acknowledged": 1, "subtasks": 2}
    ]
    found = history([completed(4, T0 - 2_000)])
    assert oncall(found, CONFIG, beat(in_flight=in_flight), RESTORABLE, T0)["in_flight"] == in_flight
    assert oncall(found, CONFIG, beat(in_flight=in_flight, state="failed"), RESTORABLE, T0)["in_flight"] == []
    ended = history([completed(4, T0 - 2_000)], status="failed")
    assert oncall(ended, CONFIG, beat(in_flight=in_flight), RESTORABLE, T0)["in_flight"] == []


def test_the_tiles_latest_savepoint_failure_with_its_cause_and_restore() -> None:
    attempts = [{"attempt": 1, "outcome": "failed", "start_ms": T0, "end_ms": T0 + 9_000, "error": "executor lost"}]
    found = history(
        [completed(3, T0), completed(4, T0 + 1_000, kind="savepoint"), failed(5, T0 + 2_000, "expired")],
        attempts=attempts,
    )
    panel = oncall(found, CONFIG, None, RESTORABLE, T0 + 10_000)
    assert panel["latest_savepoint"] == {"id": 4, "end_ms": T0 + 1_100, "attempt": 1}
    assert panel["latest_failure"] == {"what": "attempt 1 failed", "at_ms": T0 + 9_000, "cause": "executor lost"}
    assert panel["latest_restore"] == {"attempt": 1, "at_ms": T0 - 1_000, "id": None}
    only_checkpoint = oncall(history([failed(5, T0, "declined by subtask 1: disk full")]), CONFIG, None, None, T0)
    assert only_checkpoint["latest_failure"]["cause"] == "declined by subtask 1: disk full"
    assert only_checkpoint["latest_failure"]["what"] == "checkpoint 5 failed"
    assert only_checkpoint["latest_savepoint"] is None


def test_the_recovery_budget_counts_failures_since_the_newest_completed_checkpoint() -> None:
    found = history(
        [
            failed(2, T0, "expired"),
            completed(3, T0 + 1_000),
            failed(4, T0 + 2_000, "expired"),
            failed(5, T0 + 3_000, "subsumed", counts=False),  # aborted: does not count
            failed(6, T0 + 4_000, "declined"),
        ],
        status="failed",
    )
    assert oncall(found, CONFIG, None, RESTORABLE, T0)["budget"] == {"used": 2, "limit": 3}
    # while the driver runs, its own count is the truth (it also knows checkpoints not yet in the history)
    live = beat(consecutive_failures=1, tolerable_failures=3)
    assert oncall(history([completed(3, T0)]), CONFIG, live, RESTORABLE, T0)["budget"] == {"used": 1, "limit": 3}


def test_the_next_step_names_the_checkpoint_and_where_it_lies() -> None:
    assert next_step({"status": "failed"}, RESTORABLE) == (
        "a retry resumes from checkpoint 4 at file:///ckpt/job/pipeline-1/chk-4"
    )
    assert next_step({"status": "running"}, {**RESTORABLE, "savepoint": True}).startswith(
        "if the job fails, a retry resumes from savepoint 4 at "
    )
    assert (
        next_step({"status": "failed"}, None) == "a retry starts from the beginning: no completed checkpoint in storage"
    )
    assert next_step({"status": "finished"}, RESTORABLE).startswith("the job finished")
    listed = [
        {"checkpoint_id": 5, "savepoint": False, "completed": False, "location": "x"},
        RESTORABLE,
        {"checkpoint_id": 2, "savepoint": True, "completed": True, "location": "y"},
    ]
    assert restorable_of(listed) == RESTORABLE and restorable_of([]) is None


def test_the_charts_get_the_interval_and_the_timeout() -> None:
    panel = oncall(history([]), {"interval": 5_000, "timeout": 30_000}, None, None, T0)
    assert (panel["interval_ms"], panel["timeout_ms"]) == (5_000, 30_000)
    assert oncall(history([]), {}, None, None, T0)["interval_ms"] == 10_000
