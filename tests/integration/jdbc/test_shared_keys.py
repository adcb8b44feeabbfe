"""Several writers of one job on one PostgreSQL table, and sinks fed by change rows and
plain rows at once, with a real PostgreSQL and no Spark (issue 47, defects 3 and 4).

The jobs run in-process (``tests.seatunnel_jobs.run_in_process``): subtask 0 writes and
prepares its epoch before subtask 1 writes, as happens when one subtask reaches the
barrier first. A writer that waits on another writer's prepared row lock would wait for
ever, so every run here is bounded (``_bounded``): a blocked run fails the test, and the
locks are released so that the test ends."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.api import ROW_KIND
from airflow_provider_seatunnel_ckpt.errors import ConnectorError
from tests.seatunnel_jobs import run_in_process

from .conftest import PG_OPTIONS, Database, prepared_gids, variables_file

#: far above what any in-process run here takes, far below "for ever"
BOUND_S = 40.0
#: the same for a Spark run (a driver on a loaded 2-core machine takes a minute to start)
SPARK_BOUND_S = 300.0


def _bounded(db: Database, work: Callable[[], Any], seconds: float = BOUND_S) -> Any:
    """``work()``'s result; a test failure if it is still running after ``seconds`` (then
    the database's prepared transactions are rolled back and its sessions ended, so the
    blocked thread finishes)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except BaseException as err:  # handed to the test's thread
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        waiting = db.sql(
            f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db.name}' AND wait_event_type = 'Lock'"
        )
        for gid in prepared_gids(db):
            db.sql(f"ROLLBACK PREPARED '{gid}'")
        db.sql(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db.name}' "
            "AND pid <> pg_backend_pid()"
        )
        thread.join(30)
        pytest.fail(f"still blocked after {seconds:g} s; {waiting[0][0]} session(s) waiting on a lock")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


# ---- change rows, and SeaTunnel's model of applying them -------------------------------------
def _changes() -> list[tuple[str, int, str, int]]:
    """(kind, id, name, score) for ids 1..40: inserted; even ids updated; every fifth deleted;
    id 41 inserted, deleted and inserted again; id 42 inserted and deleted."""
    rows = [("INSERT", i, f"a{i}", i) for i in range(1, 41)]
    rows += [
        change
        for i in range(2, 41, 2)
        for change in (("UPDATE_BEFORE", i, f"a{i}", i), ("UPDATE_AFTER", i, f"b{i}", i * 10))
    ]
    rows += [("DELETE", i, f"b{i}" if i % 2 == 0 else f"a{i}", 0) for i in range(5, 41, 5)]
    rows += [("INSERT", 41, "x", 1), ("DELETE", 41, "x", 1), ("INSERT", 41, "y", 2)]
    rows += [("INSERT", 42, "z", 1), ("DELETE", 42, "z", 1)]
    return rows


def _applied(changes: list[tuple[str, int, str, int]], start: dict[int, tuple] | None = None) -> dict[int, tuple]:
    """The table after ``changes``, one after the other, by id."""
    table = dict(start or {})
    for kind, key, name, score in changes:
        if kind in ("INSERT", "UPDATE_AFTER"):
            table[key] = (key, name, score)
        else:
            table.pop(key, None)
    return table


SCHEMA = {"fields": {"id": "bigint", "name": "string", "score": "int"}}


def _rows(changes: list[tuple[str, int, str, int]]) -> list[dict[str, Any]]:
    return [{"kind": kind, "fields": [key, name, score]} for kind, key, name, score in changes]


def _fake(changes: list[tuple[str, int, str, int]], **extra: Any) -> dict[str, Any]:
    return {"plugin_name": "FakeSource", "schema": SCHEMA, "rows": _rows(changes), **extra}


def _tables(*tables: tuple[str, list[tuple[str, int, str, int]]]) -> dict[str, Any]:
    """One FakeSource of several tables (``tables_configs``), each with its rows."""
    return {
        "plugin_name": "FakeSource",
        "tables_configs": [{"schema": {"table": name, **SCHEMA}, "rows": _rows(changes)} for name, changes in tables],
    }


def _job(tmp_path: Path, db: Database, sources: list[dict], *, parallelism: int = 1, **sink: Any) -> Path:
    jdbc = {"plugin_name": "Jdbc", **db.options(), "table": "public.out", "primary_keys": ["id"], **sink}
    if len(sources) > 1:
        jdbc["plugin_input"] = [s["plugin_output"] for s in sources]
    path = tmp_path / "job.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "env": {"job.name": "keys", "parallelism": parallelism, "job.mode": "BATCH"},
                "source": sources,
                "sink": [jdbc],
            },
            sort_keys=False,
        )
    )
    return path


def _table(db: Database) -> dict[int, tuple]:
    return {row[0]: tuple(row) for row in db.sql("SELECT id, name, score FROM out ORDER BY id")}


def _stages(db: Database) -> list[str]:
    return [
        r[0]
        for r in db.sql(
            "SELECT relname FROM pg_class WHERE relname LIKE 'seatunnel\\_ckpt\\_stage\\_%' AND relkind = 'r'"
        )
    ]


def _left_behind(db: Database) -> list[Any]:
    """Prepared transactions and staged rows a finished job must not leave."""
    staged = [(name, db.sql(f'SELECT count(*) FROM "{name}"')[0][0]) for name in _stages(db)]
    return prepared_gids(db) + [s for s in staged if s[1]]


# ---- defect 3: two writers, one key, one epoch ---------------------------------------------------
def test_two_subtasks_changing_one_key_in_one_epoch_never_block(tmp_path: Path, db: Database) -> None:
    """FakeSource's explicit rows are emitted by every reader: at parallelism 2 both
    subtasks change the same 42 keys in the same epoch. Subtask 1's writes used to wait
    for ever on the row locks of subtask 0's prepared transaction."""
    changes = _changes()
    job = _job(tmp_path, db, [_fake(changes)], parallelism=2)
    rows = _bounded(db, lambda: run_in_process(job, "two-subtasks"))
    assert rows == 2 * len(changes)
    expected = _applied(changes)
    assert _table(db) == expected and len(expected) == 33  # 40 - 8 deleted + id 41 (42 deleted)
    assert _left_behind(db) == []


def test_tables_of_one_source_changing_one_key_into_one_table_never_block(tmp_path: Path, db: Database) -> None:
    """SeaTunnel's ``tables_configs`` (Kafka's ``table_list``) into one table: each table has
    its own writer and transaction on the same target; both tables change the same keys in
    one epoch, and table b also inserts keys of its own."""
    changes = _changes()
    own = [("INSERT", i, f"own{i}", i) for i in range(100, 110)]
    job = _job(tmp_path, db, [_tables(("db.a", changes), ("db.b", changes + own))])
    rows = _bounded(db, lambda: run_in_process(job, "two-tables"))
    assert rows == 2 * len(changes) + len(own)
    expected = _applied(changes + own)  # each table's changes of a key end the same
    assert _table(db) == expected and len(expected) == 43
    assert _left_behind(db) == []


# ---- plain rows with primary_keys: upserted by key, as SeaTunnel's enable_upsert (true) --------
def _inserts(ids: Any, prefix: str = "a") -> list[tuple[str, int, str, int]]:
    return [("INSERT", i, f"{prefix}{i}", i) for i in ids]


def test_two_subtasks_appending_one_key_upsert_it_once(tmp_path: Path, db: Database) -> None:
    """Plain rows (no kinds) with primary_keys are upserted, as SeaTunnel's Jdbc sink does
    by default (``enable_upsert``): both subtasks append the same keys in one epoch, and
    each key ends once. They used to be appended (COPY), and subtask 1 failed after 10 s
    on subtask 0's prepared duplicate key, in every epoch."""
    inserts = _inserts(range(1, 11))
    db.sql("CREATE TABLE out (id bigint PRIMARY KEY, name text, score integer)")
    job = _job(tmp_path, db, [_fake(inserts)], parallelism=2)
    assert _bounded(db, lambda: run_in_process(job, "appends")) == 2 * len(inserts)
    assert _table(db) == _applied(inserts)
    # the whole job again (every row replayed): upserts, not duplicate keys
    _bounded(db, lambda: run_in_process(job, "appends-again"))
    assert _table(db) == _applied(inserts)
    assert _left_behind(db) == []


def test_tables_of_one_source_appending_one_key_upsert_it_once(tmp_path: Path, db: Database) -> None:
    """``tables_configs`` into one table with primary_keys: each table's writer appends the
    same keys in one epoch (table b some of its own too); each key ends once, the
    later table's row counting."""
    inserts, own = _inserts(range(1, 41)), _inserts(range(100, 110), "own")
    changed = _inserts(range(1, 41), "b")
    job = _job(tmp_path, db, [_tables(("db.a", inserts), ("db.b", changed + own))])
    assert _bounded(db, lambda: run_in_process(job, "two-tables")) == 2 * len(inserts) + len(own)
    assert _table(db) == _applied(inserts + changed + own)
    assert _left_behind(db) == []


def test_with_enable_upsert_false_two_subtasks_appending_one_key_fail_fast_and_say_why(
    tmp_path: Path, db: Database
) -> None:
    """``enable_upsert: false`` appends plain rows (COPY), SeaTunnel's faster path for data
    without duplicate keys: the same key from two subtasks is a duplicate key, which must
    fail in bounded time, saying so, instead of waiting for ever."""
    inserts = _inserts(range(1, 11))
    db.sql("CREATE TABLE out (id bigint PRIMARY KEY, name text, score integer)")
    job = _job(tmp_path, db, [_fake(inserts)], parallelism=2, enable_upsert=False)
    with pytest.raises(ConnectorError, match=r"waited .* for a row lock on .*out.*enable_upsert"):
        _bounded(db, lambda: run_in_process(job, "appends"))


def test_with_enable_upsert_false_a_key_appended_twice_fails_naming_it(tmp_path: Path, db: Database) -> None:
    """One writer appending a key twice (or a key the table holds) fails at once, in one
    line naming the key and the option that upserts instead."""
    inserts = _inserts(range(1, 4))
    job = _job(tmp_path, db, [_fake(inserts + inserts[1:2])], enable_upsert=False)
    with pytest.raises(ConnectorError) as err:
        _bounded(db, lambda: run_in_process(job, "twice"))
    message = str(err.value)
    assert "\n" not in message and "(id)=(2)" in message and "enable_upsert" in message, message


def test_a_null_key_fails_the_writer_not_the_commit(db: Database) -> None:
    """Rows upserted by key go to the stage, applied by the driver after ``COMMIT PREPARED``;
    a null key cannot be applied there, so it must fail the subtask before its epoch is
    prepared. It used to pass the writer and fail every commit of that epoch, the
    restore's included: a job that could never go on."""
    db.sql("CREATE TABLE out (id bigint PRIMARY KEY, name text, score integer)")
    sink = load_sink({"plugin_name": "Jdbc", **db.options(), "table": "out", "primary_keys": ["id"]})
    sink.preflight()
    writer = sink.create_writer("nulls", 0, 0)
    writer.open(0)
    writer.write(pa.record_batch({"id": pa.array([1, None, 3], pa.int64()), "name": ["a", "b", "c"]}))
    with pytest.raises(
        ConnectorError,
        match=r"^Jdbc sink: subtask 0: primary key column 'id' is null in 1 of 3 "
        r"row\(s\) for table .*out.*: a null key names no row; filter",
    ):
        writer.prepare_commit(1)
    writer.close()
    assert prepared_gids(db) == [] and _table(db) == {}
    sink.close()


def _appends(subtask: int, checkpoint: int) -> pa.RecordBatch:
    """Subtask 0 appends ids 100 (c - 1) .. 100 c - 1 in epoch c; subtask 1 the same ids
    shifted by 150 (mod 400): every key is appended by both, in different epochs or the
    same one, each time with another name."""
    ids = [(i + 150 * subtask) % 400 for i in range(100 * (checkpoint - 1), 100 * checkpoint)]
    return pa.record_batch({"id": pa.array(ids, pa.int64()), "name": [f"s{subtask}c{checkpoint}"] * len(ids)})


def _upserted(epochs: range) -> dict[int, tuple]:
    """The table after upserting the epochs' appends in order, subtask 1's after 0's."""
    table: dict[int, tuple] = {}
    for checkpoint in epochs:
        for subtask in (0, 1):
            batch = _appends(subtask, checkpoint)
            for key, name in zip(batch.column("id").to_pylist(), batch.column("name").to_pylist()):
                table[key] = (key, name)
    return table


def test_appends_by_key_end_exact_after_a_driver_kill_and_a_restore_of_an_older_checkpoint(db: Database) -> None:
    """Two subtasks appending overlapping keys over four epochs, driven as the engine
    drives the sink: the driver dies with checkpoint 3 durable but not committed and
    epoch 4 prepared; the next run restores checkpoint 3 (commits it, rolls epoch 4
    back) and replays epoch 4; a third run restores checkpoint 2 (deletes what epochs 3
    and 4 applied) and replays both. Every key ends once, with its last row."""
    sink = load_sink({"plugin_name": "Jdbc", **db.options(), "table": "out", "primary_keys": ["id"]})
    sink.preflight()

    def run(attempt: int, epochs: range) -> dict[int, list]:
        sink.run_attempt = attempt
        infos = {}
        for checkpoint in epochs:
            infos[checkpoint] = []
            for subtask in (0, 1):
                writer = sink.create_writer("restore", subtask, attempt)
                writer.open(epochs.start - 1)
                writer.write(_appends(subtask, checkpoint))
                infos[checkpoint].append(writer.prepare_commit(checkpoint))
        return infos

    def restore(attempt: int, checkpoint: int, infos: list) -> Any:
        sink.run_attempt = attempt
        committer = sink.create_committer("restore")
        committer.commit(infos)
        committer.rollback(checkpoint)
        committer.cleanup(infos)
        return committer

    first = run(0, range(1, 5))
    committer = sink.create_committer("restore")
    for checkpoint in (1, 2):
        committer.commit(first[checkpoint])
    assert len(prepared_gids(db)) == 4  # epochs 3 (durable) and 4 (not), both subtasks
    # run 1: restores checkpoint 3, then writes epoch 4 again
    committer = restore(1, 3, first[3])
    assert prepared_gids(db) == []
    second = run(1, range(4, 5))
    committer.commit(second[4])
    expected = _upserted(range(1, 5))
    assert {r[0]: tuple(r) for r in db.sql("SELECT id, name FROM out")} == expected and len(expected) == 400
    # run 2: restores checkpoint 2, the older one; epochs 3 and 4 are written again
    committer = restore(2, 2, first[2])
    assert db.sql("SELECT count(*) FROM out")[0][0] < 400  # what epochs 3 and 4 applied is gone
    third = run(2, range(3, 5))
    for checkpoint in (3, 4):
        committer.commit(third[checkpoint])
        committer.commit(third[checkpoint])  # a replayed commit applies nothing again
    assert {r[0]: tuple(r) for r in db.sql("SELECT id, name FROM out")} == expected
    assert db.ids("out") == (400, 400, 0, 399)
    assert _left_behind(db) == []
    sink.close()


def test_upsert_mode_tables_on_one_target_flushing_mid_epoch_never_block(tmp_path: Path, db: Database) -> None:
    """Without two-phase commit (``is_exactly_once: false`` and keys), a flush in the middle
    of an epoch (``batch_size`` reached) kept its transaction open until the barrier: the
    next table's writer, on the same thread, waited on it for ever."""
    changes = _changes()
    job = _job(tmp_path, db, [_tables(("db.a", changes), ("db.b", changes))], is_exactly_once=False, batch_size=5)
    _bounded(db, lambda: run_in_process(job, "upserts"))
    assert _table(db) == _applied(changes)


# ---- defect 4: change rows and plain rows into one sink ------------------------------------------
@pytest.mark.parametrize("plain_first", [True, False])
def test_a_change_source_and_a_plain_source_into_one_sink(tmp_path: Path, db: Database, plain_first: bool) -> None:
    """Two sources wired into one Jdbc sink (plugin_output/plugin_input), one with change
    rows, one with plain rows (inserts: applied by key too, as SeaTunnel applies every
    row by its kind). Either order of their batches used to fail every epoch."""
    changes = _changes()
    plain = [("INSERT", i, f"p{i}", -i) for i in range(200, 220)]
    sources = [{**_fake(changes), "plugin_output": "changes"}, {**_fake(plain), "plugin_output": "plain"}]
    job = _job(tmp_path, db, sources[::-1] if plain_first else sources)
    assert _bounded(db, lambda: run_in_process(job, "mixed")) == len(changes) + len(plain)
    assert _table(db) == _applied(changes + plain)
    # the same again (a replay): the plain rows are upserts, not duplicate keys
    _bounded(db, lambda: run_in_process(job, "mixed-again"))
    assert _table(db) == _applied(changes + plain)
    assert _left_behind(db) == []


def _batch(columns: dict[str, pa.Array], kinds: list[int] | None = None) -> pa.RecordBatch:
    if kinds is not None:
        columns = {**columns, ROW_KIND: pa.array(kinds, pa.int8())}
    return pa.record_batch(columns)


@pytest.mark.parametrize("exactly_once", [True, False])
def test_one_flush_of_differing_compatible_schemas_and_kinds(db: Database, exactly_once: bool) -> None:
    """What reaches one writer when its sources' schemas are only known when read: other
    integer widths, another column order, a column missing (it keeps its value, or gets
    its default), rows with and without kinds, all in one flush."""
    db.sql("CREATE TABLE out (id bigint PRIMARY KEY, name text, score integer, note text DEFAULT 'dflt')")
    db.sql("INSERT INTO out VALUES (1, 'old', 1, 'kept'), (2, 'gone', 2, 'x')")
    sink = load_sink(
        {"plugin_name": "Jdbc", **db.options(), "table": "out", "primary_keys": ["id"], "is_exactly_once": exactly_once}
    )
    sink.preflight()
    writer = sink.create_writer("mixed-schemas", 0, 0)
    writer.write(
        _batch(
            {
                "id": pa.array([1, 2, 3], pa.int32()),
                "name": ["new", "gone", "c"],
                "score": pa.array([10, 2, 30], pa.int64()),
            },
            kinds=[2, 3, 0],
        )
    )
    writer.write(_batch({"score": pa.array([40], pa.int16()), "id": pa.array([4], pa.int64()), "name": ["d"]}))
    # no score: a new row gets its default, an existing one keeps its value; the last change of a key counts
    writer.write(_batch({"id": pa.array([5, 3, 1], pa.int64()), "name": ["e", "c2", "newer"]}))
    info = writer.prepare_commit(1)
    if exactly_once:
        sink.create_committer("mixed-schemas").commit([info])
    assert db.sql("SELECT id, name, score, note FROM out ORDER BY id") == [
        (1, "newer", 1, "kept"),
        (3, "c2", None, "dflt"),
        (4, "d", 40, "dflt"),
        (5, "e", None, "dflt"),
    ]
    sink.close()


# ---- under Spark: bounded, every key's final row, exactly once after restores --------------------
def _spark_job(workspace: Any, name: str, sources: list[dict], **sink: Any) -> Path:
    jdbc = {"plugin_name": "Jdbc", **PG_OPTIONS, "table": "public.out", "primary_keys": ["id"], **sink}
    if len(sources) > 1:
        jdbc["plugin_input"] = [s["plugin_output"] for s in sources]
    path = workspace.root / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {"env": {"job.name": name, "parallelism": 2, "job.mode": "BATCH"}, "source": sources, "sink": [jdbc]},
            sort_keys=False,
        )
    )
    return path


def _slowly(source: dict[str, Any]) -> dict[str, Any]:
    """Six splits per reader, a quarter second apart: several checkpoints per run."""
    return {**source, "split.num": 6, "split.read-interval": 250}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tables_and_subtasks_changing_one_key_under_spark_end_exact_after_a_kill_and_a_restore(
    workspace: Any, db: Database
) -> None:
    """``tables_configs`` into one table at parallelism 2: both tables and both subtasks
    change the same keys in every epoch. The run finishes (it used to hang until the
    checkpoint expired, and every restore hung again), through a driver killed with
    prepared transactions in flight and a restore of an older checkpoint, with every
    key's final row and nothing left prepared or staged."""
    from tests.support.postgres import kill_with_prepared_in_flight
    from tests.support.workspace import completed_ids

    changes, own = _changes(), [("INSERT", i, f"own{i}", i) for i in range(100, 110)]
    source = _tables(("db.a", changes), ("db.b", changes + own))
    source["tables_configs"] = [_slowly(table) for table in source["tables_configs"]]
    job = _spark_job(workspace, "shared", [source])
    config = workspace.write_config(interval=200, max_retained=100)
    variables = str(variables_file(db, workspace.root))
    expected = _applied(changes + own)
    with workspace.start(job, config, "shared", "--variables", variables) as first:
        assert first.wait_for(r"checkpoint 2 \(checkpoint\) completed", 300), first.stderr()
        assert kill_with_prepared_in_flight(first, db) > 0
    started = time.monotonic()
    result = workspace.run(job, config, "shared", "--variables", variables, timeout=SPARK_BOUND_S)
    assert result.returncode == 0, result.explain()
    assert time.monotonic() - started < SPARK_BOUND_S
    assert _table(db) == expected and len(expected) == 43
    assert _left_behind(db) == [] and not _stages(db), _stages(db)

    ids = completed_ids(Path(config), "shared")
    older = ids[len(ids) // 2]
    again = workspace.run(
        job, config, "shared", "--restore", str(older), "--variables", variables, timeout=SPARK_BOUND_S
    )
    assert again.returncode == 0, again.explain()
    # a line for each table's sink with epochs after it: what one table's epochs applied may all
    # have been overwritten since by the other's (the same keys), which deletes none of it
    deleted = re.findall(
        rf"deleted (\d+) row\(s\) of \d+ transaction\(s\) committed after checkpoint {older}", again.stderr
    )
    assert deleted and sum(map(int, deleted)) > 0, again.explain()
    assert _table(db) == expected
    assert _left_behind(db) == [] and not _stages(db)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_change_source_and_a_plain_source_under_spark_pass_the_check_and_run(workspace: Any, db: Database) -> None:
    """The wiring of defect 4 as a user runs it: ``run --check`` accepts it (each row has its
    kind), and the run writes every key's final row, in every epoch, and again after a
    restore of an older checkpoint (the plain rows are upserts, never duplicate keys)."""
    from tests.support.workspace import completed_ids

    changes, plain = _changes(), [("INSERT", i, f"p{i}", -i) for i in range(200, 220)]
    sources = [
        _slowly({**_fake(changes), "plugin_output": "changes"}),
        _slowly({**_fake(plain), "plugin_output": "plain"}),
    ]
    job = _spark_job(workspace, "mixed", sources)
    config = workspace.write_config(interval=200, max_retained=100)
    variables = str(variables_file(db, workspace.root))
    checked = workspace.run(job, None, None, "--check", "--variables", variables, timeout=120)
    assert checked.returncode == 0, checked.explain()
    assert (
        "sink[0] Jdbc <- changes, plain: id int64, name string, score int32; each row with its kind" in checked.stdout
    )
    result = workspace.run(job, config, "mixed", "--variables", variables, timeout=SPARK_BOUND_S)
    assert result.returncode == 0, result.explain()
    expected = _applied(changes + plain)
    assert _table(db) == expected and len(expected) == 53
    older = completed_ids(Path(config), "mixed")[1]
    again = workspace.run(
        job, config, "mixed", "--restore", str(older), "--variables", variables, timeout=SPARK_BOUND_S
    )
    assert again.returncode == 0, again.explain()
    assert _table(db) == expected
    assert _left_behind(db) == [] and not _stages(db)
