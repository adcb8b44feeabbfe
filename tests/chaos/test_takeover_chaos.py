"""Two drivers, one job: a running driver taken over by a newer one (engine/fencing.py).

What an Airflow retry does while the first try's spark-submit still runs (a zombie): run
B of the same job id with ``--restore latest`` while run A is working. Each test is a
chain: every run is taken over by the next while it runs, at a random moment; the last
run finishes the job. For every takeover:

* the old run stops on its own with one line saying which attempt took the job over;
* it completed no checkpoint the new run did not restore (every checkpoint it completed
  is at most the one the new run restored: nothing it finished after the claim counts);
* every id lands exactly once in the committed output.

The test-only hook ``SEATUNNEL_CKPT_TEST_FENCE_WINDOW_MS`` holds every driver between
each fence step and the write it guards (after reserving a checkpoint id, before its
``_metadata``; after the check, before a commit). Some takeovers are started *inside*
such a window on purpose (the test waits for the hook's line), so the race is hit
deterministically; the others at random moments. Run on local disk and on the moto S3
server (conditional writes).
"""

from __future__ import annotations

import random
import re
import time
from typing import Any

import pytest

from tests.integration.engine.conftest import s3_options
from tests.support.chaos import ChaosRecord
from tests.support.workspace import Driver, Workspace, open_storage, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

JOB_ID = "takeover"
COMPLETED = re.compile(r"checkpoint (\d+) \(\w+\) completed")
RESTORED = re.compile(r"attempt (\d+): \d+ subtasks, \d+ splits, from (?:checkpoint|savepoint) (\d+)")
STARTED = r"attempt \d+: \d+ subtasks"
WINDOWS = {
    "reserve": r"test hook: fence window of [\d.]+ s open (after reserving checkpoint (\d+))",
    "commit": r"test hook: fence window of [\d.]+ s open (before committing checkpoint (\d+))",
}


def _takeover(
    record: ChaosRecord, old: Driver, new: Driver, attempt: int, target: str, reserved: int | None = None
) -> None:
    """The old run stops by itself, fenced, having completed nothing the new run missed;
    an id it had reserved when the new run claimed is fenced, never completed."""
    result = old.wait(240)
    assert result.returncode != 0, f"seed {record.seed}: run {attempt - 1} was not stopped\n{result.explain()}"
    assert f"taken over by another driver (attempt {attempt})" in result.stderr, (
        f"seed {record.seed}: run {attempt - 1} did not say it was taken over\n{result.explain()}"
    )
    match = new.wait_for(rf"attempt {attempt}: \d+ subtasks, \d+ splits, from [^\n]*", 180)
    assert match, f"seed {record.seed}: run {attempt} did not start\n{new.stderr()[-6000:]}"
    restored = RESTORED.search(match.group(0))
    restored_id = int(restored.group(2)) if restored else 0
    completed_by_old = [int(c) for c in COMPLETED.findall(result.stderr)]
    if reserved is not None:
        assert f"fenced checkpoint {reserved} of attempt {attempt - 1}" in new.stderr(), (
            f"seed {record.seed}: run {attempt} did not fence checkpoint {reserved}\n{new.stderr()[-6000:]}"
        )
        assert reserved not in completed_by_old, f"seed {record.seed}: fenced checkpoint {reserved} completed"
    late = [c for c in completed_by_old if c > restored_id]
    assert not late, (
        f"seed {record.seed}: run {attempt - 1} completed checkpoint(s) {late} that run {attempt} "
        f"(restored {restored_id}) did not see\n{result.explain()}"
    )
    record.kill_points.append(
        f"takeover: run {attempt} claimed {target}; run {attempt - 1} had completed "
        f"{completed_by_old[-1] if completed_by_old else 'none'}, run {attempt} restored {restored_id or 'the start'}"
    )


def _chain(
    workspace: Workspace,
    record: ChaosRecord,
    rng: random.Random,
    sink: dict[str, Any] | None,
    config: Any,
    takeovers: int,
    windowed: int,
    output: str,
    options: dict[str, str] | None = None,
) -> None:
    """``takeovers`` runs, each taken over by the next while it runs; the input is rate
    limited so no run gets near the end, except the last, which reads the rest at full
    speed (the same job without the limit: the rate is no part of the checkpoint)."""
    slow = workspace.write_job(SOURCE, sink, file_name="slow.yaml")
    fast = workspace.write_job({k: v for k, v in SOURCE.items() if k != "rows_per_second"}, sink, file_name="fast.yaml")
    started = time.monotonic()
    # Takeovers started inside the old run's fence window: that run holds each window
    # long enough for the new one (whose start-up takes seconds) to claim meanwhile.
    inside = sorted(rng.sample(range(takeovers), windowed))
    # both kinds of window in every chain, in a random order
    kinds = sorted(WINDOWS) + [rng.choice(sorted(WINDOWS)) for _ in range(windowed - len(WINDOWS))]
    rng.shuffle(kinds)
    window_kind = dict(zip(inside, kinds))

    def start(index: int) -> Driver:
        window = WINDOW_MS if index in inside else 0
        env = {**workspace.env, "SEATUNNEL_CKPT_TEST_FENCE_WINDOW_MS": str(window)}
        return workspace.start(fast if index == takeovers else slow, config, JOB_ID, "--restore", "latest", env=env)

    old = start(0)
    record.driver_runs = 1
    assert old.wait_for(STARTED, 180), old.stderr()
    for index in range(takeovers):
        reserved = None
        if index in inside:
            # between reserving an id and creating its _metadata, or between the last
            # check and a commit (whose replay by the new run must not duplicate)
            kind = window_kind[index]
            match = old.wait_for(WINDOWS[kind], 90)
            assert match, f"seed {record.seed}: no {kind} window in run {index + 1}\n{old.stderr()[-4000:]}"
            target = f"inside the old run's window {match.group(1)}"
            reserved = int(match.group(2)) if kind == "reserve" else None
        else:
            assert old.wait_for(COMPLETED.pattern, 120), old.stderr()
            time.sleep(rng.uniform(0.0, 2.5))
            target = "at a random moment while checkpointing"
        new = start(index + 1)
        record.driver_runs += 1
        with old:
            _takeover(record, old, new, index + 2, target, reserved)
        old = new
    with old:
        result = old.wait(600)
    record.elapsed_s = time.monotonic() - started
    assert result.returncode == 0, f"seed {record.seed}\n{result.explain()}"
    document = open_storage(config).read_document(JOB_ID, "job.json")
    assert (document["status"], document["attempt"]) == ("finished", takeovers + 1)
    table = read_output(output, options=options, columns=["id"])
    counted = tally(table.column("id").combine_chunks(), ROWS)
    record.rows, record.lost, record.duplicated = counted.rows, counted.lost, counted.duplicated
    assert counted.exactly_once, f"seed {record.seed}: {counted}; takeovers: {record.kill_points}"


ROWS = 3_000_000
SOURCE = {"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 10_000, "batch_size": 5_000}
WINDOW_MS = 15_000
#: Takeovers per chain, and how many start inside a fence window (both kinds). The
#: interleavings themselves are the deterministic simulation's (tests/simulation:
#: thousands of seeds, zombies at every step); these chains prove them on real processes,
#: real Spark and real create-only storage, so each kind of takeover once is enough.
TAKEOVERS = 3
WINDOWED = 2


def test_takeovers_on_local_storage(workspace: Workspace, chaos: tuple[random.Random, ChaosRecord]) -> None:
    rng, record = chaos
    config = workspace.write_config(interval=400, tolerable_failure=5)
    _chain(
        workspace,
        record,
        rng,
        None,
        config,
        takeovers=TAKEOVERS,
        windowed=WINDOWED,
        output=f"file://{workspace.output}/",
    )


def test_takeovers_on_s3(
    workspace: Workspace, request: pytest.FixtureRequest, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    """Checkpoints and output on the moto S3 server: the fence log and ``_metadata`` are
    created with ``If-None-Match: *``; the File sink's commit is copy-then-delete."""
    rng, record = chaos
    server = request.getfixturevalue("s3_server")
    plugin_config = request.getfixturevalue("s3_plugin_config")
    options = s3_options(server)
    output = f"s3://{plugin_config['s3.bucket'].removeprefix('s3a://')}/out/"
    config = workspace.write_config(plugin_config, interval=400, tolerable_failure=5)
    sink = {"plugin_name": "File", "path": output, "format": "parquet", **options}
    _chain(workspace, record, rng, sink, config, takeovers=TAKEOVERS, windowed=WINDOWED, output=output, options=options)
