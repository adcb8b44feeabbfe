"""InMemory: SeaTunnel's e2e test sink; rows counted, its failure options fail the job
with a message naming the sink, its options checked (SeaTunnel's own job files with it run
in tests/unit/test_seatunnel_jobs.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.in_memory import InMemorySink
from airflow_provider_seatunnel_ckpt.errors import ConfigError, ConnectorError, DataError

BATCH = pa.RecordBatch.from_pylist([{"id": i} for i in range(5)])


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(InMemorySink, "exception_sleep_s", 0.0)
    monkeypatch.setattr(InMemorySink, "checkpoint_sleep_s", 0.0)


def sink(**options) -> InMemorySink:
    return load_sink({"plugin_name": "InMemory", **options}, "sink[0]")


def test_registered_case_insensitively():
    assert isinstance(load_sink({"plugin_name": "inmemory"}, "sink[0]"), InMemorySink)


def test_counts_rows_per_epoch_and_drops_them_at_the_barrier():
    s = sink(checkpoint_sleep=True)
    writer = s.create_writer("j", 2, 0)
    writer.open(0)
    writer.write(BATCH)
    writer.write(BATCH)
    assert writer.rows == 10 and len(writer.batches) == 2
    info = writer.prepare_commit(1)
    assert info == {"subtask": 2, "checkpoint": 1, "rows": 10}
    assert writer.batches == [] and writer.prepare_commit(2) is None  # an idle epoch commits nothing
    writer.write(BATCH)
    assert writer.total_rows == 15
    writer.close()
    assert writer.batches == []
    committer = s.create_committer("j")
    committer.start_fresh()
    committer.commit([info])
    committer.commit([info])  # replayed on restore: counted once
    assert committer.committed == {(1, 2): 10}
    committer.cleanup([])
    committer.rollback(0)
    assert committer.committed == {}


def test_throw_exception_fails_at_prepare_commit():
    writer = sink(throw_exception=True).create_writer("j", 0, 0)
    writer.write(BATCH)
    with pytest.raises(DataError, match=r"^InMemory: write failed \(throw_exception = true"):
        writer.prepare_commit(1)


def test_throw_out_of_memory_fails_the_first_write():
    with pytest.raises(DataError, match=r"^InMemory: java.lang.OutOfMemoryError .*throw_out_of_memory"):
        sink(throw_out_of_memory="true").create_writer("j", 0, 0).write(BATCH)


def test_committer_exception():
    committer = sink(throw_exception_of_committer=True).create_committer("j")
    with pytest.raises(DataError, match=r"^InMemory: commit failed"):
        committer.commit([{"subtask": 0, "checkpoint": 1, "rows": 1}])


def test_runtime_exception_list_names_the_entry_of_the_attempt():
    s = sink(throw_runtime_exception_list=["e1", "e2", "e3"])
    for attempt, message in [(0, "e1"), (1, "e2"), (2, "e3"), (7, "e3")]:
        with pytest.raises(ConnectorError, match=rf"^InMemory: {message} \(throw_runtime_exception_list"):
            s.create_writer("j", 0, attempt).write(BATCH)


def test_assert_options():
    sink(assert_options_key="a", assert_options_value="a")
    with pytest.raises(
        ConfigError, match=r"^sink\[0\]\.assert_options_key: assert key and value not match! key = a, value = b"
    ):
        sink(assert_options_key="a", assert_options_value="b")
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.assert_options_value: is required"):
        sink(assert_options_key="a")


def test_unfilled_placeholders_match_anything_with_a_warning(caplog):
    sink(assert_options_key="t=x, pk=${primary_key}", assert_options_value="t=x, pk=id,name")
    assert "${primary_key}" in caplog.text
    with pytest.raises(ConfigError, match="assert key and value not match"):
        sink(assert_options_key="t=y, pk=${primary_key}", assert_options_value="t=x, pk=id,name")


@pytest.mark.parametrize(
    "options, key",
    [
        ({"throw_exception": "maybe"}, "throw_exception"),
        ({"checkpoint_sleep": 5}, "checkpoint_sleep"),
        ({"throw_runtime_exception_list": "boom"}, "throw_runtime_exception_list"),
        ({"throw_runtime_exception_list": []}, "throw_runtime_exception_list"),
        ({"no_such_option": 1}, "no_such_option"),
    ],
)
def test_bad_options_name_the_key(options, key):
    with pytest.raises(ConfigError) as err:
        sink(**options)
    assert str(err.value).startswith(f"sink[0].{key}:") and "\n" not in str(err.value)
