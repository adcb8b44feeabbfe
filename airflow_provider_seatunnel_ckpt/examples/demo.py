"""The end-to-end demo: run a checkpointed job, kill its driver, resume, check the output.

``python -m airflow_provider_seatunnel_ckpt.examples.demo [--workdir DIR] [--rows N]``

1. writes a ``seatunnel.yaml`` (local checkpoint storage) and a job file (Sequence
   source -> Python transform -> CountByKey -> File parquet sink, 2 subtasks);
2. starts ``seatunnel-ckpt run`` in ``local[2]`` Spark and SIGKILLs the whole driver
   once a few checkpoints have completed;
3. runs it again with ``--restore latest``: it resumes from the last checkpoint;
4. reads the committed output and counts every id: none lost, none duplicated.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

JOB_ID = "demo"


def _say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def _write_files(workdir: Path, rows: int) -> tuple[Path, Path, Path]:
    checkpoints, output = workdir / "checkpoints", workdir / "output"
    config = workdir / "seatunnel.yaml"
    config.write_text(
        textwrap.dedent(f"""\
        seatunnel:
          engine:
            checkpoint:
              interval: 1000
              timeout: 30000
              tolerable-failure: 2
              storage:
                type: hdfs
                max-retained: 3
                plugin-config:
                  storage.type: hdfs
                  fs.defaultFS: file:///
                  namespace: {checkpoints}/
        """)
    )
    job = workdir / "job.yaml"
    job.write_text(
        textwrap.dedent(f"""\
        env: {{job.name: demo, parallelism: 2}}
        source:
          - {{plugin_name: Sequence, rows: {rows}, batch_size: 20000, rows_per_second: {max(rows // 12, 1000)}}}
        transform:
          - {{plugin_name: Python, function: "airflow_provider_seatunnel_ckpt.examples.transforms:add_bucket"}}
          - {{plugin_name: CountByKey, key: bucket}}
        sink:
          - {{plugin_name: File, path: "file://{output}/", format: parquet}}
        """)
    )
    return config, job, output


def _completed_checkpoints(config: Path) -> list[int]:
    from ..config import load_config
    from ..storage import create_storage

    storage = create_storage(load_config(config).storage)
    return [e.checkpoint_id for e in storage.list_checkpoint_entries(JOB_ID, 1) if e.completed]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "airflow_provider_seatunnel_ckpt", *args]


def _verify(output: Path, rows: int) -> bool:
    import numpy as np
    import pyarrow.dataset as ds

    table = ds.dataset(str(output), format="parquet").to_table(columns=["id", "bucket", "count"])
    ids = table.column("id").to_numpy()
    distinct = len(np.unique(ids))
    lost = rows - distinct
    duplicated = len(ids) - distinct
    print(f"committed output: {len(ids):,} rows, {distinct:,} distinct ids, lost {lost:,}, duplicated {duplicated:,}")
    counts = table.group_by("bucket").aggregate([("count", "max")]).column("count_max").to_pylist()
    print(f"CountByKey state survived the kill: per-split running counts end at {sorted(set(counts))}")
    return lost == 0 and duplicated == 0 and len(ids) == rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", help="where to put config, checkpoints and output (default: a new temp dir)")
    parser.add_argument("--rows", type=int, default=3_000_000)
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="seatunnel-ckpt-demo-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    config, job, output = _write_files(workdir, args.rows)
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}

    _say(f"demo in {workdir}: the checkpoint configuration, validated")
    subprocess.run(_cli("validate", str(config)), check=True, env=env)

    _say(f"run 1: {args.rows:,} rows through 2 subtasks, a checkpoint every second; the driver will be killed")
    run1 = subprocess.Popen(
        _cli("run", str(job), "--config", str(config), "--job-id", JOB_ID, "--master", "local[2]"),
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and run1.poll() is None and len(_completed_checkpoints(config)) < 3:
        time.sleep(0.5)
    if run1.poll() is not None:
        print(f"error: run 1 ended by itself (exit {run1.returncode}) before it could be killed", file=sys.stderr)
        return 1
    os.killpg(run1.pid, signal.SIGKILL)
    run1.wait()
    latest = max(_completed_checkpoints(config))
    print(f"killed the whole driver (SIGKILL) after checkpoint {latest} completed")

    _say("run 2: the same command resumes from the latest completed checkpoint")
    run2 = subprocess.run(
        _cli("run", str(job), "--config", str(config), "--job-id", JOB_ID, "--master", "local[2]"), env=env
    )
    if run2.returncode != 0:
        print(f"error: run 2 failed (exit {run2.returncode})", file=sys.stderr)
        return 1

    _say("what is in checkpoint storage now")
    subprocess.run(_cli("list", "--config", str(config), "--job-id", JOB_ID), env=env)

    _say("the job's history: both attempts, where the second restored from, the newest checkpoints")
    subprocess.run(_cli("history", "--config", str(config), "--job-id", JOB_ID, "--limit", "6"), env=env)

    _say("checking the committed output, id by id")
    ok = _verify(output, args.rows)
    print("exactly once: yes" if ok else "exactly once: NO", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
