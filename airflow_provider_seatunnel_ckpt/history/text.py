"""The history as text tables and as JSON-safe data (``seatunnel-ckpt history``); the
Airflow view serves the same ``to_json`` data."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from .entries import CheckpointEntry
from .reader import Figures, History, Summary, shown_outcome


def size_text(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def time_text(epoch_ms: int | None) -> str:
    if not epoch_ms:
        return "-"
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _ms(value: int | None) -> str:
    return "-" if value is None else f"{value:,} ms"


def to_json(history: History, limit: int | None = None) -> dict[str, Any]:
    """Everything the history shows, newest first; ``limit`` caps the checkpoint list."""
    checkpoints = history.checkpoints if limit is None else history.checkpoints[:limit]
    newest = _newest_attempt(history)
    return {
        "job_id": history.job_id,
        "job": history.job,
        "attempts": [{**record, "shown_outcome": shown_outcome(record, newest)} for record in history.attempts],
        "summary": summary_json(history.summary),
        "total_checkpoints": len(history.checkpoints),
        "checkpoints": [entry_json(c) for c in checkpoints],
        "restores": [r.model_dump() for r in history.restores],
        "skipped_entries": history.skipped,
    }


def summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "completed": summary.completed,
        "failed": summary.failed,
        "aborted": summary.aborted,
        "latest_completed": entry_json(summary.latest_completed, subtasks=False),
        "latest_failed": entry_json(summary.latest_failed, subtasks=False),
        "latest_restore": summary.latest_restore.model_dump() if summary.latest_restore else None,
        "figures": {
            name: dataclasses.asdict(figures) if figures else None
            for name, figures in (
                ("duration_ms", summary.duration_ms),
                ("state_bytes", summary.state_bytes),
                ("rows", summary.rows),
            )
        },
    }


def entry_json(entry: CheckpointEntry | None, subtasks: bool = True) -> dict[str, Any] | None:
    """One checkpoint as JSON, with the slowest subtask; without ``subtasks`` only their count."""
    if entry is None:
        return None
    shown = [d.model_dump() for d in entry.subtask_details] if subtasks else len(entry.subtasks)
    return {**entry.model_dump(exclude={"subtasks"}), "subtasks": shown, "slowest_subtask": entry.slowest_subtask}


def history_text(history: History, limit: int | None) -> str:
    lines = [_job_line(history)]
    if history.attempts:
        lines += ["", "ATTEMPT  STARTED (UTC)            OUTCOME   RESTORED FROM    CHECKPOINTS  ERROR"]
        newest = _newest_attempt(history)
        for record in history.attempts:
            restored = record.get("restored_from")
            lines.append(
                f"{record.get('attempt', '?')!s:>7}  {time_text(record.get('start_ms')):<23}  "
                f"{shown_outcome(record, newest):<8}  "
                f"{'the beginning' if restored is None else f'checkpoint {restored}':<15}  "
                f"{record.get('checkpoints_completed', '-')!s:>11}  {record.get('error') or ''}".rstrip()
            )
    summary = history.summary
    lines += [
        "",
        f"checkpoints in the history: {summary.completed} completed, {summary.failed} failed, "
        f"{summary.aborted} aborted" + (f" ({history.skipped} unreadable entries left out)" if history.skipped else ""),
    ]
    if summary.duration_ms is not None:
        lines += ["", f"{'':<10}  {'MIN':>10}  {'MEDIAN':>10}  {'P99':>10}  {'MAX':>10}"]
        for label, figures, fmt in (
            ("duration", summary.duration_ms, _ms),
            ("state", summary.state_bytes, size_text),
            ("rows", summary.rows, lambda v: f"{v:,}"),
        ):
            if figures is not None:
                lines.append(f"{label:<10}  " + "  ".join(f"{fmt(v):>10}" for v in _values(figures)))
    shown = history.checkpoints if limit is None else history.checkpoints[:limit]
    if shown:
        lines += [
            "",
            f"{'ID':>6}  {'KIND':<10}  {'STATUS':<9}  {'TRIGGERED (UTC)':<23}  {'DURATION':>10}  "
            f"{'STATE':>10}  {'ROWS':>12}  REASON",
        ]
        for c in shown:
            lines.append(
                f"{c.id:>6}  {c.kind:<10}  {c.status:<9}  {time_text(c.trigger_ms):<23}  {_ms(c.duration_ms):>10}  "
                f"{size_text(c.state_bytes) if c.status == 'completed' else '-':>10}  "
                f"{f'{c.rows:,}' if c.status == 'completed' else '-':>12}  {c.reason or ''}".rstrip()
            )
        if len(shown) < len(history.checkpoints):
            lines.append(f"... {len(history.checkpoints) - len(shown)} older (--limit 0 shows all)")
    return "\n".join(lines)


def checkpoint_text(entry: CheckpointEntry) -> str:
    """One checkpoint in detail: each subtask's ACK, sync and async times and state, the
    slowest marked."""
    head = (
        f"checkpoint {entry.id} ({entry.kind}) {entry.status}, attempt {entry.attempt}, "
        f"triggered {time_text(entry.trigger_ms)} UTC, took {_ms(entry.duration_ms)}"
    )
    if entry.status != "completed":
        return f"{head}\nreason: {entry.reason or 'unknown'}"
    lines = [
        f"{head} (acks {_ms(entry.ack_duration_ms)}, persisted {_ms(entry.persist_ms)}), "
        f"{size_text(entry.state_bytes)} state, {entry.rows:,} rows"
    ]
    if entry.subtasks:
        slowest = entry.slowest_subtask
        lines += [
            "",
            f"{'SUBTASK':>7}  {'ATTEMPT':>7}  {'ACK':>10}  {'SYNC':>10}  {'ASYNC':>10}  {'STATE':>10}  {'ROWS':>12}",
        ]
        for s in entry.subtask_details:
            lines.append(
                f"{s.subtask:>7}  {s.attempt:>7}  {_ms(s.ack_ms):>10}  {_ms(s.sync_ms):>10}  "
                f"{_ms(s.async_ms):>10}  {size_text(s.state_bytes):>10}  {s.rows:>12,}"
                + ("  <- slowest" if s.subtask == slowest and len(entry.subtasks) > 1 else "")
            )
    return "\n".join(lines)


def _newest_attempt(history: History) -> int:
    return max((int(r.get("attempt") or 0) for r in history.attempts), default=0)


def _values(figures: Figures) -> tuple[int, int, int, int]:
    return figures.min, figures.median, figures.p99, figures.max


def _job_line(history: History) -> str:
    job = history.job
    if job is None:
        return f"job {history.job_id}: no job.json (never claimed, or deleted)"
    line = f"job {history.job_id}: {job.get('status', '?')}, attempt {job.get('attempt', '?')}"
    if job.get("parallelism"):
        line += f", {job['parallelism']} subtasks"
    if job.get("final_checkpoint_id") is not None:
        line += f", final checkpoint {job['final_checkpoint_id']}"
    elif job.get("last_checkpoint_id") is not None:
        line += f", last checkpoint {job['last_checkpoint_id']}"
    if job.get("error"):
        line += f"\nerror: {job['error']}"
    return line
