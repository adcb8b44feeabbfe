"""The checkpoint view's plugin as Airflow loads it (the deployment suite serves it from a
real api-server; tests/deployment/test_browser.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from airflow_provider_seatunnel_ckpt.ui import URL_PREFIX, base_path
from airflow_provider_seatunnel_ckpt.ui.link import CheckpointViewLink
from airflow_provider_seatunnel_ckpt.ui.plugin import LazyViewApp, tab_href

QUERY = {"dag_id": "d", "run_id": "r", "task_id": "t", "map_index": "-1"}


def test_importing_the_plugin_does_not_build_the_app() -> None:
    """Airflow imports plugins in every task process; only the api-server serves the app,
    and building it (FastAPI, Airflow's security module) took most of a second."""
    probe = (
        "import sys, airflow.plugins_manager\n"
        "from airflow_provider_seatunnel_ckpt.ui.plugin import CheckpointViewPlugin\n"
        "print(sorted(m for m in ('fastapi', 'airflow.api_fastapi.core_api.security',"
        " 'airflow_provider_seatunnel_ckpt.ui.app') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_app_is_built_on_the_first_request_and_keeps_airflows_auth() -> None:
    lazy = LazyViewApp()
    client = TestClient(Starlette(routes=[Mount(URL_PREFIX, lazy)]))
    assert lazy._app is None
    assert client.get(f"{URL_PREFIX}/view", params=QUERY).status_code == 401  # no session, no token
    built = lazy._app
    assert built is not None
    assert client.get(f"{URL_PREFIX}/api/history", params=QUERY).status_code == 401
    assert lazy._app is built  # once


@pytest.mark.parametrize(
    ("base_url", "path"),
    [
        ("", ""),
        ("http://localhost:8080", ""),
        ("http://localhost:8080/", ""),
        ("https://airflow.example.com/team-a/airflow/", "/team-a/airflow"),
        ("/airflow", "/airflow"),
    ],
)
def test_the_tab_and_the_link_carry_the_sub_path_airflow_is_served_under(
    monkeypatch: pytest.MonkeyPatch, base_url: str, path: str
) -> None:
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", base_url)
    assert base_path() == path
    assert tab_href().startswith(f"{path}{URL_PREFIX}/view?dag_id={{DAG_ID}}&run_id={{RUN_ID}}")

    class Key:
        dag_id, run_id, task_id, map_index = "etl", "manual__1", "load", 3

    link = CheckpointViewLink().get_link(None, ti_key=Key())
    assert link == f"{base_url.rstrip('/')}{URL_PREFIX}/view?dag_id=etl&run_id=manual__1&task_id=load&map_index=3"


def test_the_plugin_registers_the_tab_under_the_configured_sub_path() -> None:
    """As Airflow reads the plugin in a process started with a sub-path base_url."""
    probe = (
        "import json\n"
        "from airflow_provider_seatunnel_ckpt.ui.plugin import CheckpointViewPlugin as P\n"
        "print(json.dumps([v['href'] for v in P.external_views]))\n"
    )
    env = {**__import__("os").environ, "AIRFLOW__API__BASE_URL": "https://example.com/airflow/"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    (href,) = json.loads(out.stdout.strip().splitlines()[-1])
    assert href.startswith("/airflow/seatunnel-ckpt/view?")


@pytest.mark.parametrize("which", ["dag_id", "run_id", "task_id"])
def test_airflows_wildcard_is_not_a_task_instance(which: str) -> None:
    from fastapi import HTTPException

    from airflow_provider_seatunnel_ckpt.ui.app import _open

    ids = {"dag_id": "d", "run_id": "r", "task_id": "t", which: "~"}
    with pytest.raises(HTTPException) as raised:
        _open(ids["dag_id"], ids["run_id"], ids["task_id"], "-1")
    assert raised.value.status_code == 400
    assert "'~'" in raised.value.detail


def test_the_actions_are_post_only_and_keep_airflows_auth() -> None:
    client = TestClient(Starlette(routes=[Mount(URL_PREFIX, LazyViewApp())]))
    for action in ("savepoint", "stop-with-savepoint"):
        path = f"{URL_PREFIX}/api/{action}"
        assert client.post(path, params=QUERY, json={}).status_code == 401  # no session, no token
        assert client.get(path, params=QUERY).status_code in (401, 405)  # never by a link or an <img>


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        pytest.param({"Content-Type": "application/json"}, "{}", 200, id="json"),
        pytest.param({"Content-Type": "application/json; charset=utf-8"}, "{}", 200, id="json-charset"),
        pytest.param({"Content-Type": "application/json", "Origin": "http://testserver"}, "{}", 200, id="same-origin"),
        pytest.param({"Content-Type": "application/x-www-form-urlencoded"}, "a=1", 415, id="html-form"),
        pytest.param({"Content-Type": "text/plain"}, "{}", 415, id="text-plain"),
        pytest.param({}, "", 415, id="no-body"),
        pytest.param(
            {"Content-Type": "application/json", "Origin": "https://evil.example"}, "{}", 403, id="cross-site"
        ),
        pytest.param({"Content-Type": "application/json", "Origin": "null"}, "{}", 403, id="opaque-origin"),
        pytest.param({"Content-Type": "application/json"}, "{not json", 400, id="not-json"),
    ],
)
def test_an_action_refuses_what_a_cross_site_page_could_send(headers: dict[str, str], body: str, status: int) -> None:
    """The guard of ui/actions.py on its own (the deployment suite checks it behind
    Airflow's auth, tests/deployment/test_browser.py)."""
    from fastapi import Depends, FastAPI

    from airflow_provider_seatunnel_ckpt.ui.actions import _same_origin_json

    app = FastAPI()

    @app.post("/act", dependencies=[Depends(_same_origin_json)])
    def act() -> dict[str, str]:
        return {"done": "yes"}

    response = TestClient(app).post("/act", content=body, headers=headers)
    assert response.status_code == status, response.text
