"""What the person on call reads first on the checkpoint view: how old the last completed
checkpoint is, the checkpoint in flight, the latest savepoint, failure and restore, the
recovery budget left and what a retry would do (docs/airflow.md, "Checkpoint view").

No Airflow here: the app passes in the history, the driver's newest heartbeat, the
newest restorable checkpoint and the clock, so the unit tests check it as the page gets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.heartbeat import Beat
from ..history import History

#: past this many checkpoint intervals without a completed checkpoint, the page shows the age in red
STALE_INTERVALS = 3
#: CheckpointConfig's defaults, for a configuration recorded without them
DEFAULT_INTERVAL_MS = 10_000
DEFAULT_TIMEOUT_MS = 60_000


def oncall(
    found: History,
    config: Mapping[str, Any],
    beat: Beat | None,
    restorable: Mapping[str, Any] | None,
    now_ms: int,
) -> dict[str, Any]:
    """``restorable``: the newest completed checkpoint or savepoint in storage
    (``hook.list_checkpoints``' shape), the one a retry restores."""
    job = found.job or {}
    running = job.get("status") == "running"
    interval_ms = int(config.get("interval") or DEFAULT_INTERVAL_MS)
    live = beat if running and beat is not None and not beat.ended else None
    return {
        "now_ms": now_ms,
        "interval_ms": interval_ms,
        "timeout_ms": int(config.get("timeout") or DEFAULT_TIMEOUT_MS),
        "staleness": _staleness(found, interval_ms, running, now_ms),
        "in_flight": [dict(c) for c in live.in_flight] if live is not None else [],
        "latest_savepoint": _latest_savepoint(found),
        "latest_failure": _latest_failure(found),
        "latest_restore": _latest_restore(found),
        "budget": _budget(found, config, live),
        "next_step": next_step(job, restorable),
    }


def _staleness(found: History, interval_ms: int, running: bool, now_ms: int) -> dict[str, Any] | None:
    latest = found.summary.latest_completed
    if latest is None:
        return None
    age_ms = max(0, now_ms - latest.end_ms)
    # Only a running job can fall behind: a finished one's last checkpoint only gets older.
    stale = running and age_ms > STALE_INTERVALS * interval_ms
    return {"id": latest.id, "end_ms": latest.end_ms, "age_ms": age_ms, "stale": stale}


def _latest_savepoint(found: History) -> dict[str, Any] | None:
    entry = next((c for c in found.checkpoints if c.kind == "savepoint" and c.status == "completed"), None)
    return None if entry is None else {"id": entry.id, "end_ms": entry.end_ms, "attempt": entry.attempt}


def _latest_failure(found: History) -> dict[str, Any] | None:
    """The newest failed (or aborted) checkpoint or failed attempt, with its cause."""
    failures = []
    checkpoint = found.summary.latest_failed
    if checkpoint is not None:
        failures.append(
            {
                "what": f"{checkpoint.kind} {checkpoint.id} {checkpoint.status}",
                "at_ms": checkpoint.end_ms,
                "cause": checkpoint.reason or "no reason recorded",
            }
        )
    for record in found.attempts:
        if record.get("outcome") == "failed":
            failures.append(
                {
                    "what": f"attempt {record.get('attempt')} failed",
                    "at_ms": int(record.get("end_ms") or record.get("start_ms") or 0),
                    "cause": record.get("error") or "no error recorded",
                }
            )
    return max(failures, key=lambda f: f["at_ms"], default=None)


def _latest_restore(found: History) -> dict[str, Any] | None:
    restore = found.summary.latest_restore
    if restore is None:
        return None
    return {"attempt": restore.attempt, "at_ms": restore.at_ms, "id": restore.id}


def _budget(found: History, config: Mapping[str, Any], live: Beat | None) -> dict[str, Any]:
    """Checkpoint failures counted against ``tolerable-failure``: the driver's own count
    while it runs; else the history's failed entries since the newest completed one
    (the same rule: only consecutive counted failures, engine/failure_manager.py)."""
    limit = int(config.get("tolerable-failure") or 0)
    if live is not None and live.consecutive_failures is not None:
        return {"used": live.consecutive_failures, "limit": live.tolerable_failures or limit}
    newest = found.summary.latest_completed
    used = sum(1 for c in found.checkpoints if c.status == "failed" and (newest is None or c.id > newest.id))
    return {"used": used, "limit": limit}


def next_step(job: Mapping[str, Any], restorable: Mapping[str, Any] | None) -> str:
    """What happens next, in words: where a retry (or the next run) resumes."""
    status = job.get("status")
    if status == "finished":
        return "the job finished: a new run of this job id starts from the beginning"
    if restorable is None:
        return "a retry starts from the beginning: no completed checkpoint in storage"
    kind = "savepoint" if restorable.get("savepoint") else "checkpoint"
    step = f"a retry resumes from {kind} {restorable['checkpoint_id']} at {restorable['location']}"
    return f"if the job fails, {step}" if status == "running" else step


def restorable_of(listed: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest completed entry of ``hook.list_checkpoints``."""
    return max((c for c in listed if c.get("completed")), key=lambda c: c["checkpoint_id"], default=None)
