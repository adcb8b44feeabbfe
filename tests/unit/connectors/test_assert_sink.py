"""Assert: SeaTunnel's field and row rules, each passing and failing, with one-line messages."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.errors import ConfigError, DataError

BATCH = pa.RecordBatch.from_pylist(
    [
        {
            "id": 1,
            "name": "alpha",
            "score": 10.5,
            "d": dt.date(2024, 1, 2),
            "dec": decimal.Decimal("1.50"),
            "m": [("k", 1)],
            "r": {"x": 1, "y": "a"},
            "f": 3.1,
            "n": None,
        },
        {
            "id": 2,
            "name": "be",
            "score": 99.0,
            "d": dt.date(2024, 1, 2),
            "dec": decimal.Decimal("1.50"),
            "m": [("k", 1)],
            "r": {"x": 1, "y": "a"},
            "f": 3.1,
            "n": None,
        },
    ],
    schema=pa.schema(
        [
            ("id", pa.int32()),
            ("name", pa.string()),
            ("score", pa.float64()),
            ("d", pa.date32()),
            ("dec", pa.decimal128(10, 2)),
            ("m", pa.map_(pa.string(), pa.int32())),
            ("r", pa.struct([("x", pa.int32()), ("y", pa.string())])),
            ("f", pa.float32()),
            ("n", pa.null()),
        ]
    ),
)


def check(field: str, field_type: Any, *rules: dict[str, Any]) -> None:
    sink = load_sink(
        {
            "plugin_name": "Assert",
            "rules": {"field_rules": [{"field_name": field, "field_type": field_type, "field_value": list(rules)}]},
        },
        "sink[0]",
    )
    sink.accepts(BATCH.schema)
    sink.create_writer("j", 0, 0).write(BATCH)


@pytest.mark.parametrize(
    "field, field_type, rule",
    [
        ("id", "int", {"rule_type": "NOT_NULL"}),
        ("id", "int", {"rule_type": "MIN", "rule_value": 1}),
        ("id", "int", {"rule_type": "MAX", "rule_value": 2}),
        ("name", "string", {"rule_type": "MIN_LENGTH", "rule_value": 2}),
        ("name", "string", {"rule_type": "MAX_LENGTH", "rule_value": 5}),
        ("n", "null", {"rule_type": "NULL"}),
        ("d", "date", {"equals_to": "2024-01-02"}),
        ("dec", "decimal(10, 2)", {"equals_to": "1.5"}),
        ("m", "map<string, int>", {"equals_to": {"k": 1}}),
        ("r", {"x": "int", "y": "string"}, {"equals_to": [1, "a"]}),
        ("f", "float", {"equals_to": 3.1}),  # a float32 compares as a float32, as in SeaTunnel
    ],
)
def test_a_rule_that_holds_passes(field: str, field_type: Any, rule: dict[str, Any]) -> None:
    check(field, field_type, rule)


@pytest.mark.parametrize(
    "field, field_type, rule, message",
    [
        (
            "id",
            "int",
            {"rule_type": "MIN", "rule_value": 2},
            "sink[0].rules.field_rules[0].field_value[0]: id = 1 breaks MIN 2 (row {'id': 1, 'name': 'alpha'",
        ),
        (
            "id",
            "int",
            {"rule_type": "MAX", "rule_value": 1},
            "sink[0].rules.field_rules[0].field_value[0]: id = 2 breaks MAX 1",
        ),
        (
            "name",
            "string",
            {"rule_type": "MIN_LENGTH", "rule_value": 3},
            "field_value[0]: name = 'be' breaks MIN_LENGTH 3",
        ),
        (
            "name",
            "string",
            {"rule_type": "MAX_LENGTH", "rule_value": 4},
            "field_value[0]: name = 'alpha' breaks MAX_LENGTH 4",
        ),
        ("name", "string", {"rule_type": "MIN", "rule_value": 1}, "field_value[0]: name = 'alpha' breaks MIN 1"),
        ("id", "int", {"rule_type": "NULL"}, "field_value[0]: id = 1 breaks NULL"),
        (
            "d",
            "date",
            {"equals_to": "2024-01-03"},
            "field_value[0]: d = datetime.date(2024, 1, 2) breaks equals_to '2024-01-03'",
        ),
        ("m", "map<string, int>", {"equals_to": {"k": 2}}, "field_value[0]: m = [('k', 1)] breaks equals_to {'k': 2}"),
        (
            "r",
            {"x": "int", "y": "string"},
            {"equals_to": {"x": 1, "y": "b"}},
            "r = {'x': 1, 'y': 'a'} breaks equals_to",
        ),
    ],
)
def test_a_broken_rule_fails_naming_the_rule_field_value_and_row(
    field: str, field_type: Any, rule: dict[str, Any], message: str
) -> None:
    with pytest.raises(DataError) as err:
        check(field, field_type, rule)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "rules, message",
    [
        ({}, "sink[0].rules: no rule given (row_rules, field_rules, tables_configs, table-names, catalog_table_rule)"),
        (
            {"row_rules": [{"rule_type": "MAX_ROWS", "rule_value": 1}]},
            "sink[0].rules.row_rules[0].rule_type: 'MAX_ROWS' is not one of MIN_ROW, MAX_ROW",
        ),
        ({"row_rules": [{"rule_type": "MAX_ROW"}]}, "sink[0].rules.row_rules[0].rule_value: is required for MAX_ROW"),
        (
            {"field_rules": [{"field_name": "id", "field_value": [{}]}]},
            "sink[0].rules.field_rules[0].field_value[0]: needs rule_type or equals_to",
        ),
        (
            {
                "field_rules": [
                    {
                        "field_name": "id",
                        "field_type": "int",
                        "field_value": [{"rule_type": "MAX_ROW", "rule_value": 1}],
                    }
                ]
            },
            "sink[0].rules.field_rules[0].field_value[0].rule_type: 'MAX_ROW' is not one of NULL, NOT_NULL, MIN, MAX",
        ),
        (
            {"catalog_table_rule": {"primary_key": {}}},
            "sink[0].rules.catalog_table_rule.primary_key: unknown rule; known: primary_key_rule, constraint_key_rule",
        ),
    ],
)
def test_bad_rules_fail_when_the_job_is_loaded(rules: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_sink({"plugin_name": "Assert", "rules": rules}, "sink[0]")
    assert str(err.value).startswith(message)


def test_a_missing_column_or_another_type_fails_before_spark_starts() -> None:
    sink = load_sink(
        {
            "plugin_name": "Assert",
            "rules": {
                "field_rules": [{"field_name": "nope", "field_type": "int", "field_value": [{"rule_type": "NOT_NULL"}]}]
            },
        },
        "sink[0]",
    )
    with pytest.raises(
        ConfigError, match=r"^sink\[0\]\.rules\.field_rules\[0\]\.field_name: no column 'nope'; the rows have id, name"
    ):
        sink.accepts(BATCH.schema)
    sink = load_sink(
        {
            "plugin_name": "Assert",
            "rules": {
                "field_rules": [
                    {"field_name": "id", "field_type": "bigint", "field_value": [{"rule_type": "NOT_NULL"}]}
                ]
            },
        },
        "sink[0]",
    )
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.rules\.field_rules\[0\]\.field_type: id is int, not bigint$"):
        sink.accepts(BATCH.schema)


def test_row_rules_count_each_committed_epoch_once_and_check_at_the_end(caplog: pytest.LogCaptureFixture) -> None:
    sink = load_sink(
        {
            "plugin_name": "Assert",
            "rules": {
                "row_rules": [{"rule_type": "MIN_ROW", "rule_value": 4}, {"rule_type": "MAX_ROW", "rule_value": 4}]
            },
        },
        "sink[0]",
    )
    writers = [sink.create_writer("j", k, 0) for k in range(2)]
    infos = []
    for checkpoint in (1, 2):
        for writer in writers:
            writer.write(BATCH.slice(0, 1))
            infos.append(writer.prepare_commit(checkpoint))
    committer = sink.create_committer("j")
    committer.commit(infos[:2])
    committer.commit(infos)  # a replay on restore commits the same epochs again
    committer.job_finished(None)  # 4 rows: both hold
    committer.rollback(1)  # a restore of checkpoint 1 drops the epochs after it
    with pytest.raises(DataError, match=r"^sink\[0\]\.rules\.row_rules\[0\]: 2 rows break MIN_ROW 4$"):
        committer.job_finished(None)
    fresh = sink.create_committer("j")
    fresh.commit(infos[2:])
    fresh.job_finished(7)  # a run that restored cannot count the earlier runs' rows: says so
    assert "row_rules (MIN_ROW 4, MAX_ROW 4) not checked: this run restored checkpoint 7" in caplog.text


def test_a_null_breaks_a_typed_rule_as_in_seatunnel() -> None:
    sink = load_sink(
        {
            "plugin_name": "Assert",
            "rules": {
                "field_rules": [
                    {
                        "field_name": "name",
                        "field_type": "string",
                        "field_value": [{"rule_type": "MIN_LENGTH", "rule_value": 0}],
                    }
                ]
            },
        },
        "sink[0]",
    )
    batch = pa.RecordBatch.from_pylist([{"name": "a"}, {"name": None}])
    with pytest.raises(
        DataError,
        match=r"^sink\[0\]\.rules\.field_rules\[0\]: name = None breaks field_type string "
        r"\(row \{'name': None\}\)$",
    ):
        sink.create_writer("j", 0, 0).write(batch)
