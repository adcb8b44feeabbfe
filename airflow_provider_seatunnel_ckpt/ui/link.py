"""The operator extra link to the checkpoint view ("Checkpoints" on the task instance)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

from . import base_url, view_path


class CheckpointViewLink(BaseOperatorLink):
    """Airflow computes it when the task ends and keeps it in XCom, like every extra link
    in Airflow 3; the same view is a tab of the task instance while the task runs."""

    name = "Checkpoints"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return base_url() + view_path(ti_key.dag_id, ti_key.run_id, ti_key.task_id, getattr(ti_key, "map_index", -1))
