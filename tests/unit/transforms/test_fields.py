"""SeaTunnel's FieldMapper, Copy, Replace and Split transforms."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_transform
from airflow_provider_seatunnel_ckpt.errors import ConfigError

BATCH = pa.RecordBatch.from_pylist(
    [{"id": 1, "name": "Joy Ding", "age": 20}, {"id": 2, "name": "May  Ding", "age": 21}]
)


def run(entry: dict[str, Any]) -> list[dict[str, Any]]:
    transform = load_transform(entry, "transform[0]")
    out = transform.process(BATCH, None)
    assert out.schema == transform.output_schema(BATCH.schema)  # the driver's view matches what runs
    return out.to_pylist()


def test_field_mapper_keeps_reorders_and_renames() -> None:
    assert run({"plugin_name": "FieldMapper", "field_mapper": {"age": "age", "name": "new_name"}}) == [
        {"age": 20, "new_name": "Joy Ding"},
        {"age": 21, "new_name": "May  Ding"},
    ]


def test_copy_appends_copies_in_both_of_seatunnels_forms() -> None:
    assert run({"plugin_name": "Copy", "fields": {"name1": "name", "age1": "age"}})[0] == {
        "id": 1,
        "name": "Joy Ding",
        "age": 20,
        "name1": "Joy Ding",
        "age1": 20,
    }
    assert run({"plugin_name": "Copy", "src_field": "id", "dest_field": "id_2"})[1]["id_2"] == 2


@pytest.mark.parametrize(
    "options, expected",
    [
        ({"pattern": " ", "replacement": "_"}, ["Joy_Ding", "May__Ding"]),
        ({"pattern": " +", "replacement": "_", "is_regex": True}, ["Joy_Ding", "May_Ding"]),
        ({"pattern": "[a-z]", "replacement": "*", "is_regex": True, "replace_first": True}, ["J*y Ding", "M*y  Ding"]),
        ({"pattern": ".+", "replacement": "b", "is_regex": "true"}, ["b", "b"]),
    ],
)
def test_replace_literal_regex_and_first(options: dict[str, Any], expected: list[str]) -> None:
    rows = run({"plugin_name": "Replace", "replace_field": "name", **options})
    assert [r["name"] for r in rows] == expected and [r["id"] for r in rows] == [1, 2]


@pytest.mark.parametrize(
    "entry, message",
    [
        (
            {"plugin_name": "FieldMapper", "field_mapper": {"nope": "x"}},
            "transform[0].field_mapper: no column 'nope' in the rows",
        ),
        (
            {"plugin_name": "FieldMapper", "field_mapper": {"id": "x", "age": "x"}},
            "transform[0].field_mapper: maps two columns to one output name",
        ),
        ({"plugin_name": "Copy", "fields": {"name": "id"}}, "transform[0].fields: column 'name' exists already"),
        (
            {"plugin_name": "Replace", "replace_field": "age", "pattern": "1", "replacement": "2"},
            "transform[0].replace_field: age is int64, not a string",
        ),
        (
            {
                "plugin_name": "Replace",
                "replace_field": "name",
                "pattern": "(a)\\1",
                "replacement": "",
                "is_regex": True,
            },
            "transform[0].pattern: not a regular expression Arrow's RE2 can run",
        ),
        (
            {"plugin_name": "Replace", "replace_field": "name", "pattern": "a"},
            "transform[0].replacement: is required for Replace",
        ),
    ],
)
def test_bad_options_are_one_line(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_transform(entry, "transform[0]").output_schema(BATCH.schema)
    assert str(err.value).startswith(message)


def test_split_cuts_into_at_most_the_output_fields_and_pads_with_nulls() -> None:
    rows = pa.RecordBatch.from_pylist([{"name": "Joy Ding"}, {"name": "May"}, {"name": "a b c"}, {"name": None}])
    transform = load_transform(
        {"plugin_name": "Split", "split_field": "name", "separator": " ", "output_fields": ["first", "rest"]},
        "transform[0]",
    )
    out = transform.process(rows, None)
    assert out.schema == transform.output_schema(rows.schema)
    assert [(r["first"], r["rest"]) for r in out.to_pylist()] == [
        ("Joy", "Ding"),
        ("May", None),
        ("a", "b c"),
        (None, None),
    ]  # the last piece keeps the rest


def test_split_takes_the_java_text_of_numbers_and_replaces_a_same_named_field() -> None:
    # SeaTunnel's e2e split_transform.conf splits an int age at "1"; a double prints as Java's
    rows = pa.RecordBatch.from_pydict({"age": pa.array([11, 210], pa.int32()), "x": pa.array([1.5e10, 0.1])})
    by_age = load_transform(
        {"plugin_name": "Split", "split_field": "age", "separator": "1", "output_fields": ["f1", "f2"]}, "transform[0]"
    ).process(rows, None)
    assert by_age.column("f1").to_pylist() == ["", "2"] and by_age.column("f2").to_pylist() == ["1", "0"]
    by_x = load_transform(
        {"plugin_name": "Split", "split_field": "x", "separator": "\\.", "output_fields": ["x", "fraction"]},
        "transform[0]",
    ).process(rows, None)
    assert by_x.schema.names == ["age", "x", "fraction"]  # x replaced in place, as a string
    assert by_x.column("x").to_pylist() == ["1", "0"] and by_x.column("fraction").to_pylist() == ["5E10", "1"]


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"separator": " ", "output_fields": ["a"]}, "split_field"),
        ({"split_field": "name", "separator": "", "output_fields": ["a"]}, "transform[0].separator: is required"),
        (
            {"split_field": "name", "separator": "(?=a)", "output_fields": ["a"]},
            "transform[0].separator: not a regular",
        ),
        (
            {"split_field": "name", "separator": " ", "output_fields": []},
            "transform[0].output_fields: expected a non-empty list",
        ),
        (
            {"split_field": "name", "separator": " ", "output_fields": ["a", "a"]},
            "transform[0].output_fields: lists a column more than once",
        ),
        ({"split_field": "nope", "separator": " ", "output_fields": ["a"]}, "no column 'nope'"),
    ],
)
def test_split_bad_options_are_one_line(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_transform({"plugin_name": "Split", **entry}, "transform[0]").output_schema(BATCH.schema)
    assert message in str(info.value) and "\n" not in str(info.value)
