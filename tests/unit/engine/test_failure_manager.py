from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.failure_manager import CheckpointFailureManager
from airflow_provider_seatunnel_ckpt.errors import FailureReason

COUNTED = [r for r in FailureReason if r.counts_as_failure]
NOT_COUNTED = [r for r in FailureReason if not r.counts_as_failure]


class Recorder:
    def __init__(self):
        self.messages: list[str] = []

    def __call__(self, message: str) -> None:
        self.messages.append(message)


def manager(tolerable: int) -> tuple[CheckpointFailureManager, Recorder]:
    recorder = Recorder()
    return CheckpointFailureManager(tolerable, recorder), recorder


@pytest.mark.parametrize("bad", [-1, True, 1.0, "2", None])
def test_rejects_a_tolerable_count_that_is_not_a_non_negative_integer(bad):
    with pytest.raises(ValueError, match=r"tolerable-failure must be an integer >= 0"):
        CheckpointFailureManager(bad, Recorder())


def test_the_counted_reasons_are_flinks():
    assert set(COUNTED) == {
        FailureReason.EXPIRED,
        FailureReason.DECLINED,
        FailureReason.IO_ERROR,
        FailureReason.ASYNC_ERROR,
        FailureReason.FINALIZE_ERROR,
    }


@pytest.mark.parametrize("reason", COUNTED)
def test_zero_tolerance_fails_on_the_first_counted_failure(reason):
    fm, calls = manager(0)
    assert fm.handle_failure(reason, 1, "detail") is True
    [message] = calls.messages
    assert "1 consecutive checkpoints failed" in message
    assert f"checkpoint 1: {reason.message} (detail)" in message


@pytest.mark.parametrize("reason", NOT_COUNTED)
def test_reasons_that_say_nothing_about_checkpointing_are_not_counted(reason):
    fm, calls = manager(0)
    for cid in range(1, 10):
        assert fm.handle_failure(reason, cid) is False
    assert fm.consecutive_failures == 0 and calls.messages == []


def test_each_checkpoint_id_is_counted_once():
    fm, calls = manager(1)
    assert fm.handle_failure(FailureReason.DECLINED, 4) is True
    assert fm.handle_failure(FailureReason.EXPIRED, 4) is False
    assert fm.handle_failure(FailureReason.IO_ERROR, 4) is False
    assert fm.consecutive_failures == 1 and calls.messages == []


def test_callback_fires_exactly_once_when_the_limit_is_passed():
    fm, calls = manager(2)
    for cid in (1, 2):
        fm.handle_failure(FailureReason.EXPIRED, cid)
    assert calls.messages == []
    fm.handle_failure(FailureReason.EXPIRED, 3)
    fm.handle_failure(FailureReason.EXPIRED, 4)
    fm.handle_success(5)
    for cid in (6, 7, 8, 9):
        fm.handle_failure(FailureReason.EXPIRED, cid)
    assert len(calls.messages) == 1
    assert calls.messages[0].startswith("3 consecutive checkpoints failed")
    assert fm.exceeded


def test_a_success_resets_the_consecutive_count():
    fm, calls = manager(2)
    fm.handle_failure(FailureReason.EXPIRED, 1)
    fm.handle_failure(FailureReason.EXPIRED, 2)
    fm.handle_success(3)
    assert fm.consecutive_failures == 0
    fm.handle_failure(FailureReason.EXPIRED, 4)
    fm.handle_failure(FailureReason.EXPIRED, 5)
    assert calls.messages == []


def test_a_failure_older_than_the_newest_success_is_ignored():
    fm, _ = manager(0)
    fm.handle_success(10)
    assert fm.handle_failure(FailureReason.EXPIRED, 9) is False
    assert fm.handle_failure(FailureReason.EXPIRED, 10) is False
    assert fm.consecutive_failures == 0


def test_an_older_success_does_not_reset_a_newer_failure():
    fm, _ = manager(5)
    fm.handle_failure(FailureReason.EXPIRED, 5)
    fm.handle_failure(FailureReason.EXPIRED, 6)
    fm.handle_success(4)
    assert fm.consecutive_failures == 2


def test_a_success_clears_only_failures_older_than_itself():
    fm, _ = manager(5)
    fm.handle_failure(FailureReason.EXPIRED, 5)
    fm.handle_failure(FailureReason.EXPIRED, 7)
    fm.handle_success(6)
    assert fm.consecutive_failures == 1
    fm.handle_success(6)  # repeated or older successes change nothing
    fm.handle_success(2)
    assert fm.consecutive_failures == 1


def test_failures_without_an_id_count_and_are_cleared_by_a_success():
    fm, calls = manager(1)
    fm.handle_failure(FailureReason.IO_ERROR)
    fm.handle_success(1)
    fm.handle_failure(FailureReason.IO_ERROR)
    fm.handle_failure(FailureReason.IO_ERROR)
    assert fm.consecutive_failures == 2
    assert "writing the checkpoint to storage failed" in calls.messages[0]
