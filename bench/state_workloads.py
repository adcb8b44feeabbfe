"""Bench-only stateful workload: a transform whose checkpointed state is N bytes per subtask.

``BenchState`` (a stateful ``Transform``, see connectors/api.py) keeps, in the state
of every split it sees, a ``blob``: a string of exactly ``state_bytes`` characters, the
base64 text of pseudo-random bytes seeded by the subtask index. So the state is random (it
compresses no better than base64 of random bytes does, ~75 %), fixed for a split across
checkpoints (as the issue asks: a big operator state that does not change), and costs
nothing per row: ``process`` returns the batch unchanged and only bumps a counter (so
every snapshot's bytes still differ a little, as a live operator's would). With the
``Sequence`` source and ``splits = parallelism`` each subtask owns one split, so each
subtask's snapshot is ``state_bytes`` plus ~100 bytes of JSON envelope.

The engine looks connectors up by name in a per-process registry, so the module must be
imported in the driver *and* in every executor Python worker. ``register()`` does it in
the driver; for the workers the bench sets Spark's ``spark.python.daemon.module`` to
this module (with the repository root on ``PYTHONPATH``): run as ``__main__`` it
registers the transform and then hands over to ``pyspark.daemon``, whose forked workers
inherit the registry. (docs/jobs.md: "The module that registers a custom connector must
be imported on the driver and on the executors".)
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_provider_seatunnel_ckpt.connectors import register_transform
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, Transform
from airflow_provider_seatunnel_ckpt.connectors.options import Options

PLUGIN_NAME = "BenchState"
#: the ``spark.python.daemon.module`` value that makes executors know ``BenchState``
DAEMON_MODULE = "bench.state_workloads"


def random_text(n: int, seed: int) -> str:
    """``n`` characters of base64 text of seeded pseudo-random bytes (no per-byte Python)."""
    if n <= 0:
        return ""
    raw = np.random.default_rng(seed).bytes(n * 3 // 4 + 3)
    return base64.b64encode(raw)[:n].decode("ascii")


class BenchStateTransform(Transform):
    """Pass-through transform holding ``state_bytes`` of fixed random state per split."""

    plugin_name = PLUGIN_NAME
    stateful = True

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = Options(self.plugin_name, options, known={"state_bytes", "seed"})
        self.state_bytes: int = opts.int("state_bytes", minimum=0)
        self.seed: int = opts.int("seed", 0, minimum=0)
        self.subtask = -1
        self._splits_seen = 0

    def open(self, context: ReaderContext) -> None:
        self.subtask = context.subtask

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        if split_state is None:
            raise ValueError("BenchState is stateful: the runtime must pass the split's state")
        blob = split_state.get("blob")
        if not isinstance(blob, str) or len(blob) != self.state_bytes:
            # once per split (or after a restore with another size): fixed per subtask and
            # per split of the subtask (the n-th split this instance saw)
            self._splits_seen += 1
            seed = zlib.crc32(f"{self.seed}/{self.subtask}/{self._splits_seen}".encode())
            split_state["blob"] = random_text(self.state_bytes, seed)
        split_state["batches"] = int(split_state.get("batches", 0)) + 1
        return batch


def register() -> None:
    """Make ``BenchState`` known in this process (idempotent)."""
    register_transform(PLUGIN_NAME, f"{DAEMON_MODULE}:BenchStateTransform")


def job_document(
    *,
    name: str,
    state_bytes: int,
    rows_per_second: int,
    batch_size: int,
    rows: int,
    parallelism: int = 2,
    interval_ms: int = 100,
    timeout_ms: int = 120_000,
) -> dict[str, Any]:
    """The job (for ``jobfile.job.load_job``): Sequence -> BenchState -> Console (counts only)."""
    return {
        "env": {
            "job.name": name,
            "parallelism": parallelism,
            "checkpoint.interval": interval_ms,
            "checkpoint.timeout": timeout_ms,
            "batch_size": batch_size,
        },
        "source": [
            {
                "plugin_name": "Sequence",
                "rows": rows,
                "splits": parallelism,
                "batch_size": batch_size,
                "rows_per_second": rows_per_second,
            }
        ],
        "transform": [{"plugin_name": PLUGIN_NAME, "state_bytes": state_bytes}],
        "sink": [{"plugin_name": "Console", "limit": 0}],
    }


if __name__ == "__main__":  # spark.python.daemon.module: register, then be pyspark's daemon
    register()
    from pyspark.daemon import manager

    manager()
