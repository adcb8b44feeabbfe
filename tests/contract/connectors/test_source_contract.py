"""The source contract: every source runs these cases (``contexts.SOURCE_CASES``) against
its real system, through the real engine and command line, into the local ``File`` sink,
with drivers killed at chosen points. Rows carry an ``id``; every committed one is counted."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine.driver import STOP_REQUEST

from .checks import assert_exact, assert_succeeded
from .contexts import SourceUnderTest
from .systems.files import read_ids
from .workspace import JOB_ID, NEVER_MS, ContractWorkspace, wait_until

pytestmark = pytest.mark.timeout(240)

#: seconds of work per row in the job's transform, so reading spans several 250 ms checkpoints
SECONDS_PER_ROW = 0.002
BEFORE, DURING, AFTER = range(0, 1200), range(1200, 1500), range(1500, 1800)


def pace(batch: Any) -> Any:
    """The job's ``Python`` transform: as slow as real work, so a job takes several checkpoints."""
    import time

    time.sleep(batch.num_rows * SECONDS_PER_ROW)
    return batch


def applies(ctx: SourceUnderTest, case: str) -> None:
    if case in ctx.skips:
        pytest.skip(ctx.skips[case])


def job_for(ctx: SourceUnderTest, ws: ContractWorkspace, dataset: str) -> tuple[Path, str]:
    output = f"file://{ws.root}/output/"
    job = ws.job(
        [ctx.source(dataset)],
        [{"plugin_name": "File", "path": output, "format": "parquet"}],
        [{"plugin_name": "Python", "function": "tests.contract.connectors.test_source_contract:pace"}],
    )
    return job, output


def finish(
    ctx: SourceUnderTest,
    ws: ContractWorkspace,
    job: Path,
    config: Path,
    output: str,
    expected: Sequence[int],
    *args: str,
) -> Any:
    """Run the job to its end: a bounded source ends by itself; an unbounded one is stopped
    with a savepoint once every expected row is committed (extra rows then show as such)."""
    if ctx.bounded:
        result = ws.run(job, config, *args)
        assert_succeeded(result)
        return result
    with ws.start(job, config, *args) as driver:
        wait_until(
            lambda: len(read_ids(output)) >= len(expected) or driver.poll() is not None,
            120,
            f"{len(expected)} committed rows",
        )
        ws.storage(config).write_document(JOB_ID, STOP_REQUEST, {"requested_ms": 0, "by": "contract"})
        result = driver.wait(60)
    assert_succeeded(result)
    return result


def written(ctx: SourceUnderTest, dataset: str, ids: Sequence[int]) -> list[int]:
    if ctx.appendable and ids:
        ctx.append(dataset, ids)
        return list(ids)
    return []


# ---- (i) -----------------------------------------------------------------------------------
def test_restart_before_first_checkpoint(source_context: SourceUnderTest, ws: ContractWorkspace) -> None:
    applies(source_context, "restart_before_first_checkpoint")
    dataset = source_context.new_dataset()
    before = written(source_context, dataset, BEFORE) or source_context.initial_ids
    job, output = job_for(source_context, ws, dataset)
    with ws.start(job, ws.config(interval=NEVER_MS), faults={"kill_after_rows": 100}) as first:
        wait_until(lambda: " attempt 1: " in first.stderr() or first.poll() is not None, 60, "the first plan")
        during = written(source_context, dataset, DURING)
        result = first.wait(60)
    assert result.returncode == -9, result.explain()
    after = written(source_context, dataset, AFTER)
    expected = source_context.expected(before, during, after)
    finish(source_context, ws, job, ws.config(), output, expected)
    assert_exact(read_ids(output), expected)


# ---- after checkpoints: kill, then resume (from the latest, or an older one) ------------------------
def _killed_after_two_checkpoints(
    ctx: SourceUnderTest, ws: ContractWorkspace, *restore: str, retention: str = "retain-on-finish"
) -> Any:
    """Rows in, a run killed once checkpoint 2 is committed, and the rerun to the end with
    ``restore`` arguments; every expected row must be there once. Returns the rerun."""
    dataset = ctx.new_dataset()
    before = written(ctx, dataset, BEFORE) or ctx.initial_ids
    job, output = job_for(ctx, ws, dataset)
    config = ws.config(retention=retention)
    ws.killed_run(job, config, faults={"kill_after_commit": 2})
    expected = ctx.expected(before, [], [])
    result = finish(ctx, ws, job, config, output, expected, *restore)
    assert_exact(read_ids(output), expected)
    return result


def test_kill_and_resume(source_context: SourceUnderTest, ws: ContractWorkspace) -> None:
    applies(source_context, "kill_and_resume")
    _killed_after_two_checkpoints(source_context, ws)


# ---- (vi) ----------------------------------------------------------------------------------
def test_restore_older_checkpoint(source_context: SourceUnderTest, ws: ContractWorkspace) -> None:
    applies(source_context, "restore_older_checkpoint")
    result = _killed_after_two_checkpoints(source_context, ws, "--restore", "1")
    assert "discarding checkpoint(s) 2" in result.stderr, result.explain()


# ---- (vii) ---------------------------------------------------------------------------------
def test_nothing_left_after_delete_on_finish(source_context: SourceUnderTest, ws: ContractWorkspace) -> None:
    applies(source_context, "nothing_left_after_delete_on_finish")
    _killed_after_two_checkpoints(source_context, ws, retention="delete-on-finish")
    assert ws.leftovers_in_storage() == []
