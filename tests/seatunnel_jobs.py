"""Running a job file's connectors in-process, as its subtasks would, without Spark: the
SeaTunnel compatibility tests use it to check many job files quickly (the integration and
chaos suites run some of them under real Spark)."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source, load_transform
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, assign_splits, iter_batches
from airflow_provider_seatunnel_ckpt.engine.job import load_job


def run_in_process(path: Path, job_id: str = "compat") -> int:
    """Run a job's connectors as its subtasks would, one epoch, and finish the job; return
    the rows the sink got."""
    job = load_job(path)
    source = load_source(job.source, "source[0]")
    transforms = [load_transform(t, f"transform[{i}]") for i, t in enumerate(job.transforms)]
    sink = load_sink(job.sink, "sink[0]")
    schema = source.produced_schema()
    for transform in transforms:
        schema = transform.output_schema(schema)
    if schema is not None:
        sink.accepts(schema)
    splits = source.splits(job.parallelism)
    infos, rows = [], 0
    for subtask in range(job.parallelism):
        writer = sink.create_writer(job_id, subtask, 0)
        writer.open(0)
        for split in assign_splits(splits, job.parallelism, subtask):
            for batch in iter_batches(source.create_reader(split, None, ReaderContext(subtask, job.parallelism))):
                for transform in transforms:
                    batch = transform.process(batch, {} if transform.stateful else None)
                    if batch is None:
                        break
                if batch is not None and batch.num_rows:
                    writer.write(batch)
                    rows += batch.num_rows
        infos.append(writer.prepare_commit(1))
    committer = sink.create_committer(job_id)
    committer.commit([info for info in infos if info is not None])
    committer.job_finished(None)
    return rows
