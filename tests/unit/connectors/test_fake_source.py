"""FakeSource: SeaTunnel's row counts and splits, every type, repeatable values."""

from __future__ import annotations

import datetime as dt
import decimal
import threading
import time
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, assign_splits, iter_batches
from airflow_provider_seatunnel_ckpt.errors import ConfigError

SCHEMA = {"fields": {"id": "bigint", "name": "string"}}


def fake(**options: Any) -> Any:
    return load_source({"plugin_name": "FakeSource", "schema": SCHEMA, **options}, "source[0]")


def read_all(source: Any, parallelism: int) -> list[pa.RecordBatch]:
    splits = source.splits(parallelism)
    return [
        batch
        for subtask in range(parallelism)
        for split in assign_splits(splits, parallelism, subtask)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(subtask, parallelism)))
    ]


def test_row_num_is_per_reader_cut_into_split_num_splits_as_in_seatunnel() -> None:
    source = fake(**{"row.num": 10, "split.num": 4})
    splits = source.splits(2)
    assert [(s.split_id, s.spec["rows"]) for s in splits] == [
        ("fake-00000-00000", 3),
        ("fake-00001-00000", 3),
        ("fake-00000-00001", 3),
        ("fake-00001-00001", 3),
        ("fake-00000-00002", 3),
        ("fake-00001-00002", 3),
        ("fake-00000-00003", 1),
        ("fake-00001-00003", 1),
    ]
    # dealt by position, reader r's splits go to subtask r
    assert {s.spec["reader"] for s in assign_splits(splits, 2, 1)} == {1}
    assert sum(b.num_rows for b in read_all(source, 2)) == 20
    # its own parallelism decides the readers, whatever the pipeline runs with
    assert sum(b.num_rows for b in read_all(fake(**{"row.num": 7, "parallelism": 3}), 1)) == 21
    assert fake(**{"row.num": 5, "split.num": 4}).splits(1)[-1].spec["rows"] == 1  # 2, 2, 1: three splits
    assert len(fake(**{"row.num": 5, "split.num": 4}).splits(1)) == 3
    assert fake(**{"row.num": 0}).splits(2) == []


def test_values_are_the_same_however_the_split_is_resumed() -> None:
    source = fake(**{"row.num": 10_000})
    (split,) = source.splits(1)
    whole = pa.Table.from_batches(list(iter_batches(source.create_reader(split, None, ReaderContext(0, 1, 1000)))))
    resumed = pa.Table.from_batches(list(iter_batches(source.create_reader(split, 4321, ReaderContext(0, 1, 777)))))
    assert whole.num_rows == 10_000 and resumed.to_pylist() == whole.slice(4321).to_pylist()
    again = fake(**{"row.num": 10_000})
    assert pa.Table.from_batches(read_all(again, 1)).to_pylist() == whole.to_pylist()
    assert len(set(whole.column("name").to_pylist())) > 9_000  # random, not one value repeated


def test_every_seatunnel_type_gets_values_of_its_arrow_type() -> None:
    fields = {
        "s": "string",
        "b": "boolean",
        "t": "tinyint",
        "sm": "smallint",
        "i": "int",
        "l": "bigint",
        "f": "float",
        "d": "double",
        "dec": "decimal(30, 8)",
        "n": "null",
        "by": "bytes",
        "da": "date",
        "ti": "time",
        "ts": "timestamp",
        "arr": "array<int>",
        "m": "map<string, array<int>>",
        "r": {"a": "int", "b": {"c": "string"}},
    }
    source = load_source(
        {
            "plugin_name": "FakeSource",
            "row.num": 50,
            "string.length": 7,
            "array.size": 3,
            "map.size": 2,
            "bytes.length": 4,
            "schema": {"fields": fields},
        },
        "source[0]",
    )
    (batch,) = read_all(source, 1)
    assert batch.schema == source.produced_schema()
    row = batch.to_pylist()[0]
    assert len(row["s"]) == 7 and row["s"].isalpha() and len(row["by"]) == 4
    assert isinstance(row["dec"], decimal.Decimal) and row["dec"].as_tuple().exponent == -8
    assert row["n"] is None and len(row["arr"]) == 3 and 1 <= len(row["m"]) <= 2
    assert row["da"].year == dt.date.today().year and 1 <= row["da"].day <= 28
    assert isinstance(row["ts"], dt.datetime) and row["ts"].microsecond == 0
    assert set(row["r"]) == {"a", "b"} and isinstance(row["r"]["b"]["c"], str)
    assert batch.column("t").type == pa.int8() and min(batch.column("t").to_pylist()) >= 0
    assert sum(column.null_count for column in batch.columns) == 50  # only the null column: no random nulls


def test_ranges_and_templates_bound_the_values() -> None:
    source = load_source(
        {
            "plugin_name": "FakeSource",
            "row.num": 300,
            "int.min": 5,
            "int.max": 8,
            "string.template": ["x", "y"],
            "date.year.template": [2020],
            "double.min": 1,
            "double.max": 2,
            "schema": {"fields": {"i": "int", "s": "string", "d": "date", "x": "double"}},
        },
        "source[0]",
    )
    rows = pa.Table.from_batches(read_all(source, 1)).to_pylist()
    assert {r["i"] for r in rows} == {5, 6, 7}  # the upper bound is exclusive, as in SeaTunnel
    assert {r["s"] for r in rows} == {"x", "y"} and {r["d"].year for r in rows} == {2020}
    assert all(1 <= r["x"] < 2 for r in rows)


def test_explicit_rows_are_emitted_by_every_split_and_converted_by_seatunnel_rules() -> None:
    source = load_source(
        {
            "plugin_name": "FakeSource",
            "split.num": 2,
            "row.num": 4,
            "schema": {
                "fields": {
                    "id": "int",
                    "d": "date",
                    "ts": "timestamp",
                    "dec": "decimal(10, 2)",
                    "by": "bytes",
                    "m": "map<string, int>",
                    "r": "{x = int, y = string}",
                }
            },
            "rows": [
                {
                    "kind": "INSERT",
                    "fields": [1, "2024/01/02", "2024-01-02T03:04:05.5", "9.5", "bWlJWmo=", {"k": "7"}, [3, "z"]],
                },
                {"kind": "INSERT", "fields": {"id": "2"}},
            ],
        },
        "source[0]",
    )
    rows = pa.Table.from_batches(read_all(source, 1)).to_pylist()
    assert len(rows) == 4  # the two rows, once per split
    assert rows[0] == {
        "id": 1,
        "d": dt.date(2024, 1, 2),
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 500000),
        "dec": decimal.Decimal("9.50"),
        "by": b"miIZj",
        "m": [("k", 7)],
        "r": {"x": 3, "y": "z"},
    }
    assert rows[1] == {"id": 2, "d": None, "ts": None, "dec": None, "by": None, "m": None, "r": None}


def test_columns_form_keeps_its_lengths_and_defaults() -> None:
    source = load_source(
        {
            "plugin_name": "FakeSource",
            "row.num": 3,
            "schema": {
                "columns": [
                    {"name": "id", "type": "bigint", "nullable": False},
                    {"name": "name", "type": "string", "columnLength": 4},
                    {"name": "empty", "type": "string"},  # no columnLength: SeaTunnel's columns form gives ""
                    {"name": "country", "type": "string", "defaultValue": "NL"},
                ]
            },
        },
        "source[0]",
    )
    rows = pa.Table.from_batches(read_all(source, 1)).to_pylist()
    assert [len(r["name"]) for r in rows] == [4, 4, 4] and {r["empty"] for r in rows} == {""}
    assert {r["country"] for r in rows} == {"NL"}
    assert source.produced_schema().field("id").nullable is False


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "source[0].schema: is required for FakeSource (its fields or columns)"),
        (
            {"schema": SCHEMA, "int.min": -1},
            "source[0].int.min: should >= 0 and <= 2.14748e+09, got -1 (as in SeaTunnel)",
        ),
        (
            {"schema": SCHEMA, "string.fake.mode": "template"},
            "source[0].string.template: is required when string.fake.mode is template",
        ),
        (
            {"schema": SCHEMA, "rows": [{"kind": "delete", "fields": [1]}]},
            "source[0].rows[0].kind: 'delete' is not a row kind (one of INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE)",
        ),
        (
            {"schema": SCHEMA, "tables_configs": []},
            "source[0].tables_configs: expected a list of table blocks, each with its own options and schema",
        ),
        (
            {"schema": {"fields": {"x": "decimal"}}},
            "source[0].schema.fields.x: decimal needs its precision and scale, e.g. decimal(10, 2)",
        ),
        (
            {"schema": SCHEMA, "rows": [{"fields": ["not a number"]}]},
            "source[0].rows[0].fields.id: 'not a number' is not a int64 value: invalid literal for int() with base 10: 'not a number'",
        ),
        ({"schema": SCHEMA, "row_num": 3}, "source[0].row_num: unknown option for FakeSource"),
    ],
)
def test_bad_options_are_one_line_naming_the_key(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_source({"plugin_name": "FakeSource", **options}, "source[0]")
    assert str(err.value).startswith(message)


def test_options_seatunnel_ignores_are_accepted_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    fake(**{"split.row": 3, "smalling.fake.mode": "range"})
    assert "option split.row is not read by SeaTunnel's FakeSource either; ignored" in caplog.text


class _Clock:
    """time.monotonic and time.sleep of fake_source, on a clock that only sleeps move."""

    def __init__(self) -> None:
        self.now, self.slept = 100.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


def test_split_read_interval_runs_from_one_split_read_to_the_next_and_not_after_a_restore(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow_provider_seatunnel_ckpt.connectors import api, fake_source

    clock = _Clock()
    monkeypatch.setattr(fake_source, "time", clock)
    monkeypatch.setattr(api, "time", clock)  # the pause: ReaderContext.pause
    source = fake(**{"row.num": 30, "split.num": 3, "split.read-interval": 1000})
    first, second, third = assign_splits(source.splits(1), 1, 0)

    def read(split: Any) -> None:
        list(iter_batches(source.create_reader(split, None, ReaderContext(0, 1))))

    # A reader (re)started at its second split, as after a restore from a checkpoint, reads
    # it at once: SeaTunnel's reader waits the interval from its own last read, none yet.
    read(second)
    assert clock.slept == []
    clock.now += 0.25  # the split's rows went downstream
    read(third)  # the interval counts from the last split's read, not from its end
    assert clock.slept == [0.75]
    clock.now += 2.0  # slower than the interval: no pause at all
    read(first)
    assert clock.slept == [0.75]


def test_a_barrier_ends_the_read_interval_and_the_split_waits_for_the_rest_of_it() -> None:
    """A barrier does not wait for FakeSource's pause between splits: the engine sets the
    context's interrupt, the reader returns an empty batch at once (nothing read, its
    position unchanged) and keeps its place in the interval for the next ask."""
    source = fake(**{"row.num": 20, "split.num": 2, "split.read-interval": 60_000})
    first, second = assign_splits(source.splits(1), 1, 0)
    barrier = threading.Event()
    context = ReaderContext(0, 1, interrupt=barrier)
    assert sum(b.num_rows for b in iter_batches(source.create_reader(first, None, context))) == 10
    reader = source.create_reader(second, None, context)
    barrier.set()  # a barrier arrives while the second split waits its turn (a minute)
    started = time.monotonic()
    empty = reader.read_batch()
    assert time.monotonic() - started < 5
    assert empty is not None and empty.num_rows == 0 and empty.schema == source.schema
    assert reader.position() == 0
    # the barrier taken, the turn comes only once the rest of the interval has passed
    barrier.clear()
    source.read_interval_ms = 200
    batch = reader.read_batch()
    assert batch is not None and batch.num_rows == 10 and reader.position() == 10


def test_outside_the_engine_a_pause_is_a_plain_sleep() -> None:
    context = ReaderContext(0, 1)
    started = time.monotonic()
    assert context.pause(0.05) is True and context.pause(0) is True
    assert time.monotonic() - started >= 0.05
    interrupt = threading.Event()
    interrupt.set()
    assert ReaderContext(0, 1, interrupt=interrupt).pause(30) is False
