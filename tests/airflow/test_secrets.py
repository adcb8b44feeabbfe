"""Credentials never leak: example (b) run for real with an ``aws`` connection whose
secret key is a unique string, checkpoints on moto's S3 server.

The secret must reach the Spark driver (through the 0600 temp config file, deleted
afterwards) and appear nowhere else: not in the task log, not in the spark-submit
process arguments or environment, not in XCom, not in rendered template fields, not
anywhere in the metadata database.
"""

from __future__ import annotations

import json
import os
import textwrap
import uuid
from pathlib import Path

import pytest

from .conftest import (
    AIRFLOW_HOME,
    DAGS_TEST_PYTEST_TIMEOUT,
    VENV_BIN,
    airflow_dags_test,
    metadata_rows,
    output,
    task_states,
    xcom_values,
)

pytestmark = pytest.mark.timeout(DAGS_TEST_PYTEST_TIMEOUT)

DAG_ID = "example_checkpointed_etl_s3"


def spark_submit_spy(directory: Path, record: Path, secret: str) -> Path:
    """A ``spark-submit`` first on PATH that records how it was called, then runs the real one."""
    directory.mkdir()
    spy = directory / "spark-submit"
    spy.write_text(
        textwrap.dedent(
            f"""\
            #!{VENV_BIN / "python"}
            import json, os, stat, sys
            args = sys.argv[1:]
            config = args[args.index("--config") + 1]
            with open(config) as f:
                text = f.read()
            entry = {{
                "argv": args,
                "env": dict(os.environ),
                "config_path": config,
                "config_mode": stat.S_IMODE(os.stat(config).st_mode),
                "config_carries_secret": {secret!r} in text,
            }}
            with open({str(record)!r}, "a") as f:
                f.write(json.dumps(entry) + "\\n")
            real = {str(VENV_BIN / "spark-submit")!r}
            os.execv(real, [real, *args])
            """
        )
    )
    spy.chmod(0o755)
    return directory


@pytest.mark.slow
@pytest.mark.spark
def test_secret_of_the_aws_connection_appears_nowhere(airflow_db, tmp_path, s3_server):
    secret = f"sEcReT-{uuid.uuid4().hex}"
    access_key = f"AKIA{uuid.uuid4().hex[:16].upper()}"
    bucket = s3_server.create_bucket(f"ckpt-{uuid.uuid4().hex[:10]}")
    record = tmp_path / "spark-submit-calls.jsonl"
    spy_dir = spark_submit_spy(tmp_path / "bin", record, secret)
    connection = {
        "conn_type": "aws",
        "login": access_key,
        "password": secret,
        "extra": {"region_name": "us-east-1", "endpoint_url": s3_server.endpoint_url},
    }
    env = {
        "AIRFLOW_CONN_AWS_CHECKPOINTS": json.dumps(connection),
        "PATH": f"{spy_dir}{os.pathsep}{os.environ['PATH']}",
    }

    done = airflow_dags_test(DAG_ID, {"workdir": str(tmp_path / "work"), "rows": 60_000, "bucket": bucket}, env=env)
    assert done.returncode == 0, output(done)
    assert task_states(DAG_ID) == {"etl": ("success", 1), "final_checkpoint": ("success", 1)}

    # the checkpoints really went to S3 with the connection's credentials
    xcoms = xcom_values(DAG_ID)
    job_id = xcoms[("etl", "job_id")]
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(Bucket=bucket).get("Contents", [])]
    final_id = xcoms[("etl", "final_checkpoint_id")]
    assert f"seatunnel/checkpoint/{job_id}/pipeline-1/chk-{final_id:020d}/_metadata" in keys
    assert f"seatunnel/checkpoint/{job_id}/job.json" in keys

    # the driver got them through a private temp file, gone afterwards
    (call,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert call["config_carries_secret"] is True
    assert call["config_mode"] == 0o600
    assert not Path(call["config_path"]).exists()

    # ... and nowhere else
    places = {
        "task log": done.stdout + done.stderr,
        "spark-submit arguments": json.dumps(call["argv"]),
        "spark-submit environment": json.dumps(call["env"]),
        "XCom": json.dumps([[*key, value] for key, value in xcoms.items()]),
    }
    rendered = metadata_rows(
        "SELECT task_id, rendered_fields FROM rendered_task_instance_fields WHERE dag_id = ?", DAG_ID
    )
    assert {task_id for task_id, _ in rendered} == {"etl", "final_checkpoint"}
    assert all("config_file" in json.loads(fields) for _, fields in rendered)
    places["rendered template fields"] = json.dumps(rendered)
    for path in AIRFLOW_HOME.rglob("*"):
        # not the metadata DB's files (read above through SQL): closing a file this process
        # opened drops every POSIX lock it holds on that file, SQLite's included, and another
        # process then deletes the WAL under Airflow's open connections here
        if path.is_file() and path.suffix not in (".zip", ".py") and not path.name.startswith("airflow.db"):
            places[f"file {path.relative_to(AIRFLOW_HOME)}"] = path.read_bytes().decode("utf-8", "replace")
    leaked = [where for where, text in places.items() if secret in text]
    assert not leaked, f"the secret leaked into: {leaked}"
