"""CheckpointedSparkSubmitOperator through Airflow's own rendering, in real ``dag.test()``
runs: every SparkSubmitOperator field is templated, ``restore`` too (checked once
rendered), a job file on disk is rendered like SparkSqlOperator's ``.sql`` (SeaTunnel's
``${VAR}`` left alone), and a connection of the wrong type fails without retrying.

No Spark: ``spark-submit`` on PATH is a script that records the command line, the
environment and the job file it was handed, then exits 1. Everything before it (Airflow's
renderer, SparkSubmitHook's command builder, the engine arguments) is the real thing.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from .conftest import DAGS_FOLDER, task_states

DAG_FILE = DAGS_FOLDER / "test_operator_templates_dags.py"
DAG_SOURCE = '''
"""DAGs of tests/airflow/test_operator_templates.py (written here by the test)."""
import os
from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = (
    "checkpoint:\\n  storage:\\n    plugin-config:\\n      storage.type: local\\n"
    "      namespace: {{ params.namespace }}\\n"
)
JOB = "env: {job.name: j}\\nsource: [{plugin_name: Sequence, rows: 10}]\\nsink: [{plugin_name: Console}]\\n"

with DAG(
    dag_id="test_op_templates",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"namespace": "/tmp/unset/", "r": "3"},
    template_searchpath=[os.path.join(HERE, "test_op_searchpath")],
):
    CheckpointedSparkSubmitOperator(
        task_id="templated",
        job_file="test_op_jobs/daily.yaml",  # relative to the DAG folder
        config_file=CONFIG,
        restore="{{ params.r }}",
        conf={"spark.x": "{{ ds }}"},
        env_vars={"RUN_DS": "{{ ds }}"},
        name="templated-{{ ds_nodash }}",
        properties_file=os.path.join(HERE, "test_op_jobs", "spark.conf"),
        files="lookup.json",
        retries=0,
    )
    CheckpointedSparkSubmitOperator(
        task_id="searchpath",
        job_file="on_searchpath.yml",  # found through template_searchpath
        config_file=CONFIG,
        name="searchpath",
        retries=0,
    )
    CheckpointedSparkSubmitOperator(
        task_id="hocon",
        job_file="test_op_jobs/seatunnel_job.conf",  # SeaTunnel's HOCON, rendered like the others
        config_file=CONFIG,
        name="hocon",
        retries=0,
    )

with DAG(dag_id="test_op_wrong_conn", schedule=None, start_date=datetime(2026, 1, 1)):
    CheckpointedSparkSubmitOperator(
        task_id="etl",
        job_file=JOB,
        storage_conn_id="not_storage",
        retries=2,
        retry_delay=timedelta(seconds=0),
    )
'''

FAKE_SPARK_SUBMIT = """\
#!{python}
import json, os, sys
from pathlib import Path

args = sys.argv[1:]
app = next(i for i, a in enumerate(args) if a.endswith("spark_app.py"))
job = Path(args[app + 1])
record = {{
    "argv": args,
    "job_file_name": job.name,
    "job_text": job.read_text(),
    "RUN_DS": os.environ.get("RUN_DS"),
}}
name = args[args.index("--name") + 1]
Path(os.environ["FAKE_SPARK_RECORDS"], name + ".json").write_text(json.dumps(record))
sys.exit(1)
"""

LOGICAL_DATE = datetime(2026, 3, 4, tzinfo=UTC)


@pytest.fixture(scope="module")
def dags(airflow_db):
    """The DAG file and its job files in the test DAGS_FOLDER, parsed as the DAG processor does."""
    from airflow.dag_processing.dagbag import DagBag

    jobs = DAGS_FOLDER / "test_op_jobs"
    jobs.mkdir(exist_ok=True)
    (jobs / "daily.yaml").write_text(
        textwrap.dedent("""\
        env: {parallelism: 1}
        source: [{plugin_name: Sequence, rows: 10}]
        sink: [{plugin_name: File, path: "file://${OUT_ROOT}/{{ ds }}/", format: parquet}]
        """)
    )
    (jobs / "spark.conf").write_text("spark.y 1\n")
    (jobs / "seatunnel_job.conf").write_text(
        textwrap.dedent("""\
        env { parallelism = 1 }
        source { FakeSource { row.num = {{ 2 + 2 }}, schema = { fields { id = bigint } } } }
        sink { Console {} }
        """)
    )
    searchpath = DAGS_FOLDER / "test_op_searchpath"
    searchpath.mkdir(exist_ok=True)
    (searchpath / "on_searchpath.yml").write_text(
        "env: {job.name: from-searchpath}\nsource: [{plugin_name: Sequence, rows: {{ 2 + 3 }}}]\n"
        "sink: [{plugin_name: Console}]\n"
    )
    DAG_FILE.write_text(DAG_SOURCE)
    bag = DagBag(dag_folder=str(DAG_FILE))
    assert not bag.import_errors
    return bag


@pytest.fixture
def fake_spark_submit(tmp_path, monkeypatch) -> Path:
    """``spark-submit`` first on PATH: records what it was given in the returned directory."""
    bin_dir, records = tmp_path / "bin", tmp_path / "records"
    bin_dir.mkdir()
    records.mkdir()
    script = bin_dir / "spark-submit"
    script.write_text(FAKE_SPARK_SUBMIT.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SPARK_RECORDS", str(records))
    monkeypatch.setenv("OUT_ROOT", str(tmp_path / "out"))
    return records


def test_every_spark_field_restore_and_the_job_file_are_rendered(dags, fake_spark_submit, tmp_path):
    run = dags.get_dag("test_op_templates").test(
        logical_date=LOGICAL_DATE, run_conf={"namespace": f"{tmp_path}/ckpt/", "r": "7"}
    )
    assert run.state == "failed"  # the fake spark-submit exits 1
    assert task_states("test_op_templates") == {
        "templated": ("failed", 1),
        "searchpath": ("failed", 1),
        "hocon": ("failed", 1),
    }

    record = json.loads((fake_spark_submit / "templated-20260304.json").read_text())
    argv = record["argv"]
    assert "spark.x=2026-03-04" in argv and not [a for a in argv if "{{" in a]
    assert record["RUN_DS"] == "2026-03-04"  # env_vars
    assert argv[argv.index("--restore") + 1] == "7"  # restore, rendered then checked
    # paths spark-submit reads stay paths, though .conf / .json look like template files
    assert argv[argv.index("--properties-file") + 1].endswith("test_op_jobs/spark.conf")
    assert argv[argv.index("--files") + 1] == "lookup.json"
    # the job file, found next to the DAG file, rendered by Jinja; ${OUT_ROOT} is the engine's
    assert record["job_file_name"] == "daily.yaml"  # the engine names the job after it
    assert 'path: "file://${OUT_ROOT}/2026-03-04/"' in record["job_text"]

    found = json.loads((fake_spark_submit / "searchpath.json").read_text())
    assert "rows: 5" in found["job_text"] and found["job_file_name"] == "on_searchpath.yml"

    hocon = json.loads((fake_spark_submit / "hocon.json").read_text())
    assert hocon["job_file_name"] == "seatunnel_job.conf"  # the engine reads it as HOCON by its name
    assert "row.num = 4," in hocon["job_text"]


def test_a_bad_rendered_restore_fails_once_with_one_line(dags, fake_spark_submit, tmp_path, monkeypatch):
    from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator

    raised: list[BaseException] = []
    original = CheckpointedSparkSubmitOperator._checked_restore

    def record(self):
        try:
            return original(self)
        except BaseException as err:
            raised.append(err)
            raise

    monkeypatch.setattr(CheckpointedSparkSubmitOperator, "_checked_restore", record)
    run = dags.get_dag("test_op_templates").test(
        logical_date=LOGICAL_DATE, run_conf={"namespace": f"{tmp_path}/ckpt/", "r": "newest"}
    )
    assert run.state == "failed"
    assert task_states("test_op_templates")["templated"] == ("failed", 1)
    assert not (fake_spark_submit / "templated-20260304.json").exists()  # never submitted
    (error,) = raised
    assert type(error).__name__ == "AirflowFailException"
    assert str(error) == "restore must be one of auto, latest, none or a checkpoint id, got 'newest'"


def test_a_connection_of_the_wrong_type_fails_once_not_on_every_retry(dags, monkeypatch):
    from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator

    monkeypatch.setenv("AIRFLOW_CONN_NOT_STORAGE", json.dumps({"conn_type": "postgres", "host": "db"}))
    raised: list[BaseException] = []
    original = CheckpointedSparkSubmitOperator.execute

    def record(self, context):
        try:
            return original(self, context)
        except BaseException as err:
            raised.append(err)
            raise

    monkeypatch.setattr(CheckpointedSparkSubmitOperator, "execute", record)
    run = dags.get_dag("test_op_wrong_conn").test()
    assert run.state == "failed"
    assert task_states("test_op_wrong_conn") == {"etl": ("failed", 1)}  # retries=2, not used
    (error,) = raised
    assert type(error).__name__ == "AirflowFailException"
    message = str(error)
    assert "\n" not in message and "'not_storage'" in message and "'postgres'" in message
    assert "aws" in message and "seatunnel_checkpoint" in message  # the accepted types
