"""What a person sees in the deployment's UI, in headless Chromium (Debian's ``chromium``
and ``chromium-driver``, driven by Selenium): the login, the connection form of the
provider's ``seatunnel_checkpoint`` type with its own fields, labels and placeholders,
and the grid of example (c) after its recovery. Screenshots go to the test's tmp dir;
the ones in docs/img/airflow_*.png were taken by this test. The checkpoint view (ui/) is
checked here too: its tab after example (c)'s recovery and for a running job, against
checkpoint storage, and its 401/403."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from airflow_provider_seatunnel_ckpt.history import read_history
from tests.example_runs import example_storage

from .deployment import OUTSIDER, AirflowDeployment
from .rest import start_slow_job, task_instances, trigger, view, wait_for_run, xcom

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Chromium as root, headless, and quiet on a machine without outside network
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,900",
)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    if missing:
        pytest.fail(f"{' and '.join(missing)} missing: scripts/test installs Debian's chromium and chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _until(what: str, condition: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:  # the page is still rendering: elements come and go
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"the page never showed {what}")
        time.sleep(0.3)


def _button(browser: Any, text: str) -> Any:
    from selenium.webdriver.common.by import By

    return next(b for b in browser.find_elements(By.TAG_NAME, "button") if b.text.strip() == text)


def _log_in(browser: Any, deployment: AirflowDeployment) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{deployment.base_url}/")
    _until("the login form", lambda: browser.find_element(By.NAME, "username")).send_keys("admin")
    browser.find_element(By.NAME, "password").send_keys(deployment.password)
    _button(browser, "Sign in").click()
    _until("the home page", lambda: "/auth/login" not in browser.current_url and "Dags" in browser.page_source)


def test_connection_form_the_grid_and_the_checkpoint_view_after_recovery(
    deployment: AirflowDeployment, spark_connection: None, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _log_in(browser, deployment)

    # the connection form: pick the provider's type, see its own fields
    browser.get(f"{deployment.base_url}/connections")
    _until("Add Connection", lambda: _button(browser, "Add Connection")).click()
    kind = _until(
        "the connection type box",
        lambda: next(i for i in browser.find_elements(By.TAG_NAME, "input") if i.get_attribute("role") == "combobox"),
    )
    kind.send_keys("SeaTunnel")
    _until("the type in the list", lambda: "SeaTunnel Checkpoint Storage" in browser.page_source)
    kind.send_keys(Keys.ENTER)
    login = _until("the login field", lambda: browser.find_element(By.NAME, "login"))
    dialog = browser.find_element(By.CSS_SELECTOR, "[role=dialog]")
    assert login.get_attribute("placeholder") == "S3: access key id; OSS: AccessKeyId; HDFS: user name"
    password = browser.find_element(By.NAME, "password")
    assert password.get_attribute("type") == "password"
    assert password.get_attribute("placeholder") == "S3: secret access key; OSS: AccessKeySecret"
    assert "Access key id / HDFS user" in dialog.text and "Secret key" in dialog.text
    assert not browser.find_elements(By.NAME, "host") and not browser.find_elements(By.NAME, "port")
    _button(browser, "Extra Fields").click()
    _until(
        "the provider's fields",
        lambda: all(label in dialog.text for label in ("Storage type", "Namespace", "plugin-config", "Storage plugin")),
    )
    for name in ("element_storage_type", "element_namespace", "element_storage_plugin"):
        assert browser.find_elements(By.NAME, name), name
    assert "parent path of all checkpoints" in dialog.text  # the field descriptions
    browser.save_screenshot(str(tmp_path / "airflow_connection_form.png"))

    # the grid of example (c) after its recovery
    dag_id = "example_fail_and_recover"
    run_id = trigger(deployment, dag_id, {"workdir": str(tmp_path)})
    assert wait_for_run(deployment, dag_id, run_id)[0] == "success", deployment.explain()
    assert task_instances(deployment, dag_id, run_id)["etl"][0] == "failed"
    browser.get(f"{deployment.base_url}/dags/{dag_id}/runs/{run_id}")
    _until(
        "the run's tasks",
        lambda: all(
            t in browser.find_element(By.TAG_NAME, "body").text for t in ("etl", "recover", "final_checkpoint")
        ),
    )
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "success" in body.lower() and "failed" in body.lower(), body[:2000]
    browser.save_screenshot(str(tmp_path / "airflow_grid_example_c.png"))

    # the checkpoint view of the recovery task: the tab of the task instance, then its extra link
    job_id = xcom(deployment, dag_id, run_id, "etl", "job_id")
    history = read_history(example_storage(tmp_path), job_id)
    browser.get(f"{deployment.base_url}/dags/{dag_id}/runs/{run_id}/tasks/recover/plugin/seatunnel-checkpoints")
    browser.switch_to.frame(_until("the view's frame", lambda: browser.find_element(By.TAG_NAME, "iframe")))
    _check_view(browser, history, "finished")
    browser.switch_to.default_content()
    browser.save_screenshot(str(tmp_path / "airflow_checkpoint_view.png"))
    link = xcom(deployment, dag_id, run_id, "recover", "_link_CheckpointViewLink")
    assert (
        link
        == f"{deployment.base_url}/seatunnel-ckpt/view?dag_id={dag_id}&run_id={quote_plus(run_id)}&task_id=recover&map_index=-1"
    )
    browser.get(link)
    _check_view(browser, history, "finished")
    detail = _open_detail(browser, history)
    browser.save_screenshot(str(tmp_path / "airflow_checkpoint_detail.png"))
    assert detail

    # a user the auth manager lets read no DAG gets no data, and nobody without a token does
    outsider = deployment.token_of(OUTSIDER, deployment.outsider_password)
    for token, status in ((outsider, 403), ("", 401)):
        for path in ("api/history", "view"):
            response = view(deployment, path, dag_id, run_id, "recover", token=token)
            assert response.status_code == status, (path, response.status_code, response.text[:300])
            assert job_id not in response.text
    print(f"screenshots: {tmp_path}")


def test_the_checkpoint_view_of_a_running_job_updates_itself(
    deployment: AirflowDeployment, spark_connection: None, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    dag_id = "example_fail_and_recover"
    run_id, job_id, storage = start_slow_job(deployment, tmp_path, dag_id, rows=1_200_000)
    _log_in(browser, deployment)
    browser.get(f"{deployment.base_url}/dags/{dag_id}/runs/{run_id}/tasks/etl/plugin/seatunnel-checkpoints")
    browser.switch_to.frame(_until("the view's frame", lambda: browser.find_element(By.TAG_NAME, "iframe")))
    _until("the running job", lambda: browser.find_element(By.ID, "job-status").text == "running")
    first = _completed_shown(browser)
    # no reload: the page polls while the job runs
    later = _until("a newer checkpoint on the page", lambda: (n := _completed_shown(browser)) > first and n, timeout=60)
    assert later > first
    browser.switch_to.default_content()
    browser.save_screenshot(str(tmp_path / "airflow_checkpoint_view_running.png"))
    assert wait_for_run(deployment, dag_id, run_id)[0] == "success", deployment.explain()
    final = read_history(storage, job_id)
    assert final.job["status"] == "finished" and final.summary.completed >= later


def _completed_shown(browser: Any) -> int:
    from selenium.webdriver.common.by import By

    return int(browser.find_element(By.ID, "counts").text.split(" completed")[0])


def _check_view(browser: Any, history: Any, status: str) -> None:
    """The page shows what storage holds: the job's status, every attempt, the newest
    checkpoints in order, a chart point per completed checkpoint."""
    from selenium.webdriver.common.by import By

    try:
        _until(f"the job {status}", lambda: browser.find_element(By.ID, "job-status").text == status)
    except AssertionError as err:
        raise AssertionError(
            f"{err}; the page shows:\n{browser.find_element(By.TAG_NAME, 'body').text[:3000]}"
        ) from None
    rows = browser.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    assert [int(r.get_attribute("data-id")) for r in rows] == [c.id for c in history.checkpoints[:20]]
    attempts = browser.find_elements(By.CSS_SELECTOR, "#attempts tbody tr")
    assert len(attempts) == len(history.attempts) >= 2
    restored = history.attempts[-1]["restored_from"]
    assert f"checkpoint {restored}" in attempts[-1].text and restored is not None
    points = browser.find_element(By.CSS_SELECTOR, "#chart-duration polyline").get_attribute("points").split()
    assert len(points) == history.summary.completed
    assert f"{history.summary.completed} completed" in browser.find_element(By.ID, "counts").text
    assert '"namespace"' in browser.find_element(By.ID, "config").text


def _open_detail(browser: Any, history: Any) -> bool:
    """Click the newest completed checkpoint: one row per subtask, the slowest marked."""
    from selenium.webdriver.common.by import By

    entry = next(c for c in history.checkpoints if c.status == "completed" and len(c.subtasks) > 1)
    browser.find_element(By.CSS_SELECTOR, f'#history tbody tr[data-id="{entry.id}"]').click()
    _until("the checkpoint's subtasks", lambda: not browser.find_element(By.ID, "detail").get_attribute("hidden"))
    _until(
        "every subtask", lambda: len(browser.find_elements(By.CSS_SELECTOR, "#detail tbody tr")) == len(entry.subtasks)
    )
    slowest = browser.find_elements(By.CSS_SELECTOR, "#detail tbody tr.slowest")
    assert [int(r.text.split()[0]) for r in slowest] == [entry.slowest_subtask]
    return True
