"""The Airflow plugin of the checkpoint view.

Registered through this distribution's ``airflow.plugins`` entry point, which Airflow
always loads (the provider-info ``plugins`` list is read only with
``[core] lazy_discover_providers = False``, so it would leave the view out by default).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from . import URL_PREFIX
from .app import create_app

#: the task instance tab: Airflow fills in the placeholders and shows the page in a frame
TAB_HREF = f"{URL_PREFIX}/view?dag_id={{DAG_ID}}&run_id={{RUN_ID}}&task_id={{TASK_ID}}&map_index={{MAP_INDEX}}"


class CheckpointViewPlugin(AirflowPlugin):
    name = "seatunnel_ckpt_checkpoints"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "SeaTunnel checkpoints"}]
    external_views = [{
        "name": "Checkpoints",
        "href": TAB_HREF,
        "destination": "task_instance",
        "url_route": "seatunnel-checkpoints",
    }]
