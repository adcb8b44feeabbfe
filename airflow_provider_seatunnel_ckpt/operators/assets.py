"""The Airflow Asset a job's sink writes, so downstream DAGs can be scheduled on its output.

A sink's location is usually templated (a path per logical date), so it is known only
when the task runs. The operator therefore declares an ``AssetAlias`` as its outlet when
the DAG is parsed (``seatunnel-ckpt/<dag_id>.<task_id>``: a downstream DAG schedules on
it) and, when a run finishes the job, adds the concrete ``Asset`` of the rendered sink to
it, with the job id and final checkpoint as the event's extra. The URIs come from
:mod:`.datasets`, which names OpenLineage datasets the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .datasets import sink_datasets


def alias_name(dag_id: str | None, task_id: str) -> str:
    return f"seatunnel-ckpt/{dag_id}.{task_id}" if dag_id else f"seatunnel-ckpt/{task_id}"


def sink_asset_uri(sink: Mapping[str, Any]) -> str | None:
    """The Asset URI of a job's (rendered) sink entry, or None for a sink that writes no
    lasting output (``Console``) or one this does not know."""
    written = sink_datasets(sink)
    return written[0].uri if written else None
