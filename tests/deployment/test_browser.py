"""What a person sees in the deployment's UI, in headless Chromium (Debian's ``chromium``
and ``chromium-driver``, driven by Selenium): the login, the connection form of the
provider's ``seatunnel_checkpoint`` type with its own fields, labels and placeholders,
and the grid of example (c) after its recovery. Screenshots go to the test's tmp dir;
the ones in docs/img/airflow_*.png and docs/img/checkpoint_view_*.png were taken by this
test. The checkpoint view (ui/) is checked here too: its tab after example (c)'s recovery
and for a running job, against checkpoint storage, and its 401/403; the panel for the
person on call with a subtask held stuck; its actions (a savepoint from the button, a
stop with a savepoint over REST) with their 401/403/415 and the audit log."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from airflow_provider_seatunnel_ckpt.history import read_history
from airflow_provider_seatunnel_ckpt.ui.actions import EVENTS
from tests.example_runs import example_storage

from .deployment import OUTSIDER, VIEWER, AirflowDeployment, paused_worker
from .rest import act, audit_log, start_slow_job, task_instances, trigger, view, wait_for_run, xcom

# the deployment's start (over 140 s at a load of 10) counts into the first test, which then
# waits for a whole run of example (c): 520 s of pytest-timeout's 600 in a CI at that load
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1000)]

#: the running job the view tests watch: 300 s at start_slow_job's 40,000 rows/s, which a
#: loaded machine needs (a CI at a load of 15 saw a 60 to 75 s job end before the test had
#: logged in and clicked); the tests stop it with a savepoint when they are done
LONG_JOB_ROWS = 12_000_000

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
    _check_errors_wrap(browser, history)
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
    """And shows the person on call a stuck subtask: the last completed checkpoint's age
    in red past 3 intervals, the checkpoint in flight with its ACKs, the next step.
    docs/img/checkpoint_view_running.png is this test's checkpoint_view_running.png."""
    from selenium.webdriver.common.by import By

    dag_id = "example_fail_and_recover"
    run_id, job_id, storage = start_slow_job(deployment, tmp_path, dag_id, rows=LONG_JOB_ROWS)
    _log_in(browser, deployment)
    browser.get(f"{deployment.base_url}/dags/{dag_id}/runs/{run_id}/tasks/etl/plugin/seatunnel-checkpoints")
    browser.switch_to.frame(_until("the view's frame", lambda: browser.find_element(By.TAG_NAME, "iframe")))
    _until("the running job", lambda: browser.find_element(By.ID, "job-status").text == "running")
    first = _completed_shown(browser)
    # no reload: the page polls while the job runs
    later = _until("a newer checkpoint on the page", lambda: (n := _completed_shown(browser)) > first and n, timeout=60)
    assert later > first
    _check_charts(browser)
    next_step = browser.find_element(By.ID, "next-step").text
    assert next_step.startswith("if the job fails, a retry resumes from checkpoint "), next_step
    assert f" at {storage.describe(job_id)}/pipeline-1/chk-" in next_step, next_step
    assert browser.find_element(By.ID, "budget").text == "0 of 2 consecutive checkpoint failures tolerated"

    with paused_worker(job_id):  # one subtask stops acknowledging
        in_flight = _text_matching(
            browser, "in-flight", r"checkpoint (\d+): 1 of 2 subtasks acknowledged, for (\d+) s", timeout=60
        )
        staleness = _until(
            "the last completed checkpoint's age in red",
            lambda: "stale" in (e := browser.find_element(By.ID, "staleness")).get_attribute("class").split() and e,
            timeout=30,
        )
        assert re.fullmatch(
            r"checkpoint \d+, \d+ s ago \(no checkpoint for over 3 intervals of 500 ms\)", staleness.text
        ), staleness.text
        assert staleness.value_of_css_property("color") == "rgba(220, 38, 38, 1)"  # --bad
        browser.switch_to.default_content()
        browser.save_screenshot(str(tmp_path / "checkpoint_view_running.png"))
        browser.switch_to.frame(browser.find_element(By.TAG_NAME, "iframe"))
    # the subtask goes on: the stuck checkpoint completes
    stuck = in_flight.group(1)
    _until(
        f"checkpoint {stuck} completed",
        lambda: (
            browser.find_element(By.CSS_SELECTOR, f'#history tbody tr[data-id="{stuck}"]').text.split()[2]
            == "completed"
        ),
        timeout=90,
    )
    browser.switch_to.default_content()
    _stop_with_savepoint(deployment, dag_id, run_id)
    _end_the_run(deployment, dag_id, run_id)
    final = read_history(storage, job_id)
    assert final.job["status"] == "stopped" and final.summary.completed >= later


def test_a_savepoint_from_the_view_and_a_stop_over_rest_only_for_who_may_edit_the_dag(
    deployment: AirflowDeployment, spark_connection: None, browser: Any, tmp_path: Path
) -> None:
    """The actions (ui/actions.py): 403 for a viewer, 401 without a token, nothing another
    site could make a browser send; the button takes a savepoint and shows it; a script
    stops the job with a savepoint; both are in Airflow's audit log.
    docs/img/checkpoint_view_actions.png is this test's checkpoint_view_actions.png."""
    from selenium.webdriver.common.by import By

    dag_id = "example_fail_and_recover"
    run_id, job_id, storage = start_slow_job(deployment, tmp_path, dag_id, rows=LONG_JOB_ROWS)
    viewer = deployment.token_of(VIEWER, deployment.viewer_password)
    assert view(deployment, "api/history", dag_id, run_id, "etl", token=viewer).status_code == 200  # reads, may not act
    for action in EVENTS:
        refused = {
            "a viewer": act(deployment, action, dag_id, run_id, "etl", token=viewer),
            "no token": act(deployment, action, dag_id, run_id, "etl", token=""),
            "a form": act(deployment, action, dag_id, run_id, "etl", headers={"Content-Type": "text/plain"}, body="{}"),
            "another site": act(deployment, action, dag_id, run_id, "etl", headers={"Origin": "https://evil.example"}),
            "a GET": view(deployment, f"api/{action}", dag_id, run_id, "etl"),
        }
        statuses = {who: r.status_code for who, r in refused.items()}
        assert statuses == {"a viewer": 403, "no token": 401, "a form": 415, "another site": 403, "a GET": 405}
        assert audit_log(deployment, EVENTS[action], dag_id, run_id) == []
    for request in ("requests/savepoint.json", "requests/stop-with-savepoint.json"):
        assert storage.read_document(job_id, request) is None

    # the button, as the admin in the task instance's tab
    _log_in(browser, deployment)
    browser.get(f"{deployment.base_url}/dags/{dag_id}/runs/{run_id}/tasks/etl/plugin/seatunnel-checkpoints")
    browser.switch_to.frame(_until("the view's frame", lambda: browser.find_element(By.TAG_NAME, "iframe")))
    _until("the running job", lambda: browser.find_element(By.ID, "job-status").text == "running")
    _until("the buttons enabled", lambda: browser.find_element(By.ID, "trigger-savepoint").is_enabled())
    _button(browser, "Trigger savepoint").click()
    result = _text_matching(
        browser, "action-result", r"savepoint (\d+) completed at \d\d:\d\d:\d\d UTC in [\d,]+ ms", timeout=60
    )
    savepoint = int(result.group(1))
    _until(
        "the savepoint tile",
        lambda: browser.find_element(By.ID, "latest-savepoint").text.startswith(f"savepoint {savepoint}, "),
    )
    browser.switch_to.default_content()
    browser.save_screenshot(str(tmp_path / "checkpoint_view_actions.png"))
    taken = read_history(storage, job_id).checkpoint(savepoint)
    assert taken is not None and (taken.kind, taken.status) == ("savepoint", "completed")
    assert read_history(storage, job_id).job["status"] == "running"  # a savepoint does not stop the job
    [logged] = audit_log(deployment, EVENTS["savepoint"], dag_id, run_id)
    assert (logged["owner"], logged["dag_id"], logged["task_id"]) == ("admin", dag_id, "etl")
    assert json.loads(logged["extra"])["job_id"] == job_id

    # a stop with a savepoint, as a script calls it
    stopped = _stop_with_savepoint(deployment, dag_id, run_id)
    assert (stopped.json()["action"], stopped.json()["job_id"]) == ("stop-with-savepoint", job_id)
    status = read_history(storage, job_id).job
    assert status["status"] == "stopped" and status["savepoint_id"] > savepoint, status
    [logged] = audit_log(deployment, EVENTS["stop-with-savepoint"], dag_id, run_id)
    assert logged["owner"] == "admin" and json.loads(logged["extra"])["requested_ms"] == stopped.json()["requested_ms"]
    late = act(deployment, "savepoint", dag_id, run_id, "etl")
    assert late.status_code == 409 and "stopped" in late.json()["detail"]
    _end_the_run(deployment, dag_id, run_id)


def _stop_with_savepoint(deployment: AirflowDeployment, dag_id: str, run_id: str) -> Any:
    """Stop a job of ``start_slow_job`` with a savepoint over REST, as a script does, and
    wait for its task to succeed; the action's response."""
    stopped = act(deployment, "stop-with-savepoint", dag_id, run_id, "etl")
    assert stopped.status_code == 200, stopped.text
    deployment.wait_until(
        lambda: task_instances(deployment, dag_id, run_id)["etl"][0] == "success", 120, "etl stopped", every=0.5
    )
    return stopped


def _end_the_run(deployment: AirflowDeployment, dag_id: str, run_id: str) -> None:
    # the sensor after etl waits for a final checkpoint a stopped job never takes. Airflow's
    # API answered one such PATCH with 500 "Database error" in a CI run (its update of the
    # run's task instances meeting the scheduler's): asked again, as a user would
    path = f"/dags/{dag_id}/dagRuns/{run_id}"
    for attempt in range(3):
        response = deployment.api("PATCH", path, json={"state": "failed"})
        if response.status_code < 500 or attempt == 2:
            break
        time.sleep(2)
    assert response.status_code < 300, f"PATCH {path}: HTTP {response.status_code}: {response.text[:2000]}"


def _text_matching(browser: Any, element_id: str, pattern: str, timeout: float) -> re.Match[str]:
    """Wait until the text of element ``element_id`` matches ``pattern`` whole; the match."""
    from selenium.webdriver.common.by import By

    return _until(
        f"#{element_id} matching {pattern!r}",
        lambda: re.fullmatch(pattern, browser.find_element(By.ID, element_id).text),
        timeout=timeout,
    )


def _check_errors_wrap(browser: Any, history: Any) -> None:
    """The failure's cause is shown whole, wrapped on a narrow page, never clipped."""
    from selenium.webdriver.common.by import By

    error = history.attempts[0]["error"]
    failure = browser.find_element(By.ID, "latest-failure")
    assert failure.text == _until(
        "the failure tile", lambda: failure.text.startswith("attempt 1 failed, ") and failure.text
    )
    assert failure.text.endswith(f" ago: {error}") and len(error) > 60, failure.text
    width = browser.get_window_size()["width"]
    browser.set_window_size(600, 900)
    try:
        clipped = browser.execute_script(
            "return [...document.querySelectorAll('.tile .value, #next-step, td.reason, #job-line, #counts')]"
            ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.id || e.textContent.slice(0, 40))"
        )
        assert clipped == []
        line = float(failure.value_of_css_property("line-height").removesuffix("px"))
        assert failure.size["height"] > 2 * line  # wrapped onto lines of its own
        assert failure.size["width"] <= 600
    finally:
        browser.set_window_size(width, 900)


def _check_charts(browser: Any) -> None:
    """A time axis in UTC, units on the values, dashed lines at the interval and the timeout.
    While the job runs, the page redraws its charts as it polls: a check that meets an
    element of the chart before the redraw starts again (a CI at a load of 15 met one)."""
    from selenium.common.exceptions import StaleElementReferenceException

    for attempt in range(5):
        try:
            _check_charts_once(browser)
            return
        except StaleElementReferenceException:
            if attempt == 4:
                raise


def _check_charts_once(browser: Any) -> None:
    from selenium.webdriver.common.by import By

    chart = browser.find_element(By.ID, "chart-duration")
    times = [t.text for t in chart.find_elements(By.CSS_SELECTOR, "text.x-tick")]
    assert times and all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in times), times
    assert "time (UTC)" in chart.text
    assert all(re.search(r" (ms|s|min)$", t.text) for t in chart.find_elements(By.CSS_SELECTOR, "text.y-tick"))
    limits = [t.text for t in chart.find_elements(By.CSS_SELECTOR, "text.limit-label")]
    assert limits == ["interval 500 ms", "timeout 1 min"], limits
    assert len(chart.find_elements(By.CSS_SELECTOR, "line.limit")) == 2
    size_ticks = browser.find_elements(By.CSS_SELECTOR, "#chart-size text.y-tick")
    assert all(re.search(r" (B|KiB|MiB|GiB)$", t.text) for t in size_ticks), [t.text for t in size_ticks]


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
