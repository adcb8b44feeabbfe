"""Spark settings that break the engine's model, end to end (engine/spark_settings.py):
refused in one line when the job asks for them, overridden with a warning when
spark-submit brings them; a spark-submit local master retries tasks as asked."""

from __future__ import annotations

import pytest

from tests.support.workspace import VENV_BIN, Driver, Workspace, assert_exactly_once, read_output

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]
KILL = {"spark.python.worker.killOnIdleTimeout": "true", "spark.python.worker.idleTimeoutSeconds": "1"}


def test_a_job_file_setting_is_refused_before_anything(workspace: Workspace) -> None:
    config = workspace.write_config(interval=500)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": 100}, env={"spark.speculation": True})
    result = workspace.run(job, config, "refused")
    assert result.returncode == 2, result.explain()
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        "error: spark.speculation: True would let Spark start a second copy of a running subtask "
        "(each subtask is one Spark task that runs for the whole job): two attempts of one subtask at "
        "once, reading the same splits and staging the same rows; remove it or set it to false"
    ], result.explain()
    assert not (workspace.checkpoints / "refused").exists()
    # --conf too
    job2 = workspace.write_job({"plugin_name": "Sequence", "rows": 100}, name="j2")
    result = workspace.run(job2, config, "refused2", "--conf", "spark.excludeOnFailure.enabled=true")
    assert result.returncode == 2 and "error: spark.excludeOnFailure.enabled: true would forbid" in result.stderr, (
        result.explain()
    )


def test_spark_submit_settings_are_overridden_with_a_warning(workspace: Workspace) -> None:
    config = workspace.write_config(interval=500)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": 20_000, "rows_per_second": 5_000})
    import airflow_provider_seatunnel_ckpt.engine.spark_app as app

    args = [str(VENV_BIN / "spark-submit"), "--master", "local[2]"]
    for k, v in {**KILL, "spark.speculation": "true", "spark.dynamicAllocation.enabled": "true"}.items():
        args += ["--conf", f"{k}={v}"]
    args += [app.__file__, str(job), "--config", str(config), "--job-id", "submitted"]
    result = Driver(args, workspace.env, workspace.logs, "submit").wait(300)
    out = result.stdout + result.stderr
    assert result.returncode == 0, result.explain()
    for key in ("spark.speculation", "spark.dynamicAllocation.enabled", "spark.python.worker.killOnIdleTimeout"):
        assert f"{key}: true" in out and f"this job runs with {key}=false" in out, result.explain()
    assert_exactly_once(read_output(f"file://{workspace.output}/"), 20_000)


@pytest.mark.parametrize(("attempts", "finishes"), [(None, True)])
def test_spark_submit_local_master_retries_as_asked(workspace: Workspace, attempts: str | None, finishes: bool) -> None:
    config = workspace.write_config(interval=500)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": 20_000, "rows_per_second": 10_000, "batch_size": 1000},
        transforms=[{"plugin_name": "Python", "function": "tests.integration.engine.fail_once:fail_once"}],
    )
    import airflow_provider_seatunnel_ckpt.engine.spark_app as app

    args = [str(VENV_BIN / "spark-submit"), "--master", "local[2]"]
    if attempts:
        args += ["--conf", f"spark.task.maxFailures={attempts}"]
    args += [app.__file__, str(job), "--config", str(config), "--job-id", "retry"]
    result = Driver(args, workspace.env, workspace.logs, "submit").wait(300)
    assert (result.returncode == 0) is finishes, result.explain()
    if finishes:
        assert_exactly_once(read_output(f"file://{workspace.output}/"), 20_000)
