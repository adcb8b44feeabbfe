"""The differential test's own logic, without Zeta (bench/seatunnel_differential.py):
which files are selected, the job both engines run, and how rows are read, normalised
and matched."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_seatunnel_ckpt.jobfile.documents import read_job_document
from bench import seatunnel_differential as diff

FAKE: dict[str, Any] = {
    "env": {"parallelism": 1, "job.mode": "STREAMING"},
    "source": [
        {
            "plugin_name": "FakeSource",
            "result_table_name": "fake",
            "schema": {"fields": {"id": "bigint"}},
            "rows": [{"kind": "INSERT", "fields": [1]}],
        }
    ],
    "sink": [{"plugin_name": "Assert", "source_table_name": "fake", "rules": {}}],
}


def test_files_are_selected_by_their_sources() -> None:
    assert diff.not_deterministic(FAKE, "a/fake.conf", []) is None
    random = {**FAKE, "source": [{"plugin_name": "FakeSource", "row.num": 5}]}
    assert diff.not_deterministic(random, "a/fake.conf", []) == "FakeSource generates random rows (no `rows`)"
    local = {**FAKE, "source": [{"plugin_name": "LocalFile", "path": "/seatunnel/read/zip/txt/single"}]}
    assert diff.not_deterministic(local, "x.conf", ["/seatunnel/read/zip/txt/single/e2e-txt.zip"]) is None
    assert "not one LocalFileIT lays out" in str(diff.not_deterministic(local, "x.conf", ["/seatunnel/read/text"]))
    assert diff.not_deterministic(FAKE, "d/batch_last_checkpoint_error.conf", []) == (
        "its SeaTunnel test expects it to fail"
    )


def test_the_job_both_engines_run_captures_every_sink_as_parquet(tmp_path: Path) -> None:
    doc = {**FAKE, "source": [*FAKE["source"], {"plugin_name": "LocalFile", "path": "/seatunnel/read/t"}]}
    job = diff.capture_document(doc, tmp_path / "out", tmp_path)
    text = diff.hocon(job)
    path = tmp_path / "job.conf"
    path.write_text(text)
    parsed = read_job_document(path)[0]
    assert parsed["env"]["job.mode"] == "BATCH"
    assert parsed["source"][0]["rows"] == [{"kind": "INSERT", "fields": [1]}]
    assert parsed["source"][1]["path"] == f"{tmp_path}/seatunnel/read/t"
    assert parsed["sink"] == [
        {
            "plugin_name": "LocalFile",
            "source_table_name": "fake",
            "path": f"{tmp_path}/out/sink0/${{table_name}}",
            "file_format_type": "parquet",
        }
    ]
    assert doc["source"][1]["path"] == "/seatunnel/read/t"  # the document read is not changed


def test_types_are_compared_at_parquets_resolution() -> None:
    assert diff.type_name(pa.int8()) == diff.type_name(pa.int32()) == "int"
    assert diff.type_name(pa.int64()) == "bigint"
    assert diff.type_name(pa.timestamp("ms", tz="UTC")) == diff.type_name(pa.timestamp("us")) == "timestamp"
    assert diff.type_name(pa.decimal128(10, 2)) == "decimal(10, 2)"
    assert diff.type_name(pa.map_(pa.string(), pa.int32())) == "map<string, int>"
    assert diff.type_name(pa.list_(pa.string())) == "array<string>"
    assert diff.type_name(pa.struct([("a", pa.float32())])) == "row<a float>"


def test_values_normalise_zones_milliseconds_maps_and_decimals() -> None:
    utc = dt.datetime(2024, 1, 1, 1, 2, 3, 456000, tzinfo=dt.UTC)
    assert diff.value(utc) == diff.value(dt.datetime(2024, 1, 1, 1, 2, 3, 456789))
    assert diff.value([("b", 2), ("a", 1)]) == diff.value([("a", 1), ("b", 2)])
    assert diff.value(decimal.Decimal("1.50")) == diff.value(decimal.Decimal("1.5"))
    assert diff.value(float("nan")) == diff.value(float("nan"))
    assert diff.value([1, 2]) != diff.value([2, 1])  # an array keeps its order


def _write(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def test_rows_match_in_any_order_and_hidden_or_staged_files_are_not_read(tmp_path: Path) -> None:
    zeta = pa.table({"id": pa.array([1, 2], pa.int32()), "s": ["a", "b"]})
    ours = pa.table({"id": pa.array([2, 1], pa.int8()), "s": ["b", "a"]})
    _write(tmp_path / "zeta" / "T_1_0.parquet", zeta)
    _write(tmp_path / "zeta" / ".T_1_0.parquet.crc.parquet", zeta)
    _write(tmp_path / "ours" / "part-0.parquet", ours.slice(0, 1))
    _write(tmp_path / "ours" / "part-1.parquet", ours.slice(1))
    _write(tmp_path / "ours" / "_staging" / "x.parquet", ours)
    result = diff.compare(diff.read_rows(tmp_path / "zeta"), diff.read_rows(tmp_path / "ours"))
    assert result == {"identical": True, "rows_zeta": 2, "rows_ours": 2}


def test_a_difference_names_the_first_row_each_side_lacks() -> None:
    columns = (("id", "int"), ("s", "string"))
    zeta = [(columns, (1, "a")), (columns, (2, "b")), (columns, (2, "b"))]
    ours = [(columns, (2, "b")), (columns, (1, "a")), ((("id", "bigint"), ("s", "string")), (2, "b"))]
    result = diff.compare(zeta, ours)
    assert result["identical"] is False
    assert (result["only_zeta"], result["only_ours"]) == (1, 1)
    assert result["first_only_zeta"] == {"id": 2, "s": "b"}
    assert result["first_only_ours_types"] == {"id": "bigint", "s": "string"}


def test_figures_count_compared_and_identical_files() -> None:
    files: dict[str, dict[str, Any]] = {
        "a": {"status": "compared", "identical": True},
        "b": {"status": "compared", "identical": False},
        "c": {"status": "zeta_failed"},
        "d": {"status": "not_selected"},
    }
    figures = diff.figures(files)
    assert figures["seatunnel_differential_selected"] == 3
    assert figures["seatunnel_differential_compared"] == 2
    assert figures["seatunnel_differential_identical"] == 1
    assert figures["seatunnel_differential_identical_share"] == 0.5


def test_json_rows_compare_values_without_types(tmp_path: Path) -> None:
    """The capture for jobs whose types Zeta's parquet writer refuses (a ``null`` column)."""
    (tmp_path / "zeta").mkdir()
    (tmp_path / "ours").mkdir()
    (tmp_path / "zeta" / "T_0.json").write_text('{"a": null, "m": {"x": 1, "y": 2.50}}\n')
    (tmp_path / "ours" / "T_1.json").write_text('{"a":null,"m":{"y":2.5,"x":1}}\n\n')
    zeta, ours = diff.read_rows(tmp_path / "zeta", "json"), diff.read_rows(tmp_path / "ours", "json")
    assert zeta[0][0] == (("a", "json"), ("m", "json"))
    assert diff.compare(zeta, ours)["identical"] is True


def test_a_rerun_replaces_its_files_and_the_figures_are_recounted() -> None:
    previous = {"files": {"a": {"status": "ours_failed"}, "b": {"status": "compared", "identical": True}}}
    rerun = {"files": {"a": {"status": "compared", "identical": True}}}
    merged = diff.merge_result(previous, rerun)
    assert merged["files"]["a"] == {"status": "compared", "identical": True, "rerun": True}
    assert merged["summary"]["seatunnel_differential_identical"] == 2


def test_columns_of_volatile_sql_functions_are_named_and_left_out(tmp_path: Path) -> None:
    """NOW(), CURRENT_TIMESTAMP, RAND() and the like give each engine another value
    (func_datetime.conf, func_numeric.conf): their columns are not compared, and the
    record says which; every other column still is."""
    doc = {
        "transform": [
            {
                "plugin_name": "Sql",
                "query": "select current_date as cd, CURRENT_TIMESTAMP ct2, abs(-1) as a, "
                "round(rand() * 10, 1) as r, concat(name, ',', uuid()) u, now() , "
                "dateadd(c1, 1) as c1_1, 'rand()' as quoted from fake",
            },
            {"plugin_name": "Sql", "query": "SELECT id, NOW() AS `at` FROM fake1"},
            {"plugin_name": "Copy", "fields": {"x": "y"}},
        ]
    }
    assert diff.volatile_columns(doc) == {"cd", "ct2", "r", "u", "now()", "at"}
    zeta = pa.table({"id": [1], "r": [0.25], "at": ["x"]})
    ours = pa.table({"id": [1], "r": [0.75], "at": ["y"]})
    _write(tmp_path / "zeta" / "T.parquet", zeta)
    _write(tmp_path / "ours" / "T.parquet", ours)
    assert diff.compare(diff.read_rows(tmp_path / "zeta"), diff.read_rows(tmp_path / "ours"))["identical"] is False
    left_out = {"r", "at"}
    zeta_rows = diff.read_rows(tmp_path / "zeta", left_out=left_out)
    assert zeta_rows == [((("id", "bigint"),), (1,))]
    assert diff.compare(zeta_rows, diff.read_rows(tmp_path / "ours", left_out=left_out))["identical"] is True


# ---- random FakeSource rows pinned (bench/seatunnel_pinned_rows.py) ---------------------------

EVERY_TYPE = {
    "c_string": "string",
    "c_boolean": "boolean",
    "c_tinyint": "tinyint",
    "c_smallint": "smallint",
    "c_int": "int",
    "c_bigint": "bigint",
    "c_float": "float",
    "c_double": "double",
    "c_decimal": "decimal(30, 8)",
    "c_bytes": "bytes",
    "c_date": "date",
    "c_time": "time",
    "c_timestamp": "timestamp",
    "c_null": "null",
    "c_array": "array<int>",
    "c_map": "map<string, bigint>",
    "c_row": {"c_inner": {"c_int": "int", "c_date": "date"}, "c_string": "string"},
}


def test_pinned_rows_read_back_as_the_generated_values_of_every_type() -> None:
    from airflow_provider_seatunnel_ckpt.connectors import load_source
    from bench.seatunnel_pinned_rows import pin_fake_rows

    random = {
        **FAKE,
        "source": [{"plugin_name": "FakeSource", "row.num": 7, "split.num": 2, "schema": {"fields": EVERY_TYPE}}],
    }
    pinned, tables = pin_fake_rows(random)
    entry = pinned["source"][0]
    assert tables == 1 and len(entry["rows"]) == 7 and entry["split.num"] == 1
    assert "rows" not in random["source"][0]  # the job read is not changed
    generated = load_source(random["source"][0])
    made = pa.Table.from_batches([generated.block(s, 0) for s in generated.splits(1)])
    explicit = load_source(entry)
    read_back = pa.Table.from_batches([explicit.block(s, 0) for s in explicit.splits(1)])
    assert read_back.schema == made.schema
    assert read_back.to_pylist() == made.to_pylist()
    # the text forms SeaTunnel's JSON converters read
    first = dict(zip(EVERY_TYPE, entry["rows"][0]["fields"]))
    assert isinstance(first["c_decimal"], str) and isinstance(first["c_bytes"], str)
    assert len(first["c_timestamp"]) == 19 and first["c_timestamp"][10] == " "
    assert isinstance(first["c_row"], list) and isinstance(first["c_map"], dict)


def test_every_table_of_tables_configs_is_pinned_and_explicit_rows_are_kept() -> None:
    from bench.seatunnel_pinned_rows import pin_fake_rows

    tables = [
        {"schema": {"table": "a", "fields": {"id": "int"}}, "row.num": 3},
        {"schema": {"table": "b", "fields": {"id": "int"}}, "rows": [{"kind": "INSERT", "fields": [9]}]},
    ]
    pinned, count = pin_fake_rows({**FAKE, "source": [{"plugin_name": "FakeSource", "tables_configs": tables}]})
    a, b = pinned["source"][0]["tables_configs"]
    assert count == 1 and len(a["rows"]) == 3
    assert b["rows"] == [{"kind": "INSERT", "fields": [9]}]


def test_a_job_generating_too_many_rows_is_not_selected() -> None:
    big = {**FAKE, "source": [{"plugin_name": "FakeSource", "row.num": 5000, "schema": {"fields": {"id": "int"}}}]}
    job, pinned, reason = diff._deterministic_document(big, "a/big.conf", [])
    assert pinned == 0 and job is big
    assert reason == f"{diff.RANDOM_ROWS}; not pinned: FakeSource generates more than 2000 rows: too many to pin"
    small = {**big, "source": [{**big["source"][0], "row.num": 4}]}
    job, pinned, reason = diff._deterministic_document(small, "a/small.conf", [])
    assert (pinned, reason) == (1, None) and len(job["source"][0]["rows"]) == 4


def test_rows_are_generated_from_the_options_with_their_variables_filled() -> None:
    from bench.seatunnel_pinned_rows import pin_fake_rows

    typed = {"plugin_name": "FakeSource", "row.num": 2, "schema": {"fields": {"name": "${nameType:string}"}}}
    pinned, count = pin_fake_rows({**FAKE, "source": [typed]})
    entry = pinned["source"][0]
    assert count == 1 and all(isinstance(row["fields"][0], str) for row in entry["rows"])
    assert entry["schema"] == typed["schema"]  # both engines fill the variable themselves


PG_JOB: dict[str, Any] = {
    "env": {"parallelism": 1, "job.mode": "STREAMING"},
    "source": [
        {
            "plugin_name": "Jdbc",
            "url": "jdbc:postgresql://postgresql:5432/test?loggerLevel=OFF",
            "query": "select gid from pg_e2e_source_table",
            "result_table_name": "jdbc",
        }
    ],
    "sink": [
        {"plugin_name": "Assert", "source_table_name": "jdbc", "rules": {}},
        {"plugin_name": "Jdbc", "url": "jdbc:postgresql://postgresql:5432/test", "table": "public.sink"},
        {
            "plugin_name": "jdbc",
            "url": "jdbc:postgresql://postgresql:5432/test?stringtype=unspecified",
            "query": "INSERT INTO pg_e2e_sink_table (gid) VALUES (?)",
        },
    ],
}


def test_postgres_files_keep_their_jdbc_on_the_server_and_capture_the_rest(tmp_path: Path) -> None:
    from bench import seatunnel_differential_pg as pg

    assert pg.uses_postgres(PG_JOB) and not pg.uses_postgres(FAKE)
    assert pg.not_selected(PG_JOB) is None
    kafka = {**PG_JOB, "source": [{"plugin_name": "Kafka", "topic": "t"}]}
    assert pg.not_selected(kafka) == "source Kafka is not Jdbc on PostgreSQL or FakeSource"
    elsewhere = {**PG_JOB, "sink": [{"plugin_name": "Jdbc", "url": "jdbc:mysql://mysql:3306/test"}]}
    assert "sink Jdbc is not Jdbc on PostgreSQL" in str(pg.not_selected(elsewhere))
    assert pg.sink_tables(PG_JOB) == ["pg_e2e_sink_table", "public.sink"]
    job = pg.job_document(PG_JOB, tmp_path / "out", 5433)
    assert job["env"]["job.mode"] == "BATCH"
    assert job["source"][0]["url"] == "jdbc:postgresql://127.0.0.1:5433/test?loggerLevel=OFF"
    assert job["sink"][0]["plugin_name"] == "LocalFile" and job["sink"][0]["source_table_name"] == "jdbc"
    assert [s["url"] for s in job["sink"][1:]] == [
        "jdbc:postgresql://127.0.0.1:5433/test",
        "jdbc:postgresql://127.0.0.1:5433/test?stringtype=unspecified",
    ]
    assert PG_JOB["sink"][1]["url"].startswith("jdbc:postgresql://postgresql")  # the file's own is left as it was
