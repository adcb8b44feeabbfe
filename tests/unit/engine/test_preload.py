"""Which Spark settings select the preloading Python daemon (engine/preload.py), and what
the daemon imports (engine/worker_daemon.py)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from airflow_provider_seatunnel_ckpt.engine.preload import DAEMON_MODULE, preload_settings
from airflow_provider_seatunnel_ckpt.engine.worker_daemon import preload
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.spec import JobSpec

JOB = JobSpec(
    name="j",
    parallelism=2,
    source={"plugin_name": "Sequence", "rows": 10},
    sink={"plugin_name": "file", "path": "/tmp/x"},
    transforms=({"plugin_name": "Sql", "query": "select 1"},),
)
CONNECTORS = (
    "airflow_provider_seatunnel_ckpt.connectors.sequence,"
    "airflow_provider_seatunnel_ckpt.transforms.sql,"
    "airflow_provider_seatunnel_ckpt.connectors.file.sink"
)


@pytest.fixture(autouse=True)
def _no_machine_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # the test suite sets a machine-wide default (tests/conftest.py); these tests state theirs
    monkeypatch.delenv("SEATUNNEL_CKPT_PRELOAD_DAEMON", raising=False)


def test_a_local_master_gets_the_daemon_with_the_jobs_connectors() -> None:
    assert preload_settings(JOB, "local[2]", {}, sys.executable) == {
        "spark.python.daemon.module": DAEMON_MODULE,
        "spark.executorEnv.SEATUNNEL_CKPT_PRELOAD": CONNECTORS,
    }


def test_a_cluster_keeps_the_stock_daemon_unless_asked() -> None:
    assert preload_settings(JOB, "spark://m:7077", {}, sys.executable) == {}
    assert preload_settings(JOB, None, {}, sys.executable) == {}
    asked = preload_settings(JOB, "yarn", {"spark.seatunnel.preloadDaemon": "true"}, "python3")
    assert asked["spark.python.daemon.module"] == DAEMON_MODULE


def test_an_own_daemon_or_false_or_another_python_keeps_the_stock_one() -> None:
    assert preload_settings(JOB, "local[2]", {"spark.python.daemon.module": "mine"}, sys.executable) == {}
    assert preload_settings(JOB, "local[2]", {"spark.seatunnel.preloadDaemon": "false"}, sys.executable) == {}


def test_auto_probes_the_workers_python(tmp_path) -> None:
    """Workers that run another Python (one without the package) keep the stock daemon."""
    assert preload_settings(JOB, "local[2]", {}, "/nonexistent/python3") == {}
    bare = tmp_path / "python3"
    bare.write_text('#!/bin/sh\nexec /usr/bin/python3 -I "$@"\n')
    bare.chmod(0o755)
    assert preload_settings(JOB, "local[2]", {}, str(bare)) == {}


def test_an_engine_only_in_a_py_files_zip_is_not_preloaded(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """spark-submit puts --py-files zips on the driver's path; the daemon will not have them."""
    archive = tmp_path / "engine.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in (
            "airflow_provider_seatunnel_ckpt/__init__.py",
            "airflow_provider_seatunnel_ckpt/engine/__init__.py",
            "airflow_provider_seatunnel_ckpt/engine/worker_daemon.py",
        ):
            zipped.writestr(name, "")
    monkeypatch.setenv("PYTHONPATH", str(archive))
    monkeypatch.chdir(tmp_path)  # not the checkout: the daemon would find the package there
    system_python = "/usr/bin/python3"  # has no engine installed; the zip alone would satisfy find_spec
    assert (
        subprocess.run(
            [system_python, "-c", "import airflow_provider_seatunnel_ckpt.engine.worker_daemon"],
            env={"PYTHONPATH": str(archive)},
            cwd=tmp_path,
        ).returncode
        == 0
    )
    assert preload_settings(JOB, "local[2]", {}, system_python) == {}


def test_the_environment_sets_the_default_and_a_setting_beats_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEATUNNEL_CKPT_PRELOAD_DAEMON", "false")
    assert preload_settings(JOB, "local[2]", {}, sys.executable) == {}
    assert preload_settings(JOB, "local[2]", {"spark.seatunnel.preloadDaemon": "auto"}, sys.executable) != {}
    monkeypatch.setenv("SEATUNNEL_CKPT_PRELOAD_DAEMON", "TRUE")
    assert preload_settings(JOB, "yarn", {}, "python3")["spark.python.daemon.module"] == DAEMON_MODULE
    monkeypatch.setenv("SEATUNNEL_CKPT_PRELOAD_DAEMON", "on")
    with pytest.raises(ConfigError, match=r"^SEATUNNEL_CKPT_PRELOAD_DAEMON: expected auto, true or false, got 'on'$"):
        preload_settings(JOB, "local[2]", {}, sys.executable)


def test_a_bad_choice_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^spark.seatunnel.preloadDaemon: expected auto, true or false"):
        preload_settings(JOB, "local[2]", {"spark.seatunnel.preloadDaemon": "yes"}, sys.executable)


def test_the_daemon_imports_the_engine_and_skips_what_is_missing() -> None:
    code = (
        "import sys; from airflow_provider_seatunnel_ckpt.engine.worker_daemon import preload; "
        "failed = preload('no_such_module_x,airflow_provider_seatunnel_ckpt.connectors.sequence'); "
        "print(failed, 'pandas' in sys.modules, "
        "'airflow_provider_seatunnel_ckpt.connectors.sequence' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['no_such_module_x'] True True"
    assert preload("") == []


def test_what_an_import_prints_stays_off_the_daemons_stdout(tmp_path) -> None:
    """PySpark's daemon reports its port on stdout: a chatty import must not get there."""
    (tmp_path / "chatty_mod.py").write_text("print('hello from an import')\nraise SystemExit(3)\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from airflow_provider_seatunnel_ckpt.engine.worker_daemon import preload; "
        "failed = preload('chatty_mod'); sys.stdout.write('port 1234\\n')"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout == "port 1234\n"
    assert "hello from an import" in done.stderr


def test_the_daemon_freezes_what_it_imported_so_a_workers_collection_skips_it() -> None:
    code = (
        "import gc; from airflow_provider_seatunnel_ckpt.engine.worker_daemon import prepare; "
        "import sys; prepare(); print(gc.get_freeze_count(), len(gc.get_objects()), 'pyspark.daemon' in sys.modules)"
    )
    frozen, tracked, pyspark_frozen = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert int(frozen) > 50_000  # pyarrow, pandas, PySpark and the engine
    assert pyspark_frozen == "True"  # imported before the freeze, so PySpark's own objects are frozen too
    assert int(tracked) < int(frozen) // 20  # what a worker's full collection still walks
