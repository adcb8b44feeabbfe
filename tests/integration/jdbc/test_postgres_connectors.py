"""The Jdbc source and sink against a real PostgreSQL server, without Spark: splits,
keyset reading and resuming, live checks, and the sink's two-phase commit protocol."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext
from airflow_provider_seatunnel_ckpt.connectors.jdbc import transactions
from airflow_provider_seatunnel_ckpt.errors import ConfigError, ConnectorError

from .conftest import Database


def _source(db: Database, **options: Any) -> Any:
    return load_source({"plugin_name": "Jdbc", **db.options(**options)})


def _read_all(source: Any, parallelism: int = 2, batch_size: int = 1000) -> list[pa.RecordBatch]:
    batches = []
    for split in source.splits(parallelism):
        reader = source.create_reader(split, None, ReaderContext(0, parallelism, batch_size))
        try:
            while (batch := reader.read_batch()) is not None:
                batches.append(batch)
        finally:
            reader.close()
    return batches


def _ids(batches: list[pa.RecordBatch], column: str = "id") -> list[Any]:
    return [v for b in batches for v in b.column(column).to_pylist()]


# ---- source ------------------------------------------------------------------------------------
def test_integer_key_ranges_cover_every_row_once(db: Database) -> None:
    db.sql("CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10, 2), note text, doc jsonb)")
    db.sql(
        "INSERT INTO orders SELECT g, g / 4.0, 'n' || g, jsonb_build_object('g', g) FROM generate_series(1, 10000) g"
    )
    source = _source(db, table="public.orders", partition_num=4, fetch_size=777)
    source.preflight()
    splits = source.splits(2)
    assert [s.spec["lower"] for s in splits] == [None, 2501, 5001, 7501]
    assert [s.spec["upper"] for s in splits] == [2501, 5001, 7501, None]
    batches = _read_all(source)
    assert sorted(_ids(batches)) == list(range(1, 10001))
    schema = batches[0].schema
    assert schema.field("amount").type == pa.decimal128(10, 2) and schema.field("doc").type == pa.string()
    assert not schema.metadata and not any(f.metadata for f in schema)


def test_rows_outside_the_bounds_still_belong_to_the_first_and_last_split(db: Database) -> None:
    db.sql("CREATE TABLE t (id int PRIMARY KEY)")
    db.sql("INSERT INTO t SELECT g FROM generate_series(-50, 150) g")
    source = _source(db, table="t", partition_num=3, partition_lower_bound=0, partition_upper_bound=99)
    assert sorted(_ids(_read_all(source))) == list(range(-50, 151))


def test_reader_resumes_after_its_position_mid_split(db: Database) -> None:
    db.sql("CREATE TABLE t (id bigint PRIMARY KEY, v text)")
    db.sql("INSERT INTO t SELECT g, md5(g::text) FROM generate_series(0, 4999) g")
    source = _source(db, table="t", partition_num=1, fetch_size=1000)
    [split] = source.splits(1)
    context = ReaderContext(0, 1, 300)
    first = source.create_reader(split, None, context)
    read = [first.read_batch() for _ in range(7)]  # pages of 1,000 cut at 300: 1,900 rows, into page 2
    position = first.position()
    first.close()
    assert position == 1899
    # rows changed behind the position are not seen again; rows ahead of it are
    db.sql("UPDATE t SET v = 'changed' WHERE id IN (10, 4000)")
    second = source.create_reader(split, position, context)
    rest = []
    while (batch := second.read_batch()) is not None:
        rest.append(batch)
    second.close()
    assert _ids(read) + _ids(rest) == list(range(5000))
    assert "changed" in _ids(rest, "v") and _ids(read, "v")[10] != "changed"


@pytest.mark.parametrize("relation", ["table", "query"])
def test_a_partition_column_that_repeats_reads_every_row_once_and_resumes_by_the_pair(
    db: Database, relation: str
) -> None:
    """SeaTunnel only divides by partition_column, which may repeat (every row 'Test' in
    its own PostgreSQL job): rows of one key are ordered by a unique column, the table's
    primary key or the first unique column of a query, and a position is the pair."""
    db.sql("CREATE TABLE c (code text, id bigint PRIMARY KEY, kind text)")
    db.sql("INSERT INTO c SELECT 'k' || (g % 3), g, 'same' FROM generate_series(0, 2999) g")
    where = {"table": "c"} if relation == "table" else {"query": "SELECT kind, code, id FROM c"}
    source = _source(db, **where, partition_column="code", partition_num=2, fetch_size=400)
    source.preflight()
    splits = source.splits(2)
    assert {s.spec["then"]["column"] for s in splits} == {"id"}
    assert sorted(_ids(_read_all(source, batch_size=250))) == list(range(3000))
    split = max(splits, key=lambda s: len(_ids(_read_all_of(source, s))))
    context = ReaderContext(0, 1, 250)
    first = source.create_reader(split, None, context)
    read = [first.read_batch() for _ in range(3)]  # 750 rows: into the second page of 400
    position = first.position()
    first.close()
    assert isinstance(position, list) and len(position) == 2 and position[0].startswith("k")
    second = source.create_reader(split, position, context)
    rest = []
    while (batch := second.read_batch()) is not None:
        rest.append(batch)
    second.close()
    together = _ids(read) + _ids(rest)
    assert len(together) == len(set(together)) == len(_ids(_read_all_of(source, split)))


def test_a_query_without_partition_column_is_read_by_its_first_unique_column(db: Database) -> None:
    """SeaTunnel reads such a query as one split; here it is read in the order of a unique
    column of its output (so a restore resumes inside it), split by the parallelism."""
    db.sql("CREATE TABLE q (kind text, id bigint, note text)")
    db.sql("INSERT INTO q SELECT 'same', g, 'n' || g FROM generate_series(1, 900) g")
    source = _source(db, query="SELECT kind, id, note FROM q")
    source.preflight()
    splits = source.splits(2)
    assert {s.spec["column"] for s in splits} == {"id"} and len(splits) == 2
    assert sorted(_ids(_read_all(source, batch_size=100))) == list(range(1, 901))


def _read_all_of(source: Any, split: Any) -> list[pa.RecordBatch]:
    reader = source.create_reader(split, None, ReaderContext(0, 1, 1000))
    try:
        return list(iter(reader.read_batch, None))
    finally:
        reader.close()


def test_date_timestamp_and_text_keys(db: Database) -> None:
    db.sql("CREATE TABLE ev (day date PRIMARY KEY, at timestamptz UNIQUE NOT NULL, name text UNIQUE NOT NULL, id int)")
    db.sql(
        "INSERT INTO ev SELECT date '2024-01-01' + g, timestamptz '2024-01-01 00:00+00' + g * interval '1 hour', "
        "'name-' || g, g FROM generate_series(0, 999) g"
    )
    for column in ("day", "at", "name"):
        source = _source(db, table="ev", partition_column=column, partition_num=3, fetch_size=128)
        source.preflight()
        assert len(source.splits(2)) == 3
        assert sorted(_ids(_read_all(source, batch_size=50))) == list(range(1000)), column


def test_query_source_with_where(db: Database) -> None:
    db.sql("CREATE TABLE a (id int PRIMARY KEY, k int)")
    db.sql("INSERT INTO a SELECT g, g % 3 FROM generate_series(1, 900) g")
    source = _source(
        db, query="SELECT id, k * 10 AS k10 FROM a", where="k10 = 20", partition_column="id", partition_num=2
    )
    source.preflight()
    ids = _ids(_read_all(source))
    assert sorted(ids) == [i for i in range(1, 901) if i % 3 == 2]


def test_geometry_geography_and_xml_read_as_the_text_postgresql_prints(db: Database) -> None:
    """As SeaTunnel's Jdbc source reads them (a string: the value's text form), so a
    SeaTunnel job on PostGIS tables writes the same rows on this engine."""
    db.sql("CREATE EXTENSION IF NOT EXISTS postgis")
    db.sql("CREATE TABLE g (id int PRIMARY KEY, shape geometry(POLYGON, 4326), spot geography(POINT), doc xml)")
    db.sql(
        "INSERT INTO g SELECT i, ST_GeomFromText('POLYGON((0 0, 0 ' || i || ', ' || i || ' 0, 0 0))', 4326), "
        "ST_GeogFromText('POINT(-73.9 ' || (40 + i / 10.0) || ')'), ('<r n=\"' || i || '\">ü</r>')::xml "
        "FROM generate_series(1, 50) i"
    )
    db.sql("INSERT INTO g VALUES (51, NULL, NULL, NULL)")
    source = _source(db, table="g", partition_num=2)
    source.preflight()
    batches = _read_all(source)
    schema = batches[0].schema
    assert [schema.field(c).type for c in ("shape", "spot", "doc")] == [pa.string()] * 3
    got = sorted(zip(_ids(batches), _ids(batches, "shape"), _ids(batches, "spot"), _ids(batches, "doc")))
    printed = sorted(db.sql("SELECT id, shape::text, spot::text, doc::text FROM g"))
    assert got == [tuple(row) for row in printed] and len(got) == 51
    assert got[0][1].startswith("0103000020E6100000")  # EWKB, with its SRID, in upper-case hex


def test_primary_key_is_the_default_partition_column(db: Database) -> None:
    db.sql("CREATE TABLE p (code text PRIMARY KEY, id int)")
    db.sql("INSERT INTO p SELECT 'c' || g, g FROM generate_series(1, 300) g")
    source = _source(db, table="p", partition_num=4)
    source.preflight()
    splits = source.splits(2)
    assert {s.spec["column"] for s in splits} == {"code"} and {s.spec["kind"] for s in splits} == {"text"}
    assert sorted(_ids(_read_all(source))) == list(range(1, 301))


@pytest.mark.parametrize(
    "setup, options, key, words",
    [
        ("", {"table": "missing"}, "table", 'relation "missing" does not exist'),
        (
            "CREATE TABLE t (id int PRIMARY KEY, addr inet)",
            {"table": "t"},
            "table",
            "column 'addr' has PostgreSQL type inet",
        ),
        ("CREATE TABLE t (id int PRIMARY KEY, n numeric)", {"table": "t"}, "table", "numeric without precision"),
        (
            "CREATE TABLE t (id int PRIMARY KEY)",
            {"table": "t", "partition_column": "nope"},
            "partition_column",
            "'nope' is not a column",
        ),
        (
            "CREATE TABLE t (id int, v int); INSERT INTO t VALUES (1, 1), (1, 1), (2, 3)",
            {"table": "t", "partition_column": "id"},
            "partition_column",
            "'id' is not unique",
        ),
        (
            "CREATE TABLE t (id int UNIQUE); INSERT INTO t VALUES (1), (NULL)",
            {"table": "t", "partition_column": "id"},
            "partition_column",
            "is NULL in some rows",
        ),
        (
            "CREATE TABLE t (id int); INSERT INTO t VALUES (1), (1)",
            {"table": "t"},
            "partition_column",
            "no single-column primary key and no unique column",
        ),
        (
            "CREATE TABLE t (id int PRIMARY KEY, f float8 UNIQUE)",
            {"table": "t", "partition_column": "f"},
            "partition_column",
            "use an integer, date, timestamp or text column",
        ),
        (
            "CREATE TABLE t (id int PRIMARY KEY)",
            {"table": "t", "where": "nope > 1"},
            "where",
            'column "nope" does not exist',
        ),
        ("", {"query": "SELEC 1"}, "query", "syntax error at or near"),
    ],
)
def test_source_preflight_names_the_option(db: Database, setup: str, options: dict, key: str, words: str) -> None:
    if setup:
        for statement in setup.split("; "):
            db.sql(statement)
    source = _source(db, **options)
    with pytest.raises(ConfigError) as err:
        source.preflight()
    assert err.value.key == key, str(err.value)
    assert words in err.value.problem, str(err.value)
    assert "\n" not in str(err.value)


def test_wrong_password_and_unreachable_server(db: Database) -> None:
    source = load_source({"plugin_name": "Jdbc", **db.options(password="not-the-Password-42"), "table": "t"})
    with pytest.raises(ConfigError) as err:
        source.preflight()
    assert err.value.key == "password" and "not-the-Password-42" not in str(err.value)
    assert "password authentication failed for user" in str(err.value) and "postgresql://postgres@127.0.0.1" in str(
        err.value
    )
    from tests.support.workspace import free_port

    started = time.monotonic()
    source = load_source(
        {
            "plugin_name": "Jdbc",
            "url": f"jdbc:postgresql://127.0.0.1:{free_port()}/x",
            "table": "t",
            "user": "u",
            "password": "pw-secret-9",
            "connection_check_timeout_sec": 3,
        }
    )
    with pytest.raises(ConnectorError) as unreachable:
        source.preflight()
    assert time.monotonic() - started < 10
    assert "cannot connect to postgresql://u@127.0.0.1" in str(unreachable.value)
    assert "pw-secret-9" not in str(unreachable.value)


# ---- sink ------------------------------------------------------------------------------------------
def _sink(db: Database, **options: Any) -> Any:
    sink = load_sink({"plugin_name": "Jdbc", **db.options(**options)})
    sink.preflight()
    return sink


def _batch(start: int, stop: int) -> pa.RecordBatch:
    ids = list(range(start, stop))
    return pa.record_batch({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def test_prepared_epochs_are_invisible_until_committed(db: Database) -> None:
    sink = _sink(db, table="public.out", primary_keys=["id"])
    writer = sink.create_writer("job-a", subtask=0, attempt=0)
    writer.write(_batch(0, 500))
    writer.write(_batch(500, 1000))
    info = writer.prepare_commit(7)
    assert info["rows"] == 1000 and info["gid"] == transactions.gid_for(transactions.job_tag("job-a"), 0, 0, 7)
    assert db.ids("out") == (0, 0, None, None)
    assert [r[0] for r in db.sql("SELECT gid FROM pg_prepared_xacts")] == [info["gid"]]
    # an epoch without rows prepares nothing
    empty = sink.create_writer("job-a", subtask=0, attempt=0)
    assert empty.prepare_commit(8) is None
    committer = sink.create_committer("job-a")
    committer.commit([info])
    assert db.ids("out") == (1000, 1000, 0, 999)
    committer.commit([info])  # a replay: found in the commit log, nothing happens
    assert db.ids("out") == (1000, 1000, 0, 999)
    # the table was created from the Arrow schema, with the primary key
    assert db.sql(
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'out' ORDER BY ordinal_position"
    ) == [("bigint",), ("text",)]
    sink.close()


def test_a_commit_whose_transaction_was_rolled_back_by_hand_is_an_error(db: Database) -> None:
    sink = _sink(db, table="out")
    writer = sink.create_writer("job-b", 1, 0)
    writer.write(_batch(0, 10))
    info = writer.prepare_commit(3)
    db.sql(f"ROLLBACK PREPARED '{info['gid']}'")
    with pytest.raises(ConnectorError, match="is gone and was never committed"):
        sink.create_committer("job-b").commit([info])
    sink.close()


def test_restore_commits_the_kept_rolls_back_the_rest_and_deletes_newer_rows(db: Database) -> None:
    db.sql("CREATE TABLE out (id bigint PRIMARY KEY, name varchar(10))")  # int64 data cast to the table's types
    sink = _sink(db, table="out", schema_save_mode="ERROR_WHEN_SCHEMA_NOT_EXIST")
    committer = sink.create_committer("job-c")
    infos = {}
    for checkpoint, (start, stop) in enumerate([(0, 100), (100, 200), (200, 300), (300, 400)], start=1):
        writer = sink.create_writer("job-c", 0, 0)
        writer.write(_batch(start, stop))
        infos[checkpoint] = writer.prepare_commit(checkpoint)
    committer.commit([infos[1], infos[2], infos[3]])  # checkpoint 3 completed; 4 only prepared
    assert db.ids("out") == (300, 300, 0, 299)
    # restore checkpoint 1 (as the runner does): replay its commits, roll back newer output
    committer.commit([infos[1]])
    committer.rollback(1)
    committer.cleanup([infos[1]])
    assert db.ids("out") == (100, 100, 0, 99)
    assert db.sql("SELECT count(*) FROM pg_prepared_xacts")[0][0] == 0
    # another job's rows in the same table are not touched
    other = sink.create_writer("job-other", 0, 0)
    other.write(_batch(1000, 1010))
    sink.create_committer("job-other").commit([other.prepare_commit(9)])
    committer.rollback(0)
    assert db.ids("out") == (10, 10, 1000, 1009)
    sink.close()


def test_a_restarted_subtask_releases_what_it_prepared_before(db: Database) -> None:
    # appended (COPY): a stale prepared transaction holds the keys' row locks
    sink = _sink(db, table="out", primary_keys=["id"], enable_upsert=False)
    committer = sink.create_committer("job-d")
    writer = sink.create_writer("job-d", 0, 0)
    writer.write(_batch(0, 100))
    durable = writer.prepare_commit(5)
    stale = sink.create_writer("job-d", 0, 0)
    stale.write(_batch(100, 200))
    stale_info = stale.prepare_commit(6)
    neighbour = sink.create_writer("job-d", 1, 0)
    neighbour.write(_batch(1000, 1100))
    neighbour_info = neighbour.prepare_commit(6)
    ahead = sink.create_writer("job-d", 0, 1)
    ahead.write(_batch(5000, 5001))
    ahead_info = ahead.prepare_commit(8)  # the new attempt, already past the restart
    committer.discard_orphans(0, 7, [durable])
    left = {r[0] for r in db.sql("SELECT gid FROM pg_prepared_xacts")}
    assert left == {durable["gid"], neighbour_info["gid"], ahead_info["gid"]}
    assert stale_info["gid"] not in left
    # the stale rows' keys are free again: the restarted subtask can write them
    again = sink.create_writer("job-d", 0, 1)
    again.write(_batch(100, 200))
    committer.commit([durable, again.prepare_commit(9), neighbour_info, ahead_info])
    assert db.ids("out") == (301, 301, 0, 5000)
    committer.discard_job()
    assert db.sql(f"SELECT count(*) FROM {transactions.COMMIT_LOG}")[0][0] == 0
    sink.close()


def test_upsert_mode_is_effectively_once_on_replay(db: Database) -> None:
    db.sql("CREATE TABLE kv (id bigint PRIMARY KEY, name text)")
    sink = _sink(db, table="kv", is_exactly_once=False, primary_keys=["id"])
    for _ in range(2):  # the same epoch written twice, as after a restore
        writer = sink.create_writer("job-e", 0, 0)
        writer.write(_batch(0, 250))
        assert writer.prepare_commit(1) is None  # committed at the barrier
    assert db.ids("kv") == (250, 250, 0, 249)
    sink.close()


@pytest.mark.parametrize("exactly_once", [True, False])
def test_json_text_lands_in_json_jsonb_and_xml_columns(db: Database, exactly_once: bool) -> None:
    """Rows carry JSON as text (SeaTunnel's string, or what this source reads from json):
    binary COPY must send jsonb its own binary form, or the server refuses the rows."""
    db.sql("CREATE TABLE docs (id bigint PRIMARY KEY, j json, jb jsonb NOT NULL, x xml)")
    sink = _sink(db, table="docs", is_exactly_once=exactly_once, primary_keys=["id"])
    writer = sink.create_writer("job-j", 0, 0)
    texts = [f'{{"n": {i}, "s": "ü"}}' for i in range(300)]
    writer.write(
        pa.record_batch(
            {
                "id": pa.array(range(300), pa.int64()),
                "j": texts[:-1] + [None],
                "jb": texts,
                "x": [f"<r>{i}</r>" for i in range(300)],
            }
        )
    )
    info = writer.prepare_commit(1)
    if exactly_once:
        sink.create_committer("job-j").commit([info])
    rows = db.sql("SELECT id, j::text, jb->>'n', jb->>'s', x::text FROM docs ORDER BY id")
    assert [(r[0], r[2], r[3], r[4]) for r in rows] == [(i, str(i), "ü", f"<r>{i}</r>") for i in range(300)]
    assert rows[0][1] == texts[0] and rows[-1][1] is None
    sink.close()


def test_exactly_once_needs_prepared_transactions(postgres_server: Any) -> None:
    from tests.servers.postgres import PostgresServer

    with PostgresServer(max_prepared_transactions=0) as server:
        sink = load_sink(
            {
                "plugin_name": "Jdbc",
                "url": server.jdbc_url("postgres"),
                "user": "postgres",
                "password": server.password,
                "table": "t",
            }
        )
        with pytest.raises(ConfigError) as err:
            sink.preflight()
        assert err.value.key == "is_exactly_once"
        assert "max_prepared_transactions = 0" in err.value.problem and "is_exactly_once: false" in err.value.problem
        assert server.password not in str(err.value)


def test_sink_preflight_errors(db: Database) -> None:
    with pytest.raises(ConfigError, match="table: .* does not exist"):
        _sink(db, table="nope", schema_save_mode="ERROR_WHEN_SCHEMA_NOT_EXIST")
    db.sql("CREATE TABLE nokey (id bigint, name text)")
    with pytest.raises(ConfigError, match="primary_keys: .* has no primary key or unique index on"):
        _sink(db, table="nokey", is_exactly_once=False, primary_keys=["id"])
    with pytest.raises(ConfigError, match="primary_keys: zzz not in"):
        _sink(db, table="nokey", primary_keys=["zzz"])
    # exactly once, rows are upserted by primary_keys (enable_upsert, SeaTunnel's default), which
    # needs the index too; appended, they do not
    with pytest.raises(
        ConfigError,
        match=r"primary_keys: .* has no primary key or unique index on \(id\), which "
        r"upserts by key \(enable_upsert, true by default; false appends",
    ):
        _sink(db, table="nokey", primary_keys=["id"])
    _sink(db, table="nokey", primary_keys=["id"], enable_upsert=False).close()


def _changes(rows: list[tuple[int, str | None, int]]) -> pa.RecordBatch:
    """(id, name, kind) rows with SeaTunnel's row kinds (0 INSERT, 1 UPDATE_BEFORE, 2 UPDATE_AFTER, 3 DELETE)."""
    from airflow_provider_seatunnel_ckpt.connectors.api import ROW_KIND

    return pa.record_batch(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "name": [r[1] for r in rows],
            ROW_KIND: pa.array([r[2] for r in rows], pa.int8()),
        }
    )


@pytest.mark.parametrize("exactly_once", [True, False])
def test_change_rows_are_applied_by_key_the_last_change_of_a_key_winning(db: Database, exactly_once: bool) -> None:
    db.sql("CREATE TABLE out (id bigint PRIMARY KEY, name text)")
    db.sql("INSERT INTO out VALUES (1, 'old1'), (2, 'old2'), (3, 'old3')")
    sink = _sink(db, table="out", primary_keys=["id"], is_exactly_once=exactly_once, batch_size=4)
    committer = sink.create_committer("job-ch")
    epoch = [
        (4, "a", 0),
        (4, "a", 1),
        (4, "b", 2),
        (4, "b", 3),
        (4, "c", 0),  # inserted, updated, deleted, inserted again
        (1, "old1", 1),
        (10, "old1", 2),  # an update that changes the key
        (2, "old2", 3),  # a delete
        (3, "old3", 1),
        (3, "new3", 2),  # an update
        (5, "gone", 0),
        (5, "gone", 3),  # inserted and deleted within the epoch
    ]
    writer = sink.create_writer("job-ch", 0, 0)
    writer.write(_changes(epoch[:7]))  # two flushes (batch_size 4 rows): the order across them counts
    writer.write(_changes(epoch[7:]))
    info = writer.prepare_commit(1)
    if exactly_once:
        assert db.sql("SELECT id, name FROM out ORDER BY id") == [(1, "old1"), (2, "old2"), (3, "old3")]
        committer.commit([info])
    final = [(3, "new3"), (4, "c"), (10, "old1")]
    assert db.sql("SELECT id, name FROM out ORDER BY id") == final
    # a replay of the epoch (a restore before it was known to be committed) ends the same
    replay = sink.create_writer("job-ch", 0, 1)
    replay.write(_changes(epoch))
    info = replay.prepare_commit(2)
    if exactly_once:
        committer.commit([info])
    assert db.sql("SELECT id, name FROM out ORDER BY id") == final
    sink.close()
