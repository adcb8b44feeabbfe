"""The private parts of Airflow's Task SDK and of the Spark provider that the operator
relies on, each checked by name on the installed releases.

The Spark provider offers no public way to change the environment spark-submit runs
with, to reach the spark-submit process (its exit code, and its process tree on kill), or
to read the deploy mode it resolved from the connection; the Task SDK none to read the job
file before a mapped task's fields are rendered. So pyproject.toml pins a ceiling on both
(the newest minor releases tested), and this module names each internal with what the
operator assumes of it. When an upstream release changes one, the failure says which,
here, in the floor run (scripts/floor) and in the newest-release run (scripts/newest),
instead of an operator test failing somewhere downstream. docs/testing.md, "Upstream
versions", says what to do then.
"""

from __future__ import annotations

import inspect
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseOperator

from airflow_provider_seatunnel_ckpt.operators.spark_submit import CheckpointedSparkSubmitOperator


@pytest.fixture
def local_spark(monkeypatch: pytest.MonkeyPatch) -> str:
    """A Spark connection in client mode on local[1], from the environment."""
    monkeypatch.setenv("AIRFLOW_CONN_UPSTREAM_SPARK", '{"conn_type": "spark", "host": "local[1]"}')
    return "upstream_spark"


def _parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_operator_builds_its_hook_with_the_providers_get_hook(local_spark: str) -> None:
    """``SparkSubmitOperator._get_hook()`` builds a ``SparkSubmitHook`` from the operator's
    ``application_args``, ``py_files`` and ``conf`` as they are at the call (the operator
    sets its own values around the call, then restores the rendered ones)."""
    operator = SparkSubmitOperator(task_id="t", application="app.py", conn_id=local_spark)
    operator.application_args, operator.py_files, operator.conf = ["--x"], "engine.zip", {"spark.a": "1"}

    hook = operator._get_hook()

    assert isinstance(hook, SparkSubmitHook)
    command = hook._build_spark_submit_command("app.py")
    assert command[-2:] == ["app.py", "--x"]
    assert ["--py-files", "engine.zip"] == command[command.index("--py-files") :][:2]
    assert "spark.a=1" in command


def test_the_hooks_resolved_connection_names_the_deploy_mode(local_spark: str) -> None:
    """``SparkSubmitHook._connection`` is the resolved connection, a dict whose
    ``deploy_mode`` the operator checks before it submits."""
    assert SparkSubmitHook(conn_id=local_spark)._connection.get("deploy_mode") is None
    assert SparkSubmitHook(conn_id=local_spark, deploy_mode="cluster")._connection["deploy_mode"] == "cluster"


def test_the_environment_hand_over(local_spark: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's hook subclass replaces the environment spark-submit gets. It relies
    on ``submit`` calling ``_build_spark_common_args`` (which stores ``env_vars`` in
    ``_env`` in client mode; the subclass clears it) before it reads ``_env``, on
    ``submit(**kwargs)`` handing ``env`` to ``Popen`` when ``_env`` is empty, and on the
    process being kept in ``_submit_sp``."""
    from airflow_provider_seatunnel_ckpt.operators.spark_submit import _EngineSubmitHook

    record = tmp_path / "env.txt"
    binary = tmp_path / "bin" / "spark-submit"
    binary.parent.mkdir()
    binary.write_text(f'#!/bin/sh\nenv > "{record}"\n')
    binary.chmod(0o755)
    monkeypatch.setenv("PATH", f"{binary.parent}:/usr/bin:/bin")

    plain = SparkSubmitHook(conn_id=local_spark, env_vars={"FROM_ENV_VARS": "1"})
    plain._build_spark_common_args()
    assert plain._env == {"FROM_ENV_VARS": "1"}
    hook = SparkSubmitHook(conn_id=local_spark, env_vars={"FROM_ENV_VARS": "1"})
    hook.__class__ = _EngineSubmitHook
    hook.submit("app.py")

    assert isinstance(hook._submit_sp, subprocess.Popen)
    assert hook._submit_sp.returncode == 0
    names = {line.partition("=")[0] for line in record.read_text().splitlines()}
    assert "FROM_ENV_VARS" in names
    assert not {name for name in names if name.startswith("AIRFLOW_CONN_")}


def test_the_operators_hook_subclass_overrides_only_what_exists() -> None:
    """The subclass the operator swaps in (``hook.__class__``) overrides methods of the
    provider's hook, never adds state: the swap keeps every attribute valid."""
    from airflow_provider_seatunnel_ckpt.operators.spark_submit import _EngineSubmitHook

    own = {name for name in vars(_EngineSubmitHook) if not name.startswith("__")}
    assert own <= set(dir(SparkSubmitHook)), own - set(dir(SparkSubmitHook))
    for name in own:
        assert _parameters(getattr(_EngineSubmitHook, name)) == _parameters(getattr(SparkSubmitHook, name)), name


def test_the_task_sdk_renders_fields_through_do_render_template_fields() -> None:
    """The operator reads its job file in ``_do_render_template_fields``, which the Task
    SDK calls for a plain task and for a mapped task's unmapped operator alike."""
    expected = ["self", "parent", "template_fields", "context", "jinja_env", "seen_oids"]
    assert _parameters(BaseOperator._do_render_template_fields) == expected
    assert _parameters(CheckpointedSparkSubmitOperator._do_render_template_fields) == expected
    source = inspect.getsource(BaseOperator.render_template_fields)
    assert "_do_render_template_fields" in source


def test_the_ceilings_are_declared() -> None:
    """pyproject.toml caps Airflow and the Spark provider at the newest minor releases
    this module was run on; the installed ones are inside."""
    import tomllib
    from importlib.metadata import version

    from packaging.requirements import Requirement

    root = Path(__file__).resolve().parents[2]
    declared = {
        Requirement(text).name: Requirement(text).specifier
        for text in tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    for name in ("apache-airflow", "apache-airflow-providers-apache-spark"):
        ceilings = [spec for spec in declared[name] if spec.operator == "<"]
        assert ceilings, f"{name}: no ceiling in pyproject.toml"
        if os.environ.get("SEATUNNEL_CKPT_NEWEST") != "1":  # scripts/newest may go past it on purpose
            assert version(name) in declared[name], (name, version(name), str(declared[name]))
