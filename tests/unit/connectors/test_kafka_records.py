"""Kafka json records with map columns (Arrow's JSON reader has none: decoded in Python)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors.kafka.records import DecodeError, RecordDecoder
from airflow_provider_seatunnel_ckpt.connectors.seatunnel_types import parse_schema


class Message:
    def __init__(self, value: Any):
        self._value = value if isinstance(value, bytes) else json.dumps(value).encode()

    def value(self) -> bytes:
        return self._value


SCHEMA = parse_schema({"fields": {"id": "bigint", "tags": "map<string, string>", "nested": {"m": "map<string, int>"}}})


def test_map_columns_of_json_records_are_decoded_with_the_rest() -> None:
    decoder = RecordDecoder("json", SCHEMA, ",", skip_errors=False)
    batch = decoder.decode(
        [Message({"id": 1, "tags": {"a": "x", "b": "y"}, "nested": {"m": {"k": "2"}}, "other": 5}), Message({"id": 2})]
    ).batch
    assert batch.schema == SCHEMA
    assert batch.to_pylist() == [
        {"id": 1, "tags": [("a", "x"), ("b", "y")], "nested": {"m": [("k", 2)]}},
        {"id": 2, "tags": None, "nested": None},
    ]


def test_a_record_whose_map_is_not_an_object_is_a_decode_error_naming_its_position() -> None:
    decoder = RecordDecoder("json", SCHEMA, ",", skip_errors=False)
    with pytest.raises(DecodeError) as err:
        decoder.decode([Message({"id": 1, "tags": {}}), Message({"id": 2, "tags": [1, 2]})])
    assert err.value.index == 1 and "expected a mapping" in err.value.problem
    skipping = RecordDecoder("json", SCHEMA, ",", skip_errors=True)
    decoded = skipping.decode([Message({"id": 1, "tags": {}}), Message({"id": 2, "tags": [1, 2]})])
    assert decoded.skipped == [1] and decoded.batch.column("id").to_pylist() == [1]
    assert decoded.batch.column("tags").type == pa.map_(pa.string(), pa.string())


def test_a_poll_without_records_is_an_empty_batch_and_imports_no_pandas() -> None:
    """The source returns an empty batch from every poll that found nothing (each
    partition at its end): making it must not pull pandas into the worker."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from airflow_provider_seatunnel_ckpt.connectors.kafka.records import RecordDecoder\n"
        "from airflow_provider_seatunnel_ckpt.connectors.seatunnel_types import parse_schema\n"
        "schema = parse_schema({'fields': {'id': 'bigint', 'tags': 'map<string, string>'}})\n"
        "batch = RecordDecoder('json', schema, ',', skip_errors=False).decode([]).batch\n"
        "assert batch.num_rows == 0 and batch.schema == schema, batch\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_collector_is_paused_only_inside_a_poll_and_restored_as_it_was() -> None:
    import gc

    from airflow_provider_seatunnel_ckpt.connectors.kafka.shared_consumer import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a poll that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # someone else's choice stays
    finally:
        gc.enable()


class RawMessage(Message):
    def __init__(self, value: bytes | None):
        self._value = value  # type: ignore[assignment]


def test_tombstones_and_line_breaks_are_decode_errors_naming_the_record() -> None:
    """The poll's values are checked joined (in C); the record at fault is still named."""
    schema = parse_schema({"fields": {"id": "bigint"}})
    poll = [b'{"id": 1}', b'{"id":\n 2}', None, b'{"id": 4}', b'{"id": 5}\r', b'{"id": 6}']
    decoder = RecordDecoder("json", schema, ",", skip_errors=False)
    with pytest.raises(DecodeError) as err:
        decoder.decode([RawMessage(v) for v in poll])
    assert (err.value.index, err.value.problem) == (1, "the value holds a line break")
    with pytest.raises(DecodeError) as err:
        decoder._parse([b'{"id": 1}', None])
    assert (err.value.index, err.value.problem) == (1, "the record has no value (a tombstone)")
    skipping = RecordDecoder("json", schema, ",", skip_errors=True)
    decoded = skipping.decode([RawMessage(v) for v in poll])
    assert decoded.skipped == [1, 2, 4] and decoded.batch.column("id").to_pylist() == [1, 4, 6]
    clean = decoder.decode([RawMessage(b'{"id": %d}' % i) for i in range(1000)])
    assert clean.skipped == [] and clean.batch.column("id").to_pylist() == list(range(1000))
