"""Example (c) end to end, offline: fail mid-way, recover from the checkpoint, wait for the final one.

``python -m airflow_provider_seatunnel_ckpt.examples.airflow_demo --dags-folder dags_examples``

A throw-away AIRFLOW_HOME (SQLite, no examples) runs ``airflow dags test
example_fail_and_recover``: the Spark job fails after some rows on its first attempt,
``CheckpointRecoveryOperator`` resumes it from the latest completed checkpoint, and a
deferrable ``CheckpointSensor`` waits for the job's final checkpoint. Then every id in
the committed output is counted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

DAG_ID = "example_fail_and_recover"
DAG_FILE = "example_fail_and_recover.py"


def _say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def _task_states(home: Path) -> dict[str, tuple[str, int]]:
    with sqlite3.connect(home / "airflow.db") as db:
        run_id = db.execute(
            "SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (DAG_ID,)
        ).fetchone()[0]
        rows = db.execute(
            "SELECT task_id, state, try_number FROM task_instance WHERE dag_id = ? AND run_id = ?", (DAG_ID, run_id)
        ).fetchall()
    return {task: (state, tries) for task, state, tries in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dags-folder", required=True, help="the repository's dags_examples directory")
    parser.add_argument("--workdir", help="checkpoints and output (default: inside the throw-away AIRFLOW_HOME)")
    args = parser.parse_args(argv)

    home = Path(tempfile.mkdtemp(prefix="seatunnel-ckpt-airflow-demo-"))
    workdir = Path(args.workdir or home / "work").resolve()
    dags = home / "dags"
    dags.mkdir()
    shutil.copy(Path(args.dags_folder) / DAG_FILE, dags / DAG_FILE)
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    airflow = str(bin_dir / "airflow")

    _say(f"throw-away Airflow in {home}: migrating its SQLite database")
    migrated = subprocess.run([airflow, "db", "migrate"], env=env, capture_output=True, text=True)
    if migrated.returncode != 0:
        print(migrated.stderr[-3000:], file=sys.stderr)
        return 1

    _say(f"airflow dags test {DAG_ID}: the job fails mid-way, the recovery operator resumes it")
    run = subprocess.run(
        [airflow, "dags", "test", DAG_ID, "-c", json.dumps({"workdir": str(workdir)})],
        env=env,
        capture_output=True,
        text=True,
    )
    log = home / "dags-test.log"
    log.write_text(run.stdout + run.stderr)
    states = _task_states(home)
    for task, (state, tries) in sorted(states.items()):
        print(f"task {task:<18} {state:<10} (tries: {tries})")
    print(f"full log: {log}")

    _say("what the attempts recorded in checkpoint storage say")
    from ..config import load_config
    from ..history.attempts import read_attempts
    from ..storage import create_storage

    storage = create_storage(
        load_config(
            {
                "checkpoint": {
                    "storage": {"plugin-config": {"storage.type": "local", "namespace": f"{workdir}/checkpoints/"}}
                }
            }
        ).storage
    )
    jobs = storage.list_jobs()
    for job_id in jobs:
        for attempt in read_attempts(storage, job_id):
            print(
                f"attempt {attempt.get('attempt')}: {attempt.get('outcome')}, restored from checkpoint "
                f"{attempt.get('restored_from')}, {attempt.get('checkpoints_completed', 0)} checkpoints completed"
                + (f", error: {attempt['error']}" if attempt.get("error") else "")
            )

    _say("checking the committed output, id by id")
    import numpy as np
    import pyarrow.dataset as ds

    outputs = sorted((workdir / "output" / DAG_ID).glob("*"))
    if not outputs:
        print("error: no output was committed", file=sys.stderr)
        return 1
    ids = ds.dataset(str(outputs[-1]), format="parquet").to_table(columns=["id"]).column("id").to_numpy()
    rows = 240_000  # the DAG's default params
    distinct = len(np.unique(ids))
    print(
        f"committed output: {len(ids):,} rows, {distinct:,} distinct ids, lost {rows - distinct:,}, "
        f"duplicated {len(ids) - distinct:,}"
    )
    failed_then_recovered = states.get("etl", ("",))[0] == "failed" and states.get("recover", ("",))[0] == "success"
    ok = run.returncode == 0 or failed_then_recovered
    ok = ok and failed_then_recovered and states.get("final_checkpoint", ("",))[0] == "success"
    ok = ok and distinct == rows == len(ids)
    print("recovered and exactly once: yes" if ok else "recovered and exactly once: NO", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
