"""Live partition discovery (``partition-discovery.interval-millis``) on the real broker
(Apache Kafka 4.1, KRaft, the session's ``kafka_broker``): a topic created through the
broker's own CreateTopics while an unbounded job runs is read without a restart, by the
running subtasks, by subtask attempts retried after their Python worker was killed, and
by a run restored after the driver was killed; every id exactly once. The kills are of
the job's processes, never of the broker, so nothing stays on librdkafka's mock cluster;
the topics have names of their own on the shared broker."""

from __future__ import annotations

import os
import random
import re
import signal
import time
import uuid
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine.driver import STOP_REQUEST
from tests.support.workspace import Driver, Workspace, open_storage, pyspark_workers, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

PARTITIONS = 3
SCHEMA = {"fields": {"id": "bigint", "name": "string"}}


def _produce(broker: Any, topic: str, ids: range) -> None:
    broker.produce_json(topic, ({"id": i, "name": f"n{i}"} for i in ids), PARTITIONS)


def _kill_a_worker(driver: Driver, rng: random.Random) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        workers = sorted(pyspark_workers(driver.pid))
        if workers:
            victim = workers[rng.randrange(len(workers))]
            try:
                os.kill(victim, signal.SIGKILL)
                return victim
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"no PySpark worker to kill\n{driver.stderr()[-4000:]}")


def test_a_topic_created_while_the_job_runs_is_read_without_a_restart_exactly_once_under_kills(
    workspace: Workspace, kafka_broker: Any
) -> None:
    rng = random.Random(20261126)
    topic = f"grow-{uuid.uuid4().hex[:8]}"  # unique on the shared broker
    later = f"{topic}-more"
    kafka_broker.create_topic(topic, PARTITIONS)
    _produce(kafka_broker, topic, range(0, 30_000))
    source = {
        "plugin_name": "Kafka",
        "bootstrap.servers": kafka_broker.bootstrap_servers,
        "topic": f"{topic}(-more)?",
        "pattern": True,
        "consumer.group": f"discovery-{topic}",
        "start_mode": "earliest",
        "format": "json",
        "schema": SCHEMA,
        "partition-discovery.interval-millis": 500,
    }
    job = workspace.write_job(source, name="grow")
    config = workspace.write_config(interval=500, tolerable_failure=10)
    storage = open_storage(config)
    retries = ("--conf", "spark.task.maxFailures=20")

    def committed() -> Any:
        return read_output(f"file://{workspace.output}/", columns=["id"]).column("id").combine_chunks()

    def caught_up(count: int, driver: Driver, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if len(committed()) >= count:
                return
            assert driver.poll() is None, driver.stderr()[-4000:]
            time.sleep(0.25)
        raise AssertionError(
            f"{len(committed())} of {count} records committed after {within} s\n{driver.stderr()[-4000:]}"
        )

    with workspace.start(job, config, "grow", *retries) as driver:
        assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180), driver.stderr()
        caught_up(30_000, driver)
        kafka_broker.create_topic(later, PARTITIONS)
        _produce(kafka_broker, later, range(30_000, 60_000))
        names = ", ".join(f"{later}-{p}" for p in range(PARTITIONS))
        assert driver.wait_for(rf"{PARTITIONS} new splits discovered: {names}", 30), driver.stderr()[-4000:]
        caught_up(60_000, driver)  # read by the running subtasks: no restart
        assert not re.search(r"subtask-\d+/attempt-[1-9]", driver.stderr()), "a subtask was restarted"
        # Retried subtask attempts must take the discovered splits over from the
        # checkpoint (RestoreState): records written only to the new topic after the
        # kills arrive only if they do.
        for _ in range(2):
            time.sleep(rng.uniform(0.5, 1.5))
            _kill_a_worker(driver, rng)
        _produce(kafka_broker, later, range(60_000, 75_000))
        caught_up(75_000, driver, within=120)
        assert re.search(r"subtask-\d+/attempt-[1-9]", driver.stderr()), "no subtask attempt was retried"
        assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 60)
        driver.kill()  # SIGKILL: the next run restores the plan with the discovered splits

    _produce(kafka_broker, later, range(75_000, 85_000))
    _produce(kafka_broker, topic, range(85_000, 90_000))
    with workspace.start(job, config, "grow", "--restore", "latest", *retries) as driver:
        assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180), driver.stderr()
        caught_up(90_000, driver)
        # the stored plan already had them: nothing is new at the restore
        assert "new splits since the stored plan" not in driver.stderr(), driver.stderr()[-4000:]
        storage.write_document("grow", STOP_REQUEST, {"requested_ms": int(time.time() * 1000), "by": "test"})
        result = driver.wait(120)
    assert result.returncode == 0 and "job grow stopped with savepoint" in result.stderr, result.explain()
    counted = tally(committed(), 90_000)
    assert counted.exactly_once, counted
