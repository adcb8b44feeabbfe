"""Jdbc connector options, checked without a server: URLs, credentials, table names."""

from __future__ import annotations

import functools

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.jdbc.client import reason, split_table_name
from airflow_provider_seatunnel_ckpt.connectors.jdbc.target import parse_target
from airflow_provider_seatunnel_ckpt.engine.routing import preflight
from airflow_provider_seatunnel_ckpt.errors import ConfigError

SECRET = "pa:ss/w@rd?x"


@pytest.mark.parametrize(
    "url, host, port, database",
    [
        ("jdbc:postgresql://db.example:5433/sales", "db.example", 5433, "sales"),
        ("jdbc:postgresql://db.example/sales", "db.example", 5432, "sales"),
        ("postgresql://db.example:6000/x", "db.example", 6000, "x"),
        ("postgres://u@db.example/", "db.example", 5432, "postgres"),
    ],
)
def test_url_forms(url: str, host: str, port: int, database: str) -> None:
    target = parse_target({"url": url})
    assert (target.host, target.port, target.database) == (host, port, database)


def test_options_win_over_url_credentials_and_password_is_never_described() -> None:
    target = parse_target({"url": "postgresql://a:b@h:1/d", "user": "alice", "password": SECRET})
    assert target.user == "alice" and target.password == SECRET
    assert SECRET not in target.describe() and SECRET not in repr(target)
    assert target.describe() == "postgresql://alice@h:1/d"
    # the URI handed to libpq carries the password, percent-encoded
    assert "pa%3Ass%2Fw%40rd%3Fx" in target.uri()


def test_jdbc_parameters_are_translated() -> None:
    target = parse_target({"url": "jdbc:postgresql://h:1/d?currentSchema=etl&sslmode=require&user=bob&password=pw"})
    assert target.current_schema == "etl" and target.user == "bob" and target.password == "pw"
    uri = target.uri()
    assert "sslmode=require" in uri and "search_path%3Detl" in uri


@pytest.mark.parametrize(
    "options, key, words",
    [
        ({}, "url", "is required"),
        ({"url": "jdbc:mysql://h/d"}, "url", "unsupported database 'jdbc'"),
        ({"url": "jdbc:postgresql://h:port/d"}, "url", "port is not a number"),
        ({"url": "jdbc:postgresql://h/d", "driver": "com.mysql.cj.jdbc.Driver"}, "driver", "only PostgreSQL"),
    ],
)
def test_bad_urls_name_the_option(options: dict, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_target(options)
    assert err.value.key == key and words in err.value.problem


def test_bad_url_message_hides_the_password() -> None:
    with pytest.raises(ConfigError) as err:
        parse_target({"url": "jdbc:postgresql://u:hunter22secret@h:bad/d"})
    assert err.value.key == "url" and "hunter22secret" not in str(err.value)


def test_source_needs_exactly_one_of_query_and_table() -> None:
    base = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://h/d"}
    with pytest.raises(ConfigError, match=r"source\[0\]\.query: give either query or table"):
        load_source(base)
    with pytest.raises(ConfigError, match=r"source\[0\]\.query: give either"):
        load_source({**base, "query": "select 1", "table": "t"})
    source = load_source({**base, "table_path": "db.public.orders", "where_condition": "where id > 10"})
    assert source.table == ("public", "orders") and source.where == "id > 10"


def test_source_rejects_unknown_options_and_bad_numbers() -> None:
    base = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://h/d", "table": "t"}
    with pytest.raises(ConfigError, match=r"source\[0\]\.partiton_column: unknown option for Jdbc"):
        load_source({**base, "partiton_column": "id"})
    with pytest.raises(ConfigError, match=r"source\[0\]\.partition_num: must be >= 1"):
        load_source({**base, "partition_num": 0})


def test_sink_options() -> None:
    base = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://h/d", "table": "s.t"}
    sink = load_sink(base)
    assert sink.exactly_once and not sink.upsert and sink.table == '"s"."t"'
    sink = load_sink({**base, "is_exactly_once": "false", "primary_keys": ["id"]})
    assert not sink.exactly_once and sink.upsert
    with pytest.raises(ConfigError, match=r"sink\[0\]\.generate_sink_sql: false needs query"):
        load_sink({**base, "generate_sink_sql": False})
    with pytest.raises(ConfigError, match=r"sink\[0\]\.schema_save_mode: 'RECREATE_SCHEMA' is not one of"):
        load_sink({**base, "schema_save_mode": "RECREATE_SCHEMA"})
    with pytest.raises(ConfigError, match=r"sink\[0\]\.is_exactly_once: expected true or false"):
        load_sink({**base, "is_exactly_once": "yes"})
    with pytest.raises(ConfigError, match=r"sink\[0\]\.table: is required"):
        load_sink({"plugin_name": "Jdbc", "url": "jdbc:postgresql://h/d"})


def test_enable_upsert_is_seatunnels_option_true_by_default() -> None:
    """SeaTunnel's Jdbc sink upserts plain rows by primary_keys unless ``enable_upsert`` is
    false (its default is true). Exactly once, those rows go through the stage the driver
    applies by key; without keys, or with enable_upsert false, they are appended (COPY).
    Upsert mode (is_exactly_once false) upserts whatever the option says: a replay
    after a failure writes the same keys again."""
    base = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://h/d", "table": "s.t"}
    assert load_sink({**base, "primary_keys": ["id"]}).plain_by_key
    assert not load_sink(base).plain_by_key
    assert not load_sink({**base, "primary_keys": ["id"], "enable_upsert": "false"}).plain_by_key
    assert load_sink({**base, "primary_keys": ["id"], "enable_upsert": True}).plain_by_key
    upsert = load_sink({**base, "primary_keys": ["id"], "is_exactly_once": False, "enable_upsert": False})
    assert upsert.upsert and not upsert.plain_by_key
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.enable_upsert: expected true or false, got 'sometimes'$"):
        load_sink({**base, "enable_upsert": "sometimes"})


def test_plain_rows_whose_keys_are_not_among_their_columns_fail_the_check() -> None:
    """Upserting plain rows by key needs the keys among the rows' columns: refused by
    ``--check`` (no server contacted), naming the key; appending them does not."""
    from airflow_provider_seatunnel_ckpt.engine.job_check import check_job
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    jdbc = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://127.0.0.1:9/db", "table": "t", "primary_keys": ["idd"]}
    job = {"env": {"parallelism": 1}, "source": [{"plugin_name": "Sequence", "rows": 10}], "sink": [jdbc]}
    with pytest.raises(
        ConfigError,
        match=r"^sink\[0\]\.primary_keys: 'idd' is not a column of the rows to upsert "
        r"by key \(id\); or set enable_upsert: false to append them$",
    ):
        check_job(load_job(job))
    check_job(load_job({**job, "sink": [{**jdbc, "enable_upsert": False}]}))
    check_job(load_job({**job, "sink": [{**jdbc, "primary_keys": ["id"]}]}))


def test_sink_pickles_without_connections() -> None:
    import pickle

    sink = load_sink({"plugin_name": "Jdbc", "url": "jdbc:postgresql://h/d", "table": "t"})
    sink._pool.append(object())
    copy = pickle.loads(pickle.dumps(sink))
    assert copy._pool == [] and copy.table == sink.table


@pytest.mark.parametrize(
    "text, expected",
    [
        ("orders", (None, "orders")),
        ("Public.Orders", ("public", "orders")),
        ('"My Schema"."Odd.Name"', ("My Schema", "Odd.Name")),
        ("db.sales.orders", ("sales", "orders")),
    ],
)
def test_table_names(text: str, expected: tuple) -> None:
    assert split_table_name(text) == expected


@pytest.mark.parametrize("text", ["a..b", '"open', "a.b.c.d", ""])
def test_bad_table_names(text: str) -> None:
    with pytest.raises(ConfigError):
        split_table_name(text)


def test_driver_errors_become_one_line_without_the_password() -> None:
    target = parse_target({"url": "jdbc:postgresql://h:1/d", "user": "u", "password": "hunter22"})
    raw = Exception(
        'IO: [libpq] Failed to connect: connection to server at "127.0.0.1", port 1 failed: Connection refused\n'
        "\tIs the server running on that host and accepting TCP/IP connections?\n"
    )
    assert reason(raw, target) == "Connection refused (is the server running and reachable?)"
    raw = Exception(
        'NOT_FOUND: Failed to prepare query: ERROR:  relation "x" does not exist\nLINE 1: select\n\n'
        "Query was: select hunter22. SQLSTATE: 42P01"
    )
    assert reason(raw, target) == 'relation "x" does not exist'


def test_seatunnels_hand_written_sink_query() -> None:
    """SeaTunnel's generate_sink_sql: false mode: an INSERT whose ? placeholders take each
    row's fields in order; its table is the INSERT's (for the commit log and restores)."""
    base = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://h/d?currentSchema=s"}
    text = "INSERT INTO pg_sink (id, note) VALUES (?, '?' || ?) -- why?\n"
    sink = load_sink({**base, "query": text})
    assert sink.query == "INSERT INTO pg_sink (id, note) VALUES ($1, '?' || $2) -- why?"
    assert (sink.query_parameters, sink.table) == (2, '"s"."pg_sink"')
    quoted = load_sink({**base, "query": 'insert into "My Schema"."T" values (?)'})
    assert quoted.table == '"My Schema"."T"'
    with pytest.raises(ConfigError, match=r"sink\[0\]\.query: expected an INSERT INTO <table>"):
        load_sink({**base, "query": "UPDATE t SET a = ?"})
    with pytest.raises(ConfigError, match=r"sink\[0\]\.primary_keys: applies to generated SQL"):
        load_sink({**base, "query": text, "primary_keys": ["id"]})
    with pytest.raises(ConfigError, match=r"sink\[0\]\.generate_sink_sql: true writes generated SQL"):
        load_sink({**base, "query": text, "generate_sink_sql": True})
    two = pa.schema([("id", pa.int64()), ("note", pa.string())])
    sink.accepts(two)
    with pytest.raises(ConfigError, match=r"sink\[0\]\.query: has 2 \? placeholder\(s\) but the rows have 1 field"):
        preflight(sink, functools.partial(sink.accepts, pa.schema([("id", pa.int64())])))
    with pytest.raises(ConfigError, match=r"sink\[0\]\.query: writes each row with a hand-written INSERT"):
        preflight(sink, sink.accepts_change_rows)


def test_a_hand_written_querys_placeholders_get_casts_where_fields_go_as_text() -> None:
    """A uuid, json or geometry parameter takes the field as text with a cast (SeaTunnel's
    stringtype=unspecified has the server read a string into it); so does a number
    parameter given a string field. Fields bound as they are keep a bare placeholder."""
    from airflow_provider_seatunnel_ckpt.connectors.jdbc import query

    text = "INSERT INTO t VALUES (?, ?, '?', ?, ?, ?)"
    types = ["bigint", "uuid", "jsonb", "integer", "text"]
    sql, as_text = query.typed(text, types, [False, True, True, True, True])
    assert sql == "INSERT INTO t VALUES ($1, $2::text::uuid, '?', $3::text::jsonb, $4::text::integer, $5)"
    assert as_text == [1, 2, 3]
    assert query.typed("INSERT INTO t VALUES (?)", ["integer"], [False]) == ("INSERT INTO t VALUES ($1)", [])


def test_a_plain_insert_names_the_columns_copy_appends_to() -> None:
    """An INSERT that only places each row's fields, in order, into the columns it lists
    can be appended with COPY; any other shape runs as written."""
    from airflow_provider_seatunnel_ckpt.connectors.jdbc.query import plain_insert_columns

    assert plain_insert_columns("insert into sink_1 (id, name, score) values (?, ?, ?)") == ["id", "name", "score"]
    assert plain_insert_columns('INSERT INTO s.t(ID,"My ""Col""") VALUES(?,?);') == ["id", 'My "Col"']
    for written in (
        "INSERT INTO t (id, note) VALUES (?, 'n' || ?)",  # an expression
        "INSERT INTO t VALUES (?, ?)",  # no column list: the table's order
        "INSERT INTO t (a) VALUES (?) ON CONFLICT DO NOTHING",
        "INSERT INTO t (a) VALUES (?) RETURNING a",
        "INSERT INTO t (a, b) VALUES (?)",  # a column without its field
        "INSERT INTO t (a) VALUES (?), (?)",
        "INSERT INTO t (a) VALUES (?) -- why?",
    ):
        assert plain_insert_columns(written) is None, written


def test_seatunnels_other_jdbc_options_are_accepted_with_their_meaning(caplog: pytest.LogCaptureFixture) -> None:
    base = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://h/d?ApplicationName=url", "table": "t"}
    sink = load_sink({**base, "max_commit_attempts": 3, "use_copy_statement": True})
    assert sink.max_commit_attempts == 3
    assert load_sink(base).max_commit_attempts is None  # reconnects for up to a minute
    with caplog.at_level("WARNING"):
        load_sink({**base, "transaction_timeout_sec": 86400})
        # the source's (and sink's) JDBC connection properties; the URL's own parameters win
        source = load_source(
            {
                **base,
                "properties": {"sslmode": "require", "ApplicationName": "props", "currentSchema": "s", "useSSL": False},
            }
        )
    params = dict(source.target.params)
    assert (params["sslmode"], params["application_name"], source.target.current_schema) == ("require", "url", "s")
    assert "properties: property 'useSSL' is not supported by the PostgreSQL connector" in caplog.text
    with pytest.raises(ConfigError, match=r"source\[0\]\.properties: expected a map of JDBC connection properties"):
        load_source({**base, "properties": "sslmode=require"})
