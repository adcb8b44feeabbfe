"""SeaTunnel's hand-written Jdbc sink ``query`` (``generate_sink_sql: false``) on the session's
real PostgreSQL: an INSERT whose ``?`` placeholders take each row's fields in order, run
inside the epoch's prepared transaction. Invisible until the driver commits; a replayed
commit adds nothing; a restore to an older checkpoint deletes the newer epochs' rows from
the INSERT's table; a mistake in the query is one line before Spark starts; and a real
job with a driver kill writes every id once."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.jdbc.sink import JdbcSinkWriter
from airflow_provider_seatunnel_ckpt.engine.routing import preflight
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from tests.support.workspace import Workspace

from .conftest import PG_OPTIONS, Database, prepared_gids, variables_file

pytestmark = pytest.mark.timeout(300)

QUERY = "INSERT INTO public.hand_written (id, note) VALUES (?, 'n' || ?)"


def _sink(db: Database, **options: Any) -> Any:
    sink = load_sink({"plugin_name": "Jdbc", **db.options(query=QUERY), **options}, "sink[0]")
    preflight(sink)
    sink.run_attempt = 0
    return sink


def _epoch(sink: Any, subtask: int, checkpoint_id: int, ids: range) -> Any:
    writer = sink.create_writer("hand-written", subtask, 0)
    writer.open(checkpoint_id - 1)
    writer.write(pa.record_batch({"id": pa.array(ids, pa.int64()), "x": pa.array(ids, pa.int64())}))
    return writer.prepare_commit(checkpoint_id)


def test_the_query_writes_each_epoch_once_through_commit_replay_and_restore(db: Database) -> None:
    db.sql("CREATE TABLE hand_written (id bigint, note text)")
    sink = _sink(db)
    infos = [_epoch(sink, 0, 1, range(0, 50)), _epoch(sink, 1, 1, range(50, 100))]
    assert db.ids("hand_written")[0] == 0  # prepared, not visible
    committer = sink.create_committer("hand-written")
    committer.commit(infos)
    committer.commit(infos)  # a restore commits the restored checkpoint again
    assert db.ids("hand_written") == (100, 100, 0, 99)
    assert db.sql("SELECT note FROM hand_written WHERE id = 7") == [("n7",)]  # the query's own expression
    committer.commit([_epoch(sink, 0, 2, range(100, 130))])
    committer.rollback(1)  # restoring checkpoint 1: epoch 2's rows go, from the INSERT's table
    assert db.ids("hand_written") == (100, 100, 0, 99)
    assert prepared_gids(db) == []


PLAIN = "insert into public.hand_written (ID, note, tag) values (?, ?, ?)"


def _plain_epoch(sink: Any, subtask: int, checkpoint_id: int, ids: range) -> Any:
    writer = sink.create_writer("hand-written", subtask, 0)
    writer.open(checkpoint_id - 1)
    batch = {
        "a": pa.array(ids, pa.int32()),  # the INSERT's fields go by place, whatever their names
        "b": pa.array([f"n{i}" for i in ids]),
        "c": pa.array([f"00000000-0000-0000-0000-{i:012d}" for i in ids]),
    }
    writer.write(pa.record_batch(batch))
    return writer.prepare_commit(checkpoint_id)


def test_a_plain_insert_is_appended_with_copy_exactly_once(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """``INSERT INTO t (a, b) VALUES (?, ?)`` only appends each row's fields: COPY does the
    same in one round trip per batch (the INSERT: one per row). The same rows, the same
    two-phase commit, the same restore."""
    db.sql("CREATE TABLE hand_written (id bigint, note text, tag uuid, made timestamptz DEFAULT now())")
    db.sql(
        "CREATE FUNCTION shout() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN NEW.note := upper(NEW.note); RETURN NEW; END $$"
    )
    db.sql("CREATE TRIGGER shout BEFORE INSERT ON hand_written FOR EACH ROW EXECUTE FUNCTION shout()")
    sink = _sink(db, query=PLAIN)
    assert sink.copy_columns == ["id", "note", "tag"]
    appended: list[int] = []
    append = JdbcSinkWriter._append
    monkeypatch.setattr(JdbcSinkWriter, "_append", lambda self, b: appended.append(len(b)) or append(self, b))
    infos = [_plain_epoch(sink, 0, 1, range(0, 500)), _plain_epoch(sink, 1, 1, range(500, 1000))]
    assert appended == [1, 1]  # each batch went in with COPY, not the INSERT row by row
    assert db.ids("hand_written")[0] == 0  # prepared, not visible
    committer = sink.create_committer("hand-written")
    committer.commit(infos)
    committer.commit(infos)  # replayed: nothing more
    assert db.ids("hand_written") == (1000, 1000, 0, 999)
    # what the INSERT would have written: a row trigger ran, the default filled, text into uuid
    assert db.sql("SELECT note, tag::text, made IS NOT NULL FROM hand_written WHERE id = 7") == [
        ("N7", "00000000-0000-0000-0000-000000000007", True)
    ]
    committer.commit([_plain_epoch(sink, 0, 2, range(1000, 1100))])
    committer.rollback(1)
    assert db.ids("hand_written") == (1000, 1000, 0, 999)
    assert prepared_gids(db) == []
    # a worker's sink, loaded from the job and never preflighted, asks at its first batch
    loaded = load_sink({"plugin_name": "Jdbc", **db.options(query=PLAIN)}, "sink[0]")
    loaded.run_attempt = 0
    committer.commit([_plain_epoch(loaded, 1, 2, range(1000, 1100))])
    assert appended == [1, 1, 1, 1] and loaded.copy_columns == ["id", "note", "tag"]
    assert db.ids("hand_written") == (1100, 1100, 0, 1099)


@pytest.mark.parametrize(
    "setup",
    [
        "CREATE RULE keep AS ON INSERT TO hand_written DO ALSO INSERT INTO audit VALUES (NEW.id)",
        "CREATE TRIGGER once AFTER INSERT ON hand_written FOR EACH STATEMENT EXECUTE FUNCTION nothing()",
    ],
    ids=["a rule", "a statement trigger"],
)
def test_a_plain_insert_runs_as_written_where_copy_would_differ(db: Database, setup: str) -> None:
    """COPY applies no rule and fires a statement trigger once per batch: on such a table
    the INSERT runs row by row, as written."""
    db.sql("CREATE TABLE hand_written (id bigint, note text, tag uuid)")
    db.sql("CREATE TABLE audit (id bigint)")
    db.sql(
        "CREATE FUNCTION nothing() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN INSERT INTO audit VALUES (-1); RETURN NULL; END $$"
    )
    db.sql(setup)
    sink = _sink(db, query=PLAIN)
    assert sink.copy_columns is None
    sink.create_committer("hand-written").commit([_plain_epoch(sink, 0, 1, range(0, 20))])
    assert db.ids("hand_written") == (20, 20, 0, 19)
    # the rule ran for each row, the statement trigger once per INSERT: one per row
    assert db.sql("SELECT count(*) FROM audit")[0][0] == 20


def test_a_query_postgres_refuses_is_one_line_before_spark_starts(db: Database) -> None:
    db.sql("CREATE TABLE hand_written (id bigint, note text)")
    bad = "INSERT INTO public.hand_written (id, nope) VALUES (?, ?)"
    with pytest.raises(ConfigError) as refused:
        preflight(load_sink({"plugin_name": "Jdbc", **db.options(query=bad)}, "sink[0]"))
    assert str(refused.value).startswith('sink[0].query: PostgreSQL refuses it: column "nope" of relation')
    assert "\n" not in str(refused.value) and db.server.password not in str(refused.value)
    missing = "INSERT INTO public.elsewhere (id) VALUES (?)"
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.query: table public\.elsewhere at .* does not exist"):
        preflight(load_sink({"plugin_name": "Jdbc", **db.options(query=missing)}, "sink[0]"))


@pytest.mark.slow
def test_a_job_with_the_query_writes_every_id_once_through_a_driver_kill(workspace: Workspace, db: Database) -> None:
    db.sql("CREATE TABLE hand_written (id bigint, note text)")
    rows = 100_000
    config = workspace.write_config(interval=500)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 20_000, "batch_size": 2_000},
        {"plugin_name": "Jdbc", **PG_OPTIONS, "query": "INSERT INTO public.hand_written (id) VALUES (?)"},
    )
    variables = str(variables_file(db, workspace.root))
    with workspace.start(job, config, "hand-written", "--variables", variables) as first:
        assert first.wait_for(r"checkpoint 2 \(checkpoint\) completed", 120), first.stderr()
        first.kill()
    result = workspace.run(job, config, "hand-written", "--variables", variables)
    assert result.returncode == 0, result.explain()
    assert db.ids("hand_written") == (rows, rows, 0, rows - 1)
    assert prepared_gids(db) == []
