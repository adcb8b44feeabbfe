"""Change rows (SeaTunnel's RowKind, transforms/row_kind.py): FakeSource's kinds, the
FilterRowKind and RowKindExtractor transforms, the job check refusing a connector that
does not take them, and what Console, Assert and the file sinks do with them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_source, load_transform
from airflow_provider_seatunnel_ckpt.connectors.api import KINDS, ROW_KIND, ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.engine.job_check import check_job
from airflow_provider_seatunnel_ckpt.engine.routing import (
    Router,
    bind_schemas,
    load_sinks,
    load_sources,
    load_transforms,
)
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from tests.seatunnel_jobs import run_in_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "seatunnel"
SCHEMA = {"fields": {"id": "bigint", "name": "string"}}
#: SeaTunnel's changelog: two inserts, an update of the first, a delete of the second
CHANGES = [
    {"kind": "INSERT", "fields": [1, "A"]},
    {"kind": "INSERT", "fields": [2, "B"]},
    {"kind": "UPDATE_BEFORE", "fields": [1, "A"]},
    {"kind": "UPDATE_AFTER", "fields": [1, "F"]},
    {"kind": "DELETE", "fields": [2, "B"]},
]


def _fake(rows: list[dict] = CHANGES, **more: Any) -> dict:
    return {"plugin_name": "FakeSource", "schema": SCHEMA, "rows": rows, **more}


def _batches(source: Any) -> list[pa.RecordBatch]:
    return [
        batch
        for split in source.splits(1)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
    ]


def _batch() -> pa.RecordBatch:
    (batch,) = _batches(load_source(_fake(), "source[0]"))
    return batch


def _job(transforms: list[dict], sink: dict, source: dict | None = None) -> dict:
    return {"env": {"parallelism": 1}, "source": [source or _fake()], "transform": transforms, "sink": [sink]}


# ---- FakeSource -------------------------------------------------------------------------
def test_fake_source_gives_each_row_its_kind_and_only_when_a_row_is_a_change() -> None:
    source = load_source(_fake(), "source[0]")
    assert source.change_rows == ("UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")
    batch = _batch()
    assert batch.schema == source.produced_schema() and batch.schema.names == ["id", "name", ROW_KIND]
    assert [KINDS[k] for k in batch.column(ROW_KIND).to_pylist()] == [r["kind"] for r in CHANGES]
    inserts = load_source(_fake([{"kind": "INSERT", "fields": [1, "A"]}, {"fields": [2, "B"]}]), "source[0]")
    assert inserts.change_rows == () and inserts.produced_schema().names == ["id", "name"]


def test_a_restored_reader_resumes_with_the_same_kinds() -> None:
    """The kind is data within the batch: a position is a row, and the rows after it keep their kinds."""
    source = load_source(_fake(), "source[0]")
    (split,) = source.splits(1)
    rest = list(iter_batches(source.create_reader(split, 3, ReaderContext(0, 1, batch_size=1))))
    assert [KINDS[b.column(ROW_KIND)[0].as_py()] for b in rest] == ["UPDATE_AFTER", "DELETE"]


def test_fake_source_takes_seatunnels_exact_kind_names_and_keeps_the_column_name_free() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^source\[0\]\.rows\[0\]\.kind: 'Delete' is not a row kind "
        r"\(one of INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE\)$",
    ):
        load_source(_fake([{"kind": "Delete", "fields": [1, "A"]}]), "source[0]")
    with pytest.raises(ConfigError, match=rf"^source\[0\]\.schema: column name '{ROW_KIND}' is reserved"):
        load_source({"plugin_name": "FakeSource", "schema": {"fields": {ROW_KIND: "int"}}}, "source[0]")


# ---- FilterRowKind ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "options, kept, keeps_kinds",
    [
        ({"include_kinds": ["INSERT"]}, [(1, "A"), (2, "B")], False),
        ({"include_kinds": ["update_after", "Insert"]}, [(1, "A"), (2, "B"), (1, "F")], True),  # any case, as SeaTunnel
        ({"exclude_kinds": ["DELETE"]}, [(1, "A"), (2, "B"), (1, "A"), (1, "F")], True),
        ({"exclude_kinds": ["INSERT", "UPDATE_BEFORE", "UPDATE_AFTER"]}, [(2, "B")], True),
        ({"exclude_kinds": ["UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"]}, [(1, "A"), (2, "B")], False),
    ],
)
def test_filter_row_kind_keeps_the_kinds_asked_for(options: dict, kept: list, keeps_kinds: bool) -> None:
    transform = load_transform({"plugin_name": "FilterRowKind", **options}, "transform[0]")
    batch = _batch()
    out = transform.process(batch, None)
    assert [(r["id"], r["name"]) for r in out.to_pylist()] == kept
    assert out.schema == transform.output_schema(batch.schema)  # the driver's view matches what runs
    assert (ROW_KIND in out.schema.names) is keeps_kinds  # only inserts left: plain rows again


def test_filter_row_kind_on_rows_of_inserts_only() -> None:
    plain = pa.RecordBatch.from_pylist([{"id": 1}, {"id": 2}])
    assert load_transform({"plugin_name": "FilterRowKind", "exclude_kinds": ["DELETE"]}).process(plain, None) is plain
    assert load_transform({"plugin_name": "FilterRowKind", "exclude_kinds": ["INSERT"]}).process(plain, None) is None


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, r"^transform\[0\]\.include_kinds: give exactly one of include_kinds and exclude_kinds"),
        (
            {"include_kinds": ["INSERT"], "exclude_kinds": ["DELETE"]},
            r"^transform\[0\]\.include_kinds: give exactly one",
        ),
        ({"include_kinds": []}, r"^transform\[0\]\.include_kinds: give exactly one"),
        (
            {"exclude_kinds": ["INSERT", "UPSERT"]},
            r"^transform\[0\]\.exclude_kinds\[1\]: 'UPSERT' is not a row kind \(one of INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE\)$",
        ),
    ],
)
def test_filter_row_kind_options_are_one_line_errors(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_transform({"plugin_name": "FilterRowKind", **options}, "transform[0]")


# ---- RowKindExtractor -------------------------------------------------------------------
@pytest.mark.parametrize(
    "options, name, values",
    [
        ({}, "row_kind", ["+I", "+I", "-U", "+U", "-D"]),
        ({"transform_type": "SHORT"}, "row_kind", ["+I", "+I", "-U", "+U", "-D"]),
        (
            {"custom_field_name": "custom_name", "transform_type": "full"},
            "custom_name",
            ["INSERT", "INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"],
        ),
    ],
)
def test_row_kind_extractor_writes_the_kind_and_makes_every_row_an_insert(
    options: dict, name: str, values: list
) -> None:
    transform = load_transform({"plugin_name": "RowKindExtractor", **options}, "transform[0]")
    batch = _batch()
    out = transform.process(batch, None)
    assert out.schema.names == ["id", "name", name]  # no kind column: every row is an insert now
    assert out.schema == transform.output_schema(batch.schema)
    assert out.schema.field(name).type == pa.string() and not out.schema.field(name).nullable  # as SeaTunnel's
    assert out.column(name).to_pylist() == values
    plain = pa.RecordBatch.from_pylist([{"id": 1}])
    assert transform.process(plain, None).column(name).to_pylist() == [values[0]]


def test_row_kind_extractor_refuses_a_field_that_exists() -> None:
    transform = load_transform({"plugin_name": "RowKindExtractor", "custom_field_name": "name"}, "transform[0]")
    with pytest.raises(ConfigError, match=r"^transform\[0\]\.custom_field_name: field name name already exists$"):
        transform.output_schema(_batch().schema)
    with pytest.raises(ConfigError, match=r"^transform\[0\]\.transform_type: 'BRIEF' is not one of SHORT, FULL$"):
        load_transform({"plugin_name": "RowKindExtractor", "transform_type": "BRIEF"}, "transform[0]")


# ---- the job check ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "transforms, sink, message",
    [
        (
            [{"plugin_name": "Sql", "query": "select id from fake"}],
            {"plugin_name": "Console"},
            r"^transform\[0\]\.plugin_name: Sql does not support change rows \(UPDATE_BEFORE/UPDATE_AFTER/DELETE from "
            r"source\[0\]\); put FilterRowKind or RowKindExtractor before it$",
        ),
        (
            [
                {"plugin_name": "FilterRowKind", "exclude_kinds": ["DELETE"]},
                {"plugin_name": "FieldMapper", "field_mapper": {"id": "id"}},
            ],
            {"plugin_name": "Console"},
            r"^transform\[1\]\.plugin_name: FieldMapper does not support change rows \(UPDATE_BEFORE/UPDATE_AFTER from source\[0\]\)",
        ),
        (
            [],
            {"plugin_name": "Kafka", "bootstrap.servers": "localhost:9092", "topic": "t", "format": "json"},
            r"^sink\[0\]\.plugin_name: Kafka does not support change rows \(UPDATE_BEFORE/UPDATE_AFTER/DELETE from source\[0\]\); "
            r"put FilterRowKind or RowKindExtractor before it$",
        ),
    ],
)
def test_change_rows_reaching_a_connector_that_does_not_take_them_fail_the_check(
    transforms: list, sink: dict, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        check_job(load_job(_job(transforms, sink)))


def test_after_a_filter_or_an_extractor_every_connector_takes_the_rows() -> None:
    sql = {"plugin_name": "Sql", "query": "select id, name from fake"}
    for first in (
        {"plugin_name": "FilterRowKind", "include_kinds": ["INSERT"]},
        {"plugin_name": "FilterRowKind", "exclude_kinds": ["UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"]},
        {"plugin_name": "RowKindExtractor"},
    ):
        check_job(load_job(_job([first, sql], {"plugin_name": "Console"})))


def test_the_kind_column_never_shows_as_a_column() -> None:
    lines = check_job(load_job(_job([], {"plugin_name": "Console"})))
    assert lines[1] == "source[0] FakeSource: id int64, name string; change rows (UPDATE_BEFORE/UPDATE_AFTER/DELETE)"
    assert lines[2] == "sink[0] Console: id int64, name string; each row with its kind"
    lines = check_job(
        load_job(
            _job([], {"plugin_name": "Assert", "rules": {"row_rules": [{"rule_type": "MIN_ROW", "rule_value": 1}]}})
        )
    )
    assert lines[2] == "sink[0] Assert: id int64, name string"
    assert not any(ROW_KIND in line for line in lines)


def test_a_filter_that_lets_no_change_of_its_source_through_gives_plain_rows_downstream() -> None:
    """The source deletes only, the filter drops deletes but would keep updates: its output
    still has the kind column (all inserts), which the engine removes before the Sql."""
    source = _fake([{"kind": "INSERT", "fields": [1, "A"]}, {"kind": "DELETE", "fields": [1, "A"]}])
    job = load_job(
        _job(
            [
                {"plugin_name": "FilterRowKind", "exclude_kinds": ["DELETE"]},
                {"plugin_name": "Sql", "query": "select * from t"},
            ],
            {"plugin_name": "Console"},
            source,
        )
    )
    sources, transforms = load_sources(job.sources), load_transforms(job.transforms)
    sinks = load_sinks(job, sources)
    assert [s.names for s in bind_schemas(job.graph, sources, transforms, sinks)] == [["id", "name"]]
    router = Router(job.graph, transforms, sinks)
    out = [b for batch in _batches(sources[0]) for _, b in router.route(batch, 0, lambda i: {})]
    assert [b.schema.names for b in out] == [["id", "name"]] and out[0].to_pylist() == [{"id": 1, "name": "A"}]


def _two_sources(sink: dict, plain_sink: dict | None = None) -> dict:
    """A change-row source and a plain source wired into ``sink`` (and the plain one alone
    into ``plain_sink``), as SeaTunnel's plugin_output / plugin_input wire them."""
    plain = [{"kind": "INSERT", "fields": [7, "P"]}]
    sinks = [{**sink, "plugin_input": ["changes", "plain"]}]
    if plain_sink:
        sinks.append({**plain_sink, "plugin_input": "plain"})
    return {
        "env": {"parallelism": 1},
        "source": [_fake(plugin_output="changes"), _fake(plain, plugin_output="plain")],
        "sink": sinks,
    }


def test_a_sink_fed_by_change_rows_gets_kinds_on_every_batch_its_plain_inputs_as_inserts() -> None:
    """In SeaTunnel every row carries its kind: a sink that keeps kinds and reads a change
    source and a plain one gets the plain batches as inserts (Jdbc applies them by key in
    every epoch, issue 47), and a sink fed by the plain source alone gets them as they are."""
    job = load_job(_two_sources({"plugin_name": "Console"}, {"plugin_name": "Console"}))
    sources, transforms = load_sources(job.sources), load_transforms(job.transforms)
    sinks = load_sinks(job, sources)
    router = Router(job.graph, transforms, sinks, sources)
    routed = [
        (sink, b)
        for index, source in enumerate(sources)
        for batch in _batches(source)
        for sink, b in router.route(batch, index, lambda i: {})
    ]
    kinds = [(sink, b.column(ROW_KIND).to_pylist() if ROW_KIND in b.schema.names else None) for sink, b in routed]
    assert kinds == [(0, [0, 0, 1, 2, 3]), (0, [0]), (1, None)]


def test_change_rows_whose_keys_are_not_among_the_rows_fail_the_check() -> None:
    jdbc = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://127.0.0.1:9/db", "table": "t", "primary_keys": ["idd"]}
    with pytest.raises(
        ConfigError,
        match=r"^sink\[0\]\.primary_keys: 'idd' is not a column of the rows to apply by "
        r"key \(id, name\)$",
    ):
        check_job(load_job(_two_sources(jdbc)))
    lines = check_job(load_job(_two_sources({**jdbc, "primary_keys": ["id"]})))
    assert lines[3] == "sink[0] Jdbc <- changes, plain: id int64, name string; each row with its kind"


def test_change_rows_of_several_tables_into_a_jdbc_sink_without_keys_fail_the_check() -> None:
    """The sink of a ``tables_configs`` source knows no one schema (each table has its own),
    so the check of the rows' columns cannot run; the keys it needs are checked anyway."""
    tables = [{"schema": {"table": f"db.t{i}", **SCHEMA}, "rows": CHANGES} for i in (1, 2)]
    jdbc = {"plugin_name": "Jdbc", "url": "jdbc:postgresql://127.0.0.1:9/db", "table": "t"}
    job = {"source": [{"plugin_name": "FakeSource", "tables_configs": tables}], "sink": [jdbc]}
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.primary_keys: is required to apply change rows"):
        check_job(load_job(job))
    check_job(load_job({**job, "sink": [{**jdbc, "primary_keys": ["id"]}]}))


# ---- sinks --------------------------------------------------------------------------------
def test_console_prints_each_rows_kind_as_seatunnels_console_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_in_process(FIXTURES / "connector-seatunnel-e2e-base" / "batch_fake_multi_table_to_console.conf") == 15
    printed = capsys.readouterr().out.splitlines()
    assert "  kind=INSERT {'id': 1, 'name': 'A', 'score': 100}" in printed
    assert "  kind=DELETE {'id': 2, 'name': 'B', 'score': 100}" in printed
    plain = run_in_process(FIXTURES / "connector-fake-e2e" / "fake_to_assert.conf")
    assert plain and not any("kind=" in line for line in capsys.readouterr().out.splitlines())


def test_assert_counts_and_checks_every_row_whatever_its_kind(tmp_path: Path) -> None:
    job = tmp_path / "assert.conf"
    job.write_text(
        json.dumps(
            _job(
                [],
                {
                    "plugin_name": "Assert",
                    "rules": {
                        "row_rules": [
                            {"rule_type": "MIN_ROW", "rule_value": 5},
                            {"rule_type": "MAX_ROW", "rule_value": 5},
                        ],
                        "field_rules": [
                            {"field_name": "name", "field_type": "string", "field_value": [{"rule_type": "NOT_NULL"}]}
                        ],
                    },
                },
            )
        )
    )
    assert run_in_process(job) == 5


def test_a_file_sink_writes_change_rows_as_plain_rows(tmp_path: Path) -> None:
    job = tmp_path / "file.json"
    job.write_text(
        json.dumps(_job([], {"plugin_name": "LocalFile", "path": str(tmp_path / "out"), "file_format_type": "json"}))
    )
    assert run_in_process(job) == 5
    rows = [
        json.loads(line)
        for path in sorted((tmp_path / "out").rglob("*.json"))
        for line in path.read_text().splitlines()
    ]
    assert rows == [{"id": r["fields"][0], "name": r["fields"][1]} for r in CHANGES]  # as SeaTunnel's: no kind
