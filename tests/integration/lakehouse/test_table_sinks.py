"""The commit protocol both table sinks share, against the real libraries (pyiceberg,
delta-rs) on local disk and on moto's S3, without Spark: one table commit per
checkpoint, replays skipped, a concurrent writer, orphan cleanup, a failed writer's files,
the refusal to restore past a committed checkpoint, and a fresh start under the same job
id. Rows are counted with the format's library and with DuckDB."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.errors import ConfigError

from .conftest import Warehouse, duckdb_lake, ids_batch
from .formats import FORMATS, data_files, new_sink


@pytest.fixture(params=sorted(FORMATS))
def table_format(request: pytest.FixtureRequest) -> Any:
    return FORMATS[request.param]


def test_one_commit_per_checkpoint_and_replays_are_skipped(table_format: Any, warehouse: Warehouse) -> None:
    sink = new_sink(table_format, warehouse)
    sink.preflight()
    writers = [sink.create_writer("job-a", subtask, 0) for subtask in range(2)]
    committer = sink.create_committer("job-a")
    writers[0].write(ids_batch(0, 500))
    writers[1].write(ids_batch(500, 1000))
    first = [w.prepare_commit(1) for w in writers]
    committer.commit(first)
    assert [w.prepare_commit(2) for w in writers] == [None, None]  # an empty epoch: nothing to commit
    writers[1].write(ids_batch(1000, 1200))
    third = [w.prepare_commit(3) for w in writers]
    committer.commit(third)
    # the driver died after the table commit, before its own bookkeeping: restore replays
    committer.commit(third)
    committer.commit(first)
    assert table_format.commits(sink, "job-a") == ["1", "3"]
    assert table_format.ids(sink) == list(range(1200))
    duck = duckdb_lake(warehouse.storage)
    assert duck.execute(
        f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM {table_format.duckdb_scan(sink)}"
    ).fetchall() == [(1200, 1200, 0, 1199)]
    assert committer.pending()[0]["last_committed_checkpoint"] == 3


def test_infos_resent_with_a_later_checkpoint_are_not_committed_twice(table_format: Any, warehouse: Warehouse) -> None:
    """A subtask re-sends what it prepared until it hears of the commit, so checkpoint 4's
    infos may repeat checkpoint 3's: those files are in the table already."""
    sink = new_sink(table_format, warehouse)
    writer = sink.create_writer("job-s", 0, 0)
    committer = sink.create_committer("job-s")
    writer.write(ids_batch(0, 100))
    third = writer.prepare_commit(3)
    committer.commit([third])
    writer.write(ids_batch(100, 200))
    fourth = writer.prepare_commit(4)
    committer.commit([third, fourth])
    committer.commit([third, fourth])  # and the restore replays it
    assert table_format.ids(sink) == list(range(200))
    assert table_format.commits(sink, "job-s") == ["3", "4"]


def test_a_concurrent_writer_is_not_lost(table_format: Any, local_warehouse: Warehouse) -> None:
    sink = new_sink(table_format, local_warehouse)
    writer = sink.create_writer("job-c", 0, 0)
    writer.write(ids_batch(0, 10))
    committer = sink.create_committer("job-c")
    committer.commit([writer.prepare_commit(1)])
    other_rows = list(range(1_000_000, 1_000_008))

    def other_writer() -> None:  # another application appending to the same table, 8 times
        for row in other_rows:
            table_format.append_other(sink, [row])

    thread = threading.Thread(target=other_writer)
    thread.start()
    checkpoint = 1
    # keep committing while the other application appends, and a few times after it is done
    # (under load it may finish before our second commit), so both sides' commits interleave
    while (thread.is_alive() or checkpoint < 4) and checkpoint < 500:
        checkpoint += 1
        writer.write(ids_batch(checkpoint * 10, checkpoint * 10 + 10))
        committer.commit([writer.prepare_commit(checkpoint)])
    thread.join()
    assert table_format.ids(sink) == sorted([*range(10), *range(20, checkpoint * 10 + 10), *other_rows])
    assert table_format.commits(sink, "job-c") == [str(c) for c in range(1, checkpoint + 1)]


def test_cleanup_deletes_only_this_jobs_uncommitted_files(table_format: Any, warehouse: Warehouse) -> None:
    sink = new_sink(table_format, warehouse)
    committed = sink.create_writer("job-x", 0, 0)
    committed.write(ids_batch(0, 100))
    done = committed.prepare_commit(1)
    committer = sink.create_committer("job-x")
    committer.commit([done])
    orphan = sink.create_writer("job-x", 1, 0)
    orphan.write(ids_batch(100, 200))
    lost = orphan.prepare_commit(2)  # its checkpoint never completes
    kept = sink.create_writer("job-x", 0, 1)
    kept.write(ids_batch(200, 300))
    restored = kept.prepare_commit(3)  # the restored checkpoint: committed after cleanup
    neighbour = sink.create_writer("job-y", 0, 0)
    neighbour.write(ids_batch(900, 901))
    theirs = neighbour.prepare_commit(1)
    committer.cleanup([restored])
    left = data_files(table_format, sink)
    assert {f["path"] for f in lost["files"]}.isdisjoint(left)
    assert {f["path"] for info in (done, restored, theirs) for f in info["files"]} <= left
    committer.commit([restored])
    assert table_format.ids(sink) == [*range(100), *range(200, 300)]


def test_writer_close_deletes_files_it_never_handed_out(table_format: Any, warehouse: Warehouse) -> None:
    sink = new_sink(table_format, warehouse, max_file_bytes=1)
    writer = sink.create_writer("job-w", 0, 0)
    writer.write(ids_batch(0, 100))  # over max_file_bytes: finished at once
    writer.write(ids_batch(100, 200))
    # local disk: streamed as written; object stores: uploaded only when made durable
    assert len(data_files(table_format, sink)) == (2 if warehouse.kind == "local" else 0)
    writer.close()
    assert data_files(table_format, sink) == set()
    writer = sink.create_writer("job-w", 0, 1)
    writer.write(ids_batch(0, 100))
    staged = writer.prepare_commit(1)
    assert {f["path"] for f in staged["files"]} == data_files(table_format, sink)
    writer.close()  # what a checkpoint holds stays
    assert len(data_files(table_format, sink)) == 1


def test_restore_older_is_refused_and_discard_restarts(table_format: Any, warehouse: Warehouse) -> None:
    sink = new_sink(table_format, warehouse)
    writer = sink.create_writer("job-r", 0, 0)
    committer = sink.create_committer("job-r")
    for checkpoint in (1, 2):
        writer.write(ids_batch(checkpoint * 10, checkpoint * 10 + 10))
        committer.commit([writer.prepare_commit(checkpoint)])
    committer.rollback(2)  # nothing newer: fine
    with pytest.raises(ConfigError) as err:
        committer.rollback(1)
    assert err.value.key == "--restore" and "checkpoint 2" in err.value.problem
    # --discard-existing: a fresh run under the same job id counts checkpoints from 1 again
    committer.discard_job()
    writer.write(ids_batch(100, 110))
    committer.commit([writer.prepare_commit(1)])
    assert table_format.ids(sink) == [*range(10, 30), *range(100, 110)]
    assert committer.pending()[0]["last_committed_checkpoint"] == 1
    committer.rollback(1)


def test_every_subtask_may_create_the_table_at_once(table_format: Any, local_warehouse: Warehouse) -> None:
    """Both subtasks' first batches arrive together and both try to create the table: one
    wins, the other loads its table; nothing is lost."""
    for attempt in range(5):
        sink = new_sink(table_format, local_warehouse, table=f"race{attempt}")
        writers = [sink.create_writer("job-race", subtask, 0) for subtask in range(4)]
        start = threading.Barrier(len(writers))
        errors: list[BaseException] = []

        def first_batch(subtask: int) -> None:
            start.wait()  # noqa: B023 - its threads end within this iteration
            try:
                writers[subtask].write(ids_batch(subtask * 100, subtask * 100 + 100))  # noqa: B023 - its threads end within this iteration
            except BaseException as err:  # reported below
                errors.append(err)  # noqa: B023 - its threads end within this iteration

        threads = [threading.Thread(target=first_batch, args=(i,)) for i in range(len(writers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        sink.create_committer("job-race").commit([w.prepare_commit(1) for w in writers])
        assert table_format.ids(sink) == list(range(400))
