"""Which Spark settings select the preloading Python daemon (engine/preload.py), and what
the daemon imports (engine/worker_daemon.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from airflow_provider_seatunnel_ckpt.engine import preload as preload_module
from airflow_provider_seatunnel_ckpt.engine.job import JobSpec
from airflow_provider_seatunnel_ckpt.engine.preload import DAEMON_MODULE, preload_settings
from airflow_provider_seatunnel_ckpt.engine.worker_daemon import preload
from airflow_provider_seatunnel_ckpt.errors import ConfigError

JOB = JobSpec(name="j", parallelism=2, source={"plugin_name": "Sequence", "rows": 10},
              sink={"plugin_name": "file", "path": "/tmp/x"}, transforms=({"plugin_name": "Sql", "query": "select 1"},))
CONNECTORS = ("airflow_provider_seatunnel_ckpt.engine.connectors.sequence,"
              "airflow_provider_seatunnel_ckpt.engine.connectors.sql,"
              "airflow_provider_seatunnel_ckpt.engine.connectors.file_sink")


def test_a_local_master_gets_the_daemon_with_the_jobs_connectors() -> None:
    assert preload_settings(JOB, "local[2]", {}) == {
        "spark.python.daemon.module": DAEMON_MODULE, "spark.executorEnv.SEATUNNEL_CKPT_PRELOAD": CONNECTORS}


def test_a_cluster_keeps_the_stock_daemon_unless_asked() -> None:
    assert preload_settings(JOB, "spark://m:7077", {}) == {}
    assert preload_settings(JOB, None, {}) == {}
    asked = preload_settings(JOB, "yarn", {"spark.seatunnel.preloadDaemon": "true"})
    assert asked["spark.python.daemon.module"] == DAEMON_MODULE


def test_an_own_daemon_or_false_or_another_python_keeps_the_stock_one() -> None:
    assert preload_settings(JOB, "local[2]", {"spark.python.daemon.module": "mine"}) == {}
    assert preload_settings(JOB, "local[2]", {"spark.seatunnel.preloadDaemon": "false"}) == {}
    assert preload_settings(JOB, "local[2]", {"spark.pyspark.python": "/opt/other/python3"}) == {}


def test_an_engine_only_in_a_zip_is_not_preloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preload_module, "_importable_here", lambda: False)
    assert preload_settings(JOB, "local[2]", {}) == {}


def test_a_bad_choice_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^spark.seatunnel.preloadDaemon: expected auto, true or false"):
        preload_settings(JOB, "local[2]", {"spark.seatunnel.preloadDaemon": "yes"})


def test_the_daemon_imports_the_engine_and_skips_what_is_missing() -> None:
    code = ("import sys; from airflow_provider_seatunnel_ckpt.engine.worker_daemon import preload; "
            "failed = preload('no_such_module_x,airflow_provider_seatunnel_ckpt.engine.connectors.sequence'); "
            "print(failed, 'pandas' in sys.modules, "
            "'airflow_provider_seatunnel_ckpt.engine.connectors.sequence' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['no_such_module_x'] True True"
    assert preload("") == []
