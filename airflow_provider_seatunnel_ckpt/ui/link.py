"""The operator extra link to the checkpoint view ("Checkpoints" on the task instance)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

from . import view_path


class CheckpointViewLink(BaseOperatorLink):
    """Airflow computes it when the task ends and keeps it in XCom, like every extra link
    in Airflow 3; the same view is a tab of the task instance while the task runs."""

    name = "Checkpoints"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        base = _base_url()
        return base + view_path(ti_key.dag_id, ti_key.run_id, ti_key.task_id, getattr(ti_key, "map_index", -1))


def _base_url() -> str:
    """``[api] base_url`` without its trailing slash ("" when unset: a link relative to the UI)."""
    try:
        from airflow.configuration import conf

        return (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    except Exception:  # noqa: BLE001 - a relative link still works from the UI
        return ""
