"""The Kafka EXACTLY_ONCE sink with two drivers on one job (issue 30, item 1).

After a new run claims the job (run attempt N+1), the old driver may still run (a
zombie) and its subtasks keep starting transactions. Their transactional ids must never
be the claimant's: a zombie's ``init_transactions`` under the claimant's id would bump
the epoch and abort the claimant's prepared transaction, whose commit would then fail as
lost on every replay. The tests with a cluster run on the real broker (Apache Kafka 4.1,
KRaft, the session's ``kafka_broker``), which does abort on such a claim: the claimant's
commit succeeding is the broker's own answer, the transaction audit trail shows no id
claimed between its ``prepare`` and its ``commit`` (``claimed_while_prepared``), and
real ``read_committed`` consumers (``read_ids``) count every id: the zombie's records
reach the log but none of them is visible, and its driver's late commit of a
transaction the claimant fenced is refused by the broker.

Also: the claimant still fences what older runs left open after the restored checkpoint
(the probing rule), and the committer refuses a restore behind completed checkpoints
whose transactions it cannot un-publish (``check_rollback``, ``rollback``). The probing
rule stays on a fake coordinator: it checks the exact order of the probes for made-up
histories (an id's epoch), which a broker neither reports nor lets a test set up in one
call. librdkafka's mock cluster is used by none of these tests."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.kafka import exactly_once
from airflow_provider_seatunnel_ckpt.connectors.kafka.transactions import AUDIT_ENV
from airflow_provider_seatunnel_ckpt.errors import ConfigError, ConnectorError
from tests.servers.kafka import claimed_while_prepared
from tests.servers.kafka_records import read_ids
from tests.support.kafka import new_topic

pytestmark = pytest.mark.timeout(120)


def run_sink(bootstrap_servers: str, topic: str, run_attempt: int, **extra: Any) -> Any:
    """The sink as the engine hands it to a subtask or the driver of run ``run_attempt``."""
    sink = load_sink(
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": bootstrap_servers,
            "topic": topic,
            "semantics": "EXACTLY_ONCE",
            **extra,
        },
        "sink[0]",
    )
    sink.run_attempt = run_attempt
    return sink


def epoch(sink: Any, after: int, ids: range, prepare_as: int | None) -> Any:
    """One epoch of subtask 0: the writer opened after checkpoint ``after``, ``ids``
    written, prepared for checkpoint ``prepare_as`` (None: closed unprepared, aborted)."""
    writer = sink.create_writer("job", 0, 0)
    writer.open(after)
    writer.write(pa.record_batch({"id": np.array(ids, dtype=np.int64)}))
    info = writer.prepare_commit(prepare_as) if prepare_as is not None else None
    writer.close()
    return info


def claims_after(audit: Path, transactional_id: str, since: float) -> list[dict[str, Any]]:
    """Every start or fence of ``transactional_id`` in the audit trail after ``since``."""
    events = [json.loads(line) for line in audit.read_text().splitlines() if line]
    return [e for e in events if e["id"] == transactional_id and e["event"] in ("start", "fence") and e["at"] > since]


def test_protocol_a_zombie_runs_transactions_never_claim_the_claimants_prepared_one(
    kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = tmp_path / "transactions.jsonl"
    monkeypatch.setenv(AUDIT_ENV, str(audit))
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(kafka_broker)
    zombie, claimant = run_sink(servers, topic, 1), run_sink(servers, topic, 2)
    zombie_again = run_sink(servers, topic, 1)  # a zombie subtask restarted by the zombie's Spark
    zombie_ids = [*range(1000, 1010), *range(2000, 2010), *range(3000, 3010)]
    try:
        # run 1 completes checkpoint 5 (its driver commits it), opens the epoch after it ...
        in_5 = epoch(zombie, 4, range(900, 910), prepare_as=5)
        run_sink(servers, topic, 1).create_committer("job").commit([in_5])
        zombie_open = zombie.create_writer("job", 0, 0)
        zombie_open.open(5)
        zombie_open.write(pa.record_batch({"id": np.arange(1000, 1010)}))
        # ... and is taken over: run 2 restores checkpoint 5 and prepares checkpoint 6
        committer = claimant.create_committer("job")
        committer.commit([in_5])  # the restore replays the restored checkpoint's commit
        in_6 = epoch(claimant, 5, range(0, 100), prepare_as=6)
        prepared_at = time.time()
        # the zombie runs on after the claimant prepared: its epoch after 5 prepared (its
        # driver can no longer complete checkpoint 6), the next one, and a restarted
        # subtask of it restoring checkpoint 5 again (fencing and starting transactions)
        zombie_6 = zombie_open.prepare_commit(6)
        zombie_open.close()
        epoch(zombie, 6, range(2000, 2010), prepare_as=None)
        epoch(zombie_again, 5, range(3000, 3010), prepare_as=6)

        committer.commit([in_6])  # the claimant's checkpoint 6 completed: the broker accepts it
        claims = claims_after(audit, in_6["transactional_id"], prepared_at)
        assert claims == [], f"the zombie claimed the claimant's prepared transaction: {claims}"
        assert claimed_while_prepared(audit) == ([], 3)
        # the zombie driver's late commit of its epoch after 5: the claimant fenced that id
        with pytest.raises(ConnectorError, match="ProducerFenced|InvalidProducerEpoch"):
            run_sink(servers, topic, 1).create_committer("job").commit([zombie_6])
        # the zombie's prepared epochs reached the log (its unprepared one was aborted, its
        # queued records purged), and read_committed sees no record of any of them (the
        # restarted subtask's stays open, uncommittable for the zombie, until its timeout)
        in_the_log = set(read_ids(kafka_broker, topic, 3, "read_uncommitted"))
        assert {*range(1000, 1010), *range(3000, 3010)} <= in_the_log
        visible = read_ids(kafka_broker, topic, 3)
        assert not set(visible) & set(zombie_ids), "a zombie's record became visible to read_committed"
        assert visible == [*range(0, 100), *range(900, 910)]  # checkpoint 5's rows and the claimant's, once
    finally:
        for sink in (zombie, claimant, zombie_again):
            sink.close()


def test_protocol_transactional_ids_carry_the_run_attempt_and_older_releases_ids_stay_readable(
    kafka_broker: Any,
) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(kafka_broker)
    legacy, run_2, run_3 = (run_sink(servers, topic, run, transaction_prefix="orders") for run in (0, 2, 3))
    try:
        old = epoch(legacy, 3, range(0, 10), prepare_as=4)  # as an older release named it
        assert old["transactional_id"] == "orders-job-0-3"
        run_2.create_committer("job").commit([old])  # run 2 restores checkpoint 4: a restore commits what it names
        new = epoch(run_2, 4, range(10, 20), prepare_as=5)
        assert new["transactional_id"] == "orders-job-0-4-r2"
        # run 2 is taken over before checkpoint 5 completes: run 3 restores checkpoint 4 too
        committer = run_3.create_committer("job")
        committer.commit([old])  # the older release's id, committed again: accepted
        claimed = epoch(run_3, 4, range(20, 30), prepare_as=5)
        assert claimed["transactional_id"] == "orders-job-0-4-r3"
        committer.commit([claimed])  # run 3's checkpoint 5 completed
        # run 3 fenced run 2's epoch after the restored checkpoint: its late commit is refused
        with pytest.raises(ConnectorError, match="ProducerFenced|InvalidProducerEpoch"):
            run_2.create_committer("job").commit([new])
        assert read_ids(kafka_broker, topic, 3, "read_uncommitted") == list(range(30))  # all in the log
        assert read_ids(kafka_broker, topic, 3) == [*range(0, 10), *range(20, 30)]  # run 2's epoch never
    finally:
        for sink in (legacy, run_2, run_3):
            sink.close()


def visible_within(kafka: Any, topic: str, expected: list[int], timeout_s: float = 30.0) -> list[int]:
    """What read_committed sees of a one-partition topic, read again until it is
    ``expected`` or ``timeout_s`` passed (then what it saw last)."""
    deadline = time.monotonic() + timeout_s
    while True:
        ids = read_ids(kafka, topic, 1)
        if ids == expected or time.monotonic() > deadline:
            return ids
        time.sleep(0.2)


def test_the_claimants_end_of_job_sweep_aborts_what_a_zombie_opened_after_the_claimants_start(
    kafka_broker: Any,
) -> None:
    """Seen in the sink contract's late-commit case: a zombie's subtask restarted after the
    claimant's writers had fenced run 1's ids, and its new transaction held back every
    read_committed reader of the partition after the claimant finished (until the
    transaction timeout, 15 minutes by default). The claimant's committer claims the
    older runs' ids again when the job finishes. One partition: the open transaction
    hides everything after it."""
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(kafka_broker, partitions=1)
    zombie, claimant = run_sink(servers, topic, 1), run_sink(servers, topic, 2)
    try:
        committer = claimant.create_committer("job")
        # run 2 restored checkpoint 5: its writers fenced run 1's ids from 5 up first
        in_6 = epoch(claimant, 5, range(0, 100), prepare_as=6)
        # then a subtask of the zombie restarts, restores checkpoint 5 again, and writes
        epoch(zombie, 5, range(1000, 1010), prepare_as=6)
        committer.commit([in_6])
        committer.commit([epoch(claimant, 6, range(100, 200), prepare_as=7)])
        # a commit returns once it is decided; its markers reach the partition a moment later
        visible = visible_within(kafka_broker, topic, list(range(100)))
        assert visible == list(range(100)), f"the zombie's open transaction hid nothing: {len(visible)} ids"
        committer.job_finished(5)
        assert visible_within(kafka_broker, topic, list(range(200))) == list(range(200))
        assert 1000 in read_ids(kafka_broker, topic, 1, "read_uncommitted")  # aborted, not lost from the log
    finally:
        for sink in (zombie, claimant):
            sink.close()


class FakeCoordinators:
    """Answers each probe with the epoch an id reached (0: never used) and records it."""

    epochs: dict[str, int] = {}
    claimed: list[str] = []

    def __init__(self, target: Any) -> None:
        pass

    def fence(self, transactional_id: str, timeout_ms: int) -> int:
        FakeCoordinators.claimed.append(transactional_id)
        return FakeCoordinators.epochs.get(transactional_id, 0)

    def close(self) -> None:
        pass


def fenced_by(
    monkeypatch: pytest.MonkeyPatch, run_attempt: int, after: int, epochs: dict[str, int]
) -> tuple[int, list[str]]:
    monkeypatch.setattr(exactly_once, "TransactionCoordinators", FakeCoordinators)
    FakeCoordinators.epochs, FakeCoordinators.claimed = epochs, []
    sink = run_sink("127.0.0.1:1", "t", run_attempt, transaction_prefix="p")
    return exactly_once.fence_lingering(sink, "p", 1, after), FakeCoordinators.claimed


# stays on a fake coordinator: it checks the probe order for made-up id histories, which a broker cannot give
def test_protocol_the_claimant_fences_what_older_runs_left_open_after_the_restored_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # run 3 restores checkpoint 4. Left open: its own earlier task attempt's epoch after 5;
    # run 2's epochs after 4 and 5; an older release's (no run in the id) epoch after 4.
    epochs = {"p-1-5-r3": 1, "p-1-4-r2": 3, "p-1-5-r2": 1, "p-1-4": 2}
    fenced, claimed = fenced_by(monkeypatch, 3, 4, epochs)
    assert claimed == [
        "p-1-5-r3",
        "p-1-6-r3",  # its own run above the id it starts with
        "p-1-4-r2",
        "p-1-5-r2",
        "p-1-6-r2",  # each older run from the restored id up
        "p-1-4-r1",
        "p-1-4",
        "p-1-5",
    ]  # the ids older releases used
    assert fenced == 4
    # never a newer run's id, never one of the restored checkpoint's own transactions (< 4)
    run_9 = fenced_by(monkeypatch, 9, 4, {})[1]
    assert run_9 == ["p-1-5-r9", "p-1-4-r8", "p-1-4-r7", "p-1-4-r6", "p-1-4-r5", "p-1-4-r4", "p-1-4"]


def test_protocol_a_restore_behind_completed_checkpoints_is_refused_in_one_line() -> None:
    sink = run_sink("127.0.0.1:1", "orders-clean", 3)
    committer = sink.create_committer("nightly")
    committer.check_rollback(7, [])  # nothing newer: nothing to un-publish
    with pytest.raises(ConfigError) as raised:
        committer.check_rollback(7, [9, 8])
    error = raised.value
    assert error.key == "--restore" and "\n" not in str(error)
    assert "'orders-clean'" in error.problem and "checkpoints 8, 9" in error.problem
    assert "--restore latest" in error.problem
    assert "seatunnel-ckpt delete --job-id nightly --pipeline 1 --checkpoint 8" in error.problem


def test_protocol_rollback_refuses_behind_what_the_committer_committed(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = run_sink(kafka_broker.bootstrap_servers, topic, 2)
    try:
        committer = sink.create_committer("job")
        committer.commit([epoch(sink, 5, range(10), prepare_as=6)])
        committer.rollback(6)  # the restored checkpoint itself: nothing newer
        with pytest.raises(ConfigError, match=r"^--restore: .*checkpoint 6\b"):
            committer.rollback(5)
    finally:
        sink.close()


def test_at_least_once_accepts_a_restore_behind_completed_checkpoints() -> None:
    """Duplicates after a restore are the AT_LEAST_ONCE sink's documented contract."""
    committer = load_sink(
        {"plugin_name": "Kafka", "bootstrap.servers": "127.0.0.1:1", "topic": "t"}, "sink[0]"
    ).create_committer("job")
    committer.check_rollback(7, [8, 9])
    committer.rollback(7)
