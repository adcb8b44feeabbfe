"""The split plan stored once per attempt and referenced by each checkpoint
(engine/split_plan.py), on local checkpoint storage."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.engine.split_plan import (
    INLINE_KEY,
    REF_KEY,
    load_plan,
    plan_path,
    prune_plans,
    prune_unreferenced_plans,
    referenced_attempts,
    store_plan,
)
from airflow_provider_seatunnel_ckpt.errors import CheckpointError
from airflow_provider_seatunnel_ckpt.storage import create_storage

JOB = "plans"


@pytest.fixture
def storage(tmp_path):
    config = tmp_path / "seatunnel.yaml"
    config.write_text(
        "seatunnel:\n  engine:\n    checkpoint:\n      storage:\n        type: hdfs\n"
        f"        plugin-config:\n          storage.type: local\n          namespace: {tmp_path}/ns/\n"
    )
    return create_storage(load_config(str(config)).storage)


def _plan(n: int, start: int = 0) -> list[list]:
    return [[f"file-{i:06d}.csv", {"path": f"/in/file-{i:06d}.csv", "size": 40}] for i in range(start, start + n)]


def test_a_checkpoint_reads_the_plan_it_was_taken_with_after_splits_were_appended(storage) -> None:
    first = _plan(1000)
    ref = store_plan(storage, JOB, 3, first)
    grown = first + _plan(5, start=1000)  # split discovery appends, and rewrites the attempt's document
    later = store_plan(storage, JOB, 3, grown)
    assert load_plan(storage, JOB, {REF_KEY: ref}) == first
    assert load_plan(storage, JOB, {REF_KEY: later}) == grown
    assert storage.list_documents(JOB, "plans") == ["000003.json"]


def test_a_manifest_of_an_earlier_release_keeps_its_plan_inline(storage) -> None:
    assert load_plan(storage, JOB, {INLINE_KEY: [["range-0", {"start": 0}]]}) == [["range-0", {"start": 0}]]
    assert load_plan(storage, JOB, {"job_name": "x"}) is None


def test_a_missing_or_altered_plan_is_one_line_naming_it(storage) -> None:
    ref = store_plan(storage, JOB, 1, _plan(10))
    altered = _plan(10)
    altered[4][1]["size"] = 41
    storage.write_document(JOB, plan_path(1), {"format": "seatunnel-ckpt/split-plan", "version": 1, "splits": altered})
    with pytest.raises(CheckpointError, match=r"plans/000001\.json: the first 10 splits do not match"):
        load_plan(storage, JOB, {REF_KEY: ref})
    storage.delete_document(JOB, plan_path(1))
    with pytest.raises(
        CheckpointError, match=r"plans/000001\.json: the split plan this checkpoint was taken with is missing"
    ):
        load_plan(storage, JOB, {REF_KEY: ref})


def test_a_plan_larger_than_a_document_is_stored_and_read(storage) -> None:
    big = _plan(30_000)  # about 2.4 MB: over the 1 MiB of ordinary documents
    assert load_plan(storage, JOB, {REF_KEY: store_plan(storage, JOB, 1, big)}) == big


def test_pruning_keeps_referenced_and_current_attempts_plans(storage) -> None:
    refs = {attempt: store_plan(storage, JOB, attempt, _plan(3)) for attempt in (1, 2, 3, 4)}

    class Manifest:
        def __init__(self, attempt):
            self.properties = {REF_KEY: refs[attempt]}

    keep = referenced_attempts([Manifest(2), type("Old", (), {"properties": {INLINE_KEY: []}})()])
    prune_plans(storage, JOB, keep, current_attempt=3)
    # 1: nothing refers to it; 2: a retained checkpoint does; 3: the current attempt's; 4: a newer
    # attempt's (the pruner may be a driver that was taken over): never touched
    assert storage.list_documents(JOB, "plans") == ["000002.json", "000003.json", "000004.json"]


def test_an_earlier_plan_goes_once_retention_removed_the_checkpoints_that_named_it(storage) -> None:
    """A restored attempt's claimant keeps the plan its restored checkpoints name; its
    driver prunes again after retention (CheckpointDriver._apply_retention) until no
    retained periodic checkpoint names an earlier plan. A savepoint's plan stays."""
    refs = {attempt: store_plan(storage, JOB, attempt, _plan(3)) for attempt in (1, 2, 3)}
    retained: list[tuple[int, bool, int]] = []  # (checkpoint id, savepoint, the plan's attempt)

    class Retained:
        """The storage with its checkpoints as listed and read back (only those two calls)."""

        def __getattr__(self, name):
            return getattr(storage, name)

        def list_checkpoint_entries(self, job_id, pipeline_id):
            return [
                type("Entry", (), {"checkpoint_id": c, "savepoint": s, "completed": True})() for c, s, _ in retained
            ]

        def read_manifest(self, job_id, pipeline_id, checkpoint_id, savepoint):
            attempt = next(a for c, s, a in retained if (c, s) == (checkpoint_id, savepoint))
            return type("Manifest", (), {"properties": {REF_KEY: refs[attempt]}})()

    retained[:] = [(7, True, 1), (8, False, 2), (9, False, 2), (10, False, 3)]
    assert prune_unreferenced_plans(Retained(), JOB, 1, current_attempt=3) is True
    assert storage.list_documents(JOB, "plans") == ["000001.json", "000002.json", "000003.json"]
    retained[:] = [(7, True, 1), (10, False, 3), (11, False, 3), (12, False, 3)]
    assert prune_unreferenced_plans(Retained(), JOB, 1, current_attempt=3) is False
    assert storage.list_documents(JOB, "plans") == ["000001.json", "000003.json"]
