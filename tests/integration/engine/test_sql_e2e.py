"""``Sql`` end to end through ``seatunnel-ckpt run``, on DuckDB and compiled to Arrow
kernels: the committed output equals the same query run by DuckDB over the whole input,
and a bad query fails before Spark starts."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from tests.support.workspace import Workspace, read_output

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: row-wise expressions only, so per batch and over the whole input agree
QUERY = (
    "select id, id * 3 + 1 as x, 'k' || (id % 7)::varchar as label, "
    "case when id % 5 = 0 then null else id / 2.0 end as half "
    "from fake where id % 4 <> 1"
)


#: a plain projection and filter: compiled to Arrow kernels (sql/arrow.py)
COMPILED_QUERY = (
    "select id, id * 3 + 1 as x, cast(id % 7 as double) / 2 as half, id > 1000 and id % 3 = 0 as flag "
    "from fake where id % 4 <> 1 and -id < 5"
)
SEQUENCE = {"plugin_name": "Sequence", "rows": 300_000, "batch_size": 20_000, "rows_per_second": 150_000}


@pytest.mark.parametrize("query, on_arrow", [(QUERY, False), (COMPILED_QUERY, True)], ids=["duckdb", "arrow"])
def test_sequence_sql_file_equals_duckdb_over_the_whole_input(workspace: Workspace, query: str, on_arrow: bool) -> None:
    from airflow_provider_seatunnel_ckpt.connectors.sequence import SequenceSource
    from airflow_provider_seatunnel_ckpt.sql.batch_query import BatchQuery

    schema = SequenceSource({k: v for k, v in SEQUENCE.items() if k != "plugin_name"}).produced_schema()
    assert (BatchQuery(query, "query").arrow_plan(schema) is not None) == on_arrow
    rows = SEQUENCE["rows"]
    config = workspace.write_config(interval=500)
    job = workspace.write_job(dict(SEQUENCE), transforms=[{"plugin_name": "Sql", "query": query}])
    result = workspace.run(job, config, "sql")
    assert result.returncode == 0, result.explain()
    assert "checkpoint 2 (checkpoint) completed" in result.stderr, "expected checkpoints while the job ran"
    ours = read_output(f"file://{workspace.output}/").sort_by("id")
    fake = pa.table({"id": pa.array(range(rows), pa.int64())})  # noqa: F841 - the query's table
    expected = duckdb.sql(query + " order by id").to_arrow_table()
    assert ours.num_rows == expected.num_rows == rows - rows // 4
    assert ours.schema.names == expected.schema.names
    for name in expected.schema.names:
        assert ours.column(name).equals(expected.column(name).cast(ours.schema.field(name).type)), name


@pytest.mark.parametrize(
    "query, message",
    [
        ("selec id from fake", 'transform[1].query: Parser Error: syntax error at or near "selec"'),
        ("select idd from fake", 'transform[1].query: Binder Error: Referenced column "idd" not found in FROM clause!'),
        ("select id from fake where twice > 3", 'transform[1].query: Binder Error: Referenced column "twice"'),
    ],
)
def test_a_bad_query_fails_before_spark_starts(workspace: Workspace, query: str, message: str) -> None:
    config = workspace.write_config()
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": 10},
        transforms=[{"plugin_name": "Rename", "mapping": {"id": "id"}}, {"plugin_name": "Sql", "query": query}],
    )
    result = workspace.run(job, config, "bad-sql")
    assert result.returncode == 2, result.explain()
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {message}"), result.explain()
    assert "Traceback" not in result.stderr and "SparkContext" not in result.stderr
