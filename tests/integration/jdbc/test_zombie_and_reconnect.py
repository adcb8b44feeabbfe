"""The Jdbc sink at the edges of issue 30, against the session's real PostgreSQL server.

* **Reconnect race** (item 6): a subtask whose control channel comes back re-registers;
  the driver then rolls back what it prepared before (``discard_orphans``). The old
  registration's async thread may still be inside ``prepare_commit``: its PREPARE can
  land *after* that roll-back. The orphaned prepared transaction holds the locks of the
  keys the restarted subtask writes again, and its COPY must never wait for it.
* **Zombie drivers** (item 1): a driver taken over by a newer run (a zombie, run attempt
  N) and the claimant (N + 1) prepare transactions for the same subtask and checkpoint
  id. Their gids must differ, the claimant's committer must commit only its own and roll
  back the zombie's, and a zombie's committer must never touch the claimant's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.jdbc import client, transactions
from airflow_provider_seatunnel_ckpt.engine.messages import (
    Ack,
    CheckpointKind,
    Register,
    RestoreState,
    TriggerBarrier,
)
from airflow_provider_seatunnel_ckpt.engine.subtask import SubtaskContext, SubtaskRuntime
from airflow_provider_seatunnel_ckpt.errors import ConnectorError
from airflow_provider_seatunnel_ckpt.jobfile.spec import JobSpec
from tests.support.workspace import FakeChannel

from .conftest import Database, prepared_gids

pytestmark = pytest.mark.timeout(60)


#: the writers append (COPY) into the table, taking its keys' row locks, which a stale
#: prepared transaction keeps: what these tests are about. With primary_keys the sink
#: would otherwise upsert by key through its stage, where no writer waits on another
APPENDS = {"primary_keys": ["id"], "enable_upsert": False}


def _sink(db: Database, run_attempt: int = 0, **options: Any) -> Any:
    sink = load_sink({"plugin_name": "Jdbc", **db.options(table="out", **{**APPENDS, **options})})
    sink.preflight()
    sink.run_attempt = run_attempt  # as the engine does, before any writer or committer exists
    return sink


def _batch(start: int, stop: int) -> pa.RecordBatch:
    ids = list(range(start, stop))
    return pa.record_batch({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def _within(seconds: float, work: Callable[[], Any], db: Database, what: str) -> Any:
    """``work()`` on a thread; fails the test (instead of hanging it) when it is still
    blocked after ``seconds``, after rolling back every prepared transaction of the
    database so that the thread ends."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as err:  # reported below
            errors.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        stuck = prepared_gids(db)
        for gid in stuck:
            db.sql(f"ROLLBACK PREPARED '{gid}'")
        thread.join(10)
        pytest.fail(f"{what} was still blocked after {seconds:.0f} s; prepared transactions holding it: {stuck}")
    if errors:
        raise errors[0]
    return result[0]


def start_subtask(context: SubtaskContext) -> tuple[SubtaskRuntime, FakeChannel, threading.Thread, list[BaseException]]:
    """Subtask 0, attempt 0, running on a thread, registered and waiting for its restore."""
    channels: list[FakeChannel] = []

    def factory(*args: Any, **kwargs: Any) -> FakeChannel:
        channels.append(FakeChannel(*args, **kwargs))
        return channels[-1]

    subtask = SubtaskRuntime(context, 0, 0, client_factory=factory)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            subtask.run()
        except BaseException as err:  # reported by the test
            errors.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not (channels and channels[0].find(lambda m: isinstance(m, Register))) and time.monotonic() < deadline:
        assert not errors, errors
        time.sleep(0.01)
    assert channels and channels[0].find(lambda m: isinstance(m, Register)), errors
    return subtask, channels[0], thread, errors


def _wait_for_rows(subtask: SubtaskRuntime, rows: int, errors: list[BaseException], timeout: float = 30) -> None:
    """Until the subtask has written ``rows`` rows since its last barrier."""
    deadline = time.monotonic() + timeout
    while subtask._rows_since_barrier < rows and time.monotonic() < deadline and not errors:
        time.sleep(0.05)
    assert subtask._rows_since_barrier >= rows, (subtask._rows_since_barrier, errors)


# ---- item 6: the reconnect race ------------------------------------------------------------------
def test_reconnect_a_late_prepare_of_the_old_registration_never_blocks_the_restarted_subtask(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real subtask runtime (fake control channel) with the real Jdbc sink: the old
    registration's PREPARE of checkpoint 1 is held until the driver's discard_orphans
    has run, then lands. The restarted subtask writes the same keys again (it restarts
    from the beginning) and must complete checkpoint 2."""
    job_id, run_attempt = "reconnect-race", 4
    driver_sink = _sink(db, run_attempt)  # preflight: creates the commit log, as the driver does
    committer = driver_sink.create_committer(job_id)

    held, entered = threading.Event(), threading.Event()
    execute = client.execute

    def holding_execute(connection: Any, sql: str, parameters: Any = None) -> None:
        if sql.startswith("PREPARE TRANSACTION") and sql.endswith("-1'") and not held.is_set():
            entered.set()
            held.wait(20)
        execute(connection, sql, parameters)

    monkeypatch.setattr(client, "execute", holding_execute)

    # 2,000 rows/s in batches of 200, batch_size 100: every batch goes out as its own COPY
    source = {"plugin_name": "Sequence", "rows": 1_000_000, "rows_per_second": 2_000, "batch_size": 200}
    sink_options = {"plugin_name": "Jdbc", **db.options(table="out", batch_size=100, **APPENDS)}
    spec = JobSpec(job_id, 1, source, sink_options)
    from airflow_provider_seatunnel_ckpt.connectors.sequence import SequenceSource

    splits = tuple(SequenceSource({"rows": 1_000_000}).splits(1))
    context = SubtaskContext(
        job_id, 1, spec.to_json(), splits, ("127.0.0.1", 1), "t" * 32, storage=None, run_attempt=run_attempt
    )
    subtask, channel, thread, errors = start_subtask(context)
    try:
        channel.deliver(RestoreState(None))
        # Until two batches (ids from 0) are written, not a fixed 0.5 s: at a load of 21 a
        # fresh-clone CI had written none by then, so checkpoint 1 had nothing to prepare
        _wait_for_rows(subtask, 400, errors)
        channel.deliver(TriggerBarrier(1, CheckpointKind.CHECKPOINT, 0))
        assert entered.wait(30), "checkpoint 1's PREPARE never started"
        # The channel comes back while checkpoint 1's pre-commit runs: the subtask
        # re-registers, and the driver rolls back what it prepared so far (nothing yet).
        channel.on_reconnect()
        committer.discard_orphans(0, 1, [])
        held.set()  # only now does the old registration's PREPARE land
        channel.deliver(RestoreState(None))  # the coordinator: restart from the beginning (ids from 0 again)
        # Until the restarted attempt wrote two batches (not a fixed sleep: under a loaded CI
        # its restart took longer than 0.5 s, and checkpoint 2's epoch was empty)
        before = subtask._rows_since_barrier
        deadline = time.monotonic() + 30
        while subtask._rows_since_barrier < before + 400 and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
        channel.deliver(TriggerBarrier(2, CheckpointKind.CHECKPOINT, 0))
        deadline = time.monotonic() + 10
        ack = None
        while ack is None and time.monotonic() < deadline and not errors:
            ack = channel.find(lambda m: isinstance(m, Ack) and m.checkpoint_id == 2)
            time.sleep(0.05)
        if ack is None:
            stuck = prepared_gids(db)
            waiting = db.sql(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )[0][0]
            pytest.fail(
                f"checkpoint 2 was never acknowledged (errors: {errors}); prepared: {stuck}; "
                f"sessions waiting for a lock: {waiting}"
            )
        infos = [info for _epoch, info in ack.sink_commit_info or []]
        assert [epoch for epoch, _ in ack.sink_commit_info] == [2]
        assert prepared_gids(db) == [infos[0]["gid"]], "the old registration's prepared transaction is still there"
        committer.commit(infos)
        count, distinct, low, _high = db.ids("out")
        assert count == distinct == infos[0]["rows"] and low == 0
    finally:
        held.set()
        subtask._fatal = RuntimeError("test over")  # stops the processing thread at its next check
        for _ in range(2):  # before the join (a blocked COPY), and after it (a last prepare)
            for gid in prepared_gids(db):
                db.sql(f"ROLLBACK PREPARED '{gid}'")
            thread.join(10)
        driver_sink.close()


def test_reconnect_a_prepare_after_the_sink_was_released_is_refused_and_rolled_back(db: Database) -> None:
    """The other order: the restarted subtask released the old sink (``Sink.close``)
    before the old registration's pre-commit got to its PREPARE. Nothing may be prepared
    then (no one would ever commit it), and the open transaction's locks go at once."""
    old_sink = _sink(db, 2)
    old = old_sink.create_writer("released", 0, 0)
    old.open(0)
    old.write(_batch(0, 100))
    old_sink.close()  # the processing thread restarts: _release_connectors()
    with pytest.raises(ConnectorError, match="released"):
        old.prepare_commit(1)
    assert prepared_gids(db) == []
    new_sink = _sink(db, 2)
    new = new_sink.create_writer("released", 0, 0)
    new.open(0)
    new.write(_batch(0, 100))  # the same keys: nothing holds them any more
    info = _within(10, lambda: new.prepare_commit(2), db, "the restarted subtask's COPY")
    new_sink.create_committer("released").commit([info])
    assert db.ids("out") == (100, 100, 0, 99)
    new_sink.close()


def test_a_subtask_attempt_rolls_back_its_runs_stale_prepared_transactions_when_it_opens(db: Database) -> None:
    """Whatever this subtask prepared in this run for checkpoints after the one it
    restores is stale; the first writer of a new sink rolls it back before it writes
    a row, and touches nothing else: the restored checkpoint's transactions, other
    subtasks', newer attempts', other runs'."""
    job = "opens"
    old_sink = _sink(db, 5)
    infos = {}
    for name, subtask, attempt, checkpoint, keys in [
        ("restored", 0, 0, 3, (0, 10)),
        ("stale", 0, 0, 4, (10, 20)),
        ("neighbour", 1, 0, 4, (100, 110)),
    ]:
        writer = old_sink.create_writer(job, subtask, attempt)
        writer.write(_batch(*keys))
        infos[name] = writer.prepare_commit(checkpoint)
    newer_attempt = old_sink.create_writer(job, 0, 2)
    newer_attempt.write(_batch(200, 201))
    infos["newer_attempt"] = newer_attempt.prepare_commit(9)
    older_run = _sink(db, 4).create_writer(job, 0, 0)
    older_run.write(_batch(300, 301))
    infos["older_run"] = older_run.prepare_commit(8)
    old_sink.close()

    new_sink = _sink(db, 5)
    writer = new_sink.create_writer(job, 0, 1)
    writer.open(3)  # restores checkpoint 3
    assert set(prepared_gids(db)) == {infos[n]["gid"] for n in ("restored", "neighbour", "newer_attempt", "older_run")}
    writer.write(_batch(10, 20))  # the stale transaction's keys
    info = _within(10, lambda: writer.prepare_commit(5), db, "the restarted subtask's COPY")
    assert info["gid"] in prepared_gids(db)
    new_sink.close()


# ---- item 1: zombie drivers -----------------------------------------------------------------------
@pytest.mark.parametrize("enable_upsert", [False, True], ids=["appended", "upserted-by-key"])
def test_zombie_and_claimant_prepare_the_same_subtask_and_checkpoint_without_touching_each_other(
    db: Database, enable_upsert: bool
) -> None:
    """Both ways the sink writes plain rows: appended into the table, and staged, then
    upserted by key by the committer (which applies only the staged rows of the
    transactions it commits: the claimant's, never the zombie's)."""
    job = "taken-over"
    zombie_sink, claimant_sink = _sink(db, 6, enable_upsert=enable_upsert), _sink(db, 7, enable_upsert=enable_upsert)
    # before it was taken over, the zombie completed and committed checkpoint 10
    before = zombie_sink.create_writer(job, 0, 0)
    before.write(_batch(500, 510))
    zombie_sink.create_committer(job).commit([before.prepare_commit(10)])
    zombie = zombie_sink.create_writer(job, 0, 0)
    claimant = claimant_sink.create_writer(job, 0, 0)
    zombie.write(_batch(0, 100))
    claimant.write(_batch(1000, 1050))
    # both at the barrier of checkpoint 12 at the same time
    results: dict[str, Any] = {}
    barrier = threading.Barrier(2)

    def prepare(name: str, writer: Any) -> None:
        barrier.wait(5)
        results[name] = writer.prepare_commit(12)

    threads = [
        threading.Thread(target=prepare, args=(name, writer), daemon=True)
        for name, writer in (("zombie", zombie), ("claimant", claimant))
    ]
    for thread in threads:
        thread.start()
    _within(10, lambda: [t.join() for t in threads], db, "preparing checkpoint 12 on both drivers")
    assert set(results) == {"zombie", "claimant"}, results
    zombie_info, claimant_info = results["zombie"], results["claimant"]
    assert zombie_info["gid"] != claimant_info["gid"]
    assert set(prepared_gids(db)) == {zombie_info["gid"], claimant_info["gid"]}
    tag = transactions.job_tag(job)
    assert transactions.parse_gid(zombie_info["gid"]).run_attempt == 6
    assert transactions.parse_gid(claimant_info["gid"]).run_attempt == 7
    assert {p["gid"] for p in claimant_sink.create_committer(job).pending()} == set(prepared_gids(db))

    # The zombie's end-of-run cleanup (it failed, fenced) must not roll back the claimant's
    # transaction, nor its restart handling (discard_orphans) do so
    zombie_committer = zombie_sink.create_committer(job)
    zombie_committer.discard_orphans(0, 100, [])
    zombie_committer.cleanup([])
    assert set(prepared_gids(db)) == {claimant_info["gid"]}, "a zombie rolled back the claimant's transaction"
    # (the zombie's own was rolled back by its cleanup: prepare it again to see the claimant do it)
    again = zombie_sink.create_writer(job, 0, 0)
    again.write(_batch(0, 100))
    zombie_info = again.prepare_commit(12)

    claimant_committer = claimant_sink.create_committer(job)
    claimant_committer.commit([claimant_info])
    assert db.ids("out") == (60, 60, 500, 1049), "committing the claimant's checkpoint committed the zombie's rows"
    assert db.sql("SELECT count(*) FROM out WHERE id < 500")[0][0] == 0
    # the prepared transactions' log rows (upserted by key, the driver's apply of their staged
    # rows logs one of its own: subtask -1)
    prepared_rows = f"SELECT gid FROM {transactions.COMMIT_LOG} WHERE job_tag = '{tag}' AND subtask >= 0"
    assert db.sql(f"{prepared_rows} AND checkpoint_id = 12") == [(claimant_info["gid"],)]
    claimant_committer.cleanup([claimant_info])
    assert prepared_gids(db) == [], "the claimant's cleanup left the zombie's prepared transaction"
    # a restart of subtask 0 on the claimant also releases a zombie's late prepare
    late = zombie_sink.create_writer(job, 0, 0)
    late.write(_batch(0, 100))
    late.prepare_commit(13)
    claimant_committer.discard_orphans(0, 12, [claimant_info])
    assert prepared_gids(db) == []
    # rollback and discard_job see every run's commit-log rows
    claimant_committer.rollback(11)
    assert db.ids("out") == (10, 10, 500, 509)
    claimant_committer.rollback(9)
    assert db.ids("out") == (0, 0, None, None)
    late = zombie_sink.create_writer(job, 0, 0)
    late.write(_batch(0, 100))
    late.prepare_commit(14)
    for sink, keys, checkpoint in ((zombie_sink, (600, 610), 15), (claimant_sink, (700, 710), 16)):
        writer = sink.create_writer(job, 1, 0)
        writer.write(_batch(*keys))
        claimant_committer.commit([writer.prepare_commit(checkpoint)])
    assert len(db.sql(prepared_rows)) == 2
    claimant_committer.discard_job()  # seatunnel-ckpt delete: every run's transactions and log rows
    assert prepared_gids(db) == []
    assert db.sql(f"SELECT count(*) FROM {transactions.COMMIT_LOG} WHERE job_tag = '{tag}'") == [(0,)]
    zombie_sink.close()
    claimant_sink.close()


def test_gids_of_older_releases_are_still_recognised(db: Database) -> None:
    """Transactions prepared by a release whose gids had no run attempt."""
    import psycopg

    job = "upgraded"
    tag = transactions.job_tag(job)
    sink = _sink(db, 3)
    committer = sink.create_committer(job)
    legacy = {cp: transactions.gid_for(tag, 0, 0, cp, run_attempt=None) for cp in (4, 5)}
    assert legacy[4] == f"stckpt-{tag}-0-0-4"
    assert transactions.parse_gid(legacy[4]) == (tag, 0, 0, 4, None)
    db.sql("CREATE TABLE out (id bigint PRIMARY KEY, name text)")
    with psycopg.connect(db.server.uri(db.name), autocommit=True) as connection:
        for cp, (start, stop) in ((4, (0, 10)), (5, (10, 20))):
            connection.execute("BEGIN")
            connection.execute(f"INSERT INTO out SELECT g, 'n' || g FROM generate_series({start}, {stop - 1}) g")
            connection.execute(transactions.log_row_sql(None, legacy[cp], tag, '"out"', 0, 0, cp, stop - start))
            connection.execute(f"PREPARE TRANSACTION '{legacy[cp]}'")
    assert [p["gid"] for p in committer.pending()] == [legacy[4], legacy[5]]
    committer.commit([{"gid": legacy[4], "rows": 10}])  # the restored checkpoint, written by the old release
    committer.cleanup([{"gid": legacy[4], "rows": 10}])  # the claimant rolls back the old release's orphan
    assert prepared_gids(db) == []
    assert db.ids("out") == (10, 10, 0, 9)
    committer.rollback(3)  # its commit-log row is found too
    assert db.ids("out") == (0, 0, None, None)
    sink.close()
