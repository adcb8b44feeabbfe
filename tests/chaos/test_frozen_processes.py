"""Frozen, not dead: a process that stops for a while and comes back (a GC pause, a VM
stall, SIGSTOP) must never hang a job or break exactly-once.

Three jobs run at once, each with one process frozen (SIGSTOP) for 40 s mid-job and then
let go (SIGCONT):

* the driver's Python process (its JVM and the subtasks run on);
* one subtask's Python worker (its connection stays up: the kernel keeps the socket);
* the checkpoint storage server (moto's S3 in a process of its own).

Each run must end within ``RUN_BOUND_S`` of the thaw: it finishes, or it fails with one
clear line (checkpoints expired past tolerable-failure) and a rerun with
``--restore latest`` finishes within ``RERUN_BOUND_S``. Every id is counted once in the
end. The jobs share the freeze window, so the test costs one freeze, not three.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.engine.conftest import s3_options
from tests.servers.s3 import S3Server
from tests.support.chaos import ChaosRecord
from tests.support.workspace import Driver, RunResult, Workspace, pyspark_workers, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

FREEZE_S = 40
#: from the thaw to the end of the frozen run (a failed run cancels its Spark job and
#: waits up to 60 s for its tasks)
RUN_BOUND_S = 180
#: the rerun from the latest completed checkpoint, start to finish
RERUN_BOUND_S = 240
ROWS = 600_000
COMPLETED = r"checkpoint \d+ \(checkpoint\) completed"


@dataclass
class FrozenJob:
    name: str
    workspace: Workspace
    config: Path
    job: Path
    #: the pid to freeze, found once the job runs
    target: Callable[[Driver], int]
    output: str
    sink_options: dict[str, str]
    driver: Driver | None = None
    pid: int | None = None


def _job(
    root: Path,
    env: dict[str, str],
    name: str,
    target: Callable[[Driver], int],
    plugin_config: dict[str, Any] | None = None,
) -> FrozenJob:
    workspace = Workspace(root / name, env)
    workspace.root.mkdir(parents=True)
    # timeout 10 s: a frozen subtask's checkpoints expire, and past tolerable-failure=2 the
    # run fails with one line; a frozen driver or storage server may well survive.
    config = workspace.write_config(plugin_config, interval=1000, timeout=10_000, tolerable_failure=2)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": ROWS, "splits": 8, "rows_per_second": 15_000}, name=name
    )
    return FrozenJob(name, workspace, config, job, target, f"file://{workspace.output}/", {})


def _a_subtask_worker(driver: Driver) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        workers = sorted(pyspark_workers(driver.pid))
        if workers:
            return workers[0]
        time.sleep(0.2)
    raise AssertionError(f"no subtask worker below the driver:\n{driver.stderr()[-4000:]}")


def test_frozen_driver_subtask_and_storage_end_every_run_with_every_id_once(
    tmp_path: Path, spark_env: dict[str, str], chaos: tuple[random.Random, ChaosRecord]
) -> None:
    rng, record = chaos
    started = time.monotonic()
    with S3Server(own_process=True) as s3:
        bucket = s3.create_bucket("frozen")
        storage_pid = s3._process.pid
        s3_storage = {"storage.type": "s3", "s3.bucket": f"s3a://{bucket}", "namespace": "/ckpt/", **s3_options(s3)}
        jobs = [
            _job(tmp_path, spark_env, "driver", lambda d: d.pid),
            _job(tmp_path, spark_env, "subtask", _a_subtask_worker),
            _job(tmp_path, spark_env, "storage", lambda d: storage_pid, s3_storage),
        ]
        for job in jobs:
            job.driver = job.workspace.start(job.job, job.config, f"frozen-{job.name}")
            record.driver_runs += 1
        try:
            for job in jobs:
                assert job.driver.wait_for(COMPLETED, 180), f"{job.name}: {job.driver.stderr()[-6000:]}"
                job.pid = job.target(job.driver)
            time.sleep(rng.uniform(0.5, 2.0))
            for job in jobs:
                os.kill(job.pid, signal.SIGSTOP)
                record.kill_points.append(
                    f"freeze: {job.name} (pid {job.pid}) for {FREEZE_S} s at "
                    f"{time.monotonic() - job.driver.started:.1f} s"
                )
            time.sleep(FREEZE_S)
        finally:
            for job in jobs:
                if job.pid is not None:
                    try:
                        os.kill(job.pid, signal.SIGCONT)
                    except ProcessLookupError:
                        pass
        thawed = time.monotonic()
        for job in jobs:
            result = job.driver.wait(max(1.0, RUN_BOUND_S - (time.monotonic() - thawed)))
            record.notes.append(
                f"{job.name}: the frozen run ended {time.monotonic() - thawed:.0f} s after the thaw, "
                f"exit {result.returncode}"
            )
            if result.returncode != 0:
                _check_one_clear_line(job.name, result)
                rerun = job.workspace.run(
                    job.job, job.config, f"frozen-{job.name}", "--restore", "latest", timeout=RERUN_BOUND_S
                )
                record.driver_runs += 1
                assert rerun.returncode == 0, f"{job.name}: the rerun failed\n{rerun.explain()}"
                record.notes.append(f"{job.name}: rerun with --restore latest finished in {rerun.elapsed_s:.0f} s")
            counted = tally(read_output(job.output, columns=["id"]).column("id").combine_chunks(), ROWS)
            assert counted.exactly_once, f"{job.name}, seed {record.seed}: {counted}"
            record.rows += counted.rows
        record.lost, record.duplicated = 0, 0
    record.elapsed_s = time.monotonic() - started


def _check_one_clear_line(name: str, result: RunResult) -> None:
    """A frozen run may fail, but with one line saying why: no traceback."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors, f"{name}: the run failed without an error line\n{result.explain()}"
    assert "Traceback" not in result.stderr, f"{name}: a traceback\n{result.explain()}"
