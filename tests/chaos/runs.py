"""The run pattern the connector chaos tests share: one run with executor-worker kills
(and whatever else the test disrupts), then driver SIGKILLs with reruns from the latest
checkpoint until a run finishes."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from tests.integration.engine.support import Driver, Workspace

from .conftest import ChaosRecord
from .test_exactly_once_chaos import MAX_TASK_FAILURES, _kill_workers


def chaos_runs(
    workspace: Workspace,
    record: ChaosRecord,
    rng: random.Random,
    job: Any,
    config: Any,
    job_id: str,
    *args: str,
    disrupt: Callable[[Driver], None] | None = None,
    max_runs: int = 8,
) -> list[str]:
    """Run 1: two worker kills, ``disrupt`` (a database crash...), a driver kill; run 2: a
    driver kill after a completed checkpoint; then reruns until one exits 0. Run 3 thus
    restores a checkpoint that a restored run completed (state carried through two
    restores); a third driver kill would repeat run 2's case at the cost of a Spark start.
    Returns every run's stderr; fails the test when no run finished."""
    args = (*args, "--conf", MAX_TASK_FAILURES)
    logs = []
    with workspace.start(job, config, job_id, *args) as driver:
        record.driver_runs += 1
        assert driver.wait_for(r"checkpoint 1 \(checkpoint\) completed", 180), driver.stderr()
        _kill_workers(driver, rng, record, kills=2, gap=(1.0, 2.5))
        time.sleep(rng.uniform(0.5, 2.0))
        if disrupt is not None and driver.poll() is None:
            disrupt(driver)
            time.sleep(rng.uniform(1.0, 3.0))
        if driver.poll() is None:
            driver.kill()
            record.kill_points.append(f"driver: SIGKILL at {time.monotonic() - driver.started:.1f} s (run 1)")
        else:
            record.notes.append(f"run 1 ended by itself with exit {driver.poll()}")
        logs.append(driver.stderr())
    for run in range(2, max_runs + 1):
        with workspace.start(job, config, job_id, "--restore", "latest", *args) as driver:
            record.driver_runs += 1
            if run <= 2 and driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180):
                time.sleep(rng.uniform(0.2, 3.0))
                if driver.poll() is None:
                    driver.kill()
                    record.kill_points.append(
                        f"driver: SIGKILL at {time.monotonic() - driver.started:.1f} s (run {run})"
                    )
                    logs.append(driver.stderr())
                    continue
            result = driver.wait(600)
            logs.append(result.stderr)
            if result.returncode == 0:
                return logs
            record.notes.append(f"run {run} failed: {result.stderr.strip().splitlines()[-1][:200]}")
    raise AssertionError(f"seed {record.seed}: the job did not finish in {max_runs} runs")
