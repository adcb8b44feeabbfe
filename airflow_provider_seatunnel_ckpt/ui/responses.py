"""What the view's JSON routes answer, from a ``History`` (no Airflow here: the benchmark
times these with the reader, as the api-server runs them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..history import CheckpointEntry, History
from ..history.text import entry_json, to_json
from ..jobfile.secret_keys import mask_secrets

#: completed checkpoints the charts show (the newest); the table pages through all
CHART_POINTS = 1000


def history_page(found: History, location: str, config: Mapping[str, Any], page: int, per_page: int) -> dict[str, Any]:
    """The job, its attempts, the summary and charts, and one page of the history (newest
    first): ``seatunnel-ckpt history --json``'s shape, paged, plus the chart series and the
    configuration (shown with its secrets masked, again: it was masked when recorded)."""
    completed = [c for c in found.checkpoints if c.status == "completed"][:CHART_POINTS]
    return {
        **to_json(found, limit=0),
        "location": location,
        "total": len(found.checkpoints),
        "page": page,
        "per_page": per_page,
        "checkpoints": [entry_json(c, subtasks=False) for c in found.page(page, per_page)],
        # oldest first, for the charts: [trigger_ms, duration_ms, state_bytes, rows, id]
        "series": [[c.trigger_ms, c.duration_ms, c.state_bytes, c.rows, c.id] for c in reversed(completed)],
        "config": mask_secrets(dict(config)),
    }


def checkpoint_detail(entry: CheckpointEntry) -> dict[str, Any]:
    return entry_json(entry) or {}
