"""The sink contract: every sink runs these cases (``contexts.SINK_CASES``) against its
real system, through the real engine and command line, with drivers killed or frozen at
chosen points. Rows come from ``Sequence`` (ids 0..N-1), so every committed id is counted."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from .checks import assert_exact, assert_succeeded, is_one_line_refusal
from .contexts import SinkUnderTest
from .workspace import JOB_ID, NEVER_MS, ContractWorkspace, wait_until

pytestmark = pytest.mark.timeout(240)

ROWS = 3000
#: rows per second: the job lasts about 1.5 s, several 250 ms checkpoints
RATE = 2000


def sequence(rows: int = ROWS, **extra: Any) -> dict[str, Any]:
    return {"plugin_name": "Sequence", "rows": rows, "rows_per_second": RATE, **extra}


def expect_committed(ctx: SinkUnderTest, target: str, expected: Any, what: str = "committed rows") -> None:
    if ctx.readable:
        assert_exact(ctx.committed(target), expected, what)


def applies(ctx: SinkUnderTest, case: str) -> None:
    if case in ctx.skips:
        pytest.skip(ctx.skips[case])


def committer_for(job: Path, attempt: int) -> Any:
    """The committer a driver of run attempt ``attempt`` makes for ``job``."""
    from airflow_provider_seatunnel_ckpt.engine.routing import load_sinks, load_sources, one_sink
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    spec = load_job(str(job), {})
    sink = one_sink(load_sinks(spec, load_sources(spec.sources)))
    sink.run_attempt = attempt
    return sink.create_committer(JOB_ID)


# ---- (i) -----------------------------------------------------------------------------------
def test_restart_before_first_checkpoint(sink_context: SinkUnderTest, ws: ContractWorkspace) -> None:
    applies(sink_context, "restart_before_first_checkpoint")
    target = sink_context.new_target()
    job = ws.job([sequence()], [sink_context.sink(target)])
    ws.killed_run(job, ws.config(interval=NEVER_MS), faults={"kill_after_rows": ROWS // 3})
    assert_succeeded(ws.run(job, ws.config()))
    expect_committed(sink_context, target, range(ROWS))


# ---- (ii) ----------------------------------------------------------------------------------
def test_replay_committed_epoch(sink_context: SinkUnderTest, ws: ContractWorkspace) -> None:
    applies(sink_context, "replay_committed_epoch")
    target = sink_context.new_target()
    # a third of the rate: about 4.5 s of rows, so that a loaded machine still takes several
    # 250 ms checkpoints (at the full rate, 4 of them at a load of 10 on 2 cores)
    job = ws.job([sequence(rows_per_second=RATE // 3)], [sink_context.sink(target)])
    config = ws.config()
    assert_succeeded(ws.run(job, config))
    expect_committed(sink_context, target, range(ROWS))
    checkpoints = ws.completed_commit_infos(config)
    assert len(checkpoints) >= 3, f"the job took {len(checkpoints)} checkpoints; the case needs several"

    # What a restore does (commit the restored checkpoint's infos again), for every
    # retained checkpoint, newest first and then oldest first, by a later attempt's committer.
    replay = committer_for(job, attempt=2)
    for _, infos in [*reversed(checkpoints), *checkpoints]:
        replay.commit(infos)
    replay.cleanup(checkpoints[-1][1])
    expect_committed(sink_context, target, range(ROWS), "after replaying every checkpoint")

    # Two drivers replaying the newest checkpoint at the same time (a restore racing a late commit).
    errors: list[BaseException] = []

    def commit_latest(attempt: int) -> None:
        try:
            committer_for(job, attempt).commit(checkpoints[-1][1])
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=commit_latest, args=(attempt,)) for attempt in (3, 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    expect_committed(sink_context, target, range(ROWS), "after two concurrent replays")


# ---- (iii) ---------------------------------------------------------------------------------
@pytest.mark.parametrize("late", [1, 2], ids=["first_commit", "later_commit"])
def test_late_commit_of_fenced_driver(sink_context: SinkUnderTest, ws: ContractWorkspace, late: int) -> None:
    applies(sink_context, "late_commit_of_fenced_driver")
    target = sink_context.new_target()
    job = ws.job([sequence()], [sink_context.sink(target)])
    config = ws.config()
    freeze = ws.freeze_dir()
    faults = {"freeze_before_commit": late, "freeze_dir": str(freeze)}
    if sink_context.commit_seam:
        faults["seam"] = sink_context.commit_seam
    with ws.start(job, config, faults=faults) as zombie:
        wait_until(lambda: (freeze / "frozen").exists() or zombie.poll() is not None, 60, "the first driver to freeze")
        assert (freeze / "frozen").exists(), zombie.stderr()
        # The claimant takes the job over, restores the checkpoint the zombie is about to
        # commit, commits it and every later one, and finishes.
        assert_succeeded(ws.run(job, config))
        expect_committed(sink_context, target, range(ROWS), "after the claimant finished")
        (freeze / "release").write_text("")
        zombie.wait(timeout=90)
    assert "released, committing" in zombie.stderr(), zombie.stderr()[-3000:]
    expect_committed(sink_context, target, range(ROWS), "after the fenced driver's late commit")


# ---- (iv) ----------------------------------------------------------------------------------
def _two_writer_jobs(ctx: SinkUnderTest, ws: ContractWorkspace, target: str) -> dict[str, tuple[Path, list[int]]]:
    rows = 400
    ids = list(range(rows))
    fake = {
        "plugin_name": "FakeSource",
        "parallelism": 1,
        "tables_configs": [
            {
                "schema": {"table": f"contract.t{n}", "fields": {"id": "bigint"}},
                "rows": [{"kind": "INSERT", "fields": [i]} for i in ids],
            }
            for n in (1, 2)
        ],
    }
    tables = ws.job([fake], [ctx.sink(target)], name="two_tables")
    # two sources with the same ids, the second's shifted so each id is read by both subtasks
    shifted = ws.job(
        [sequence(rows, plugin_output="a"), sequence(rows, plugin_output="b")],
        [ctx.sink(target) | {"plugin_input": ["a", "c"]}],
        [
            {
                "plugin_name": "Sql",
                "plugin_input": "b",
                "plugin_output": "c",
                "query": f"select (id + {rows // 2}) % {rows} as id from b",
            }
        ],
        name="two_subtasks",
    )
    twice = ids if ctx.upsert else ids + ids
    return {"tables": (tables, twice), "subtasks": (shifted, twice)}


@pytest.mark.parametrize("shape", ["tables", "subtasks"])
def test_two_writers_one_target(sink_context: SinkUnderTest, ws: ContractWorkspace, shape: str) -> None:
    applies(sink_context, "two_writers_one_target")
    target = sink_context.new_target()
    job, expected = _two_writer_jobs(sink_context, ws, target)[shape]
    config = ws.config()
    check = ws.run(job, config, "--check")
    if check.returncode != 0:  # refused before anything runs: never hangs, writes nothing
        assert is_one_line_refusal(check), check.explain()
        assert not sink_context.shares_target or shape == "subtasks", check.explain()
        return
    # a blocked writer makes its checkpoint expire (20 s) and the run fail: never a hang
    assert_succeeded(ws.run(job, ws.config(timeout=20_000, name="short_timeout.yaml"), timeout=150))
    expect_committed(sink_context, target, expected)


# ---- (v) -----------------------------------------------------------------------------------
CHANGES = [
    ("INSERT", 5000),
    ("UPDATE_BEFORE", 5000),
    ("UPDATE_AFTER", 5000),
    ("INSERT", 5001),
    ("DELETE", 5001),
    ("INSERT", 5002),
]


def test_mixed_schemas_and_row_kinds(sink_context: SinkUnderTest, ws: ContractWorkspace) -> None:
    applies(sink_context, "mixed_schemas_and_row_kinds")
    target = sink_context.new_target()
    changes = {
        "plugin_name": "FakeSource",
        "parallelism": 1,
        "plugin_output": "changes",
        "schema": {"fields": {"id": "bigint"}},
        "rows": [{"kind": kind, "fields": [key]} for kind, key in CHANGES],
    }
    job = ws.job(
        [changes, sequence(600, plugin_output="plain")],
        [sink_context.sink(target) | {"plugin_input": ["changes", "plain"]}],
        parallelism=1,
    )
    config = ws.config()
    check = ws.run(job, config, "--check")
    if check.returncode != 0:
        assert is_one_line_refusal(check), check.explain()
        assert not sink_context.keeps_change_rows, f"{sink_context.name} keeps change rows, yet:\n{check.explain()}"
        return
    assert_succeeded(ws.run(job, config))
    expect_committed(sink_context, target, [*range(600), *sink_context.ids_of_changes(CHANGES)])


# ---- (vi) ----------------------------------------------------------------------------------
def test_restore_older_checkpoint(sink_context: SinkUnderTest, ws: ContractWorkspace) -> None:
    applies(sink_context, "restore_older_checkpoint")
    target = sink_context.new_target()
    job = ws.job([sequence()], [sink_context.sink(target)])
    config = ws.config()
    ws.killed_run(job, config, faults={"kill_after_commit": 2})
    older = ws.run(job, config, "--restore", "1")
    if older.returncode != 0:  # a sink that cannot un-publish refuses, changing nothing
        assert is_one_line_refusal(older, "--restore"), older.explain()
        assert_succeeded(ws.run(job, config))
    else:
        assert "discarding checkpoint(s) 2" in older.stderr, older.explain()
    expect_committed(sink_context, target, range(ROWS))


# ---- (vii) ---------------------------------------------------------------------------------
def test_nothing_left_after_delete_on_finish(sink_context: SinkUnderTest, ws: ContractWorkspace) -> None:
    applies(sink_context, "nothing_left_after_delete_on_finish")
    target = sink_context.new_target()
    job = ws.job([sequence()], [sink_context.sink(target)])
    config = ws.config(retention="delete-on-finish")
    ws.killed_run(job, config, faults={"kill_after_commit": 2})  # a restore, a replay, leftovers to clean
    assert_succeeded(ws.run(job, config))
    expect_committed(sink_context, target, range(ROWS))
    assert ws.leftovers_in_storage() == []
    assert sink_context.leftovers(target) == []


# ---- (viii) --------------------------------------------------------------------------------
@pytest.mark.parametrize("change", ["swapped", "first_removed"])
def test_sink_layout_changed(sink_context: SinkUnderTest, ws: ContractWorkspace, change: str) -> None:
    applies(sink_context, "sink_layout_changed")
    first, second = sink_context.new_target(), sink_context.new_target()
    source = sequence(plugin_output="rows")
    sink_one = sink_context.sink(first) | {"plugin_input": "rows"}
    sink_two = sink_context.sink(second) | {"plugin_input": "rows"}
    config = ws.config()
    before = ws.job([source], [sink_one, sink_two], name="before")
    ws.killed_run(before, config, faults={"kill_before_commit": 2})  # checkpoint 2 durable, not committed
    after_sinks = [sink_two, sink_one] if change == "swapped" else [sink_two]
    after = ws.job([source], after_sinks, name="after")
    result = ws.run(after, config)
    if (
        result.returncode != 0
    ):  # the stored output of a sink the job no longer has (as Flink's state of an operator uid)
        assert is_one_line_refusal(result, "--restore"), result.explain()
        # the refusal changed nothing: the job as it was resumes, exact
        assert_succeeded(ws.run(before, config))
        after_sinks = [sink_one, sink_two]
    else:
        assert_succeeded(result)
    for sink in after_sinks:
        target = first if sink is sink_one else second
        expect_committed(sink_context, target, range(ROWS), f"target {target}")
