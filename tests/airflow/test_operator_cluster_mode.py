"""deploy_mode=cluster before anything is submitted (operators/cluster_mode.py): refused
off YARN in one line; on YARN the driver's files are shipped with ``--files`` and named by
their names, with nothing secret on the command line. The run on a real YARN is
tests/airflow/test_operator_yarn.py."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator
from airflow_provider_seatunnel_ckpt.operators.spark_submit import _EngineSubmitHook
from tests.support.airflow_operator import JOB_TEXT, fake_context, local_config

SECRET = "s3cr3t-in-the-config"


class Submitted(Exception):
    """Raised in place of running spark-submit: the test has what it came for."""


def _connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, host: str, port: int | None = None) -> None:
    document: dict[str, Any] = {"conn_type": "spark", "host": host, "extra": {"deploy-mode": "cluster"}}
    if port:
        document["port"] = port
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(document))


def _yarn_operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> CheckpointedSparkSubmitOperator:
    _connection(monkeypatch, "spark_yarn", "yarn")
    kwargs.setdefault("config_file", local_config(tmp_path))
    return CheckpointedSparkSubmitOperator(task_id="etl", job_file=JOB_TEXT, conn_id="spark_yarn", **kwargs)


def test_cluster_mode_off_yarn_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "spark_standalone", "spark://master", 7077)
    op = CheckpointedSparkSubmitOperator(
        task_id="etl", job_file=JOB_TEXT, config_file=local_config(tmp_path), conn_id="spark_standalone"
    )
    with pytest.raises(AirflowFailException) as refused:
        op.execute(fake_context({}))
    assert str(refused.value).startswith("deploy_mode=cluster is supported on YARN only (master 'spark://master:7077')")
    assert "\n" not in str(refused.value)


def test_yarn_cluster_mode_refuses_a_spark_submit_that_would_not_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    op = _yarn_operator(tmp_path, monkeypatch, conf={"spark.yarn.submit.waitAppCompletion": "false"})
    with pytest.raises(AirflowFailException, match=r"^spark.yarn.submit.waitAppCompletion: must stay true"):
        op.execute(fake_context({}))


def test_yarn_cluster_mode_ships_the_drivers_files_and_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_PG", json.dumps({"conn_type": "postgres", "host": "pg", "password": SECRET}))
    config = local_config(tmp_path) + f"  # {SECRET}\n"
    (tmp_path / "lookup.csv").write_text("a,b\n")
    seen: dict[str, Any] = {}

    def submit(hook: Any, application: str = "", **kwargs: Any) -> None:
        command = hook._build_spark_submit_command(application)
        shipped = command[command.index("--files") + 1].split(",")
        seen.update(command=command, shipped=shipped, modes={Path(p).name: Path(p).stat().st_mode for p in shipped})
        seen["texts"] = {Path(p).name: Path(p).read_text() for p in shipped}
        raise Submitted

    monkeypatch.setattr(_EngineSubmitHook, "submit", submit)
    op = _yarn_operator(
        tmp_path, monkeypatch, config_file=config, connections={"PG": "pg"}, files=str(tmp_path / "lookup.csv")
    )
    with pytest.raises(Submitted):
        op.execute(fake_context({}))
    command = seen["command"]
    assert command[command.index("--deploy-mode") + 1] == "cluster"
    assert "spark.yarn.submit.waitAppCompletion=true" in command  # the task follows the application
    assert [Path(p).name for p in seen["shipped"]] == ["lookup.csv", "job.yaml", "seatunnel.yaml", "variables.yaml"]
    assert all(stat.S_IMODE(seen["modes"][name]) == 0o600 for name in ("job.yaml", "seatunnel.yaml", "variables.yaml"))
    assert SECRET in seen["texts"]["variables.yaml"]
    # the driver in the application master finds them by name in its working directory
    arguments = command[[i for i, a in enumerate(command) if a.endswith("spark_app.py")][-1] + 1 :]
    assert arguments[:4] == ["job.yaml", "--config", "seatunnel.yaml", "--job-id"]
    assert arguments[arguments.index("--variables") + 1] == "variables.yaml"
    # the driver's Python is the cluster's, not the Airflow worker's
    assert not any(a.startswith("spark.pyspark.driver.python=") for a in command)
    assert not any(SECRET in a for a in command)
    assert op._cluster_driver is None  # on_kill no longer has a driver to stop


def test_a_name_shipped_twice_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    op = _yarn_operator(tmp_path, monkeypatch, files=f"{tmp_path}/defaults.yaml#seatunnel.yaml")
    with pytest.raises(
        AirflowFailException, match=r"^files: seatunnel.yaml would reach the driver's working directory"
    ):
        op.execute(fake_context({}))


def test_killing_the_task_asks_the_driver_in_the_application_master_to_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopping spark-submit would leave the application running in YARN: on_kill asks
    its driver for a savepoint and a stop, through the request the driver polls for."""
    from airflow_provider_seatunnel_ckpt.hooks.base import STOP_REQUEST

    op = _yarn_operator(tmp_path, monkeypatch, job_id="in-the-am")

    def submit(hook: Any, application: str = "", **kwargs: Any) -> None:
        op.on_kill()  # Airflow kills the task while spark-submit waits for the application
        raise Submitted

    monkeypatch.setattr(_EngineSubmitHook, "submit", submit)
    with pytest.raises(Submitted):
        op.execute(fake_context({}))
    assert op.checkpoint_hook.storage.read_document("in-the-am", STOP_REQUEST)["by"] == "airflow"


@pytest.mark.parametrize("deploy_mode", ["client", "cluster"])
def test_a_driver_started_here_maps_this_machines_jvm_class_archive(
    deploy_mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In client mode the driver's JVM starts on the Airflow worker: spark-submit gets the
    option that maps the worker's class archive (engine/jvm_archive.py), after the task's
    own driver options; in cluster mode the driver starts elsewhere and gets none."""
    from airflow_provider_seatunnel_ckpt.engine import jvm_archive

    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"archive")
    monkeypatch.setattr(jvm_archive, "archive_path", lambda: archive)
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)  # the suite's own archive would win
    seen: dict[str, Any] = {}

    def submit(hook: Any, application: str = "", **kwargs: Any) -> None:
        seen["command"] = hook._build_spark_submit_command(application)
        raise Submitted

    monkeypatch.setattr(_EngineSubmitHook, "submit", submit)
    if deploy_mode == "client":
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
        op = CheckpointedSparkSubmitOperator(
            task_id="etl",
            job_file=JOB_TEXT,
            conn_id="spark_local",
            config_file=local_config(tmp_path),
            conf={"spark.driver.extraJavaOptions": "-Dmine=1"},
        )
    else:
        op = _yarn_operator(tmp_path, monkeypatch, conf={"spark.driver.extraJavaOptions": "-Dmine=1"})
    with pytest.raises(Submitted):
        op.execute(fake_context({}))
    options = [a for a in seen["command"] if a.startswith("spark.driver.extraJavaOptions=")]
    mapped = f"-Dmine=1 -XX:SharedArchiveFile={archive} -Xlog:cds*=off -XX:TieredStopAtLevel=1"
    assert options == [f"spark.driver.extraJavaOptions={mapped if deploy_mode == 'client' else '-Dmine=1'}"]
