"""Chaos, exactly-once: Sequence (millions of ids) -> File sink under random failures.

* executor Python workers SIGKILLed at random times: Spark retries the task, the
  subtask restores from the latest completed checkpoint, the other subtask keeps
  running (region failover), all within one driver run;
* the whole driver (Python, JVM, Python workers) SIGKILLed at random times, including
  while it starts up and repairs the sink output, then rerun with ``--restore latest``
  until the job finishes;
* the checkpoint storage server failing a fraction of all requests while the job runs,
  with worker and driver kills on top.

After each job every id 0..rows-1 is counted in the committed output: lost and
duplicated must both be 0. Every kill point is reported (``chaos report`` section of
the pytest summary) with the seed that chose it.
"""

from __future__ import annotations

import os
import random
import re
import signal
import sys
import time
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine.preload import DAEMON_MODULE
from tests.integration.engine.conftest import s3_options, webhdfs_plugin_config
from tests.support.chaos import MAX_TASK_FAILURES, ChaosRecord, kill_workers
from tests.support.workspace import (
    Driver,
    Workspace,
    cmdline,
    open_storage,
    parent_pid,
    pyspark_workers,
    read_output,
    tally,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CONNECTED = re.compile(r"\(subtask-(\d+)/attempt-(\d+) at [^)]*\) connected")


def _check(
    record: ChaosRecord,
    workspace: Workspace,
    rows: int,
    output: str | None = None,
    options: dict[str, str] | None = None,
) -> None:
    table = read_output(output or f"file://{workspace.output}/", options=options, columns=["id"])
    result = tally(table.column("id").combine_chunks(), rows)
    record.rows, record.lost, record.duplicated = result.rows, result.lost, result.duplicated
    assert result.exactly_once, f"seed {record.seed}: {result}; kill points: {record.kill_points}"


def _storage_failure(record: ChaosRecord, result: Any) -> None:
    """A run ended on its own: that is only acceptable as a clean failure on a storage
    error that outlasted its retries (the next run resumes)."""
    error = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode != 0 and error and re.search(r"after \d+ attempts|injected|SlowDown|503", error[-1]), (
        f"seed {record.seed}: the run ended, and not on a storage error\n{result.explain()}"
    )
    record.notes.append(f"run {record.driver_runs} failed on storage errors; the next run resumed: {error[-1][:240]}")


def test_executor_workers_killed_at_random(workspace: Workspace, chaos: tuple[random.Random, ChaosRecord]) -> None:
    """Region failover with the workers forked from the engine's preloading daemon."""
    rng, record = chaos
    started = time.monotonic()
    rows = 3_000_000
    config = workspace.write_config(interval=500, tolerable_failure=5)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 100_000, "batch_size": 10_000}
    )
    with workspace.start(
        job, config, "chaos-workers", "--conf", MAX_TASK_FAILURES, "--conf", "spark.seatunnel.preloadDaemon=auto"
    ) as driver:
        record.driver_runs = 1
        assert driver.wait_for(r"checkpoint 1 \(checkpoint\) completed", 180), driver.stderr()
        daemons = {cmdline(parent_pid(pid) or 0) for pid in pyspark_workers(driver.pid)}
        assert any(f"-m {DAEMON_MODULE}" in line for line in daemons), daemons
        kills = kill_workers(driver, rng, record, kills=10, gap=(1.2, 2.6))
        result = driver.wait(400)
    record.elapsed_s = time.monotonic() - started
    assert result.returncode == 0, f"seed {record.seed}\n{result.explain()}"
    assert kills >= 8, f"seed {record.seed}: only {kills} kills before the job ended\n{result.explain()}"
    # Every kill was one task failure, so one more attempt of that subtask; the last
    # attempt of each subtask ran to the end, so it connected (a killed retry may not have).
    last_attempt: dict[str, int] = {}
    for subtask, attempt in CONNECTED.findall(result.stderr):
        last_attempt[subtask] = max(last_attempt.get(subtask, 0), int(attempt))
    assert sum(last_attempt.values()) == kills, (
        f"seed {record.seed}: {kills} kills but last attempts {last_attempt}\n{result.explain()}"
    )
    # One driver run did it all: region failover, not a job restart.
    assert open_storage(config).read_document("chaos-workers", "job.json")["attempt"] == 1
    _check(record, workspace, rows)


def test_driver_killed_at_random(workspace: Workspace, chaos: tuple[random.Random, ChaosRecord]) -> None:
    rng, record = chaos
    started = time.monotonic()
    # 30 s of input at the rate limit: more than the killed runs can get through (each
    # processes at most about 4.5 s), so every run is still running when it is killed.
    # Four kills, each phase at least once: kills at every other step are the
    # deterministic simulation's (tests/simulation, thousands of seeds).
    rows = 4_500_000
    config = workspace.write_config(interval=500, tolerable_failure=5)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 150_000, "batch_size": 10_000}
    )
    phases = [0.1, 0.4, 0.8, rng.random()]
    rng.shuffle(phases)
    for attempt, phase in enumerate(phases, start=1):
        driver = workspace.start(job, config, "chaos-driver", "--restore", "latest")
        record.driver_runs += 1
        with driver:
            if phase < 0.25:
                where = "while starting (restore, sink repair, Spark start-up)"
                time.sleep(rng.uniform(0.5, 7.0))
            elif phase < 0.5:
                where = "while the subtasks start and restore"
                assert driver.wait_for(r"attempt \d+: ", 120), driver.stderr()
                time.sleep(rng.uniform(0.2, 3.0))
            else:
                where = "while checkpointing"
                assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 120), driver.stderr()
                time.sleep(rng.uniform(0.0, 3.0))
            assert driver.poll() is None, f"seed {record.seed}: run {attempt} ended before its kill\n{driver.stderr()}"
            last = re.findall(r"checkpoint (\d+) \(\w+\) completed", driver.stderr())
            driver.kill()
        record.kill_points.append(
            f"driver: run {attempt} {where}, {time.monotonic() - driver.started:.1f} s in, "
            f"after checkpoint {last[-1] if last else 'none'} of this run"
        )
    result = workspace.run(job, config, "chaos-driver", "--restore", "latest", timeout=300)
    record.driver_runs += 1
    record.elapsed_s = time.monotonic() - started
    assert result.returncode == 0, f"seed {record.seed}\n{result.explain()}"
    # Each run that claimed the job is one attempt; a run killed while it was still
    # starting (before its claim, likelier on a busy machine) is not.
    final = re.search(r"job chaos-driver attempt (\d+): ", result.stderr)
    assert final, f"seed {record.seed}: the last run did not say its attempt\n{result.explain()}"
    final_attempt = int(final.group(1))
    announced = sum(1 for log in workspace.logs.glob("run*.stderr") if re.search(r"attempt \d+: ", log.read_text()))
    assert open_storage(config).read_document("chaos-driver", "job.json")["attempt"] == final_attempt
    assert announced <= final_attempt <= record.driver_runs, (announced, final_attempt, record.driver_runs)
    _check(record, workspace, rows)


@pytest.mark.parametrize("backend", ["webhdfs", "s3"])
def test_storage_failing_requests_with_kills(
    workspace: Workspace, request: pytest.FixtureRequest, backend: str, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    """The checkpoint storage fails a fraction of its requests for the whole job (drivers
    and executors write to it: 200 splits make each subtask's state a file), with two
    worker kills and two driver kills on top.

    * webhdfs: the WebHDFS test server fails 20% of name-node and data-node requests;
    * s3: the fault proxy in front of moto fails 10% of requests, and the File sink
      writes to the same S3, so staging, publishing (commit) and rollback of the output
      go through the faults too.
    """
    rng, record = chaos
    started = time.monotonic()
    rows = 2_000_000
    output = f"file://{workspace.output}/"
    sink_options: dict[str, str] = {}
    if backend == "webhdfs":
        server = request.getfixturevalue("webhdfs_server")
        plugin_config = webhdfs_plugin_config(server)

        def set_rate(rate: float) -> None:
            server.fail_rate = rate

        def failed_requests() -> int:
            return sum(1 for r in server.log if r.fault == "fail")

        rate = 0.2
    else:
        server = request.getfixturevalue("s3_server")
        plugin_config = request.getfixturevalue("s3_plugin_config")
        sink_options = s3_options(server)
        output = f"s3://{plugin_config['s3.bucket'].removeprefix('s3a://')}/out/"

        def set_rate(rate: float) -> None:
            server.proxy.fail_rate(rate, seed=rng.randrange(2**31))

        def failed_requests() -> int:
            return sum(1 for r in server.proxy.requests if r[2] == "fail")

        rate = 0.1
    config = workspace.write_config(plugin_config, interval=500, tolerable_failure=5)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "splits": 200, "rows_per_second": 100_000, "batch_size": 10_000},
        # small files: most are staged by the sink's background writer, under storage faults
        {"plugin_name": "File", "path": output, "format": "parquet", "max_file_bytes": 32_768, **sink_options},
    )
    set_rate(rate)
    try:
        for attempt in range(1, 3):
            with workspace.start(job, config, "chaos-storage", "--conf", MAX_TASK_FAILURES) as driver:
                record.driver_runs += 1
                progressed = driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180)
                if progressed:
                    kill_workers(driver, rng, record, kills=1, gap=(0.5, 2.0))
                    time.sleep(rng.uniform(1.0, 3.0))
                if driver.poll() is not None:
                    _storage_failure(record, driver.wait())
                    continue
                assert progressed, driver.stderr()
                driver.kill()
            record.kill_points.append(
                f"driver: run {attempt} with {backend} failing {rate:.0%} of requests, "
                f"{time.monotonic() - driver.started:.1f} s in"
            )
        # Retries absorb almost every failure; a run that still hits a storage error it
        # cannot get past (every retry of one request failed) fails cleanly, and the
        # next run resumes, as an Airflow retry would.
        for _ in range(4):
            result = workspace.run(job, config, "chaos-storage", "--conf", MAX_TASK_FAILURES, timeout=300)
            record.driver_runs += 1
            if result.returncode == 0:
                break
            _storage_failure(record, result)
    finally:
        set_rate(0.0)
    record.elapsed_s = time.monotonic() - started
    assert result.returncode == 0, f"seed {record.seed}\n{result.explain()}"
    assert failed_requests() >= 20, f"only {failed_requests()} requests failed: the fault injection did not bite"
    assert re.search(r"failed \(attempt \d+ of \d+, retrying\)", result.stderr), "no storage retry was logged"
    _check(record, workspace, rows, output, sink_options)


def test_control_connections_dropped_at_random(workspace: Workspace, chaos: tuple[random.Random, ChaosRecord]) -> None:
    """The driver drops a subtask's control connection (the executor lives on): the
    subtask reconnects, re-registers and restarts from the latest checkpoint, while
    barriers, ACKs and uploads of its old registration may still be in flight."""
    rng, record = chaos
    started = time.monotonic()
    rows = 2_000_000
    config = workspace.write_config(interval=400, tolerable_failure=5)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 100_000, "batch_size": 5_000}
    )
    command = [
        sys.executable,
        "-m",
        "tests.chaos.drop_connections",
        str(job),
        str(config),
        "chaos-drops",
        "--seed",
        str(rng.randrange(2**31)),
        "--drops",
        "8",
        "--gap",
        "0.8",
        "2.0",
    ]
    with Driver(command, workspace.env, workspace.logs, "drops") as driver:
        record.driver_runs = 1
        result = driver.wait(400)
    record.elapsed_s = time.monotonic() - started
    drops = re.findall(r"chaos: dropped control connection \d+ \(drop \d+\)", result.stderr)
    record.kill_points += [f"connection: {line}" for line in drops]
    assert result.returncode == 0, f"seed {record.seed}\n{result.explain()}"
    assert len(drops) >= 6, f"seed {record.seed}: only {len(drops)} drops\n{result.explain()}"
    assert "restarting from the restored state" in result.stderr, result.explain()
    _check(record, workspace, rows)


def test_executor_killed_right_after_the_final_checkpoint(
    workspace: Workspace, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    """A worker killed in the instant between the final checkpoint and its task's return:
    Spark retries the task, whose attempt would wait for a restore that never comes.
    The run must still finish promptly (and exactly once). The window is a few ms, so
    up to 4 jobs are run until a kill lands in it."""
    rng, record = chaos
    started = time.monotonic()
    rows = 300_000
    config = workspace.write_config(interval=500)
    hits = 0
    for run in range(1, 5):
        output = workspace.root / f"output-{run}"
        job = workspace.write_job(
            {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 100_000},
            {"plugin_name": "File", "path": f"file://{output}/", "format": "parquet", "max_file_bytes": 32_768},
            file_name=f"job-{run}.yaml",
        )
        with workspace.start(job, config, f"chaos-final-{run}") as driver:
            record.driver_runs += 1
            killed_at = None
            while driver.poll() is None and killed_at is None:
                if "(final) completed" in driver.stderr():
                    workers = pyspark_workers(driver.pid)
                    if workers:
                        os.kill(workers[rng.randrange(len(workers))], signal.SIGKILL)
                        killed_at = time.monotonic()
                    break
                time.sleep(0.002)
            result = driver.wait(300)
        assert result.returncode == 0, f"seed {record.seed}\n{result.explain()}"
        retried = [m for m in CONNECTED.findall(result.stderr) if m[1] != "0"]
        if killed_at is not None:
            record.kill_points.append(
                f"executor: run {run}, a worker killed right after the final checkpoint"
                f"{' (task retried)' if retried else ' (task had already returned)'}"
            )
        table = read_output(f"file://{output}/", columns=["id"])
        result_tally = tally(table.column("id").combine_chunks(), rows)
        assert result_tally.exactly_once, f"seed {record.seed}: {result_tally}"
        record.rows += result_tally.rows
        record.lost, record.duplicated = (
            (record.lost or 0) + result_tally.lost,
            (record.duplicated or 0) + result_tally.duplicated,
        )
        if retried:
            hits += 1
            # Without the grace period the run waited 60 s for the retried task to return.
            assert time.monotonic() - killed_at < 40, f"the run hung after the final checkpoint\n{result.explain()}"
            break
    record.elapsed_s = time.monotonic() - started
    if not hits:
        record.notes.append("no kill landed between the final checkpoint and the task's return")
