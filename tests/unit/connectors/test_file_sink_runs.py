"""The File sink across runs of one job: ``discard_job`` keeps committed output (and no
later rollback reaches it), and the staging of a taken-over driver that still runs (a
zombie) never shares a name with the claimant's (issue 30, items 1 and 5)."""

from __future__ import annotations

import json

import pytest

from airflow_provider_seatunnel_ckpt.connectors.file import sink as file_sink_module
from airflow_provider_seatunnel_ckpt.connectors.file.sink import FileSink
from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError
from tests.support.file_sink import all_files, batch, read_back, visible_files


def run_sink(base_url: str, run_attempt: int) -> FileSink:
    """The sink as the engine hands it to one run: ``run_attempt`` set before writers."""
    sink = FileSink({"path": base_url})
    sink.run_attempt = run_attempt
    return sink


def commit_epochs(sink: FileSink, job_id: str, checkpoints: list[int], start: int) -> tuple[list[int], int]:
    """Two subtasks write 10 rows each per epoch; each checkpoint is committed. Returns the
    ids written and the next free id."""
    committer = sink.create_committer(job_id)
    written = []
    for checkpoint in checkpoints:
        infos = []
        for subtask in range(2):
            writer = sink.create_writer(job_id, subtask, 0)
            writer.write(batch(start, 10))
            written.extend(range(start, start + 10))
            start += 10
            infos.append(writer.prepare_commit(checkpoint))
        committer.commit(infos)
    return written, start


def committed_checkpoints(sink: FileSink) -> list[int]:
    return sorted({int(name.split("-")[4]) for name in visible_files(sink)})


def test_discard_keeps_committed_output_and_rollbacks_never_reach_it(base_url):
    first = run_sink(base_url, 1)
    old_rows, next_id = commit_epochs(first, "j", [1, 2, 3], 0)
    leftover = first.create_writer("j", 0, 0)  # staged for checkpoint 4, which never completed
    leftover.write(batch(900, 5))
    leftover.prepare_commit(4)
    other_job, _ = commit_epochs(first, "other", [1, 7], 5000)  # another job in the same directory
    before = {p: first.fs.read(f"{first.root}/{p}") for p in visible_files(first)}

    # --discard-existing: the checkpoints go, the staging goes, committed output stays
    discarding = run_sink(base_url, 2)
    committer = discarding.create_committer("j")
    committer.discard_job()
    committer.discard_job()  # idempotent (a run that died right after is repeated)
    assert not [p for p in all_files(discarding) if p.startswith("_staging/j/")]
    assert {p: discarding.fs.read(f"{discarding.root}/{p}") for p in visible_files(discarding)} == before
    record = json.loads(discarding.fs.read(f"{discarding.root}/_discarded-j.json"))
    assert record["discarded_through_checkpoint_id"] == 3
    # the run that discarded starts from the beginning: rollback(0) removes nothing
    assert committer.rollback(0) == []
    assert read_back(discarding) == sorted(old_rows + other_job)

    # The new lineage's ids continue above the old ones (job.json and the fence log keep
    # the highest): checkpoints 5 and 6, written by this run, then by a later run.
    new_rows, _ = commit_epochs(discarding, "j", [5, 6], next_id)
    later = run_sink(base_url, 3).create_committer("j")  # a new driver reads the record back
    removed = later.rollback(5)  # --restore 5: only the new lineage's checkpoint 6 goes
    assert removed and all("-0000000006-" in p for p in removed)
    assert committed_checkpoints(discarding) == [1, 2, 3, 5, 7]
    # every checkpoint of the new lineage damaged: it starts from the beginning again
    later.rollback(0)
    assert committed_checkpoints(discarding) == [1, 2, 3, 7]
    assert read_back(discarding) == sorted(old_rows + other_job)
    assert {p: discarding.fs.read(f"{discarding.root}/{p}") for p in visible_files(discarding)} == before
    assert new_rows  # (they were committed, then rolled back)


def test_delete_on_finish_then_a_new_run_keeps_the_finished_output(base_url):
    """delete-on-finish calls discard_job at the end of the run: the next run under the
    same id starts from the beginning and must not delete what the finished run wrote."""
    sink = run_sink(base_url, 1)
    old_rows, next_id = commit_epochs(sink, "f", [1, 2], 0)
    committer = sink.create_committer("f")
    committer.cleanup([])
    committer.discard_job()
    nxt = run_sink(base_url, 2).create_committer("f")
    assert nxt.rollback(0) == []
    nxt.cleanup([])
    assert read_back(sink) == old_rows


def test_a_commit_at_or_below_the_discarded_ids_is_refused_not_overwritten(base_url):
    """Only a job whose checkpoint storage was deleted as a whole numbers its checkpoints
    from 1 again: its first commit would replace a file of the discarded output."""
    sink = run_sink(base_url, 4)
    old_rows, _ = commit_epochs(sink, "d", [1, 2], 0)
    sink.create_committer("d").discard_job()
    restarted = run_sink(base_url, 1)
    writer = restarted.create_writer("d", 0, 0)
    writer.write(batch(500, 3))
    info = writer.prepare_commit(1)
    with pytest.raises(CheckpointStorageError, match="not above checkpoint 2.*new job id"):
        restarted.create_committer("d").commit([info])
    assert read_back(sink) == old_rows


def test_a_damaged_discard_record_is_reported_not_ignored(base_url):
    sink = run_sink(base_url, 1)
    commit_epochs(sink, "x", [1], 0)
    sink.create_committer("x").discard_job()
    sink.fs.write_atomic(f"{sink.root}/_discarded-x.json", b"{not json")
    with pytest.raises(CheckpointStorageError, match="_discarded-x.json is damaged"):
        sink.create_committer("x").rollback(0)
    assert len(visible_files(sink)) == 2


def test_zombie_and_claimant_staging_never_share_a_name(base_url, monkeypatch):
    """A zombie driver (run attempt 1) and the claimant (run attempt 2) prepare the same
    checkpoint id for the same subtask and Spark task attempt. Even with the same random
    writer id, the claimant's commit publishes the claimant's rows, the zombie's staging
    never replaces them, and cleanup removes the zombie's staging."""
    monkeypatch.setattr(file_sink_module.secrets, "token_hex", lambda n: "0badcafe")
    claimant_sink, zombie_sink = run_sink(base_url, 2), run_sink(base_url, 1)
    claimant = claimant_sink.create_writer("z", 0, 0)
    claimant.write(batch(0, 10))
    claimant_info = claimant.prepare_commit(7)
    zombie = zombie_sink.create_writer("z", 0, 0)
    zombie.write(batch(1000, 4))
    zombie_info = zombie.prepare_commit(7)
    assert zombie_info["final"] == claimant_info["final"]  # same epoch, same final name
    assert set(zombie_info["staged"]).isdisjoint(claimant_info["staged"])
    assert "/_staging/z/0-0-r2-0badcafe-000000." in claimant_info["staged"][0]

    committer = claimant_sink.create_committer("z")
    committer.commit([claimant_info])
    assert read_back(claimant_sink) == list(range(10))
    zombie.close()  # deletes only what the zombie staged
    committer.commit([claimant_info])  # the replay finds its file published
    assert read_back(claimant_sink) == list(range(10))


def test_cleanup_removes_every_runs_and_every_releases_staging(base_url):
    sink = run_sink(base_url, 3)
    staging = sink.staging_dir("c")
    older_release = f"{staging}/0-0-1234abcd-000000.parquet"  # named before run attempts
    sink.fs.write_atomic(older_release, b"x")
    zombie_sink = run_sink(base_url, 2)
    zombie = zombie_sink.create_writer("c", 0, 0)
    zombie.write(batch(0, 3))
    zombie_info = zombie.prepare_commit(4)
    w0, w1 = sink.create_writer("c", 0, 0), sink.create_writer("c", 1, 0)
    w0.write(batch(10, 3))
    w1.write(batch(20, 3))
    kept = [w0.prepare_commit(4), w1.prepare_commit(4)]
    committer = sink.create_committer("c")
    committer.cleanup(kept, subtask=1)  # a region failover of subtask 1 touches only its files
    assert sink.fs.exists(older_release) and sink.fs.exists(zombie_info["staged"][0])
    committer.cleanup(kept)
    remaining = {f"{sink.root}/{p}" for p in all_files(sink)}
    assert remaining == {p for info in kept for p in info["staged"]}
    committer.commit(kept)
    assert read_back(sink) == [*range(10, 13), *range(20, 23)]


def test_a_negative_run_attempt_is_refused(base_url):
    with pytest.raises(ValueError, match="run attempt"):
        run_sink(base_url, -1).create_writer("j", 0, 0)
