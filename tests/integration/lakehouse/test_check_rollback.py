"""``SinkCommitter.check_rollback`` of the table sinks, on real local tables (pyiceberg,
delta-rs): a restore older than the job's newest table commit is refused while nothing
has changed, by a method that only reads; the runner calls it before it deletes the
newer checkpoints (issue 30, item 3)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.errors import ConfigError

from .conftest import Warehouse, ids_batch
from .formats import FORMATS, data_files, new_sink


@pytest.fixture(params=sorted(FORMATS))
def table_format(request: pytest.FixtureRequest) -> Any:
    return FORMATS[request.param]


def table_state(table_format: Any, sink: Any, job_id: str) -> tuple[Any, ...]:
    table = sink.load_table()
    version = table.metadata_location if table_format.name == "iceberg" else table.version()
    return version, table_format.commits(sink, job_id), table_format.ids(sink), data_files(table_format, sink)


def test_check_rollback_refuses_an_older_restore_and_changes_nothing(
    table_format: Any, local_warehouse: Warehouse
) -> None:
    sink = new_sink(table_format, local_warehouse)
    writer = sink.create_writer("job-k", 0, 0)
    committer = sink.create_committer("job-k")
    committer.check_rollback(0, [])  # no table yet: nothing to refuse
    for checkpoint in (1, 2):
        writer.write(ids_batch(checkpoint * 10, checkpoint * 10 + 10))
        committer.commit([writer.prepare_commit(checkpoint)])
    before = table_state(table_format, sink, "job-k")

    committer.check_rollback(2, [])  # the newest commit itself, or newer: accepted
    committer.check_rollback(3, [])
    for restored, newer in ((1, [2]), (0, [1, 2])):
        with pytest.raises(ConfigError) as err:
            committer.check_rollback(restored, newer)
        assert err.value.key == "--restore"
        assert "checkpoint 2 of job job-k" in err.value.problem
        assert f"restoring checkpoint {restored}:" in err.value.problem
    with pytest.raises(ConfigError):  # rollback refuses the same way
        committer.rollback(1)
    assert table_state(table_format, sink, "job-k") == before
    # another job in the same table is not held back by this job's commits
    sink.create_committer("job-other").check_rollback(0, [1])

    # --discard-existing: the fresh run starts from nothing, and the rows stay
    committer.discard_job()
    committer.check_rollback(0, [])
    assert table_format.ids(sink) == before[2]
