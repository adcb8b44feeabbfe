"""Running a job file's connectors in-process, as its subtasks would, without Spark: the
SeaTunnel compatibility tests use it to check many job files quickly (the integration and
chaos suites run some of them under real Spark)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, assign_splits, close_all, iter_batches
from airflow_provider_seatunnel_ckpt.engine.composite import SinkGroup
from airflow_provider_seatunnel_ckpt.engine.routing import (
    Router,
    bind_schemas,
    load_sinks,
    load_sources,
    load_transforms,
    one_sink,
    one_source,
)
from airflow_provider_seatunnel_ckpt.errors import ConnectorError, DataError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

#: SeaTunnel job files (by name) whose own test in SeaTunnel expects the job to fail, and the error it must fail with
EXPECTED_FAILURES = {
    "fake_to_assert_with_multitable_exception.conf": (
        DataError,
        "sink[0].rules.field_rules[0].field_value[0]: score = 200 breaks MAX 100",
    ),
    # the InMemory test sink's failure options (connectors/in_memory.py)
    "batch_last_checkpoint_error.conf": (DataError, "InMemory: write failed"),
    "stream_fake_to_inmemory_with_error.conf": (DataError, "InMemory: write failed"),
    "stream_fake_to_inmemory_with_error_retry_1.conf": (DataError, "InMemory: write failed"),
    "stream_fake_to_inmemory_with_throwable_error.conf": (DataError, "InMemory: java.lang.OutOfMemoryError"),
    "stream_fake_to_inmemory_with_runtime_list.conf": (ConnectorError, "InMemory: runtime error1"),
}


def run_in_process(path: Path, job_id: str = "compat", variables: Mapping[str, str] | None = None) -> int:
    """Run a job's connectors as its subtasks would (along its wiring), one epoch, and
    finish the job; return the rows its sinks got. ``variables``: as ``-i`` gives them."""
    job = load_job(path, variables)
    sources = load_sources(job.sources)
    transforms = load_transforms(job.transforms)
    sinks = load_sinks(job, sources)
    for connector in (*sources, *sinks):  # as the driver does before Spark starts
        connector.preflight()
    for sink, schema in zip(sinks, bind_schemas(job.graph, sources, transforms, sinks)):
        if schema is not None:
            sink.accepts(schema)
    source, sink = one_source(sources), one_sink(sinks)
    try:
        router = Router(job.graph, transforms, sinks, sources)
        origin = source.origin if len(sources) > 1 else (lambda split: 0)
        splits = source.splits(job.parallelism)
        infos, rows = [], 0
        for subtask in range(job.parallelism):
            writer = sink.create_writer(job_id, subtask, 0)
            writer.open(0)
            for split in assign_splits(splits, job.parallelism, subtask):
                state: dict[str, dict] = {}
                reader = source.create_reader(split, None, ReaderContext(subtask, job.parallelism))
                try:
                    for batch in iter_batches(reader):
                        for index, out in router.route(batch, origin(split), lambda i: state.setdefault(str(i), {})):  # noqa: B023 - called within this iteration
                            writer.write_to(index, out) if isinstance(sink, SinkGroup) else writer.write(out)
                            rows += out.num_rows
                finally:
                    reader.close()
            infos.append(writer.prepare_commit(1))
        committer = sink.create_committer(job_id)
        committer.commit([info for info in infos if info is not None])
        committer.job_finished(None)
        return rows
    finally:
        # as a subtask does (engine/subtask.py): a Kafka source's consumer left open polls
        # its broker, and logs each refused connection, after the test has stopped it
        close_all([source, sink])
