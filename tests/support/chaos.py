"""The chaos suites' shared parts: a seeded random generator and a record per test (the
``chaos`` fixture; tests/conftest.py prints every record's kill points at the end of the
session), PySpark worker kills, and the run pattern the connector chaos tests share.

The seed is ``$SEATUNNEL_CKPT_CHAOS_SEED`` (default below); it is printed in the report
and in every failure message, so a failing run can be replayed exactly (as far as
timing allows: the *decisions* repeat, the interleavings they land in may not).
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.workspace import Driver, Workspace, pyspark_workers

DEFAULT_SEED = 20251121
SEED = int(os.environ.get("SEATUNNEL_CKPT_CHAOS_SEED", DEFAULT_SEED))


@dataclass
class ChaosRecord:
    test: str
    seed: int
    kill_points: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  #: other events (runs failed by injected storage errors)
    rows: int = 0
    lost: int | None = None
    duplicated: int | None = None
    driver_runs: int = 0
    elapsed_s: float = 0.0

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for point in self.kill_points:
            kinds[point.split(":")[0]] = kinds.get(point.split(":")[0], 0) + 1
        what = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
        return (
            f"{self.test}: seed {self.seed}, {len(self.kill_points)} kill points ({what}), "
            f"{self.driver_runs} driver runs, {self.rows:,} rows, lost {self.lost}, duplicated {self.duplicated}, "
            f"{self.elapsed_s:.0f} s"
        )


RECORDS: list[ChaosRecord] = []


@pytest.fixture
def chaos(request: pytest.FixtureRequest) -> Iterator[tuple[random.Random, ChaosRecord]]:
    """A seeded random generator per test (seed + the test's name) and its record."""
    name = request.node.name
    rng = random.Random(f"{SEED}:{name}")
    record = ChaosRecord(name, SEED)
    RECORDS.append(record)
    yield rng, record


#: every retry of a killed subtask is a Spark task failure; allow plenty
MAX_TASK_FAILURES = "spark.task.maxFailures=40"
#: a completed checkpoint that carried rows: the kills wait for one, so they land while
#: the sinks write, not while they still open (several sinks can take seconds to, and
#: a run's first checkpoint may then carry none)
WROTE_ROWS = r"checkpoint \d+ \(checkpoint\) completed in \d+ ms, [^,]*, [1-9][\d,]* rows;"


def kill_workers(
    driver: Driver,
    rng: random.Random,
    record: ChaosRecord,
    kills: int,
    gap: tuple[float, float],
    label: str = "executor",
) -> int:
    """SIGKILL ``kills`` PySpark workers below ``driver``, one every ``gap`` seconds."""
    done = 0
    while done < kills and driver.poll() is None:
        time.sleep(rng.uniform(*gap))
        if re.search(r"\(final\) completed", driver.stderr()):
            break  # the job is finishing; a kill now proves nothing more
        workers = sorted(pyspark_workers(driver.pid))
        if not workers:
            continue  # between a failure and its retry
        victim = workers[rng.randrange(len(workers))]
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            continue
        done += 1
        record.kill_points.append(
            f"{label}: python worker {victim} (one of {len(workers)}) at {time.monotonic() - driver.started:.1f} s"
        )
    return done


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
    driver kill after a completed checkpoint; then reruns until one exits 0. Each kill
    waits for its run's first checkpoint that carried rows (``WROTE_ROWS``). Run 3 thus
    restores a checkpoint that a restored run completed (state carried through two
    restores); a third driver kill would repeat run 2's case at the cost of a Spark start.
    Returns every run's stderr; fails the test when no run finished."""
    args = (*args, "--conf", MAX_TASK_FAILURES)
    logs = []
    with workspace.start(job, config, job_id, *args) as driver:
        record.driver_runs += 1
        assert driver.wait_for(WROTE_ROWS, 240), driver.stderr()
        kill_workers(driver, rng, record, kills=2, gap=(1.0, 2.5))
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
            if run <= 2 and driver.wait_for(WROTE_ROWS, 240):
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
