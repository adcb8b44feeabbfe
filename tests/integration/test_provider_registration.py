"""Airflow discovers the provider through its entry point (real Airflow CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt import PACKAGE_NAME, get_provider_info


def test_package_name_matches_distribution():
    from importlib.metadata import distribution

    assert get_provider_info()["package-name"] == PACKAGE_NAME == distribution(PACKAGE_NAME).metadata["Name"]


@pytest.mark.slow
def test_airflow_providers_list_and_get(tmp_path):
    airflow = Path(sys.executable).with_name("airflow")
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    listed = subprocess.run([str(airflow), "providers", "list"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert PACKAGE_NAME in listed.stdout
    got = subprocess.run(
        [str(airflow), "providers", "get", PACKAGE_NAME], capture_output=True, text=True, env=env, timeout=120
    )
    assert got.returncode == 0, got.stderr
    assert PACKAGE_NAME in got.stdout
