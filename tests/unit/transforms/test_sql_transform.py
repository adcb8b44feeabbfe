"""The ``Sql`` transform and the per-batch DuckDB query it shares with ``Filter``."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_transform
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from airflow_provider_seatunnel_ckpt.transforms.filter import (
    legacy_condition_as_sql,
)


def people(n: int = 6) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": [f"p{i}" for i in range(n)],
            "score": pa.array([i * 1.5 if i % 3 else None for i in range(n)], pa.float64()),
        }
    )


def sql(query: str, key: str = "transform[0]"):
    return load_transform({"plugin_name": "Sql", "query": query}, key)


def test_a_projection_with_expressions_and_a_filter():
    out = sql("select id * 10 as id10, upper(name) as name, coalesce(score, -1) as s from source where id >= 3")
    result = out.process(people(), None)
    assert result.to_pylist() == [
        {"id10": 30, "name": "P3", "s": -1.0},
        {"id10": 40, "name": "P4", "s": 6.0},
        {"id10": 50, "name": "P5", "s": 7.5},
    ]


@pytest.mark.parametrize("table", ["dual", "fake_source", '"My Table"'])
def test_any_one_table_name_is_the_input(table):
    assert sql(f"select count(*) as n from {table}").process(people(4), None).to_pylist() == [{"n": 4}]


def test_an_aggregate_covers_one_batch():
    t = sql("select count(*) as n, sum(id) as total from source")
    assert t.process(people(3), None).to_pylist() == [{"n": 3, "total": 3}]
    assert t.process(people(5), None).to_pylist() == [{"n": 5, "total": 10}]


def test_no_row_left_drops_the_batch():
    assert sql("select * from source where id < 0").process(people(), None) is None


def test_the_result_matches_the_same_query_over_the_whole_input():
    query = "select id, name || '!' as shout, score * 2 as double_score from source where id % 2 = 0"
    t = sql(query)
    batches = [people(10).slice(0, 4), people(10).slice(4, 6)]
    ours = pa.Table.from_batches([t.process(b, None) for b in batches])
    source = pa.Table.from_batches([people(10)])  # noqa: F841 - DuckDB finds it by name
    assert ours.to_pylist() == duckdb.sql(query).to_arrow_table().to_pylist()


def test_output_schema_binds_against_the_input_schema():
    t = sql("select id, name, score > 2 as high from src")
    assert t.output_schema(None) is None
    schema = t.output_schema(people().schema)
    assert schema.names == ["id", "name", "high"]
    assert schema.field("high").type == pa.bool_() and schema.field("id").type == pa.int64()


def test_unknown_column_fails_at_bind_with_the_option_key():
    t = sql("select idd from source", "transform[1]")
    with pytest.raises(ConfigError) as err:
        t.output_schema(people().schema)
    assert err.value.key == "transform[1].query"
    assert 'Referenced column "idd" not found' in err.value.problem and 'Candidate bindings: "id"' in err.value.problem
    assert "LINE" not in str(err.value)


@pytest.mark.parametrize(
    "query, problem",
    [
        ("selec id from source", 'syntax error at or near "selec"'),
        ("select a.x from a, b", "it reads a, b"),
        ("select 1", "it reads none"),
        ("select id from source; select 2 from source", "expected one SELECT statement, got SELECT, SELECT"),
        ("copy source to 'x.csv'", "expected one SELECT statement, got COPY"),
        ("-- only a comment", "expected one SELECT statement, got nothing"),
    ],
)
def test_bad_queries_fail_at_load_with_one_line(query, problem):
    with pytest.raises(ConfigError) as err:
        sql(query, "transform[2]")
    assert err.value.key == "transform[2].query" and problem in err.value.problem, err.value


def test_a_query_cannot_read_files_or_change_the_connection():
    with pytest.raises(ConfigError, match="file system operations are disabled"):
        sql("select * from read_csv('/etc/passwd')").process(people(), None)
    # reads a table function and no table: refused before it runs
    with pytest.raises(ConfigError):
        sql("select * from source, read_text('/etc/passwd')").process(people(), None)


def test_load_job_reports_a_syntax_error_under_its_transform_key(tmp_path):
    job = {
        "source": [{"plugin_name": "Sequence", "rows": 10}],
        "transform": [
            {"plugin_name": "Select", "fields": ["id"]},
            {"plugin_name": "Sql", "query": "select from where"},
        ],
        "sink": [{"plugin_name": "Console"}],
    }
    with pytest.raises(ConfigError) as err:
        load_job(job)
    assert err.value.key == "transform[1].query"


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("id % 2 == 0", '("id" % 2) == 0'),
        ('`user name` == "bob"', "\"user name\" == 'bob'"),
        ("flag != true", '"flag" != TRUE'),
        ("name == 'it''s'", "\"name\" == 'it''''s'"),
        ("id = 3 or id = 4", None),  # already SQL
        ("a > b", None),  # b is no literal of the old syntax: SQL, comparing two columns
    ],
)
def test_legacy_filter_conditions_become_sql(condition, expected):
    assert legacy_condition_as_sql(condition) == expected


# ---- pass-through columns ---------------------------------------------------------------------
def wide(n: int = 8) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "id": pa.array(range(n), pa.int64()),
            "payload": pa.array([bytes([i]) * 4 for i in range(n)], pa.binary(4)),
            "name": [f"n{i}" if i % 3 else None for i in range(n)],
        }
    )


@pytest.mark.parametrize(
    "query, rewritten",
    [
        ("select id, payload, name from s where id % 2 = 0", True),
        ("select payload, id * 2 as twice from s where name is not null limit 3", True),
        ("select s.payload, name from s where payload > '\\x02'::blob", True),
        ("select payload as p, id from s", False),  # renamed: left to DuckDB
        ("select id, payload from s order by name desc", False),
        ("select distinct name from s", False),
        ("select * from s where id > 2", False),
        ("select name, count(*) as n from s group by name", False),
        ("select id, upper(name) as name from s", False),  # a computed column, not a pass-through
    ],
)
def test_wide_columns_passed_through_give_what_duckdb_gives(query, rewritten):
    batch = wide()
    ours = sql(query)
    out = ours.process(batch, None)
    plans = ours._query._plans
    assert (plans[batch.schema] is not None) == rewritten
    s = pa.Table.from_batches([batch])  # noqa: F841 - DuckDB finds it by name
    expected = duckdb.sql(query).to_arrow_table()
    assert out.schema.names == expected.schema.names
    assert out.to_pylist() == expected.to_pylist()
    if rewritten:  # the column keeps its exact Arrow type
        assert all(
            out.schema.field(n).type == batch.schema.field(n).type for n in out.schema.names if n in ("payload", "name")
        )


def test_a_column_named_like_the_row_number_turns_the_rewrite_off():
    batch = wide().append_column("__st_row", pa.array(range(8), pa.int64()))
    t = sql("select payload, __st_row from s")
    assert t.process(batch, None).column("__st_row").to_pylist() == list(range(8))
    assert t._query._plans[batch.schema] is None
