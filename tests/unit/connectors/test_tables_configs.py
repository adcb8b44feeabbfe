"""Several tables from one source entry (SeaTunnel's ``tables_configs``, connectors/union.py):
one source per table, batches named by their table, Assert's per-table rules and
``table-names``, and SeaTunnel's rules on what such a source may feed (engine/routing.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.connectors import SourceUnion, load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches, table_of
from airflow_provider_seatunnel_ckpt.engine.routing import bind_schemas, load_sinks, load_sources, load_transforms
from airflow_provider_seatunnel_ckpt.errors import ConfigError, DataError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from tests.seatunnel_jobs import run_in_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "seatunnel"
TABLES = [
    {"row.num": 16, "schema": {"table": "test.table1", "fields": {"c_int": "int", "c_bigint": "bigint"}}},
    {"row.num": 17, "schema": {"table": "test.table2", "fields": {"c_string": "string"}}},
]


def _read_all(source: SourceUnion) -> Counter:
    tables: Counter = Counter()
    for split in source.splits(1):
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1))):
            tables[(table_of(batch.schema), tuple(batch.schema.names))] += batch.num_rows
    return tables


def test_each_table_is_its_own_source_and_its_batches_carry_its_name() -> None:
    source = load_source({"plugin_name": "FakeSource", "tables_configs": TABLES})
    assert isinstance(source, SourceUnion) and source.table_names == ["test.table1", "test.table2"]
    assert _read_all(source) == {("test.table1", ("c_int", "c_bigint")): 16, ("test.table2", ("c_string",)): 17}


@pytest.mark.parametrize(
    "tables, message",
    [
        ([], r"^source\[0\]\.tables_configs: expected a list of table blocks"),
        ([{"schema": {"fields": {"a": "int"}}}], r"^source\[0\]\.tables_configs\[0\]\.schema\.table: is required"),
        (
            [TABLES[0], TABLES[0]],
            r"^source\[0\]\.tables_configs\[1\]\.schema\.table: table 'test\.table1' is named twice",
        ),
        ([TABLES[0], {"row.num": -1, "schema": TABLES[1]["schema"]}], r"^source\[0\]\.tables_configs\[1\]\.row\.num"),
    ],
)
def test_a_bad_table_block_is_one_line_naming_it(tables, message) -> None:
    with pytest.raises(ConfigError, match=message):
        load_source({"plugin_name": "FakeSource", "tables_configs": tables})


def _assert_sink(rules: dict):
    return load_sink({"plugin_name": "Assert", "rules": rules})


def _feed(sink, source) -> None:
    writer = sink.create_writer("j", 0, 0)
    for split in source.splits(1):
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1))):
            writer.write(batch)
    committer = sink.create_committer("j")
    committer.commit([writer.prepare_commit(1)])
    committer.job_finished(None)


def test_assert_checks_each_table_s_rules_on_that_table_only() -> None:
    source = load_source({"plugin_name": "FakeSource", "tables_configs": TABLES})
    per_table = {
        "tables_configs": [
            {
                "table_path": "test.table1",
                "row_rules": [{"rule_type": "MIN_ROW", "rule_value": 16}],
                "field_rules": [
                    {"field_name": "c_int", "field_type": "int", "field_value": [{"rule_type": "NOT_NULL"}]}
                ],
            },
            {"table_path": "test.table2", "row_rules": [{"rule_type": "MAX_ROW", "rule_value": 17}]},
        ]
    }
    _feed(_assert_sink(per_table), source)  # table2 has no c_int: the rule is table1's alone
    per_table["tables_configs"][1]["row_rules"] = [{"rule_type": "MAX_ROW", "rule_value": 16}]
    with pytest.raises(
        DataError,
        match=r"^sink\[0\]\.rules\.tables_configs\[1\]\.row_rules\[0\]: 17 rows of table "
        r"test\.table2 break MAX_ROW 16$",
    ):
        _feed(_assert_sink(per_table), source)


def test_assert_table_names_are_the_tables_received_no_more_no_fewer() -> None:
    source = load_source({"plugin_name": "FakeSource", "tables_configs": TABLES})
    _feed(_assert_sink({"table-names": ["test.table2", "test.table1"]}), source)
    with pytest.raises(
        DataError,
        match=r"^sink\[0\]\.rules\.table-names: the rows came from tables "
        r"\['test\.table1', 'test\.table2'\], not \['test\.table1'\]$",
    ):
        _feed(_assert_sink({"table-names": ["test.table1"]}), source)


def test_a_seatunnel_multi_table_file_fails_when_one_table_s_bound_is_tightened(tmp_path: Path) -> None:
    original = (FIXTURES / "connector-assert-e2e" / "fakesource_to_multi_table_assert.conf").read_text()
    assert run_in_process(FIXTURES / "connector-assert-e2e" / "fakesource_to_multi_table_assert.conf") == 33
    tightened = tmp_path / "tight.conf"
    head, _, tail = original.rpartition("rule_value = 17")  # table2's MIN_ROW
    tightened.write_text(head + "rule_value = 18" + tail)
    with pytest.raises(
        DataError,
        match=r"^sink\[0\]\.rules\.tables_configs\[1\]\.row_rules\[1\]: 17 rows of table "
        r"test\.table2 break MIN_ROW 18$",
    ):
        run_in_process(tightened)


@pytest.mark.parametrize(
    "transforms, sink, message",
    [
        (
            [{"plugin_name": "Select", "fields": ["c_int"]}],
            {"plugin_name": "Console"},
            r"^transform\[0\]\.plugin_input: a transform on a source of several tables \(tables_configs\) is not supported",
        ),
        (
            [],
            {"plugin_name": "File", "path": "/tmp/never", "format": "parquet"},
            r"^sink\[0\]: File reads several tables \(test\.table1, test\.table2\) and its options are the same for each: "
            r"name the table in them \(path = \"/data/\$\{table_name\}\"",
        ),
    ],
)
def test_what_a_source_of_several_tables_may_feed_is_checked_before_spark(transforms, sink, message) -> None:
    job = load_job(
        {"source": [{"plugin_name": "FakeSource", "tables_configs": TABLES}], "transform": transforms, "sink": [sink]}
    )
    with pytest.raises(ConfigError, match=message):
        bind_schemas(
            job.graph,
            load_sources(job.sources),
            load_transforms(job.transforms),
            load_sinks(job, load_sources(job.sources)),
        )


def test_the_docs_example_runs(tmp_path: Path) -> None:
    import re

    docs = (Path(__file__).resolve().parents[3] / "docs" / "seatunnel.md").read_text()
    section = docs[docs.index("### Several tables from one source") :]
    job = tmp_path / "tables.conf"
    job.write_text(re.search(r"```hocon\n(.*?)```", section, re.S).group(1))
    assert run_in_process(job) == 33


def test_a_file_sink_writes_each_table_to_the_directory_its_placeholders_name(tmp_path: Path) -> None:
    """SeaTunnel's multi-table sink: one sink per table with ``${table_name}`` (and the
    other table placeholders) filled; each table's rows once, in its own columns."""
    import pyarrow.json as pj

    job = tmp_path / "job.conf"
    job.write_text(f"""
env {{ parallelism = 2, job.mode = "BATCH" }}
source {{ FakeSource {{ tables_configs = {json.dumps(TABLES)} }} }}
sink {{
  LocalFile {{
    path = "{tmp_path}/out/${{database_name}}/${{table_name}}"
    file_format_type = "json"
    file_name_expression = "${{transactionId}}_${{schema_name:none}}_${{table_full_name}}"
  }}
}}
""")
    assert run_in_process(job) == 66  # row.num is per subtask, as in SeaTunnel
    found = {}
    for directory in sorted((tmp_path / "out" / "test").iterdir()):
        files = sorted(p for p in directory.iterdir() if p.is_file())
        assert files and all(f"_none_test.{directory.name}_" in p.name for p in files)
        tables = [pj.read_json(p) for p in files]
        found[directory.name] = (sum(t.num_rows for t in tables), tables[0].column_names)
    assert found == {"table1": (32, ["c_int", "c_bigint"]), "table2": (34, ["c_string"])}


@pytest.mark.parametrize(
    "value, name, expected",
    [
        ("/d/${table_name}", "t", "/d/t"),
        ("/d/${database_name}/${table_name}", "db.t", "/d/db/t"),
        ("${database_name}.${schema_name}.${table_name}", "db.s.t", "db.s.t"),
        ("/d/${schema_name:public}/${table_name}", "db.t", "/d/public/t"),
        ("/d/${database_name}/x", "t", "/d//x"),  # SeaTunnel writes "" for a part the name lacks
        ("/d/${schema_full_name}", "t", "/d/${schema_full_name}"),  # ... and leaves this one
        ("/d/${table_full_name}", "db.s.t", "/d/db.s.t"),
        ("/d/${now}/${table_name}", "t", "/d/${now}/t"),  # the sink's own placeholders stay for it
    ],
)
def test_table_placeholders_are_filled_as_seatunnel_fills_them(value, name, expected) -> None:
    from airflow_provider_seatunnel_ckpt.connectors.table_placeholders import fill_table_placeholders

    assert fill_table_placeholders({"path": value, "n": 1}, name) == {"path": expected, "n": 1}


def test_the_docs_example_of_one_directory_per_table_runs(tmp_path: Path) -> None:
    import re

    docs = (Path(__file__).resolve().parents[3] / "docs" / "seatunnel.md").read_text()
    section = docs[docs.index("### Several tables from one source") :]
    example = re.findall(r"```hocon\n(.*?)```", section, re.S)[1]
    job = tmp_path / "tables.conf"
    job.write_text(example.replace("/tmp/shop-tables", str(tmp_path)))
    assert run_in_process(job) == 160  # (50 + 30) rows x 2 readers
    written = {d.name: sorted({p.suffix for p in d.iterdir() if p.is_file()}) for d in (tmp_path / "shop").iterdir()}
    assert written == {"orders": [".json"], "users": [".json"]}


@pytest.mark.parametrize(
    "names, directory",
    [
        ('result_table_name = "fake"', "fake"),  # SeaTunnel's own fake_to_local_file_json_save_mode.conf names it so
        ('schema.table = "shop.orders"', "orders"),
        ("", "default"),  # SeaTunnel's TablePath.DEFAULT
    ],
)
def test_a_sink_of_one_table_gets_that_tables_placeholders_through_a_transform(
    tmp_path: Path, names: str, directory: str
) -> None:
    schema = names.replace("schema.table", "table") if names.startswith("schema") else ""
    source_names = "" if names.startswith("schema") else names
    job = tmp_path / "job.conf"
    job.write_text(f"""
env {{ parallelism = 1 }}
source {{ FakeSource {{ {source_names}
  row.num = 5
  schema = {{ {schema}
    fields {{ id = bigint }} }} }} }}
transform {{ Sql {{ query = "select id + 1 as id from fake" }} }}
sink {{ LocalFile {{ path = "{tmp_path}/out/${{table_name}}", file_format_type = "json" }} }}
""")
    assert run_in_process(job) == 5
    assert [p.name for p in (tmp_path / "out").iterdir()] == [directory]


@pytest.mark.parametrize(
    "sinks, instances",
    [
        (
            [{"plugin_name": "Jdbc", "url": "jdbc:postgresql://127.0.0.1:9/db", "table": "${table_name}"}],
            [None, "sink[0] table test.table2"],
        ),
        (
            [
                {"plugin_name": "Jdbc", "url": "jdbc:postgresql://127.0.0.1:9/db", "table": "a", "plugin_input": "t"},
                {"plugin_name": "Console", "plugin_input": "t"},
                {"plugin_name": "Jdbc", "url": "jdbc:postgresql://127.0.0.1:9/db", "table": "b", "plugin_input": "t"},
            ],
            [None, None, "sink[2]"],
        ),
    ],
)
def test_each_jdbc_sink_of_a_job_names_its_transactions_apart(sinks, instances) -> None:
    """Two Jdbc sinks of one job named their prepared transactions and commit-log rows by
    the job alone: on one database the second PREPARE waited forever on the first's log
    row (found with a real PostgreSQL). The first sink keeps the job's tag (a job with one
    Jdbc sink names them as earlier releases did); each other one has its own."""
    from airflow_provider_seatunnel_ckpt.connectors.jdbc import transactions
    from airflow_provider_seatunnel_ckpt.engine.composite import TableSinks

    source = (
        {"plugin_name": "FakeSource", "tables_configs": TABLES}
        if len(sinks) == 1
        else {"plugin_name": "FakeSource", "plugin_output": "t", "schema": {"fields": {"id": "bigint"}}}
    )
    job = load_job({"source": [source], "sink": sinks})
    built = load_sinks(job, load_sources(job.sources))
    parts = [p for sink in built for p in (sink.sinks if isinstance(sink, TableSinks) else [sink])]
    assert [p.instance for p in parts] == instances
    tags = [transactions.sink_tag("job-1", p.instance) for p in parts if p.plugin_name == "Jdbc"]
    assert tags[0] == transactions.job_tag("job-1") and len(set(tags)) == len(tags) == 2
    # the same on every executor and the driver: built again from the same job, the same names
    again = load_sinks(job, load_sources(job.sources))
    assert [p.instance for sink in again for p in (sink.sinks if isinstance(sink, TableSinks) else [sink])] == instances
