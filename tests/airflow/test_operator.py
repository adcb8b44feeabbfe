"""CheckpointedSparkSubmitOperator: job ids, arguments, the environment spark-submit gets,
the engine archive, and on_kill (real Spark: the killed job resumes afterwards)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import zipfile
from types import SimpleNamespace

import psutil
import pytest

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator, default_job_id
from airflow_provider_seatunnel_ckpt.operators.assets import sink_asset_uri
from airflow_provider_seatunnel_ckpt.operators.engine_archive import engine_archive
from airflow_provider_seatunnel_ckpt.operators.spark_submit import _terminate_tree, spark_submit_environment
from airflow_provider_seatunnel_ckpt.storage.layout import validate_job_id
from airflow_provider_seatunnel_ckpt.ui import VIEW_XCOM_KEY
from airflow_provider_seatunnel_ckpt.ui.locate import TaskJob, storage_hook
from tests.support.airflow_operator import JOB_TEXT, fake_context, local_config


def test_default_job_id_is_storage_safe_stable_and_distinct():
    run_id = "manual__2026-01-02T03:04:05.678901+00:00"
    job_id = default_job_id("etl", "group.load", run_id)
    assert validate_job_id(job_id) == job_id == default_job_id("etl", "group.load", run_id)
    assert job_id.startswith("etl.group.load.manual__2026-01-02T03_04_05.678901_00_00-")
    assert default_job_id("etl", "load", "a:b") != default_job_id("etl", "load", "a_b")
    assert default_job_id("etl", "load", "scheduled__x") == "etl.load.scheduled__x"  # nothing to hide
    assert default_job_id("etl", "load", "r", map_index=3) == "etl.load.r.3"
    assert len(default_job_id("d" * 150, "t" * 150, "r")) <= 200


INERT_DAG = """
from datetime import datetime
from airflow.sdk import DAG
from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator

with DAG("inert_argument", schedule=None, start_date=datetime(2026, 1, 1)):
    CheckpointedSparkSubmitOperator(task_id="etl", job_file="j.yaml", {argument})
"""


@pytest.mark.parametrize(
    "argument",
    [
        "java_class='org.example.Main'",
        "openlineage_inject_parent_job_info=True",
        "openlineage_inject_transport_info=True",
        "yarn_track_via_rm_api=True",
    ],
)
def test_a_spark_submit_argument_that_cannot_work_is_a_dag_import_error_naming_it(argument, tmp_path):
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "inert.py").write_text(INERT_DAG.format(argument=argument))
    bag = DagBag(dag_folder=str(tmp_path))
    name = argument.split("=")[0]
    (error,) = bag.import_errors.values()
    assert f"takes no '{name}'" in error and "inert_argument" not in bag.dags, error
    assert len(error.strip().splitlines()[-1]) < 300  # the reason, on the error's own line


def test_arguments_that_cannot_work_are_refused_by_both_operators_and_by_partial():
    from airflow_provider_seatunnel_ckpt.operators import CheckpointRecoveryOperator

    for make in (CheckpointedSparkSubmitOperator, CheckpointRecoveryOperator, CheckpointedSparkSubmitOperator.partial):
        with pytest.raises(TypeError, match="takes no 'java_class': the application is the checkpoint engine"):
            make(task_id="t", job_file="j.yaml", job_id="j", java_class="org.example.Main")
        with pytest.raises(TypeError, match="takes no 'openlineage_inject_transport_info'"):
            make(task_id="t", job_file="j.yaml", job_id="j", openlineage_inject_transport_info=True)
    # asking for nothing is fine: the parent's defaults come from [openlineage] spark_inject_*
    CheckpointedSparkSubmitOperator(
        task_id="t", job_file="j.yaml", java_class=None, openlineage_inject_parent_job_info=False
    )


def test_status_poll_interval_has_no_effect_and_says_so():
    with pytest.warns(
        UserWarning, match="status_poll_interval has no effect: it only tracks a standalone cluster.s driver"
    ) as caught:
        CheckpointedSparkSubmitOperator(task_id="t", job_file="j.yaml", status_poll_interval=5)
    assert caught[0].filename == __file__  # the line of the DAG file that passed it


def test_arguments_are_checked_early():
    with pytest.raises(ValueError, match="restore must be one of auto, latest, none"):
        CheckpointedSparkSubmitOperator(task_id="t", job_file="j.yaml", restore="newest")
    with pytest.raises(TypeError, match="takes no 'application'"):
        CheckpointedSparkSubmitOperator(task_id="t", job_file="j.yaml", application="x.py")
    op = CheckpointedSparkSubmitOperator(task_id="t", job_file="j.yaml", restore=12, executor_memory="2g")
    assert op.restore == "12" and op._executor_memory == "2g"
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    # every field the parent renders, then ours
    assert tuple(op.template_fields) == (
        *SparkSubmitOperator.template_fields,
        "job_file",
        "job_id",
        "config_file",
        "restore",
    )
    # a template is checked once rendered (execute), a literal when the DAG is parsed
    assert (
        CheckpointedSparkSubmitOperator(task_id="t", job_file="j.yaml", restore="{{ params.r }}").restore
        == "{{ params.r }}"
    )


@pytest.mark.parametrize(
    ("sink", "uri"),
    [
        ({"plugin_name": "File", "path": "file:///data/out/2026-01-01/"}, "file:///data/out/2026-01-01"),
        ({"plugin_name": "File", "path": "/data/out"}, "file:///data/out"),
        ({"plugin_name": "file", "path": "s3a://bucket/out/"}, "s3://bucket/out"),
        (
            {
                "plugin_name": "Delta",
                "path": "s3://bucket/t",
                "fs.s3a.access.key": "key",
                "fs.s3a.secret.key": "secret",
            },
            "s3://bucket/t",
        ),
        (
            {
                "plugin_name": "Iceberg",
                "catalog_name": "lake",
                "namespace": "db",
                "table": "orders",
                "iceberg.catalog.config": {
                    "type": "sql",
                    "uri": "sqlite:////lake/catalog.db",
                    "warehouse": "file:///lake",
                },
            },
            "iceberg://lake/db/orders",
        ),
        (
            {"plugin_name": "Jdbc", "url": "jdbc:postgresql://pg:5433/shop?password=pw", "table": "sales.orders"},
            "postgres://pg:5433/shop/sales/orders",
        ),
        (
            {"plugin_name": "Jdbc", "url": "postgresql://u:pw@pg/shop", "table": "orders"},
            "postgres://pg:5432/shop/public/orders",
        ),
        ({"plugin_name": "Kafka", "bootstrap.servers": "b1:9092,b2:9092", "topic": "events"}, "kafka://b1:9092/events"),
        ({"plugin_name": "Console"}, None),
    ],
)
def test_sink_asset_uri_names_the_output_without_credentials(sink, uri):
    assert sink_asset_uri(sink) == uri


def test_the_sink_alias_is_an_outlet_unless_turned_off():
    from airflow.sdk import DAG, AssetAlias

    with DAG("assets_dag", schedule=None):
        declared = CheckpointedSparkSubmitOperator(task_id="etl", job_file="j.yaml")
        quiet = CheckpointedSparkSubmitOperator(task_id="quiet", job_file="j.yaml", sink_asset=False)
    assert declared.outlets == [AssetAlias("seatunnel-ckpt/assets_dag.etl")]
    assert quiet.outlets == []


def test_spark_submit_does_not_inherit_airflow_secrets(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_SOMETHING", "aws://key:secret@")
    monkeypatch.setenv("AIRFLOW_VAR_TOKEN", "t")
    monkeypatch.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "postgresql://u:pw@db/airflow")
    env = spark_submit_environment({"MY_SETTING": 1})
    assert not [k for k in env if k.startswith(("AIRFLOW_CONN_", "AIRFLOW_VAR_", "AIRFLOW__"))]
    assert env["MY_SETTING"] == "1" and env["PATH"] == os.environ["PATH"]


def test_engine_archive_holds_the_engine_and_nothing_of_airflow(tmp_path):
    archive = engine_archive(tmp_path)
    assert engine_archive(tmp_path) == archive  # content-addressed: built once
    names = zipfile.ZipFile(archive).namelist()
    top = {n.split("/")[1] for n in names}
    assert top == {
        "__init__.py",
        "cli_base.py",
        "config.py",
        "errors.py",
        "extras.py",
        "storage",
        "history",
        "jobfile",
        "engine",
        "connectors",
        "transforms",
        "sql",
        "examples",
    }
    assert "airflow_provider_seatunnel_ckpt/engine/spark_app.py" in names
    assert not [n for n in names if "__pycache__" in n or not n.endswith(".py")]
    # importable from the archive alone, without Airflow: every module of the engine (what
    # the driver imports lazily too, such as the checkpoint history)
    probe = (
        "import sys, importlib; sys.path.insert(0, sys.argv[1]);"
        "import airflow_provider_seatunnel_ckpt.engine.cli, airflow_provider_seatunnel_ckpt.cli_base as c,"
        " airflow_provider_seatunnel_ckpt.storage.plugins, airflow_provider_seatunnel_ckpt.examples.fail_once;"
        "[importlib.import_module(n[:-3].replace('/', '.')) for n in sys.argv[2:]];"
        "assert c.__file__.startswith(sys.argv[1]), c.__file__;"
        "assert not [m for m in sys.modules if m == 'airflow' or m.startswith('airflow.')], 'airflow imported'"
    )
    engine_modules = [
        n
        for n in names
        if n.startswith("airflow_provider_seatunnel_ckpt/engine/") and not n.endswith(("__init__.py", "spark_app.py"))
    ]
    assert len(engine_modules) > 20
    # and the transforms, which the registry names by dotted strings only
    transform_modules = [
        n
        for n in names
        if n.startswith(("airflow_provider_seatunnel_ckpt/transforms/", "airflow_provider_seatunnel_ckpt/sql/"))
        and not n.endswith("__init__.py")
    ]
    done = subprocess.run(
        [sys.executable, "-c", probe, str(archive), *engine_modules, *transform_modules], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_terminate_tree_stops_the_whole_process_tree():
    parent = subprocess.Popen(["bash", "-c", "sleep 60 & sleep 60 & wait"])
    deadline = time.monotonic() + 10
    while len(psutil.Process(parent.pid).children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    children = psutil.Process(parent.pid).children(recursive=True)
    assert len(children) == 2
    _terminate_tree(parent.pid, SimpleNamespace(info=lambda *a: None))
    parent.wait(timeout=15)
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow
@pytest.mark.spark
def test_on_kill_stops_spark_submit_and_the_next_run_resumes(tmp_path):
    from airflow.sdk.exceptions import AirflowException

    from airflow_provider_seatunnel_ckpt.hooks import get_checkpoint_hook

    rows = 120_000
    config = f"checkpoint:\n  interval: 500\n  storage:\n    plugin-config:\n      storage.type: local\n      namespace: {tmp_path}/ckpt/\n"
    job = (
        "env: {job.name: killed, parallelism: 2}\n"
        f"source: [{{plugin_name: Sequence, rows: {rows}, batch_size: 2000, rows_per_second: 12000}}]\n"
        f"sink: [{{plugin_name: File, path: 'file://{tmp_path}/out/', format: parquet}}]\n"
    )
    hook = get_checkpoint_hook(config_file=config)
    pushed: dict = {}
    op = CheckpointedSparkSubmitOperator(task_id="etl", job_file=job, config_file=config)
    failure: list[BaseException] = []

    def run():
        try:
            op.execute(fake_context(pushed))
        except BaseException as err:  # inspected below
            failure.append(err)

    worker = threading.Thread(target=run)
    worker.start()
    job_id = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and worker.is_alive():
        job_id = pushed.get("job_id")
        if job_id and hook.get_latest_checkpoint_id(job_id):
            break
        time.sleep(0.2)
    assert job_id and hook.get_latest_checkpoint_id(job_id), "no checkpoint completed before the kill"
    process = psutil.Process(op._hook._submit_sp.pid)
    tree = [process, *process.children(recursive=True)]
    op.on_kill()
    worker.join(60)
    assert not worker.is_alive() and failure and isinstance(failure[0], AirflowException)
    assert not [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    killed_at = hook.get_latest_checkpoint_id(job_id)
    assert killed_at and hook.verify(job_id) == []  # checkpoints intact

    pushed.clear()
    result = CheckpointedSparkSubmitOperator(task_id="etl", job_file=job, config_file=config).execute(
        fake_context(pushed)
    )
    assert result["status"] == "finished" and result["ran"] is True
    assert result["attempts"][-1]["restored_from"] == killed_at

    import pyarrow.dataset as ds

    ids = sorted(ds.dataset(str(tmp_path / "out"), format="parquet").to_table(columns=["id"]).column("id").to_pylist())
    assert ids == list(range(rows))


def test_a_finished_job_is_not_run_again(tmp_path):
    from airflow_provider_seatunnel_ckpt.hooks import get_checkpoint_hook
    from airflow_provider_seatunnel_ckpt.storage import CheckpointKind, PipelineState

    config = local_config(tmp_path)
    storage = get_checkpoint_hook(config_file=config).storage
    storage.store_checkpoint(
        PipelineState(job_id="done", pipeline_id=1, checkpoint_id=4, states=b"", kind=CheckpointKind.FINAL)
    )
    storage.write_document(
        "done", "job.json", {"status": "finished", "attempt": 2, "final_checkpoint_id": 4, "fencing_token": "x"}
    )
    pushed: dict = {}
    op = CheckpointedSparkSubmitOperator(task_id="etl", job_file=JOB_TEXT, config_file=config, job_id="done")
    result = op.execute(fake_context(pushed))
    assert result["ran"] is False and result["final_checkpoint_id"] == 4 and op._hook is None  # no spark-submit
    view = pushed.pop(VIEW_XCOM_KEY)
    assert pushed == {"job_id": "done", "final_checkpoint_id": 4}
    assert "fencing_token" not in str(result)
    # what the checkpoint view reads back opens the same storage
    job = TaskJob.model_validate(view)
    assert (job.job_id, job.storage_conn_id) == ("done", None)
    assert storage_hook(job).describe("done") == get_checkpoint_hook(config_file=config).describe("done")
    assert storage_hook(job).get_job_status("done")["final_checkpoint_id"] == 4


def test_a_job_stopped_with_a_savepoint_succeeds_and_the_next_run_resumes_from_it(tmp_path):
    from airflow.sdk.exceptions import AirflowException

    from airflow_provider_seatunnel_ckpt.hooks import get_checkpoint_hook
    from airflow_provider_seatunnel_ckpt.storage import CheckpointKind, PipelineState

    config = local_config(tmp_path)
    hook = get_checkpoint_hook(config_file=config)
    hook.storage.store_checkpoint(
        PipelineState(job_id="halt", pipeline_id=1, checkpoint_id=3, states=b"", kind=CheckpointKind.SAVEPOINT)
    )
    op = CheckpointedSparkSubmitOperator(task_id="etl", job_file=JOB_TEXT, config_file=config, job_id="halt")
    hook.storage.write_document("halt", "job.json", {"status": "stopped", "attempt": 1, "savepoint_id": 3})
    pushed: dict = {}
    result = op._result(fake_context(pushed), hook, "halt", ran=True)
    assert result["status"] == "stopped" and result["savepoint_id"] == 3 and result["final_checkpoint_id"] is None
    assert pushed == {"final_checkpoint_id": None}
    assert op._restore_argument(hook, "halt") == "latest"  # a rerun resumes from the savepoint
    summary = hook.inspect("halt", 3, savepoint=True)
    assert (
        summary["kind"] == "savepoint" and "/savepoint-" in summary["location"] and "/chk-" not in summary["location"]
    )
    hook.storage.write_document("halt", "job.json", {"status": "running", "attempt": 2})
    with pytest.raises(AirflowException, match="job.json says 'running'"):
        op._result(fake_context({}), hook, "halt", ran=True)


def test_a_job_that_deleted_itself_with_delete_on_finish_succeeds(tmp_path):
    """spark-submit succeeded and nothing of the job is in storage: its driver finished it
    and deleted it (issue 47, defect 6). That is the job's end, not a takeover; a sensor
    cannot wait for a final checkpoint that goes with the job, so it is refused."""
    from airflow.sdk.exceptions import AirflowException

    from airflow_provider_seatunnel_ckpt.errors import ConfigError
    from airflow_provider_seatunnel_ckpt.hooks import get_checkpoint_hook

    config = local_config(tmp_path) + "  externalized-retention: delete-on-finish\n"
    hook = get_checkpoint_hook(config_file=config)
    op = CheckpointedSparkSubmitOperator(task_id="etl", job_file=JOB_TEXT, config_file=config, job_id="gone")
    pushed: dict = {}
    result = op._result(fake_context(pushed), hook, "gone", ran=True)
    assert (result["status"], result["final_checkpoint_id"], result["attempts"]) == ("finished", None, [])
    assert pushed == {"final_checkpoint_id": None}
    with pytest.raises(
        ConfigError,
        match="externalized-retention: .*delete-on-finish deletes the job when it "
        "finishes: there is no final checkpoint to wait for",
    ):
        hook.check_checkpoint("gone", wait_for_final=True)
    retained = get_checkpoint_hook(config_file=local_config(tmp_path))
    with pytest.raises(AirflowException, match="job.json says None"):  # without it: as before
        op._result(fake_context({}), retained, "gone", ran=True)


def test_invalid_input_fails_without_retry(tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    op = CheckpointedSparkSubmitOperator(
        task_id="etl", job_file=JOB_TEXT.replace("Sequence", "Sequense"), config_file=local_config(tmp_path)
    )
    with pytest.raises(AirflowFailException, match="Sequense"):
        op.execute(fake_context({}))
    op = CheckpointedSparkSubmitOperator(
        task_id="etl", job_file=JOB_TEXT, config_file=local_config(tmp_path), restore="latest"
    )
    with pytest.raises(AirflowFailException, match="restore='latest' but there is no completed checkpoint"):
        op.execute(fake_context({}))


def test_only_an_operator_that_allows_it_lets_the_engine_drop_output_of_removed_sinks(tmp_path, monkeypatch):
    from airflow_provider_seatunnel_ckpt.hooks import get_checkpoint_hook
    from airflow_provider_seatunnel_ckpt.operators import CheckpointRecoveryOperator

    submitted = []

    class SubmitHook:
        _connection = {"deploy_mode": "client"}

        def submit(self, application):
            pass

    def submit_hook(self, application_args, cluster_files=None):
        submitted.append((self.task_id, application_args))
        return SubmitHook()

    monkeypatch.setattr(CheckpointedSparkSubmitOperator, "_spark_submit_hook", submit_hook)
    hook = get_checkpoint_hook(config_file=local_config(tmp_path))
    for op in (
        CheckpointedSparkSubmitOperator(task_id="etl", job_file=JOB_TEXT),
        CheckpointedSparkSubmitOperator(task_id="allowed", job_file=JOB_TEXT, allow_non_restored_state=True),
        CheckpointRecoveryOperator(task_id="recover", job_file=JOB_TEXT, job_id="j", allow_non_restored_state=True),
    ):
        op._run_engine(hook, "j", JOB_TEXT, "latest", {})
    assert [(task, args[args.index("--restore") :]) for task, args in submitted] == [
        ("etl", ["--restore", "latest"]),
        ("allowed", ["--restore", "latest", "--allow-non-restored-state"]),
        ("recover", ["--restore", "latest", "--allow-non-restored-state"]),
    ]


def test_on_kill_ends_within_the_supervisors_grace_even_when_sigterm_is_ignored():
    """Airflow's supervisor SIGKILLs the task process 5 s after SIGTERM; on_kill must have
    stopped spark-submit and its children by then, however they treat SIGTERM."""
    import inspect

    from airflow.sdk.execution_time.supervisor import ActivitySubprocess

    from airflow_provider_seatunnel_ckpt.operators.spark_submit import KILL_GRACE_S, KILL_REAP_S

    supervisor_grace = inspect.signature(ActivitySubprocess.kill).parameters["escalation_delay"].default
    assert KILL_GRACE_S + KILL_REAP_S < supervisor_grace

    # a spark-submit stand-in that ignores SIGTERM, and a child that inherits that
    stubborn = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        "print('ready', flush=True); time.sleep(60)"
    )
    process = subprocess.Popen([sys.executable, "-c", stubborn], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    assert len(tree) == 2

    op = CheckpointedSparkSubmitOperator(task_id="etl", job_file=JOB_TEXT)
    spark_hook = op._spark_submit_hook(["job.yaml"])  # the real SparkSubmitHook the operator submits with
    spark_hook._submit_sp = process
    started = time.monotonic()
    op.on_kill()
    took = time.monotonic() - started
    process.wait(timeout=5)
    assert not [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert KILL_GRACE_S <= took < supervisor_grace - 0.5, took  # waited for a graceful stop, then killed


def test_on_kill_of_a_try_attached_to_a_live_driver_asks_that_driver_to_stop(tmp_path):
    """A try that waits for a previous try's live driver (operators/attach.py) has no
    spark-submit of its own to stop: killing it asks that driver for a savepoint and a
    stop, through the request the driver polls for."""
    from airflow_provider_seatunnel_ckpt.hooks import get_checkpoint_hook
    from airflow_provider_seatunnel_ckpt.hooks.base import STOP_REQUEST

    config = (
        f"checkpoint:\n  storage:\n    plugin-config:\n      storage.type: local\n      namespace: {tmp_path}/ckpt/\n"
    )
    hook = get_checkpoint_hook(config_file=config)
    op = CheckpointedSparkSubmitOperator(task_id="etl", job_file=JOB_TEXT, config_file=config)
    op.on_kill()  # not attached: nothing requested
    assert hook.storage.read_document("attached", STOP_REQUEST) is None
    op._attached_to = (hook, "attached")
    op.on_kill()
    assert hook.storage.read_document("attached", STOP_REQUEST)["by"] == "airflow"
