"""Kill a peer's coordinating process mid-run, restore it from its checkpoint, and time
the kill to the first newly committed row.

One measurement (``measure``), the same for every engine:

1. ``start()`` launches the job; once its sink has committed a first file, and
   ``settle_s`` later (more checkpoints complete), its whole process group is SIGKILLed:
   the driver, the JVM and the workers it started, as a machine loss would;
2. ``restore()`` launches the engine's own restore of that job from its latest completed
   checkpoint (ours: ``--restore latest``; Zeta: ``-r <job id>``; Flink:
   ``execution.savepoint.path``);
3. the sink's directory is polled every ``POLL_S``: the recovery time is from the kill to
   the first committed file that was not there at the kill and holds a row;
4. the restored job runs to its end; its committed output is read back and its ids
   counted (``committed_ids``).

A committed file is one the sink has published: a name and every directory below the
output without a leading ``.`` or ``_`` (in-progress and staging files are hidden so, or
written elsewhere, in all three engines).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from bench.peers.process import PeerError, Started

POLL_S = 0.05


def committed_files(out: Path) -> set[Path]:
    """The files the sink has published under ``out`` (nothing hidden, no staging)."""
    if not out.exists():
        return set()
    return {
        path
        for path in out.rglob("*")
        if path.is_file() and not any(part.startswith((".", "_")) for part in path.relative_to(out).parts)
    }


def _rows_in(path: Path) -> int:
    """Rows of a committed parquet file; 0 while it cannot be read (yet)."""
    with contextlib.suppress(Exception):
        return pq.ParquetFile(path).metadata.num_rows
    return 0


def _wait_for_commit(process: Started, out: Path, known: set[Path], deadline_s: float) -> float | None:
    """time.time() when a file not in ``known`` with a row appears in ``out``; None if the
    process ends or ``deadline_s`` passes first (a last look after it ends)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        ended = process.poll() is not None
        if any(_rows_in(path) > 0 for path in committed_files(out) - known):
            return time.time()
        if ended:
            return None
        time.sleep(POLL_S)
    return None


def committed_ids(out: Path, column: str = "id") -> np.ndarray:
    files = sorted(committed_files(out))
    parts = [pq.read_table(path, columns=[column]).column(column).to_numpy() for path in files]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def measure(
    label: str,
    start: Callable[[], Started],
    restore: Callable[[], Started],
    out: Path,
    *,
    settle_s: float = 2.0,
    timeout_s: float = 600.0,
) -> dict[str, Any]:
    """Run, kill, restore and time one job of an engine (module docstring). Returns the
    recovery time with its parts and the restored run's exit; raises ``PeerError`` when
    the first run commits nothing or the restored run commits nothing new."""
    first = start()
    try:
        first_commit = _wait_for_commit(first, out, set(), timeout_s)
        if first_commit is None:
            raise PeerError(f"{label}: the first run committed nothing; its log: {first.log}")
        time.sleep(settle_s)
        if first.poll() is not None:
            raise PeerError(f"{label}: the job ended before the kill (make it longer); its log: {first.log}")
        known = committed_files(out)
        first.kill()
        killed = time.time()
        load_at_kill = os.getloadavg()[0]
    finally:
        first.kill()
        first_run = first.wait(30)
    rows_at_kill = sum(_rows_in(path) for path in known)
    second = restore()
    try:
        new_commit = _wait_for_commit(second, out, known, timeout_s)
        finished = second.wait(timeout_s)
    finally:
        second.kill()
    if new_commit is None:
        raise PeerError(
            f"{label}: the restored run committed nothing new (exit {finished.exit_code}); log {second.log}"
        )
    return {
        "recovery_s": round(new_commit - killed, 3),
        "restore_started_after_kill_s": round(second.started_wall - killed, 3),
        "first_run_to_first_commit_s": round(first_commit - first.started_wall, 3),
        "first_run_wall_s": first_run.wall_s,
        "rows_committed_at_kill": rows_at_kill,
        #: the machine's 1-minute load average at the kill (shared, 2 cores)
        "loadavg_1m_at_kill": round(load_at_kill, 2),
        "restored_exit_code": finished.exit_code,
        "restored_wall_s": finished.wall_s,
        "restored_timed_out": finished.timed_out,
        "peak_rss_mib_restored": finished.peak_rss_mib,
        "logs": [str(first.log), str(second.log)],
    }


def exactly_once(ids: np.ndarray, expected_rows: int, expected_ids: np.ndarray | None = None) -> dict[str, Any]:
    """Every id once: committed rows, distinct ids, duplicate rows (rows beyond the distinct
    ids), and, where the ids are known in advance, the missing and unexpected ones."""
    distinct = np.unique(ids)
    result: dict[str, Any] = {
        "committed_rows": int(len(ids)),
        "expected_rows": int(expected_rows),
        "distinct_ids": int(len(distinct)),
        "duplicate_rows": int(len(ids) - len(distinct)),
    }
    if expected_ids is not None:
        result["missing_ids"] = int(len(np.setdiff1d(expected_ids, distinct)))
        result["unexpected_ids"] = int(len(np.setdiff1d(distinct, expected_ids)))
    result["exactly_once"] = bool(
        result["duplicate_rows"] == 0
        and result["committed_rows"] == expected_rows
        and not result.get("missing_ids")
        and not result.get("unexpected_ids")
    )
    return result
