"""The run's records in storage (``job.json``, ``attempts/NNNNNN.json``) end in a final
outcome whatever fails after the job was claimed; no Spark is started here."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.connectors.api import Sink
from airflow_provider_seatunnel_ckpt.engine import runner, spark_start
from airflow_provider_seatunnel_ckpt.engine.driver import CheckpointRecord, Outcome
from airflow_provider_seatunnel_ckpt.engine.runner import JobRun, RunRequest
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

JOB_ID = "attempts"


def _storage(tmp_path: Path, max_retained: int = 3) -> dict[str, Any]:
    return {
        "type": "hdfs",
        "max-retained": max_retained,
        "plugin-config": {"storage.type": "hdfs", "fs.defaultFS": "file:///", "namespace": f"{tmp_path}/checkpoints/"},
    }


def _request(tmp_path: Path, **config: Any) -> RunRequest:
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
        **config,
    }
    job = load_job(
        {
            "env": {"job.name": JOB_ID, "parallelism": 2},
            "source": [{"plugin_name": "Sequence", "rows": 10}],
            "sink": [{"plugin_name": "File", "path": f"file://{tmp_path}/out/", "format": "jsonl"}],
        }
    )
    return RunRequest(
        job=job,
        config=load_config({"seatunnel": {"engine": {"checkpoint": checkpoint}}}),
        job_id=JOB_ID,
        master="spark://nowhere.invalid:7077",
    )


def test_spark_failing_to_start_finalises_the_attempt_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_spark(request: RunRequest) -> Any:
        raise RuntimeError("Could not parse Master URL: 'spark://nowhere.invalid:7077'\n\tat org.apache.spark...")

    monkeypatch.setattr(spark_start, "build_spark", no_spark)
    run = JobRun(_request(tmp_path), progress=lambda line: None)
    with pytest.raises(RuntimeError, match="Master URL"):
        run.run()
    attempt = run.storage.read_document(JOB_ID, "attempts/000001.json")
    assert attempt["outcome"] == "failed", attempt
    assert attempt["error"] == "RuntimeError: Could not parse Master URL: 'spark://nowhere.invalid:7077'"
    assert attempt["end_ms"] >= attempt["start_ms"]
    job = run.storage.read_document(JOB_ID, "job.json")
    assert (job["status"], job["attempt"]) == ("failed", 1)
    assert "Master URL" in job["error"]


def test_too_few_task_slots_finalises_the_attempt_as_failed(tmp_path: Path) -> None:
    class Context:
        defaultParallelism = 1

    class OneSlotSpark:
        sparkContext = Context()

    run = JobRun(_request(tmp_path), progress=lambda line: None)
    with pytest.raises(Exception, match="task slots"):
        run.run(spark=OneSlotSpark())
    assert run.storage.read_document(JOB_ID, "attempts/000001.json")["outcome"] == "failed"
    assert run.storage.read_document(JOB_ID, "job.json")["status"] == "failed"


def test_an_interrupt_before_the_loop_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(request: RunRequest) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(spark_start, "build_spark", interrupted)
    run = JobRun(_request(tmp_path), progress=lambda line: None)
    with pytest.raises(KeyboardInterrupt):
        run.run()
    attempt = run.storage.read_document(JOB_ID, "attempts/000001.json")
    assert (attempt["outcome"], attempt["error"]) == ("failed", "interrupted")


def test_spark_starts_beside_the_checks_and_the_claim_and_its_job_waits_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SparkContext's start (its JVM: seconds) overlaps the live checks, the claim and
    the restore; nothing of Spark is used until the job is claimed."""
    started, claimed = threading.Event(), threading.Event()

    def slow_spark(request: RunRequest) -> Any:
        started.set()
        # the claim goes on while Spark starts: it does not wait for this
        assert claimed.wait(10), "the claim waited for Spark's start"
        raise RuntimeError("no Spark in unit tests")

    real_claim = JobRun.claim

    def claim(self: JobRun, *args: Any) -> Any:
        assert started.wait(10), "Spark's start had not begun when the job was claimed"
        result = real_claim(self, *args)
        claimed.set()
        return result

    monkeypatch.setattr(spark_start, "build_spark", slow_spark)
    monkeypatch.setattr(JobRun, "claim", claim)
    run = JobRun(_request(tmp_path), progress=lambda line: None)
    with pytest.raises(RuntimeError, match="no Spark"):
        run.run()
    assert run.storage.read_document(JOB_ID, "attempts/000001.json")["outcome"] == "failed"


def test_a_run_refused_before_its_claim_stops_the_spark_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stopped = []

    class Context:
        def stop(self) -> None:
            stopped.append(True)

    def refused(*args: Any) -> Any:
        raise ConfigError("sink[0].path", "is not writable")

    monkeypatch.setattr(spark_start, "build_spark", lambda request: Context())
    monkeypatch.setattr(JobRun, "claim", refused)
    run = JobRun(_request(tmp_path), progress=lambda line: None)
    with pytest.raises(ConfigError, match="not writable"):
        run.run()
    assert stopped == [True]
    assert run.storage.read_document(JOB_ID, "attempts/000001.json") is None  # nothing was claimed


def test_a_stop_with_savepoint_is_recorded_as_stopped(tmp_path: Path) -> None:
    run = JobRun(_request(tmp_path), progress=lambda line: None)
    run._claim_fence("token", {})
    run._claim("token", None, {})
    record = CheckpointRecord(7, "savepoint", 12, 100, 500, "file:///x/7")
    run._release(Outcome(finished=True, completed=[record], stopped_savepoint_id=7), "token")
    job = run.storage.read_document(JOB_ID, "job.json")
    assert (job["status"], job["savepoint_id"], job["final_checkpoint_id"], job["last_checkpoint_id"]) == (
        "stopped",
        7,
        None,
        7,
    )
    attempt = run.storage.read_document(JOB_ID, "attempts/000001.json")
    assert (attempt["outcome"], attempt["savepoint_id"]) == ("stopped", 7)


def test_a_stop_whose_commit_failed_is_recorded_as_failed(tmp_path: Path) -> None:
    run = JobRun(_request(tmp_path), progress=lambda line: None)
    run._claim_fence("token", {})
    run._claim("token", None, {})
    outcome = Outcome(error="committing the output of checkpoint 7 failed: disk full", stopped_savepoint_id=7)
    assert not outcome.stopped_with_savepoint  # the savepoint completed, its commit did not
    run._release(outcome, "token")
    job = run.storage.read_document(JOB_ID, "job.json")
    assert (job["status"], job["savepoint_id"]) == ("failed", None)
    assert run.storage.read_document(JOB_ID, "attempts/000001.json")["outcome"] == "failed"


def test_a_claimant_fences_the_checkpoint_in_flight_and_deletes_its_uploads(tmp_path: Path) -> None:
    lines: list[str] = []
    old = JobRun(_request(tmp_path), progress=lines.append)
    old._claim_fence("old", {})
    old.fence.reserve(5)  # at its trigger; the subtasks uploaded, then the driver died
    for subtask in range(2):
        old.storage.write_state(JOB_ID, runner.PIPELINE_ID, 5, f"task-{subtask}-0.state", b"s" * 70_000)

    new = JobRun(_request(tmp_path), progress=lines.append)
    new._claim_fence("new", {})
    assert "job attempts: fenced checkpoint 5 of attempt 1, which may still be running" in "\n".join(lines)
    [entry] = new.storage.list_checkpoint_entries(JOB_ID, runner.PIPELINE_ID)
    assert (entry.checkpoint_id, entry.fenced) == (5, True)
    assert new.storage.state_file_sizes(JOB_ID, runner.PIPELINE_ID, 5) == {"_metadata": 0}


@pytest.mark.parametrize("taken_over", [False, True])
def test_a_run_that_fails_after_a_takeover_reports_the_takeover(tmp_path: Path, taken_over: bool) -> None:
    """The claimant discards what the stale run staged, so the stale run's sink then fails
    on a vanished file: the takeover is the cause the user is told, its own failure after."""
    old = JobRun(_request(tmp_path), progress=lambda line: None)
    old._claim_fence("old", {})
    old._claim("old", None, {})
    if taken_over:
        JobRun(_request(tmp_path), progress=lambda line: None)._claim_fence("new", {})
    failure = "Spark job failed: RuntimeError: sink pre-commit for checkpoint 83 failed: no such file"
    outcome = Outcome(error=failure)
    old._release(outcome, "old")
    attempt = old.storage.read_document(JOB_ID, "attempts/000001.json")
    assert attempt["error"] == outcome.error and failure in outcome.error
    assert ("taken over by another driver (attempt 2)" in outcome.error) is taken_over
    if taken_over:
        assert outcome.error.startswith(f"job {JOB_ID} was taken over")


def test_a_takeover_the_run_found_itself_is_reported_once(tmp_path: Path) -> None:
    old = JobRun(_request(tmp_path), progress=lambda line: None)
    old._claim_fence("old", {})
    old._claim("old", None, {})
    JobRun(_request(tmp_path), progress=lambda line: None)._claim_fence("new", {})
    outcome = Outcome(error=str(old.fence.fenced_error()))
    old._release(outcome, "old")
    assert outcome.error.count("taken over") == 1


class RefusingCommitter:
    """A sink that cannot un-publish (a table commit, a Kafka transaction)."""

    def __init__(self):
        self.calls: list[str] = []

    def check_rollback(self, after_checkpoint_id, newer_checkpoint_ids):
        self.calls.append("check")
        if newer_checkpoint_ids:
            raise ConfigError("--restore", f"cannot undo checkpoints {list(newer_checkpoint_ids)}")

    def commit(self, infos):
        self.calls.append("commit")

    def rollback(self, after_checkpoint_id):
        self.calls.append("rollback")

    def cleanup(self, keep):
        self.calls.append("cleanup")


def _completed(run: JobRun, *ids: int, savepoint: bool = False) -> None:
    from airflow_provider_seatunnel_ckpt.storage import PipelineState
    from airflow_provider_seatunnel_ckpt.storage.model import CheckpointKind

    kind = CheckpointKind.SAVEPOINT if savepoint else CheckpointKind.CHECKPOINT
    for checkpoint_id in ids:
        run.storage.store_checkpoint(PipelineState(JOB_ID, runner.PIPELINE_ID, checkpoint_id, b"s", kind=kind))


def _ids(run: JobRun) -> list[tuple[int, bool, bool]]:
    return [
        (e.checkpoint_id, e.savepoint, e.completed)
        for e in run.storage.list_checkpoint_entries(JOB_ID, runner.PIPELINE_ID)
    ]


def test_a_sink_that_cannot_roll_back_refuses_before_newer_checkpoints_are_deleted(tmp_path: Path) -> None:
    """--restore 1 with a table sink that holds checkpoint 3's rows: the run stops with
    the sink's one line while checkpoints 2 and 3 still exist (it deleted them first and
    then refused: the job was stuck)."""
    run = JobRun(_request(tmp_path, storage=_storage(tmp_path, max_retained=5)), progress=lambda line: None)
    _completed(run, 1, 2, 3)
    run.restored_id = 1
    committer = RefusingCommitter()
    with pytest.raises(ConfigError, match=r"--restore: cannot undo checkpoints \[2, 3\]"):
        run._restore_output(committer, [])
    assert committer.calls == ["check"]
    assert _ids(run) == [(1, False, True), (2, False, True), (3, False, True)]


def test_restoring_an_older_cut_discards_newer_checkpoints_and_leftover_savepoints(tmp_path: Path) -> None:
    run = JobRun(_request(tmp_path, storage=_storage(tmp_path, max_retained=5)), progress=lambda line: None)
    _completed(run, 1, 2, 4)
    _completed(run, 3, savepoint=True)
    run.storage.write_state(JOB_ID, runner.PIPELINE_ID, 2, "task-0-0-r1.state", b"x" * 70_000, savepoint=True)
    run.restored_id = 2  # savepoint 2 was never completed: an earlier run's leftover
    committer = RefusingCommitter()
    committer.check_rollback = lambda after, newer: committer.calls.append(f"check {after} {list(newer)}")
    run._restore_output(committer, [])
    assert committer.calls == ["check 2 [3, 4]", "rollback", "cleanup"]
    assert _ids(run) == [(1, False, True), (2, False, True)]


class DiscardRecordingCommitter(RefusingCommitter):
    def discard_job(self):
        self.calls.append("discard_job")


def test_an_interrupted_discard_is_finished_by_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--discard-existing died after deleting the checkpoints and before the sink dropped
    its bookkeeping: the next run, whatever it asks to restore, finishes the discard
    (so a File sink never rolls back the committed output to 'the start')."""
    request = _request(tmp_path, storage=_storage(tmp_path, max_retained=5))
    request.restore, request.discard_existing = "none", True
    first = JobRun(request, progress=lambda line: None)
    _completed(first, 1, 2)
    committer = DiscardRecordingCommitter()

    def crash(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(committer, "discard_job", crash)
    with pytest.raises(KeyboardInterrupt):
        first.claim("first", _Sink(), committer)
    assert first.storage.read_document(JOB_ID, "job.json")["discarding"] is True

    lines: list[str] = []
    second = JobRun(_request(tmp_path, storage=_storage(tmp_path, max_retained=5)), progress=lines.append)
    again = DiscardRecordingCommitter()
    manifest, _, _ = second.claim("second", _Sink(), again)  # --restore latest
    assert manifest is None and again.calls[0] == "discard_job"
    assert any("an earlier --discard-existing was interrupted" in line for line in lines)
    assert "discarding" not in second.storage.read_document(JOB_ID, "job.json")
    assert _ids(second) == []


class _Sink(Sink):
    """A sink of nothing: the claim records its identity and sets its run attempt."""

    plugin_name = "Nothing"

    def __init__(self) -> None:
        super().__init__({})


def test_restore_id_finds_the_completed_one_when_a_zombies_savepoint_shares_the_id(tmp_path: Path) -> None:
    """A taken-over driver numbers on with the claimant's ids: its (never completed)
    savepoint 3 and the claimant's completed checkpoint 3 sit side by side."""
    run = JobRun(_request(tmp_path, storage=_storage(tmp_path, max_retained=5)), progress=lambda line: None)
    _completed(run, 1, 3)
    run.storage.write_state(JOB_ID, runner.PIPELINE_ID, 3, "task-0-0-r1.state", b"z" * 70_000, savepoint=True)
    manifest = run.store.restorable(3)
    assert (manifest.checkpoint_id, manifest.kind.value) == (3, "checkpoint")
