"""SeaTunnel's JsonPath transform (transforms/json_path/): its four e2e job files with the
values they produce, every dest_type conversion, Jayway's path rules (definite paths fail
when they match nothing, indefinite ones give a list), json-smart's permissive reading, the
error-handling options and one-line option errors. Real parts only: the transform is
built through the registry and fed Arrow batches."""

from __future__ import annotations

import datetime as dt
import decimal
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_transform
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.engine.routing import load_sources, load_transforms
from airflow_provider_seatunnel_ckpt.errors import ConfigError, DataError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from airflow_provider_seatunnel_ckpt.transforms.json_path.failures import PathError
from airflow_provider_seatunnel_ckpt.transforms.json_path.path_compiler import compile_path
from airflow_provider_seatunnel_ckpt.transforms.json_path.path_reader import read_path
from airflow_provider_seatunnel_ckpt.transforms.json_path.permissive_json import parse_json
from tests.seatunnel_jobs import run_in_process

FIXTURES = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "seatunnel"
    / "seatunnel-transforms-v2-e2e-part-2"
    / "json_path_transform"
)


def transform(*columns: dict[str, Any], **options: Any) -> Any:
    return load_transform({"plugin_name": "JsonPath", "columns": list(columns), **options}, "transform[0]")


def run(batch: pa.RecordBatch, *columns: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    t = transform(*columns, **options)
    out = t.process(batch, None)
    assert out.schema == t.output_schema(batch.schema)  # the driver's view matches what runs
    return out.to_pylist()


def one(document: Any, path: str, dest_type: str = "string", **column: Any) -> Any:
    """``path`` read from a one-row string column holding ``document``, as ``dest_type``."""
    batch = pa.record_batch({"j": pa.array([document], pa.string())})
    rows = run(batch, {"src_field": "j", "path": path, "dest_field": "out", "dest_type": dest_type, **column})
    return rows[0]["out"] if rows else "dropped"


# ---- SeaTunnel's own files ---------------------------------------------------------------
def outputs(name: str) -> list[dict[str, Any]]:
    """The rows the file's JsonPath transform makes of its FakeSource's rows."""
    job = load_job(FIXTURES / name)
    (source,) = load_sources(job.sources)
    transforms = load_transforms(job.transforms)
    rows = []
    for split in source.splits(1):
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1))):
            for t in transforms:
                t.output_schema(batch.schema)
                batch = t.process(batch, None)
            rows += batch.to_pylist()
    return rows


@pytest.mark.parametrize(
    "name, rows",
    [
        ("array_test.conf", 100),
        ("json_path_basic_type_test.conf", 100),
        ("json_path_with_error_handle_way.conf", 2),
        ("nested_row_test.conf", 10),
    ],
)
def test_seatunnels_four_files_run_unchanged_and_their_assert_rules_hold(name: str, rows: int) -> None:
    assert run_in_process(FIXTURES / name) == rows  # SeaTunnel's IT expects all four to pass


def test_the_basic_type_file_reads_json_smarts_permissive_text_into_each_type() -> None:
    """Its template is ``{data:{c_string: this is a string, ..., c_date:'2023-10-29'}}`` once
    HOCON has read it: unquoted keys and text, single quotes. json-smart reads it; strict
    JSON (and DuckDB) would not."""
    row = outputs("json_path_basic_type_test.conf")[0]
    assert {k: v for k, v in row.items() if k != "data"} == {
        "c1_string": "this is a string",
        "c1_boolean": True,
        "c1_integer": 42,
        "c1_float": pytest.approx(3.14),
        "c1_double": 3.14,
        "c1_decimal": decimal.Decimal("10.55"),
        "c1_date": dt.date(2023, 10, 29),
        "c1_datetime": dt.time(16, 12, 43, 459000),
    }


def test_the_row_and_array_files_read_positions_of_the_json_seatunnel_writes() -> None:
    for row in outputs("nested_row_test.conf"):
        assert row["test_str"] == row["c_row"]["c_string"]  # $[2]: the row's third field
    for row in outputs("array_test.conf"):
        assert row["test_str"] == row["c_array"][0]


def test_the_error_handle_way_file_skips_the_missing_column_and_fails_without_it(tmp_path: Path) -> None:
    assert outputs("json_path_with_error_handle_way.conf") == [
        {"id": 1, "data": '{"f1": "v1"}', "data_f1": "v1", "data_f2": None},
        {"id": 2, "data": '{"f1": "v1", "f2": "v2"}', "data_f1": "v1", "data_f2": "v2"},
    ]
    text = (FIXTURES / "json_path_with_error_handle_way.conf").read_text()
    assert "column_error_handle_way = SKIP" in text
    strict = tmp_path / "strict.conf"
    strict.write_text(text.replace("column_error_handle_way = SKIP", ""))
    with pytest.raises(
        DataError,
        match=r"^transform\[0\]\.columns\[1\]: JsonPath '\$\.f2' on data = "
        r"'\{\"f1\": \"v1\"\}': No results for path: \$\['f2'\]$",
    ):
        run_in_process(strict)


# ---- dest_type conversions (SeaTunnel's JsonToRowConverters over Jackson nodes) ----------
@pytest.mark.parametrize(
    "document, path, dest_type, expected",
    [
        ('{"a": "x"}', "$.a", "string", "x"),
        ('{"a": 12}', "$.a", "string", "12"),
        ('{"a": 1e10}', "$.a", "string", "1.0E10"),  # Java's Double.toString
        ('{"a": 0.0001}', "$.a", "string", "1.0E-4"),
        ('{"a": true}', "$.a", "string", "true"),
        ('{"a": {"b": [1, 2.5, "c\\n"], "d": null}}', "$.a", "string", '{"b":[1,2.5,"c\\n"],"d":null}'),
        ('{"a": true}', "$.a", "boolean", True),
        ('{"a": " TRUE "}', "$.a", "boolean", True),
        ('{"a": "yes"}', "$.a", "boolean", False),  # Boolean.parseBoolean
        ('{"a": 1}', "$.a", "boolean", False),
        ('{"a": " 12 "}', "$.a", "tinyint", 12),
        ('{"a": -300}', "$.a", "smallint", -300),
        ('{"a": 42}', "$.a", "int", 42),
        ('{"a": "42"}', "$.a", "int", 42),
        ('{"a": 3.99}', "$.a", "int", 3),  # a number converts with Java's (int) cast
        ('{"a": 9000000000}', "$.a", "bigint", 9000000000),
        ('{"a": "-9000000000"}', "$.a", "bigint", -9000000000),
        ('{"a": 3.14}', "$.a", "double", 3.14),
        ('{"a": "1e3"}', "$.a", "double", 1000.0),
        ('{"a": 7}', "$.a", "double", 7.0),
        ('{"a": "2.5f"}', "$.a", "float", 2.5),  # Float.parseFloat takes a type suffix
        ('{"a": 10.55}', "$.a", "decimal(4, 2)", decimal.Decimal("10.55")),
        ('{"a": "10.5"}', "$.a", "decimal(4, 2)", decimal.Decimal("10.50")),
        ('{"a": "2023-10-29"}', "$.a", "date", dt.date(2023, 10, 29)),
        ('{"a": "2023/10/29"}', "$.a", "date", dt.date(2023, 10, 29)),
        ('{"a": "2023年10月29日"}', "$.a", "date", dt.date(2023, 10, 29)),
        ('{"a": 20231029}', "$.a", "date", dt.date(2023, 10, 29)),
        ('{"a": "2023-02-30"}', "$.a", "date", dt.date(2023, 2, 28)),  # ResolverStyle.SMART
        ('{"a": "16:12:43"}', "$.a", "time", dt.time(16, 12, 43)),
        ('{"a": "16:12:43.459"}', "$.a", "time", dt.time(16, 12, 43, 459000)),
        ('{"a": "2023-10-29 16:12:43"}', "$.a", "timestamp", dt.datetime(2023, 10, 29, 16, 12, 43)),
        ('{"a": "2023-10-29T16:12:43.5"}', "$.a", "timestamp", dt.datetime(2023, 10, 29, 16, 12, 43, 500000)),
        ('{"a": "2023/10/29 16:12"}', "$.a", "timestamp", None),  # 16 characters: no SeaTunnel format
        ('{"a": "20231029161243"}', "$.a", "timestamp", dt.datetime(2023, 10, 29, 16, 12, 43)),
        ('{"a": "aGVsbG8="}', "$.a", "bytes", b"hello"),
        ('{"a": 5}', "$.a", "bytes", None),  # binaryValue() of a number is null
        ('{"a": [1, "2", null]}', "$.a", "array<int>", [1, 2, None]),
        ('{"a": {"x": 1, "y": 2}}', "$.a", "array<int>", [None, None]),  # ObjectNode.get(i) is null
        ('{"a": "text"}', "$.a", "array<int>", []),
        ('{"a": {"x": "1", "y": null}}', "$.a", "map<string, int>", [("x", 1), ("y", None)]),
        ('{"a": {"1": "v"}}', "$.a", "map<int, string>", [(1, "v")]),
        ('{"a": {"n": "x", "i": "7"}}', "$.a", "{n = string, i = int}", {"n": "x", "i": 7}),
        ('{"a": ["x", 7, "extra"]}', "$.a", "{n = string, i = int}", {"n": "x", "i": 7}),
        ('{"a": "text"}', "$.a", "{n = string, i = int}", {"n": None, "i": None}),
        ('{"a": 1}', "$.a", "null", None),
        ('{"a": null}', "$.a", "int", None),
    ],
)
def test_each_dest_type_converts_as_seatunnel_does(document: str, path: str, dest_type: str, expected: Any) -> None:
    if expected is None and dest_type == "timestamp":
        with pytest.raises(DataError, match="datetime format '2023/10/29 16:12' of field 'null' is not supported"):
            one(document, path, dest_type)
        return
    assert one(document, path, dest_type) == expected


@pytest.mark.parametrize(
    "document, dest_type, error",
    [
        ('{"a": "abc"}', "int", r'NumberFormatException: For input string: "abc"'),
        ('{"a": "3.5"}', "int", r'For input string: "3.5"'),
        ('{"a": 300}', "tinyint", r"Value out of range"),
        ('{"a": 3000000000}', "int", r"Value out of range"),
        ('{"a": true}', "double", r'For input string: "true"'),
        ('{"a": 10.555}', "decimal(4, 2)", r"10\.555 does not fit decimal\(4, 2\)"),
        ('{"a": 123.4}', "decimal(4, 2)", r"123\.4 does not fit decimal\(4, 2\)"),
        ('{"a": "2023-13-01"}', "date", r"could not be parsed"),
        ('{"a": "29.10.2023"}', "date", r"date format '29\.10\.2023' of field 'null' is not supported"),
        ('{"a": "25:00:00"}', "time", r"could not be parsed"),
        ('{"a": "not base64!"}', "bytes", r"not base64 text"),
    ],
)
def test_a_value_that_does_not_convert_fails_the_job_whatever_the_options(
    document: str, dest_type: str, error: str
) -> None:
    for options in ({}, {"column_error_handle_way": "SKIP"}, {"column_error_handle_way": "SKIP_ROW"}):
        with pytest.raises(DataError, match=r"^transform\[0\]\.columns\[0\]: JsonPath '\$\.a' on j = .*" + error):
            one(document, "$.a", dest_type, **options)
    with pytest.raises(DataError, match=error):
        run(
            pa.record_batch({"j": [document]}),
            {"src_field": "j", "path": "$.a", "dest_field": "o", "dest_type": dest_type},
            row_error_handle_way="SKIP",
        )


def test_digits_past_the_microsecond_are_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert one('{"a": "16:12:43.123456789"}', "$.a", "time") == dt.time(16, 12, 43, 123456)
    assert "digits past the microsecond; they are dropped (SeaTunnel keeps nanoseconds)" in caplog.text


# ---- paths: Jayway's rules -----------------------------------------------------------------
DOC = '{"store": {"book": [{"t": "a", "p": 8}, {"t": "b", "p": 12, "isbn": "x"}], "bike": {"p": 19}}, "e": []}'


@pytest.mark.parametrize(
    "path, expected",
    [
        ("$", DOC.replace(" ", "")),
        ("$.store.book[0].t", "a"),
        ("store.book[1].t", "b"),  # Jayway puts "$." in front of a path without one
        ("$['store']['bike']['p']", "19"),
        ("$.store.book[-1].p", "12"),
        ("$.store.book[0,1].t", '["a","b"]'),  # several indexes: indefinite, a list
        ("$.store.book[*].p", "[8,12]"),
        ("$.store.book[:1].t", '["a"]'),
        ("$.store.book[1:].t", '["b"]'),
        ("$.store.book[0:5].t", '["a","b"]'),
        ("$.store.book[*].isbn", '["x"]'),  # an indefinite path skips what is missing
        ("$..p", "[8,12,19]"),
        ("$.store.*.p", "[19]"),
        ("$.store.book[0]['t','p']", '{"t":"a","p":8}'),
        ("$.store.book[0]['t','nope']", '{"t":"a"}'),
        ("$.e[*]", "[]"),
        ("$.store.book[*].nope.x", "[]"),  # after an indefinite token, a missing property is no error
    ],
)
def test_paths_read_as_jayways_do(path: str, expected: str) -> None:
    assert one(DOC, path) == expected


@pytest.mark.parametrize(
    "path, error",
    [
        ("$.nope", r"No results for path: \$\['nope'\]"),  # a missing leaf of a definite path
        ("$.nope.t", r"Missing property in path \$\['nope'\]"),
        ("$.store.nope[*]", r"Missing property in path \$\['store'\]\['nope'\]"),
        ("$.store.book[5]", r"No results for path: \$\['store'\]\['book'\]\[5\]"),
        ("$.store.book.t", r"Expected to find an object with property \['t'\] in path \$\['store'\]\['book'\]"),
        ("$.store.bike[0]", r"Filter: \[0\] can only be applied to arrays"),
        ("$.e[0]", r"No results for path: \$\['e'\]\[0\]"),
    ],
)
def test_a_definite_path_that_matches_nothing_is_a_path_error(path: str, error: str) -> None:
    with pytest.raises(DataError, match=r"^transform\[0\]\.columns\[0\]: JsonPath .*: " + error):
        one(DOC, path)
    assert one(DOC, path, column_error_handle_way="SKIP") is None


def test_null_values_and_null_documents() -> None:
    assert one('{"a": null}', "$.a") is None  # present and null: null, no error
    assert one(None, "$.a") is None  # a null source is not read, whatever the path
    with pytest.raises(DataError, match="root can not be null"):  # Jayway refuses the JSON null document
        one("null", "$.a", column_error_handle_way="SKIP")
    with pytest.raises(DataError, match="json can not be null or empty"):
        one("", "$.a", column_error_handle_way="SKIP")


def test_json_smart_reads_what_strict_json_refuses() -> None:
    assert parse_json("{a: some text, 'b': 'q', c: [1,,2,], d: 01, e: NaN}trailing") == {
        "a": "some text",
        "b": "q",
        "c": [1, 2],
        "d": 1,
        "e": pytest.approx(float("nan"), nan_ok=True),
    }
    assert parse_json('{"a": "x\\q\ty"}') == {"a": "xy"}  # unknown escapes and control characters dropped
    assert parse_json("[12345678901234567890.5]") == [decimal.Decimal("12345678901234567890.5")]
    assert parse_json("just text") == "just text"
    with pytest.raises(PathError, match="Unexpected End Of File"):
        parse_json("{a:")
    assert one("{a: b", "$.a", column_error_handle_way="SKIP") is None  # not JSON even for json-smart: a path error


def test_a_row_array_map_or_bytes_column_is_read_as_the_json_seatunnel_writes() -> None:
    kind = pa.struct(
        [
            ("name", pa.string()),
            ("age", pa.int32()),
            ("born", pa.date32()),
            ("w", pa.float32()),
            ("tags", pa.list_(pa.string())),
            ("m", pa.map_(pa.string(), pa.int64())),
        ]
    )
    batch = pa.record_batch(
        {
            "col": pa.array(
                [{"name": "a", "age": 18, "born": dt.date(2005, 1, 2), "w": 3.14, "tags": ["x"], "m": [("k", 1)]}], kind
            ),
            "arr": pa.array([[1.5, None]], pa.list_(pa.float64())),
            "map": pa.array([[("k", dt.time(1, 2, 3, 4))]], pa.map_(pa.string(), pa.time64("us"))),
            "raw": pa.array([b'{"z": 1}']),
        }
    )
    (row,) = run(
        batch,
        {"src_field": "col", "path": "$[0]", "dest_field": "name"},
        {"src_field": "col", "path": "$[1]", "dest_field": "age", "dest_type": "int"},
        {"src_field": "col", "path": "$", "dest_field": "json"},
        {"src_field": "arr", "path": "$[0]", "dest_field": "first", "dest_type": "double"},
        {"src_field": "map", "path": "$.k", "dest_field": "time_parts"},
        {"src_field": "raw", "path": "$.z", "dest_field": "z", "dest_type": "bigint"},
    )
    assert (row["name"], row["age"], row["first"], row["z"]) == ("a", 18, 1.5, 1)
    # a row is the array of its fields; a date an array; a float as Java prints it
    assert row["json"] == '["a",18,[2005,1,2],3.14,["x"],{"k":1}]'
    assert row["time_parts"] == "[1,2,3,4000]"  # LocalTime as [h, m, s, nanoseconds]


def test_dest_field_replaces_an_input_column_in_place_and_new_ones_are_appended() -> None:
    batch = pa.record_batch({"j": ['{"a": "5"}'], "k": [1]})
    t = transform(
        {"src_field": "j", "path": "$.a", "dest_field": "j", "dest_type": "int"},
        {"src_field": "j", "path": "$", "dest_field": "whole"},
    )
    assert t.output_schema(batch.schema) == pa.schema([("j", pa.int32()), ("k", pa.int64()), ("whole", pa.string())])
    assert t.process(batch, None).to_pylist() == [{"j": 5, "k": 1, "whole": '{"a":"5"}'}]


# ---- error handling ------------------------------------------------------------------------
ROWS = pa.record_batch({"id": [1, 2, 3, 4], "j": ['{"a": "1", "b": "x"}', '{"a": "2"}', None, '{"b": "y"}']})


def ids(*columns: dict[str, Any], **options: Any) -> list[Any]:
    return [(row["id"], row.get("a"), row.get("b")) for row in run(ROWS, *columns, **options)]


A = {"src_field": "j", "path": "$.a", "dest_field": "a"}
B = {"src_field": "j", "path": "$.b", "dest_field": "b"}


def test_row_error_handle_way_skip_drops_the_rows_whose_path_fails() -> None:
    assert ids(A, B, row_error_handle_way="SKIP") == [(1, "1", "x"), (3, None, None)]
    assert ids(A, B, row_error_handle_way="skip") == [(1, "1", "x"), (3, None, None)]  # SeaTunnel reads it in any case


def test_row_error_handle_way_fail_is_the_default_and_names_the_first_failing_row() -> None:
    with pytest.raises(
        DataError,
        match=r"^transform\[0\]\.columns\[1\]: JsonPath '\$\.b' on j = '\{\"a\": \"2\"\}': "
        r"No results for path: \$\['b'\]$",
    ):
        ids(A, B)


def test_column_error_handle_way_skip_gives_null_and_skip_row_drops_the_row() -> None:
    assert ids({**A, "column_error_handle_way": "SKIP"}, {**B, "column_error_handle_way": "SKIP"}) == [
        (1, "1", "x"),
        (2, "2", None),
        (3, None, None),
        (4, None, "y"),
    ]
    assert ids({**A, "column_error_handle_way": "SKIP_ROW"}, {**B, "column_error_handle_way": "SKIP"}) == [
        (1, "1", "x"),
        (2, "2", None),
        (3, None, None),
    ]


def test_column_error_handle_way_takes_precedence_over_the_rows() -> None:
    with pytest.raises(DataError, match=r"columns\[1\]"):  # FAIL on the column beats SKIP on the row
        ids(A, {**B, "column_error_handle_way": "FAIL"}, row_error_handle_way="SKIP")
    assert ids({**A, "column_error_handle_way": "SKIP"}, B, row_error_handle_way="SKIP") == [
        (1, "1", "x"),
        (3, None, None),
        (4, None, "y"),
    ]


def test_columns_are_read_in_order_so_a_dropped_row_never_reaches_a_later_failure() -> None:
    bad_int = {
        "src_field": "j",
        "path": "$.b",
        "dest_field": "n",
        "dest_type": "int",
        "column_error_handle_way": "SKIP",
    }
    batch = pa.record_batch({"id": [1, 2], "j": ['{"b": "not a number"}', '{"a": "ok", "b": "7"}']})
    rows = run(batch, {**A, "column_error_handle_way": "SKIP_ROW"}, bad_int)
    assert [(r["id"], r["a"], r["n"]) for r in rows] == [(2, "ok", 7)]
    with pytest.raises(DataError, match="For input string"):  # the other way round, row 1 fails
        run(batch, bad_int, {**A, "column_error_handle_way": "SKIP_ROW"})


def test_repeated_documents_are_parsed_once_and_each_row_keeps_its_own_result() -> None:
    batch = pa.record_batch({"j": pa.array(['{"a": 1}', '{"b": 2}'] * 500 + [None])})
    rows = run(
        batch, {"src_field": "j", "path": "$.a", "dest_field": "a", "dest_type": "int"}, row_error_handle_way="SKIP"
    )
    assert [r["a"] for r in rows] == [1] * 500 + [None]


# ---- options -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "entry, error",
    [
        (
            {"columns": [A], "fields": ["x"]},
            r"^transform\[0\]\.fields: unknown option for JsonPath; "
            r"known options: columns, row_error_handle_way$",
        ),
        (
            {"columns": [{**A, "dest_typ": "int"}]},
            r"^transform\[0\]\.columns\[0\]\.dest_typ: unknown option for a "
            r"JsonPath column; known options: src_field, path, dest_field, ",
        ),
        ({}, r"^transform\[0\]\.columns: is required for JsonPath"),
        ({"columns": []}, r"^transform\[0\]\.columns: is required"),
        ({"columns": [{"src_field": "j", "dest_field": "a"}]}, r"^transform\[0\]\.columns\[0\]\.path: is required"),
        ({"columns": [{**A, "path": " "}]}, r"^transform\[0\]\.columns\[0\]\.path: is required"),
        ({"columns": [{"src_field": "j", "path": "$.a"}]}, r"^transform\[0\]\.columns\[0\]\.dest_field: is required"),
        ({"columns": [{**A, "dest_type": "integer"}]}, r"^transform\[0\]\.columns\[0\]\.dest_type: unknown type"),
        (
            {"columns": [{**A, "column_error_handle_way": "skip"}]},
            r"^transform\[0\]\.columns\[0\]\.column_error_handle_way: 'skip' is not one of FAIL, SKIP, SKIP_ROW",
        ),
        (
            {"columns": [A], "row_error_handle_way": "SKIP_ROW"},
            r"^transform\[0\]\.row_error_handle_way: 'SKIP_ROW' is not one of FAIL, SKIP$",
        ),
        ({"columns": [A, {**B, "dest_field": "a"}]}, r"^transform\[0\]\.columns\[1\]\.dest_field: 'a' is written by "),
        (
            {"columns": [{**A, "path": "$.a[?(@.x > 1)]"}]},
            r"^transform\[0\]\.columns\[0\]\.path: '\$\.a\[\?\(@\.x > 1\)\]': filters .* are not supported here$",
        ),
        (
            {"columns": [{**A, "path": "$.a.length()"}]},
            r"^transform\[0\]\.columns\[0\]\.path: '\$\.a\.length\(\)': functions \(length\(\)\) are not supported here$",
        ),
        (
            {"columns": [{**A, "path": "$.a b"}]},
            r"^transform\[0\]\.columns\[0\]\.path: '\$\.a b' is not a JsonPath: "
            r"Use bracket notion",
        ),
        ({"columns": [{**A, "path": "$.a."}]}, r"is not a JsonPath: Path must not end with a '\.'"),
        ({"columns": [{**A, "path": "$[1 : 2]"}]}, r"is not a JsonPath"),
    ],
)
def test_a_bad_option_is_one_config_error_line_naming_its_key(entry: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError, match=error) as err:
        load_transform({"plugin_name": "JsonPath", **entry}, "transform[0]")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "column_type, error",
    [
        (None, r"^transform\[0\]\.columns\[0\]\.src_field: no column 'j' in the rows \(columns: \['other'\]\)$"),
        (
            pa.int64(),
            r"^transform\[0\]\.columns\[0\]\.src_field: j is bigint: JsonPath reads string, bytes, row, array "
            r"or map columns$",
        ),
        (pa.list_(pa.struct([("x", pa.int32())])), r"j holds a nested row: SeaTunnel writes it as a Java bean"),
        (pa.map_(pa.date32(), pa.int32()), r"j is a map keyed by date: not supported here"),
    ],
)
def test_a_source_column_it_cannot_read_is_refused_when_the_schema_binds(column_type: Any, error: str) -> None:
    schema = pa.schema([("other", pa.string())] if column_type is None else [("j", column_type)])
    with pytest.raises(ConfigError, match=error):
        transform(A).output_schema(schema)


def test_compiled_paths_keep_jayways_definite_rule() -> None:
    assert compile_path("$.a[0]['b']").definite
    assert not compile_path("$.a[*].b").definite
    assert not compile_path("$..b").definite
    assert compile_path("$.a['b','c']").definite  # a leaf merge of several properties
    assert not compile_path("$['b','c'].d").definite
    assert read_path(compile_path("$['a b']"), parse_json('{"a b": 1}')) == 1
