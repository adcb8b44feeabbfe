"""Runs of a job without Spark: the runner's own claim and restore (``JobRun.claim``, as the
simulation drives it), the driver's own ``_metadata`` write (``DriverLoop._persist``), and
epochs written by the job's real sinks along its wiring, as one subtask would write them.

The sink-identity tests (issue 47, defect 5) use it to checkpoint a job with one set of
sink blocks and restore it with another, then finish it and count every id in each sink.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.connectors.api import TABLE_KEY
from airflow_provider_seatunnel_ckpt.engine.completed import CompletedCheckpoint, SubtaskSnapshot
from airflow_provider_seatunnel_ckpt.engine.completed_store import wall_ms
from airflow_provider_seatunnel_ckpt.engine.composite import SinkGroup
from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop
from airflow_provider_seatunnel_ckpt.engine.messages import AckStats, CheckpointKind, StateHandle
from airflow_provider_seatunnel_ckpt.engine.routing import Router, load_sinks, load_sources, one_sink
from airflow_provider_seatunnel_ckpt.engine.runner import PIPELINE_ID, JobRun, RunRequest
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

JOB_ID = "identity"


def checkpoint_config(root: Path) -> Any:
    storage = {
        "type": "hdfs",
        "plugin-config": {"storage.type": "hdfs", "fs.defaultFS": "file:///", "namespace": f"{root}/checkpoints/"},
    }
    return load_config({"seatunnel": {"engine": {"checkpoint": {"interval": 1000, "storage": storage}}}})


class ClaimedRun:
    """One driver run of a job of one subtask, from its claim on."""

    def __init__(
        self, root: Path, sinks: Sequence[Mapping[str, Any]], source: Mapping[str, Any] | None = None, **request: Any
    ):
        # every sink reads the source's table (SeaTunnel's wiring by table name)
        self.job = load_job(
            {
                "env": {"job.name": JOB_ID, "parallelism": 1},
                "source": [{"plugin_output": "rows", **(source or {"plugin_name": "Sequence", "rows": 1})}],
                "sink": [{"plugin_input": "rows", **s} for s in sinks],
            }
        )
        self.sinks = load_sinks(self.job, load_sources(self.job.sources))
        for sink in self.sinks:  # as the runner does before it claims (a Jdbc sink's commit log)
            sink.preflight()
        self.sink = one_sink(self.sinks)
        self.committer = self.sink.create_committer(JOB_ID)
        self.lines: list[str] = []
        self.run = JobRun(
            RunRequest(job=self.job, config=checkpoint_config(root), job_id=JOB_ID, **request),
            progress=self.lines.append,
        )
        self.manifest: Any = None
        self.highest = 0

    def claim(self) -> ClaimedRun:
        """Claim the job and restore its latest checkpoint, sink output included."""
        self.manifest, self.highest, _ = self.run.claim("token", self.sink, self.committer)
        return self

    def epoch(self, checkpoint_id: int, ids: Iterable[int], tables: Sequence[str | None] = (None,)) -> Any:
        """The subtask's epoch ending at ``checkpoint_id``: ``ids`` of each table, through the
        job's wiring into its sinks, pre-committed; returns the commit info."""
        writer = self.sink.create_writer(JOB_ID, 0, 0)
        writer.open(self.manifest.checkpoint_id if self.manifest is not None else 0)
        router = Router(self.job.graph, [], self.sinks)
        values = list(ids)
        for table in tables:
            schema = pa.schema([("id", pa.int64())], metadata={TABLE_KEY: table.encode()} if table else None)
            batch = pa.record_batch([pa.array(values, pa.int64())], schema=schema)
            for index, out in router.route(batch, 0, lambda i: {}):
                writer.write_to(index, out) if isinstance(self.sink, SinkGroup) else writer.write(out)
        info = writer.prepare_commit(checkpoint_id)
        writer.close()
        return info

    def complete(self, checkpoint_id: int, info: Any) -> None:
        """Write checkpoint ``checkpoint_id``'s ``_metadata`` as the driver does (the epoch's
        commit info in it); its output is not committed yet."""
        loop = DriverLoop(
            self.run.coordinator(self.manifest, self.highest),
            self.run.store,
            self.committer,
            self.run.fence,
            properties={"job_name": JOB_ID, "attempt": self.run.attempt_number},
            sinks=self.run.sink_layout,
        )
        snapshot = SubtaskSnapshot(
            subtask=0,
            attempt=0,
            state_handles=(StateHandle.of_bytes(b"{}"),),
            sink_commit_info=[[checkpoint_id, info]] if info is not None else None,
            stats=AckStats(),
        )
        try:
            loop._persist(
                CompletedCheckpoint(PIPELINE_ID, checkpoint_id, CheckpointKind.CHECKPOINT, 0, 0, (snapshot,)), wall_ms()
            )
            event = loop.events.get_nowait()
            assert event[0] == "persisted", event
        finally:
            loop._io.shutdown()
            loop._fence_io.shutdown()

    def finish(self, checkpoint_id: int, info: Any) -> None:
        """The final checkpoint: completed, committed, the staging cleaned up."""
        self.complete(checkpoint_id, info)
        self.committer.commit([info] if info is not None else [])
        self.committer.cleanup([info] if info is not None else [])
