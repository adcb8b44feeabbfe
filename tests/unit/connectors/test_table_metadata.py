"""A source's table metadata (schema.table, primaryKey, constraintKeys, column attributes)
and Assert's catalog_table_rule over it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors.seatunnel_types import parse_schema
from airflow_provider_seatunnel_ckpt.connectors.table_metadata import (
    attach,
    parse_catalog_table_rule,
    parse_table_metadata,
    read,
)
from airflow_provider_seatunnel_ckpt.errors import ConfigError

BLOCK = {
    "table": "test.fakeTable",
    "columns": [
        {"name": "id", "type": "bigint", "nullable": False, "comment": "key"},
        {"name": "name", "type": "string", "columnLength": 20},
    ],
    "primaryKey": {"name": "pk", "columnNames": ["id"]},
    "constraintKeys": [
        {
            "constraintName": "u",
            "constraintType": "UNIQUE_KEY",
            "constraintColumns": [{"columnName": "name", "sortType": "DESC"}],
        }
    ],
}


def table_schema(block: dict[str, Any] = BLOCK) -> pa.Schema:
    return attach(parse_schema(block), parse_table_metadata(block, "FakeSource"))


RULE = {
    "table_identifier_rule": {"catalog_name": "FakeSource", "table": "test.fakeTable"},
    "primary_key_rule": {"primary_key_name": "pk", "primary_key_columns": ["id"]},
    "constraint_key_rule": [
        {
            "constraint_key_name": "u",
            "constraint_key_type": "UNIQUE_KEY",
            "constraint_key_columns": [{"constraint_key_column_name": "name", "constraint_key_sort_type": "DESC"}],
        }
    ],
    "column_rule": [
        {"name": "name", "type": "string", "column_length": 20},
        {"name": "id", "type": "bigint", "nullable": False, "comment": "key"},
    ],
}


def test_the_declared_table_travels_in_the_schema_and_passes_its_own_rule() -> None:
    schema = table_schema()
    meta = read(schema)
    assert meta is not None and meta.primary_key == {"name": "pk", "columns": ["id"]}
    assert meta.constraint_keys == [{"name": "u", "type": "UNIQUE_KEY", "columns": [["name", "DESC"]]}]
    parse_catalog_table_rule(RULE, "rules.catalog_table_rule").check(schema, "sink[0].rules.catalog_table_rule")


def test_a_schema_declaring_only_types_is_left_as_it_was() -> None:
    plain = {"fields": {"id": "bigint"}}
    assert table_schema(plain).metadata is None


@pytest.mark.parametrize(
    "rule, message",
    [
        (
            {"primary_key_rule": {"primary_key_name": "other", "primary_key_columns": ["id"]}},
            "primary_key_rule: the primary key is named 'pk', not 'other'",
        ),
        (
            {"primary_key_rule": {"primary_key_name": "pk", "primary_key_columns": ["name"]}},
            "primary_key_rule: the primary key's columns are ['id'], not ['name']",
        ),
        (
            {
                "constraint_key_rule": [
                    {
                        "constraint_key_name": "u",
                        "constraint_key_type": "UNIQUE_KEY",
                        "constraint_key_columns": [
                            {"constraint_key_column_name": "name", "constraint_key_sort_type": "ASC"}
                        ],
                    }
                ]
            },
            "constraint_key_rule: the constraint keys are",
        ),
        (
            {"column_rule": [{"name": "id", "type": "int"}, {"name": "name", "type": "string", "column_length": 20}]},
            "column_rule: the table's columns differ: expected id int32, found id int64 not null",
        ),
        (
            {"table_identifier_rule": {"catalog_name": "Kafka", "table": "test.fakeTable"}},
            "table_identifier_rule: the table is FakeSource.test.fakeTable, not Kafka.test.fakeTable",
        ),
    ],
)
def test_a_broken_rule_names_the_rule_and_the_difference(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_catalog_table_rule(rule, "r").check(table_schema(), "sink[0].rules.catalog_table_rule")
    assert f"sink[0].rules.catalog_table_rule.{message}" in str(err.value) and "\n" not in str(err.value)


def test_a_table_without_keys_fails_key_rules_and_fields_form_columns_match_defaults() -> None:
    plain = table_schema({"fields": {"c_0": "map<string, {c_int=int\nc_string=string}>"}})
    column_rule = parse_catalog_table_rule(
        {"column_rule": [{"name": "c_0", "type": "map<string, {c_int=int,c_string=string}>"}]}, "r"
    )
    column_rule.check(plain, "x")  # SeaTunnel's fake_generic_row_type_to_assert.conf: length 0, nullable
    with pytest.raises(ConfigError, match="has no primary key"):
        parse_catalog_table_rule({"primary_key_rule": {"primary_key_columns": ["c_0"]}}, "r").check(plain, "x")


@pytest.mark.parametrize(
    "block, message",
    [
        (
            {**BLOCK, "primaryKey": {"name": "pk", "columnNames": ["nope"]}},
            "schema.primaryKey.columnNames: no column 'nope'",
        ),
        (
            {**BLOCK, "constraintKeys": [{"constraintName": "u", "constraintType": "CHECK", "constraintColumns": []}]},
            "schema.constraintKeys[0].constraintType: 'CHECK' is not one of",
        ),
    ],
)
def test_bad_table_declarations_are_one_line(block: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_table_metadata(block, "FakeSource")
    assert message in str(err.value)


def _job(rule: dict[str, Any], transform: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "env": {"job.mode": "BATCH"},
        "source": [{"plugin_name": "FakeSource", "row.num": 1, "schema": BLOCK}],
        "transform": transform or [],
        "sink": [{"plugin_name": "Assert", "rules": {"catalog_table_rule": rule}}],
    }


def test_assert_checks_the_fake_sources_table_before_the_job_starts() -> None:
    from airflow_provider_seatunnel_ckpt.engine.job_check import check_job
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    check_job(load_job(_job(RULE)))
    with pytest.raises(ConfigError) as err:
        check_job(load_job(_job({"primary_key_rule": {"primary_key_name": "other"}})))
    assert str(err.value).startswith("sink[0].rules.catalog_table_rule.primary_key_rule: the primary key is named 'pk'")
    with pytest.raises(ConfigError, match="a transform between passes on the columns only"):
        check_job(
            load_job(
                _job(
                    {"primary_key_rule": {"primary_key_name": "pk"}},
                    [{"plugin_name": "FieldMapper", "field_mapper": {"id": "id", "name": "name"}}],
                )
            )
        )
