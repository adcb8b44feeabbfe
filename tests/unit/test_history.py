"""The checkpoint history (``history/``): what the driver records, how it is batched and
bounded, how it is read back, and ``seatunnel-ckpt history``.

Local checkpoint storage on disk, through the same storage API the driver uses; the
recorder's thread is not started (``flush`` is called where the thread would), so every
test is deterministic. The driver's own recording is proven under Spark in
``tests/integration/engine/test_failure_handling.py``.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.cli import main
from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.history import (
    HISTORY_DIR,
    HistoryRecorder,
    completed_entry,
    failed_entry,
    read_history,
    restore_entry,
)
from airflow_provider_seatunnel_ckpt.history.attempts import fold_earlier, read_attempts, record_path
from airflow_provider_seatunnel_ckpt.history.reader import Figures
from airflow_provider_seatunnel_ckpt.storage import create_storage

JOB = "orders"


pytestmark = pytest.mark.usefixtures("package_logging_restored")


def _config(tmp_path: Path, extra: str = "") -> str:
    path = tmp_path / "seatunnel.yaml"
    path.write_text(
        "seatunnel:\n  engine:\n    checkpoint:\n"
        f"{extra}"
        "      storage:\n        type: hdfs\n        plugin-config:\n"
        "          storage.type: local\n"
        f"          namespace: {tmp_path}/ns/\n"
    )
    return str(path)


@pytest.fixture
def config(tmp_path: Path) -> str:
    return _config(tmp_path)


@pytest.fixture
def storage(config: str) -> Any:
    return create_storage(load_config(config).storage)


def _statistics(checkpoint_id: int, acks: list[int], trigger_ms: int = 1_700_000_000_000) -> dict[str, Any]:
    """``_metadata`` statistics as ``engine.completed_store.checkpoint_statistics`` writes them."""
    return {
        "trigger_ms": trigger_ms,
        "complete_ms": trigger_ms + 90,
        "duration_ms": 90,
        "ack_duration_ms": max(acks),
        "persist_ms": 5,
        "state_bytes": 100 * len(acks),
        "rows": 10 * checkpoint_id * len(acks),
        "num_subtasks": len(acks),
        "subtasks": {
            str(i): {
                "attempt": 1,
                "sync_ms": i,
                "async_ms": 2 * i,
                "state_bytes": 100,
                "rows_since_last": 10 * checkpoint_id,
                "ack_latency_ms": ack,
                "ack_ms": trigger_ms + ack,
            }
            for i, ack in enumerate(acks)
        },
    }


def _checkpoints(recorder: HistoryRecorder, ids: range, attempt: int = 1) -> None:
    for checkpoint_id in ids:
        stats = _statistics(checkpoint_id, [10, 30], trigger_ms=1_700_000_000_000 + 1000 * checkpoint_id)
        recorder.record(completed_entry(attempt, checkpoint_id, "checkpoint", stats, 120, 7))


class CountingStorage:
    """The storage, with its document writes counted and, on demand, failing."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.writes: list[str] = []
        self.fail_with: Exception | None = None

    def write_document(self, job_id: str, path: str, document: Any) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.writes.append(path)
        self.inner.write_document(job_id, path, document)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_what_the_driver_records_reads_back_newest_first(storage: Any) -> None:
    recorder = HistoryRecorder(storage, JOB, 2, max_entries=100)
    recorder.record(restore_entry(2, 1_700_000_000_500, 4))
    recorder.record(completed_entry(2, 5, "checkpoint", _statistics(5, [12, 40, 25]), 130, 9))
    recorder.record(
        failed_entry(
            2,
            6,
            "checkpoint",
            1_700_000_001_000,
            1_700_000_061_000,
            "checkpoint expired before all subtasks acknowledged",
            True,
        )
    )
    recorder.record(
        failed_entry(
            2, 7, "savepoint", 1_700_000_002_000, 1_700_000_002_010, "a newer checkpoint completed first", False
        )
    )
    recorder.close()

    history = read_history(storage, JOB)
    assert [(c.id, c.status, c.kind) for c in history.checkpoints] == [
        (7, "aborted", "savepoint"),
        (6, "failed", "checkpoint"),
        (5, "completed", "checkpoint"),
    ]
    done = history.checkpoint(5)
    assert (done.rows, done.state_bytes, done.duration_ms, done.ack_duration_ms, done.persist_ms) == (
        150,
        300,
        130,
        40,
        9,
    )
    assert [(s.subtask, s.ack_ms, s.sync_ms, s.async_ms, s.rows) for s in done.subtask_details] == [
        (0, 12, 0, 0, 50),
        (1, 40, 1, 2, 50),
        (2, 25, 2, 4, 50),
    ]
    assert done.slowest_subtask == 1
    expired = history.checkpoint(6)
    assert expired.duration_ms == 60_000 and expired.reason.startswith("checkpoint expired")
    assert [(r.attempt, r.id) for r in history.restores] == [(2, 4)]
    summary = history.summary
    assert (summary.completed, summary.failed, summary.aborted) == (1, 1, 1)
    assert summary.latest_completed.id == 5 and summary.latest_failed.id == 7 and summary.latest_restore.id == 4


def test_entries_are_written_in_batches_not_one_write_each(storage: Any) -> None:
    counting = CountingStorage(storage)
    recorder = HistoryRecorder(counting, JOB, 1, max_entries=1000, segment_entries=50)
    _checkpoints(recorder, range(1, 121))
    assert counting.writes == []  # record() never touches storage
    recorder.flush()
    # 120 entries: two full segments of 50 and the open one, three writes in all
    assert counting.writes == [f"{HISTORY_DIR}/000001-00000{i}.json" for i in range(3)]
    _checkpoints(recorder, range(121, 126))
    recorder.flush()
    assert counting.writes[3:] == [f"{HISTORY_DIR}/000001-000002.json"]  # only the open segment again
    recorder.flush()
    assert len(counting.writes) == 4  # nothing new, nothing written
    assert [c.id for c in read_history(storage, JOB).checkpoints] == list(range(125, 0, -1))


def test_old_entries_roll_off_past_the_bound_across_attempts(storage: Any) -> None:
    """Each attempt (a restart, a takeover) starts its own segments; the oldest segments go
    once the rest hold history-size entries: never fewer than asked, at most one segment more."""
    ids = iter(range(1, 1000))
    for attempt in (1, 2, 3):
        recorder = HistoryRecorder(storage, JOB, attempt, max_entries=10, segment_entries=4)
        for _ in range(13):
            _checkpoints(recorder, range(next(ids), 0, -1)[:1], attempt)
            recorder.flush()
        recorder.close()
    kept = [c.id for c in read_history(storage, JOB).checkpoints]
    assert kept[:10] == list(range(39, 29, -1))
    assert 10 <= len(kept) < 10 + 4
    assert len(storage.list_documents(JOB, HISTORY_DIR)) <= 4


def test_the_history_stays_in_two_documents_across_seals_and_driver_starts(storage: Any) -> None:
    """Issue 51: storage objects stay flat across driver restarts. A sealed segment takes in
    the ones before it, and a new attempt folds what earlier attempts left before its
    first write: a folded segment and the open one, whatever the number of starts; the
    newest history-size entries all kept, each once."""
    next_id = 1
    for attempt in range(1, 6):
        recorder = HistoryRecorder(storage, JOB, attempt, max_entries=30, segment_entries=8)
        for _ in range(23):  # one attempt: a few seals, its last segment left open (a kill)
            _checkpoints(recorder, range(next_id, next_id + 1), attempt)
            next_id += 1
            recorder.flush()
            assert len(storage.list_documents(JOB, HISTORY_DIR)) <= 2, storage.list_documents(JOB, HISTORY_DIR)
    ids = [c.id for c in read_history(storage, JOB).checkpoints]
    assert len(ids) == len(set(ids))
    assert ids[:30] == list(range(next_id - 1, next_id - 31, -1))
    assert len(ids) < 30 + 8


def test_a_reader_between_a_fold_and_its_deletions_sees_each_entry_once(storage: Any) -> None:
    recorder = HistoryRecorder(storage, JOB, 1, max_entries=100, segment_entries=4)
    _checkpoints(recorder, range(1, 10))
    recorder.flush()  # two sealed segments of 4 (the second took in the first) and the open one
    assert storage.list_documents(JOB, HISTORY_DIR) == ["000001-000001.json", "000001-000002.json"]
    folded = storage.read_document(JOB, f"{HISTORY_DIR}/000001-000001.json")
    assert [e["id"] for e in folded["entries"]] == list(range(1, 9))
    # the fold's deletions not made yet: the first segment is back beside its copy
    storage.write_document(JOB, f"{HISTORY_DIR}/000001-000000.json", {"entries": folded["entries"][:4]})
    assert [c.id for c in read_history(storage, JOB).checkpoints] == list(range(9, 0, -1))


def test_entries_too_wide_for_one_document_stay_in_segments_of_their_own(storage: Any, monkeypatch) -> None:
    from airflow_provider_seatunnel_ckpt.history import recorder as recorder_module

    monkeypatch.setattr(recorder_module, "FOLD_BYTES", 3_000)  # about 10 of these entries
    recorder = HistoryRecorder(storage, JOB, 1, max_entries=40, segment_entries=8)
    for checkpoint_id in range(1, 61):
        _checkpoints(recorder, range(checkpoint_id, checkpoint_id + 1))
        recorder.flush()
    for name in storage.list_documents(JOB, HISTORY_DIR):
        document = storage.read_document(JOB, f"{HISTORY_DIR}/{name}")
        assert len(json.dumps(document["entries"], separators=(",", ":"))) <= 3_000 + 8 * 300
    ids = [c.id for c in read_history(storage, JOB).checkpoints]
    assert ids[:40] == list(range(60, 20, -1)) and len(ids) == len(set(ids))


def test_a_storage_outage_loses_and_repeats_nothing(storage: Any, caplog) -> None:
    counting = CountingStorage(storage)
    recorder = HistoryRecorder(counting, JOB, 1, max_entries=1000, segment_entries=4)
    _checkpoints(recorder, range(1, 4))
    recorder.flush()
    counting.fail_with = OSError("storage unreachable")
    with caplog.at_level(logging.WARNING):
        for batch in (range(4, 7), range(7, 9)):
            _checkpoints(recorder, batch)
            recorder.flush()  # never raises
    assert [r.getMessage() for r in caplog.records].count(
        f"job {JOB}: could not write the checkpoint history: storage unreachable"
    ) == 1
    counting.fail_with = None
    recorder.close()
    assert sorted(c.id for c in read_history(storage, JOB).checkpoints) == list(range(1, 9))


def test_two_attempts_writing_at_once_keep_each_others_entries(storage: Any) -> None:
    """A driver that was taken over may still run beside its successor."""
    old, new = (HistoryRecorder(storage, JOB, attempt, max_entries=1000) for attempt in (1, 2))
    _checkpoints(old, range(1, 4), attempt=1)
    _checkpoints(new, range(4, 7), attempt=2)
    threads = [threading.Thread(target=r.flush) for r in (old, new)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted((c.id, c.attempt) for c in read_history(storage, JOB).checkpoints) == [
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 2),
        (5, 2),
        (6, 2),
    ]


def test_damaged_entries_and_segments_hide_only_themselves(storage: Any, tmp_path: Path) -> None:
    recorder = HistoryRecorder(storage, JOB, 1, max_entries=1000)
    _checkpoints(recorder, range(1, 4))
    recorder.close()
    storage.write_document(
        JOB,
        f"{HISTORY_DIR}/000002-000000.json",
        {
            "entries": [
                {"type": "checkpoint", "id": "seven"},
                {"type": "unknown"},
                completed_entry(2, 4, "checkpoint", _statistics(4, [5], 1_700_000_004_000), 10, 1),
            ]
        },
    )
    (tmp_path / "ns" / JOB / HISTORY_DIR / "000003-000000.json").write_text("{not json")
    (tmp_path / "ns" / JOB / HISTORY_DIR / "notes.txt").write_text("ignored: not a segment")
    history = read_history(storage, JOB)
    assert [c.id for c in history.checkpoints] == [4, 3, 2, 1]
    assert history.skipped == 3  # two bad entries and one unreadable segment


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (list(range(1, 101)), Figures(1, 50, 99, 100)),
        ([7], Figures(7, 7, 7, 7)),
        ([5, 1, 3], Figures(1, 3, 5, 5)),
    ],
)
def test_figures_are_nearest_rank_percentiles(values: list[int], expected: Figures) -> None:
    assert Figures.of(values) == expected


def test_the_history_command_prints_tables_json_and_one_checkpoint(config: str, storage: Any, capsys) -> None:
    storage.write_document(
        JOB,
        "job.json",
        {
            "job_id": JOB,
            "status": "finished",
            "attempt": 2,
            "parallelism": 3,
            "final_checkpoint_id": 6,
            "fencing_token": "SECRET-TOKEN",
        },
    )
    storage.write_document(
        JOB,
        "attempts/000001.json",
        {
            "attempt": 1,
            "outcome": "failed",
            "start_ms": 1_700_000_000_000,
            "restored_from": None,
            "checkpoints_completed": 4,
            "error": "executor lost",
        },
    )
    recorder = HistoryRecorder(storage, JOB, 2, max_entries=100)
    recorder.record(completed_entry(2, 5, "checkpoint", _statistics(5, [12, 40, 25]), 130, 9))
    recorder.record(failed_entry(2, 6, "final", 1_700_000_001_000, 1_700_000_001_500, "a subtask declined", True))
    recorder.close()

    assert main(["history", "--config", config, "--job-id", JOB]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"job {JOB}: finished, attempt 2, 3 subtasks, final checkpoint 6"
    assert "executor lost" in out and "SECRET-TOKEN" not in out
    assert "checkpoints in the history: 1 completed, 1 failed, 0 aborted" in out
    assert [line.split()[:3] for line in out.splitlines() if line.lstrip().startswith(("5 ", "6 "))] == [
        ["6", "final", "failed"],
        ["5", "checkpoint", "completed"],
    ]

    assert main(["history", "--config", config, "--job-id", JOB, "--json", "--limit", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total_checkpoints"] == 2 and [c["id"] for c in data["checkpoints"]] == [6]
    assert data["summary"]["figures"]["duration_ms"] == {"min": 130, "median": 130, "p99": 130, "max": 130}
    assert "fencing_token" not in data["job"]

    assert main(["history", "--config", config, "--job-id", JOB, "--checkpoint", "5"]) == 0
    detail = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in detail if line.endswith("<- slowest")] == ["1"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--job-id", "nobody"], "error: --job-id: no job nobody under "),
        (
            ["--job-id", JOB, "--checkpoint", "99"],
            f"error: --checkpoint: checkpoint 99 is not in the history of job {JOB}",
        ),
        (["--job-id", JOB, "--limit", "-3"], "error: argument --limit: '-3' is not a non-negative integer"),
    ],
)
def test_the_history_command_refuses_in_one_line(
    config: str, storage: Any, capsys, argv: list[str], message: str
) -> None:
    recorder = HistoryRecorder(storage, JOB, 1, max_entries=10)
    _checkpoints(recorder, range(1, 3))
    recorder.close()
    with pytest.raises(SystemExit) if "--limit" in argv else _nothing():
        assert main(["history", "--config", config, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and len(err.strip().splitlines()) == 1, err


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


def test_history_size_is_validated(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path)).history_size == 1000
    assert load_config(_config(tmp_path, "      history-size: 0\n")).history_size == 0
    with pytest.raises(ConfigError, match="history-size"):
        load_config(_config(tmp_path, "      history-size: -1\n"))


# ---- attempt records: folded at each claim (history/attempts.py) -----------------------------
def _start(storage: Any, attempt: int, **fields: Any) -> None:
    """What a claimant writes: its own record, then the fold of every earlier one."""
    storage.write_document(JOB, record_path(attempt), {"attempt": attempt, "outcome": "running", **fields})
    fold_earlier(storage, JOB, attempt)


def _attempt_documents(storage: Any) -> list[str]:
    return sorted(storage.list_documents(JOB, "attempts"))


def test_attempt_records_stay_two_documents_and_the_history_stays_whole(storage: Any) -> None:
    for attempt in range(1, 8):
        _start(storage, attempt, start_ms=attempt * 1000)
        assert len(_attempt_documents(storage)) == min(attempt, 2), _attempt_documents(storage)
        if attempt < 7:  # every run but the last records its end in its own record
            storage.write_document(
                JOB, record_path(attempt), {"attempt": attempt, "outcome": "failed", "start_ms": attempt * 1000}
            )
    records = read_attempts(storage, JOB)
    assert [r["attempt"] for r in records] == list(range(1, 8))
    assert [r["outcome"] for r in records] == ["failed"] * 6 + ["running"]
    assert all(r["start_ms"] == r["attempt"] * 1000 for r in records)
    assert _attempt_documents(storage) == ["000007.json", "earlier-000007.json"]


def test_a_taken_over_driver_recording_its_end_after_the_fold_keeps_both_halves(storage: Any) -> None:
    _start(storage, 1, start_ms=1, restored_from=None)
    _start(storage, 2, start_ms=2)  # folds attempt 1 while its driver still runs
    # the taken-over driver ends: it finds its record gone and writes what it knows
    storage.write_document(JOB, record_path(1), {"attempt": 1, "outcome": "failed", "error": "taken over"})
    first = read_attempts(storage, JOB)[0]
    assert first == {"attempt": 1, "outcome": "failed", "start_ms": 1, "restored_from": None, "error": "taken over"}
    _start(storage, 3)  # the next claimant folds the late record over the folded one
    assert read_attempts(storage, JOB)[0] == first
    assert _attempt_documents(storage) == ["000003.json", "earlier-000003.json"]


def test_a_fold_landing_after_a_newer_one_loses_no_record(storage: Any) -> None:
    """Two claimants folding at once: the one that claimed first creates its fold last
    (after the newer claimant's fold deleted the loose records both read)."""
    for attempt in range(1, 5):
        storage.write_document(JOB, record_path(attempt), {"attempt": attempt, "outcome": "failed"})
    late = {n: storage.read_document(JOB, record_path(n)) for n in (1, 2, 3)}
    _start(storage, 5)
    storage.create_document(
        JOB, "attempts/earlier-000004.json", {"format": "seatunnel-ckpt/attempts", "attempts": list(late.values())}
    )
    assert [r["attempt"] for r in read_attempts(storage, JOB)] == [1, 2, 3, 4, 5]
    _start(storage, 6)
    assert [r["attempt"] for r in read_attempts(storage, JOB)] == [1, 2, 3, 4, 5, 6]
    assert _attempt_documents(storage) == ["000006.json", "earlier-000006.json"]
