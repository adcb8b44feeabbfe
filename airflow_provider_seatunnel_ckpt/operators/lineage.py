"""OpenLineage for a checkpointed job: its sources as inputs, its sinks as outputs.

Imported only by the operator's ``get_openlineage_facets_on_*`` methods, which the
OpenLineage provider calls when it is installed and configured; nothing here runs
otherwise. The datasets come from :mod:`.datasets` (the names Airflow assets use too),
and a run facet ``seatunnelCheckpoint`` says which job and checkpoint the run's output
belongs to, so a lineage consumer can tie a table version to the checkpoint that
committed it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attr
from airflow.providers.common.compat.openlineage.facet import InputDataset, OutputDataset, RunFacet
from airflow.providers.openlineage.extractors import OperatorLineage

from .datasets import sink_datasets, source_datasets


@attr.define
class SeatunnelCheckpointRunFacet(RunFacet):
    """The checkpoint job behind a run: its id, attempt, the checkpoint it resumed from and
    (on success) the final checkpoint whose commit made the output complete."""

    job_id: str
    status: str | None = None
    attempt: int | None = None
    restored_from: int | None = None
    final_checkpoint_id: int | None = None


def job_lineage(
    sources: Sequence[Mapping[str, Any]], sinks: Sequence[Mapping[str, Any]], run: Mapping[str, Any] | None
) -> OperatorLineage:
    inputs = [InputDataset(namespace=d.namespace, name=d.name) for s in sources for d in source_datasets(s)]
    outputs = [OutputDataset(namespace=d.namespace, name=d.name) for s in sinks for d in sink_datasets(s)]
    run_facets = {"seatunnelCheckpoint": SeatunnelCheckpointRunFacet(**run)} if run else {}
    return OperatorLineage(inputs=inputs, outputs=outputs, run_facets=run_facets)
