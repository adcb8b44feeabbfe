"""What a person sees in the deployment's UI, in headless Chromium (Debian's ``chromium``
and ``chromium-driver``, driven by Selenium): the login, the connection form of the
provider's ``seatunnel_checkpoint`` type with its own fields, labels and placeholders,
and the grid of example (c) after its recovery. Screenshots go to the test's tmp dir;
the ones in docs/img/airflow_*.png were taken by this test."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from .deployment import AirflowDeployment
from .rest import task_instances, trigger, wait_for_run

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Chromium as root, headless, and quiet on a machine without outside network
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1400,900")


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


def test_connection_form_of_the_provider_type_and_the_grid_after_recovery(
    deployment: AirflowDeployment, spark_connection: None, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _log_in(browser, deployment)

    # the connection form: pick the provider's type, see its own fields
    browser.get(f"{deployment.base_url}/connections")
    _until("Add Connection", lambda: _button(browser, "Add Connection")).click()
    kind = _until("the connection type box", lambda: next(
        i for i in browser.find_elements(By.TAG_NAME, "input") if i.get_attribute("role") == "combobox"))
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
    _until("the provider's fields", lambda: all(
        label in dialog.text for label in ("Storage type", "Namespace", "plugin-config", "Storage plugin")))
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
    _until("the run's tasks", lambda: all(t in browser.find_element(By.TAG_NAME, "body").text
                                          for t in ("etl", "recover", "final_checkpoint")))
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "success" in body.lower() and "failed" in body.lower(), body[:2000]
    browser.save_screenshot(str(tmp_path / "airflow_grid_example_c.png"))
    print(f"screenshots: {tmp_path}")
