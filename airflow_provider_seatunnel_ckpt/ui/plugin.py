"""The Airflow plugin of the checkpoint view.

Registered through this distribution's ``airflow.plugins`` entry point, which Airflow
always loads (the provider-info ``plugins`` list is read only with
``[core] lazy_discover_providers = False``, so it would leave the view out by default).

Airflow imports every plugin in every process it starts, each task's included, but only
the api-server serves the app: ``LazyViewApp`` builds it (FastAPI, Airflow's security
module: most of a second) on the first request, so this module stays cheap to import.
"""

from __future__ import annotations

import threading
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from . import URL_PREFIX, base_path


class LazyViewApp:
    """An ASGI app that builds the view's FastAPI app when the first request arrives."""

    def __init__(self) -> None:
        self._app: Any = None
        self._lock = threading.Lock()

    @property
    def app(self) -> Any:
        if self._app is None:
            with self._lock:
                if self._app is None:
                    from .app import create_app

                    self._app = create_app()
        return self._app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


def tab_href() -> str:
    """The task instance tab: Airflow fills in the placeholders and shows the page in a frame."""
    query = "dag_id={DAG_ID}&run_id={RUN_ID}&task_id={TASK_ID}&map_index={MAP_INDEX}"
    return f"{base_path()}{URL_PREFIX}/view?{query}"


class CheckpointViewPlugin(AirflowPlugin):
    name = "seatunnel_ckpt_checkpoints"
    fastapi_apps = [{"app": LazyViewApp(), "url_prefix": URL_PREFIX, "name": "SeaTunnel checkpoints"}]
    external_views = [
        {
            "name": "Checkpoints",
            "href": tab_href(),
            "destination": "task_instance",
            "url_route": "seatunnel-checkpoints",
        }
    ]
