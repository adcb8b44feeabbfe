"""Issue 47, defect 1, through ``seatunnel-ckpt run`` against librdkafka's mock cluster:
a driver SIGKILLed before its first checkpoint, then rerun, reads from the offsets its
first start resolved (``start_mode: latest`` does not move on), so every record produced
after that start is committed exactly once."""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine.driver import STOP_REQUEST
from tests.integration.engine.support import Workspace, open_storage, read_output, tally

from .test_kafka_discovery import PARTITIONS, SCHEMA
from .test_kafka_discovery import _produce as produce

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

_names = itertools.count()


def test_latest_rerun_before_the_first_checkpoint_reads_from_the_first_start(
    workspace: Workspace, kafka_cluster: Any
) -> None:
    topic = f"latest-{next(_names)}"
    kafka_cluster.create_topic(topic, PARTITIONS)
    produce(kafka_cluster, topic, range(0, 10))  # before the job: latest skips them
    job = workspace.write_job(
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": kafka_cluster.bootstrap_servers,
            "topic": topic,
            "consumer.group": f"g-{topic}",
            "start_mode": "latest",
            "format": "json",
            "schema": SCHEMA,
        },
        name="latest",
    )
    # The first run never reaches a checkpoint; the rerun checkpoints often, so its
    # output shows when it has read everything.
    never = workspace.write_config(interval=600_000, timeout=600_000, name="never.yaml")
    often = workspace.write_config(interval=500, name="often.yaml")
    job_id = "latest-rerun"

    with workspace.start(job, never, job_id) as driver:
        started = driver.wait_for(rf"job {job_id} attempt 1: \d+ subtasks, {PARTITIONS} splits", 180)
        assert started, driver.stderr()
        produce(kafka_cluster, topic, range(10, 110))
        time.sleep(2)  # let the subtasks read some of them: nothing of it is checkpointed
        driver.kill()
    assert not re.search(r"checkpoint \d+ \(\w+\) completed", driver.stderr()), driver.stderr()
    produce(kafka_cluster, topic, range(110, 210))

    def committed() -> Any:
        if not workspace.output.exists():
            return read_output(f"file://{workspace.root}/nothing/")
        return read_output(f"file://{workspace.output}/", columns=["id"])

    with workspace.start(job, often, job_id, "--restore", "latest") as driver:
        assert driver.wait_for(rf"job {job_id} attempt 2: .* from the beginning", 180), driver.stderr()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(committed()) < 200:
            time.sleep(0.5)
        open_storage(often).write_document(job_id, STOP_REQUEST, {"requested_ms": int(time.time() * 1000)})
        result = driver.wait(120)
    assert result.returncode == 0 and f"job {job_id} stopped with savepoint" in result.stderr, result.explain()
    counted = tally(committed().column("id").combine_chunks(), range(10, 210))
    assert counted.exactly_once, counted
    assert f"reading the {PARTITIONS} splits attempt 1 planned" in result.stderr, result.explain()
