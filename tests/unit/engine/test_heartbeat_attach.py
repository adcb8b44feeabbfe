"""A retry's tracking of a live driver (operators/attach.py ``DriverTracker``) on a fake
clock: the driver's heartbeat writer and the tracker share simulated time, so every
decision (attach, take over, when) is exact and no test sleeps."""

from __future__ import annotations

import heapq
import logging
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine.heartbeat import HeartbeatWriter, job_fingerprint
from airflow_provider_seatunnel_ckpt.operators.attach import TAKE_OVER, DriverTracker
from airflow_provider_seatunnel_ckpt.storage import CheckpointKind, CheckpointManifest
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage

JOB = "job"
FINGERPRINT = job_fingerprint({"name": JOB, "source": {"plugin_name": "Sequence", "rows": 10}})


class FakeTime:
    """Simulated seconds; ``sleep`` runs what is due on the way."""

    def __init__(self) -> None:
        self.now = 0.0
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._n = 0

    def at(self, when: float, action: Callable[[], None]) -> None:
        self._n += 1
        heapq.heappush(self._queue, (when, self._n, action))

    def sleep(self, seconds: float) -> None:
        until = self.now + seconds
        assert until < 3_600, "an hour of simulated time: the tracker never decided"
        while self._queue and self._queue[0][0] <= until:
            when, _, action = heapq.heappop(self._queue)
            self.now = max(self.now, when)
            action()
        self.now = until


class FakeDriver:
    """A driver as storage sees it: job.json, a heartbeat every interval, checkpoints."""

    def __init__(
        self,
        storage: Any,
        time: FakeTime,
        attempt: int = 1,
        interval_s: float = 2.0,
        fingerprint: str | None = FINGERPRINT,
    ):
        self.storage, self.time, self.attempt = storage, time, attempt
        self.last: int | None = None
        self.writer = HeartbeatWriter(
            storage,
            JOB,
            attempt,
            interval_ms=int(interval_s * 1000),
            fingerprint=fingerprint,
            status=lambda: {"last_checkpoint_id": self.last, "application_id": "app-1"},
            wall_ms=lambda: 0,
        )  # a writer clock stuck at 1970 changes nothing
        self.interval_s = interval_s
        self.beating = True
        storage.write_document(JOB, "job.json", {"status": "running", "attempt": attempt})

    def start(self, at: float = 0.0) -> FakeDriver:
        self.time.at(at, self._beat)
        return self

    def _beat(self) -> None:
        if self.beating:
            self.writer.beat()
            self.time.at(self.time.now + self.interval_s, self._beat)

    def checkpoint(self, checkpoint_id: int, rows: int = 1000) -> None:
        self.storage.complete_checkpoint(
            CheckpointManifest(
                job_id=JOB,
                pipeline_id=1,
                checkpoint_id=checkpoint_id,
                kind=CheckpointKind.CHECKPOINT,
                trigger_ms=1,
                complete_ms=2,
                statistics={"rows": rows, "duration_ms": 5},
            )
        )
        self.last = checkpoint_id

    def finish(self, status: str = "finished", final: int | None = None, error: str | None = None) -> None:
        self.storage.write_document(
            JOB, "job.json", {"status": status, "attempt": self.attempt, "final_checkpoint_id": final, "error": error}
        )
        self.writer.end(status, error, last_checkpoint_id=self.last)

    def die(self) -> None:
        self.beating = False


@pytest.fixture
def storage() -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(MemoryFileSystem(f"attach-{uuid.uuid4().hex}"), "/ns/", 10)


@pytest.fixture
def time() -> FakeTime:
    return FakeTime()


def tracker(
    storage: Any,
    time: FakeTime,
    caplog: pytest.LogCaptureFixture,
    fingerprint: str | None = FINGERPRINT,
) -> DriverTracker:
    caplog.set_level(logging.INFO)
    return DriverTracker(
        storage,
        JOB,
        logging.getLogger("attach-test"),
        fingerprint=fingerprint,
        clock=lambda: time.now,
        sleep=time.sleep,
    )


def test_a_live_driver_is_attached_to_followed_and_its_checkpoints_reported(storage, time, caplog) -> None:
    driver = FakeDriver(storage, time).start()
    time.sleep(0)  # its first record is there
    time.at(3.0, lambda: driver.checkpoint(1, 500))
    time.at(5.5, lambda: (driver.checkpoint(2, 700), driver.checkpoint(3, 900)))  # two between two polls
    time.at(9.0, lambda: (driver.checkpoint(4, 0), driver.finish("finished", final=4)))

    tracked = tracker(storage, time, caplog).track()

    assert tracked is not None and tracked.outcome == "finished" and tracked.attempt == 1
    assert tracked.status["final_checkpoint_id"] == 4
    assert tracked.checkpoints == [1, 2, 3, 4]
    text = caplog.text
    assert "attempt 1's driver is alive (host " in text and "attaching to it instead of taking the job over" in text
    assert "checkpoint 2 completed by attempt 1's driver (checkpoint, 700 rows" in text
    assert "attempt 1's driver ended the job: finished (final checkpoint 4" in text
    assert time.now < 12  # attached within an interval, ended within a poll of the end


def test_attaching_takes_about_one_interval(storage, time, caplog) -> None:
    FakeDriver(storage, time, interval_s=2.0).start()
    time.sleep(0)
    found = tracker(storage, time, caplog).find()
    assert found is not None
    assert time.now <= 2.0 + 1.0  # the next beat, seen at the next poll


def test_a_dead_driver_is_taken_over_after_exactly_the_stale_window(storage, time, caplog) -> None:
    driver = FakeDriver(storage, time).start()
    time.sleep(4.5)  # it beat a few times (sequence 3), then its process was killed
    driver.die()
    time.sleep(60)  # the retry comes much later: nothing in one read says the driver is dead
    started = time.now
    assert tracker(storage, time, caplog).track() is None
    assert 10.0 <= time.now - started <= 11.0  # 3 intervals, at least 10 s, on the reader's clock
    assert "no heartbeat from attempt 1's driver" in caplog.text and "taking the job over" in caplog.text


def test_a_heartbeat_that_stops_while_attached_means_take_over(storage, time, caplog) -> None:
    driver = FakeDriver(storage, time).start()
    time.sleep(0)
    time.at(3.0, lambda: driver.checkpoint(1))
    time.at(7.0, driver.die)  # spark-submit killed while the retry waits
    tracked = tracker(storage, time, caplog).track()
    assert tracked is not None and tracked.outcome == TAKE_OVER and tracked.checkpoints == [1]
    assert 16.0 <= time.now <= 18.5  # last beat at 6 s, stale 10 s later (seen at the next poll)


def test_a_driver_that_fails_while_attached_reports_its_failure(storage, time, caplog) -> None:
    driver = FakeDriver(storage, time).start()
    time.sleep(0)
    time.at(5.0, lambda: driver.finish("failed", error="FailOnceError: boom"))
    tracked = tracker(storage, time, caplog).track()
    assert tracked is not None and tracked.outcome == "failed" and tracked.status["error"] == "FailOnceError: boom"
    assert "attempt 1's driver failed: FailOnceError: boom" in caplog.text


def test_a_stopped_job_ends_the_attachment_as_stopped(storage, time, caplog) -> None:
    driver = FakeDriver(storage, time).start()
    time.sleep(0)
    time.at(4.0, lambda: driver.finish("stopped"))
    tracked = tracker(storage, time, caplog).track()
    assert tracked is not None and tracked.outcome == "stopped"


@pytest.mark.parametrize("deletes_on_finish", [True, False])
def test_a_job_deleted_as_it_finishes_ends_the_attachment_as_finished(storage, time, caplog, deletes_on_finish) -> None:
    """With delete-on-finish the driver deletes the finished job, its heartbeat and
    job.json too, often before the next poll: that is the job's end, never a reason to run
    it again (issue 47, defect 6). Without it, a vanished job is taken over as before."""
    driver = FakeDriver(storage, time).start()
    time.sleep(0)
    time.at(3.0, lambda: driver.checkpoint(1))
    time.at(5.1, lambda: (driver.finish("finished", final=1), storage.delete_checkpoint(JOB)))
    caplog.set_level(logging.INFO)
    tracked = DriverTracker(
        storage,
        JOB,
        logging.getLogger("attach-test"),
        fingerprint=FINGERPRINT,
        clock=lambda: time.now,
        sleep=time.sleep,
        deletes_on_finish=deletes_on_finish,
    ).track()
    assert tracked is not None and tracked.checkpoints == [1]
    if deletes_on_finish:
        assert (tracked.outcome, tracked.status) == ("finished", {})
        assert "attempt 1's driver finished the job and deleted it from storage (delete-on-finish)" in caplog.text
    else:
        assert tracked.outcome == TAKE_OVER and "is gone from storage; taking the job over" in caplog.text
    assert time.now < 7


def test_nothing_is_watched_when_the_job_is_not_running(storage, time, caplog) -> None:
    driver = FakeDriver(storage, time).start()
    time.sleep(0)
    storage.write_document(JOB, "job.json", {"status": "failed", "attempt": 1})
    assert tracker(storage, time, caplog).track() is None
    assert time.now == 0.0
    del driver


def test_a_driver_without_heartbeats_is_taken_over_at_once(storage, time, caplog) -> None:
    storage.write_document(JOB, "job.json", {"status": "running", "attempt": 1})  # an older release's driver
    assert tracker(storage, time, caplog).track() is None
    assert time.now == 0.0
    assert "no driver heartbeat in storage" in caplog.text


def test_a_driver_of_another_job_definition_is_not_attached_to(storage, time, caplog) -> None:
    other_day = job_fingerprint({"name": JOB, "source": {"plugin_name": "Sequence", "rows": 11}})
    FakeDriver(storage, time, fingerprint=other_day).start()
    time.sleep(0)
    assert tracker(storage, time, caplog).track() is None
    assert time.now == 0.0
    assert "runs another definition of the job" in caplog.text
    # a driver that did not say (no digest) or a caller that does not know is followed
    assert tracker(storage, time, caplog, fingerprint=None).find() is not None


def test_a_driver_that_just_ended_is_not_waited_for(storage, time, caplog) -> None:
    driver = FakeDriver(storage, time).start()
    time.sleep(0)
    driver.writer.end("failed", "boom")  # job.json still says running (its write came first and failed)
    assert tracker(storage, time, caplog).track() is None
    assert time.now == 0.0


def test_a_takeover_while_attached_is_followed_to_the_claimants_end(storage, time, caplog) -> None:
    """Someone else (a recovery task, a person) claims the job while the retry waits: the
    old driver writes ``fenced``; the claimant's heartbeat is followed to the end."""
    first = FakeDriver(storage, time).start()
    time.sleep(0)
    holder: dict[str, FakeDriver] = {}

    def takeover() -> None:
        first.writer.end("fenced", "taken over")
        first.die()

    def claimant() -> None:
        second = holder["second"] = FakeDriver(storage, time, attempt=2).start(time.now)
        time.at(time.now + 5, lambda: (second.checkpoint(7), second.finish("finished", final=7)))

    time.at(5.0, takeover)
    time.at(8.0, claimant)
    tracked = tracker(storage, time, caplog).track()
    assert tracked is not None and (tracked.outcome, tracked.attempt) == ("finished", 2)
    assert tracked.checkpoints == [7]
    assert "attempt 2 claimed the job from attempt 1" in caplog.text


def test_a_takeover_by_a_driver_without_heartbeat_means_take_over(storage, time, caplog) -> None:
    first = FakeDriver(storage, time).start()
    time.sleep(0)
    time.at(5.0, lambda: (first.writer.end("fenced", "taken over"), first.die()))
    tracked = tracker(storage, time, caplog).track()
    assert tracked is not None and tracked.outcome == TAKE_OVER
    assert 15.0 <= time.now <= 17.0
