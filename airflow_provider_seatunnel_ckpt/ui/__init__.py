"""The checkpoint view in Airflow's UI: a tab on every task instance of our operators and
an extra link to it (docs/airflow.md, "Checkpoint view").

* ``plugin.py``: the Airflow plugin, registered through the ``airflow.plugins`` entry
  point of this distribution (no copying into ``plugins/``);
* ``app.py``: the FastAPI app the api-server mounts under ``URL_PREFIX``: the page and
  its JSON, behind Airflow's own authentication and DAG permissions;
* ``locate.py``: from a task instance to its job and checkpoint storage (the XCom the
  operator pushes when it starts);
* ``link.py``: the operator extra link;
* ``page.html``: the page (plain HTML and JavaScript, SVG charts, nothing from the network).
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

#: where the api-server mounts the view's app
URL_PREFIX = "/seatunnel-ckpt"
#: the XCom the operator pushes as it starts: job id, connection id and the effective
#: checkpoint configuration with secrets masked (never a credential)
VIEW_XCOM_KEY = "seatunnel_ckpt_view"


def base_url() -> str:
    """Airflow's ``[api] base_url`` without its trailing slash ("" when unset: links
    relative to the UI)."""
    try:
        from airflow.configuration import conf

        return (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    except Exception:  # no configuration: served at the root
        return ""


def base_path() -> str:
    """The path of ``base_url()`` ("" at the root).

    Airflow's UI puts a tab's ``href`` into a frame as it is, so a relative href must
    carry the sub-path the UI is served under (``https://host/airflow/`` -> ``/airflow``).
    """
    return urlsplit(base_url()).path


def view_path(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """The view of one task instance, relative to the api-server's base URL."""
    query = urlencode({"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index})
    return f"{URL_PREFIX}/view?{query}"
