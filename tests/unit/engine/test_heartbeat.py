"""The driver's heartbeat (engine/heartbeat.py): the record, the writer, and the reader's
liveness rule on a fake clock. A driver is alive when its sequence advances while the
reader watches; the writer's clock is never compared with the reader's."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine import runner, spark_start
from airflow_provider_seatunnel_ckpt.engine.heartbeat import (
    DEFAULT_INTERVAL_MS,
    INTERVAL_KEY,
    MIN_STALE_MS,
    Beat,
    HeartbeatWriter,
    Liveness,
    Verdict,
    job_fingerprint,
    parse_interval,
    read_newest,
    record_path,
    stale_after_ms,
)
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage

JOB = "job"


@pytest.fixture
def storage() -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(MemoryFileSystem(f"heartbeat-{uuid.uuid4().hex}"), "/ns/", 3)


def beat(sequence: int, attempt: int = 1, state: str = "running", interval_ms: int = 2_000, **kw: Any) -> Beat:
    return Beat(attempt=attempt, sequence=sequence, state=state, interval_ms=interval_ms, **kw)


# ---- the reader's rule --------------------------------------------------------------------------
def test_the_stale_window_is_three_intervals_and_at_least_ten_seconds() -> None:
    assert stale_after_ms(2_000) == MIN_STALE_MS == 10_000
    assert stale_after_ms(5_000) == 15_000
    assert stale_after_ms(100) == 10_000
    assert stale_after_ms(2_000) >= 2 * 2_000  # never decided on one late write


def test_no_record_means_no_driver_to_wait_for() -> None:
    assert Liveness().observe(None, 0) is Verdict.NONE


def test_one_read_decides_nothing_an_advance_is_alive() -> None:
    watch = Liveness()
    assert watch.observe(beat(7), 0) is Verdict.WATCHING
    assert watch.observe(beat(7), 1_999) is Verdict.WATCHING
    assert watch.observe(beat(8), 2_000) is Verdict.ALIVE
    assert watch.observe(beat(8), 11_999) is Verdict.ALIVE  # within 10 s of the advance
    assert watch.observe(beat(8), 12_000) is Verdict.STALE


def test_a_sequence_that_never_moves_is_stale_after_exactly_the_window() -> None:
    watch = Liveness()
    assert watch.observe(beat(3, interval_ms=5_000), 1_000) is Verdict.WATCHING
    assert watch.observe(beat(3, interval_ms=5_000), 15_999) is Verdict.WATCHING
    assert watch.observe(beat(3, interval_ms=5_000), 16_000) is Verdict.STALE
    assert watch.waited_ms(16_000) == 15_000


@pytest.mark.parametrize("written_ms", [0, 946_684_800_000, 4_102_444_800_000])  # 1970, 2000, 2100
def test_the_writers_clock_is_never_compared_with_the_readers(written_ms: int) -> None:
    """A writer whose wall clock is decades off is alive exactly when its sequence moves."""
    watch = Liveness()
    assert watch.observe(beat(1, written_ms=written_ms), 50_000) is Verdict.WATCHING
    assert watch.observe(beat(2, written_ms=written_ms), 52_000) is Verdict.ALIVE
    stuck = Liveness()
    stuck.observe(beat(1, written_ms=written_ms + 10**9), 0)  # "written in the future"
    assert stuck.observe(beat(1, written_ms=written_ms + 10**9), 10_000) is Verdict.STALE


def test_an_older_read_does_not_count_as_an_advance() -> None:
    watch = Liveness()
    watch.observe(beat(5), 0)
    assert watch.observe(beat(4), 1_000) is Verdict.WATCHING
    assert watch.observe(beat(5), 2_000) is Verdict.WATCHING


def test_a_last_record_ends_the_watch_at_once() -> None:
    assert Liveness().observe(beat(9, state="finished"), 0) is Verdict.ENDED
    watch = Liveness()
    watch.observe(beat(9), 0)
    assert watch.observe(beat(10, state="fenced"), 500) is Verdict.ENDED


def test_a_newer_attempt_must_show_its_own_sequence_moving() -> None:
    watch = Liveness()
    watch.observe(beat(5, attempt=1), 0)
    assert watch.observe(beat(6, attempt=1), 1_000) is Verdict.ALIVE
    # a claimant appears: its first record alone proves nothing, its window starts now
    assert watch.observe(beat(1, attempt=2), 2_000) is Verdict.WATCHING
    assert watch.observe(beat(1, attempt=2), 11_999) is Verdict.WATCHING
    assert watch.observe(beat(1, attempt=2), 12_000) is Verdict.STALE


def test_a_record_that_disappears_keeps_the_window_running() -> None:
    watch = Liveness()
    watch.observe(beat(1), 0)
    assert watch.observe(None, 5_000) is Verdict.WATCHING
    assert watch.observe(None, 10_000) is Verdict.STALE


# ---- the record ----------------------------------------------------------------------------------
def test_a_malformed_record_is_no_record() -> None:
    assert Beat.from_document(None) is None
    assert Beat.from_document({"attempt": "x", "sequence": 1}) is None
    assert Beat.from_document({"sequence": 1}) is None
    parsed = Beat.from_document({"attempt": 2, "sequence": 3})
    assert parsed is not None and (parsed.state, parsed.interval_ms) == ("running", DEFAULT_INTERVAL_MS)


def test_parse_interval() -> None:
    assert parse_interval("2000") == parse_interval(2000) == parse_interval("2s") == parse_interval("2000ms") == 2000
    assert parse_interval("0") == 0
    with pytest.raises(ConfigError, match=INTERVAL_KEY.replace(".", r"\.") + ".*expected milliseconds"):
        parse_interval("two seconds")
    with pytest.raises(ConfigError, match="at least 100 ms"):
        parse_interval("50")


def test_the_fingerprint_depends_on_the_definition_only() -> None:
    job = {"name": "j", "source": {"plugin_name": "Sequence", "rows": 10}, "env": {"parallelism": 2}}
    same = {"env": {"parallelism": 2}, "source": {"rows": 10, "plugin_name": "Sequence"}, "name": "j"}
    assert job_fingerprint(job) == job_fingerprint(same)
    assert job_fingerprint(job) != job_fingerprint({**job, "source": {"plugin_name": "Sequence", "rows": 11}})
    assert job_fingerprint(job) == job_fingerprint({**job, "name": "a label"})
    assert len(job_fingerprint(job)) == 16


# ---- the writer ----------------------------------------------------------------------------------
def test_the_writer_advances_the_sequence_and_carries_the_drivers_facts(storage: Any) -> None:
    status = {"application_id": "local-123", "last_checkpoint_id": None}
    writer = HeartbeatWriter(
        storage, JOB, 3, interval_ms=1_500, fingerprint="abc", status=lambda: status, wall_ms=lambda: 42
    )
    assert writer.beat() and writer.beat()
    status["last_checkpoint_id"] = 7
    assert writer.beat()
    record = storage.read_document(JOB, record_path(3))
    assert record["sequence"] == 3 and record["attempt"] == 3 and record["state"] == "running"
    assert record["interval_ms"] == 1_500 and record["job_fingerprint"] == "abc"
    assert record["application_id"] == "local-123" and record["last_checkpoint_id"] == 7
    assert record["written_ms"] == 42 and record["pid"] and record["host"]
    assert read_newest(storage, JOB) == Beat.from_document(record)


def test_the_last_record_ends_the_writer(storage: Any) -> None:
    writer = HeartbeatWriter(storage, JOB, 1)
    writer.beat()
    assert writer.end("failed", "boom", last_checkpoint_id=4)
    assert not writer.beat()  # nothing after the last record
    final = read_newest(storage, JOB)
    assert final is not None and (final.state, final.error, final.last_checkpoint_id, final.sequence) == (
        "failed",
        "boom",
        4,
        2,
    )
    with pytest.raises(AssertionError):
        HeartbeatWriter(storage, JOB, 1).end("running")


def test_an_unhealthy_driver_writes_no_heartbeat(storage: Any) -> None:
    reason: list[str | None] = ["the driver loop has not run for 61 s"]
    writer = HeartbeatWriter(storage, JOB, 1, health=lambda: reason[0])
    assert not writer.beat()
    assert read_newest(storage, JOB) is None
    reason[0] = None
    assert writer.beat()


def test_a_failed_write_is_a_missed_beat_not_an_error(storage: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = HeartbeatWriter(storage, JOB, 1)

    def down(*args: Any) -> None:
        raise OSError("storage down")

    monkeypatch.setattr(storage, "write_document", down)
    assert not writer.beat()
    monkeypatch.undo()
    assert writer.beat()
    assert read_newest(storage, JOB).sequence == 2  # the missed one still counted


def test_read_newest_takes_the_highest_attempt(storage: Any) -> None:
    HeartbeatWriter(storage, JOB, 1).beat()
    HeartbeatWriter(storage, JOB, 12).beat()
    HeartbeatWriter(storage, JOB, 2).beat()
    assert read_newest(storage, JOB).attempt == 12
    assert read_newest(storage, "other") is None


def test_the_thread_beats_every_interval_until_stopped(storage: Any) -> None:
    import time

    writer = HeartbeatWriter(storage, JOB, 1, interval_ms=100).start()
    try:
        deadline = time.monotonic() + 10
        while read_newest(storage, JOB).sequence < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert read_newest(storage, JOB).sequence >= 3
    finally:
        writer.end("finished")
    final = read_newest(storage, JOB)
    time.sleep(0.3)
    assert read_newest(storage, JOB) == final and final.state == "finished"


# ---- the runner writes it -------------------------------------------------------------------------
def _request(tmp_path: Path, env: dict[str, Any] | None = None) -> Any:
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    checkpoint = {
        "interval": 1000,
        "storage": {
            "type": "hdfs",
            "plugin-config": {
                "storage.type": "hdfs",
                "fs.defaultFS": "file:///",
                "namespace": f"{tmp_path}/checkpoints/",
            },
        },
    }
    job = load_job(
        {
            "env": {"job.name": JOB, "parallelism": 2, **(env or {})},
            "source": [{"plugin_name": "Sequence", "rows": 10}],
            "sink": [{"plugin_name": "File", "path": f"file://{tmp_path}/out/", "format": "jsonl"}],
        }
    )
    return runner.RunRequest(
        job=job,
        config=load_config({"seatunnel": {"engine": {"checkpoint": checkpoint}}}),
        job_id=JOB,
        master="spark://nowhere.invalid:7077",
    )


def _no_spark(request: Any) -> Any:
    raise RuntimeError("no Spark here")


def test_a_run_heartbeats_from_its_claim_and_ends_with_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spark_start, "build_spark", _no_spark)
    request = _request(tmp_path)
    run = runner.JobRun(request, progress=lambda line: None)
    with pytest.raises(RuntimeError):
        run.run()
    final = read_newest(run.storage, JOB)
    assert final is not None and final.attempt == 1
    assert final.state == "failed" and "no Spark here" in final.error
    assert final.sequence >= 2  # the first beat at the claim, then the last record
    assert final.job_fingerprint == job_fingerprint(request.job.to_json())
    # the last record comes after job.json: a reader that sees it reads the final status
    assert run.storage.read_document(JOB, "job.json")["status"] == "failed"


def test_heartbeats_can_be_turned_off_and_a_bad_interval_fails_before_the_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spark_start, "build_spark", _no_spark)
    run = runner.JobRun(_request(tmp_path, {INTERVAL_KEY: "0"}), progress=lambda line: None)
    with pytest.raises(RuntimeError):
        run.run()
    assert read_newest(run.storage, JOB) is None
    bad = runner.JobRun(_request(tmp_path / "bad", {INTERVAL_KEY: "soon"}), progress=lambda line: None)
    with pytest.raises(ConfigError, match="heartbeatInterval"):
        bad.run()
    assert bad.storage.read_document(JOB, "job.json") is None  # nothing claimed
