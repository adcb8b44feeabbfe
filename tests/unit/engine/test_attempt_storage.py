"""What a run attempt leaves in checkpoint storage (issue 47). Defect 1: a run with
nothing to restore keeps the split plan of the attempt before it
(``JobRun.plan_splits``), so start positions a source resolves from something that moves
(Kafka's ``latest``) stay where the job first started; a changed source or
``--discard-existing`` makes a new plan. Defect 6: a driver taken over writes no plan and
no history, and a finished job with delete-on-finish leaves nothing. The runner's claim,
plan choice and end on local storage; no Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.connectors.api import Source, Split
from airflow_provider_seatunnel_ckpt.connectors.file.sink import FileSink
from airflow_provider_seatunnel_ckpt.engine.completed_store import CompletedCheckpointStore
from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop, Outcome
from airflow_provider_seatunnel_ckpt.engine.fencing import Fenced
from airflow_provider_seatunnel_ckpt.engine.runner import JobRun, RunRequest
from airflow_provider_seatunnel_ckpt.engine.split_plan import REF_KEY, SOURCE_KEY, plan_entries, plan_path, store_plan
from airflow_provider_seatunnel_ckpt.history import HISTORY_DIR, failed_entry
from airflow_provider_seatunnel_ckpt.history.attempts import read_attempts
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

JOB_ID = "reuse"


class Topic(Source):
    """Partitions whose ``latest`` offset moves as records arrive (Kafka's start_mode:
    latest): each new plan starts where the topic ends at that moment."""

    def __init__(self, partitions: int = 3) -> None:
        super().__init__({})
        self.end = [10] * partitions
        self.plans_made = 0

    def produce(self, per_partition: int) -> None:
        self.end = [end + per_partition for end in self.end]

    def splits(self, parallelism: int) -> list[Split]:
        self.plans_made += 1
        return [Split(f"t-{p}", {"partition": p, "start": end}) for p, end in enumerate(self.end)]


class Attempt:
    """One ``seatunnel-ckpt run`` up to its plan: the real claim, restore choice and plan."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        rows: int = 10,
        restore: str = "latest",
        discard: bool = False,
        history_size: int = 1000,
        retention: str = "retain-on-finish",
    ):
        job = load_job(
            {
                "env": {"job.name": JOB_ID, "parallelism": 2},
                "source": [{"plugin_name": "Sequence", "rows": rows}],
                "sink": [{"plugin_name": "File", "path": f"file://{tmp_path}/out/", "format": "jsonl"}],
            }
        )
        config = load_config(
            {
                "seatunnel": {
                    "engine": {
                        "checkpoint": {
                            "history-size": history_size,
                            "externalized-retention": retention,
                            "storage": {
                                "type": "hdfs",
                                "plugin-config": {"storage.type": "local", "namespace": f"{tmp_path}/ns/"},
                            },
                        }
                    }
                }
            }
        )
        self.lines: list[str] = []
        self.run = JobRun(
            RunRequest(job=job, config=config, job_id=JOB_ID, restore=restore, discard_existing=discard),
            progress=self.lines.append,
        )
        self.sink = FileSink({"path": f"file://{tmp_path}/out/", "format": "jsonl"})
        self.token = f"token-{id(self)}"
        self.committer = self.sink.create_committer(JOB_ID)
        self.manifest, self.highest_id, _ = self.run.claim(self.token, self.sink, self.committer)

    def plan(self, source: Source) -> tuple[list[list[Any]], dict[str, Any]]:
        splits, ref = self.run.plan_splits(source, self.manifest)
        return plan_entries(splits), ref

    @property
    def storage(self) -> Any:
        return self.run.storage


def test_a_rerun_before_the_first_checkpoint_reads_the_first_attempt_s_plan_and_offsets(tmp_path: Path) -> None:
    topic = Topic()
    first, first_ref = Attempt(tmp_path).plan(topic)  # driver killed before its first checkpoint
    assert [spec["start"] for _, spec in first] == [10, 10, 10]
    topic.produce(200)  # records arrive between the two starts: they are the job's

    rerun = Attempt(tmp_path)
    assert rerun.manifest is None
    plan, ref = rerun.plan(topic)
    assert plan == first and topic.plans_made == 1
    assert (ref["attempt"], ref["count"], ref["sha256"]) == (2, 3, first_ref["sha256"])
    assert ref[SOURCE_KEY] == first_ref[SOURCE_KEY]
    assert (
        rerun.lines[-1] == f"job {JOB_ID}: nothing to restore; reading the 3 splits attempt 1 planned, from where "
        "that attempt started"
    )
    # The plan lives on as attempt 2's document, the one its checkpoints refer to; attempt
    # 1's, which nothing refers to, is pruned.
    assert rerun.storage.list_documents(JOB_ID, "plans") == ["000002.json"]
    assert rerun.storage.read_document(JOB_ID, plan_path(2))["splits"] == first

    # --restore none with no checkpoint is no request to start over: the same plan
    third, _ = Attempt(tmp_path, restore="none").plan(topic)
    assert third == first and topic.plans_made == 1


def test_an_attempt_that_failed_before_its_plan_leaves_the_one_before_it(tmp_path: Path) -> None:
    topic = Topic()
    first, _ = Attempt(tmp_path).plan(topic)
    Attempt(tmp_path)  # claimed, then Spark did not start: no plan of its own
    topic.produce(50)
    plan, ref = Attempt(tmp_path).plan(topic)
    assert plan == first and ref["attempt"] == 3 and topic.plans_made == 1


def test_a_changed_source_or_a_discard_makes_a_new_plan(tmp_path: Path) -> None:
    topic = Topic()
    Attempt(tmp_path).plan(topic)
    topic.produce(100)

    changed = Attempt(tmp_path, rows=20)  # another source definition under the same job id
    plan, _ = changed.plan(topic)
    assert [spec["start"] for _, spec in plan] == [110, 110, 110] and topic.plans_made == 2
    assert (
        changed.lines[-1] == f"job {JOB_ID}: the source options differ from those attempt 1 planned its splits "
        "with; making a new split plan (where each split starts is resolved again)"
    )
    topic.produce(100)

    discarding = Attempt(tmp_path, rows=20, restore="none", discard=True)
    plan, _ = discarding.plan(topic)
    assert [spec["start"] for _, spec in plan] == [210, 210, 210] and topic.plans_made == 3
    assert not any("planned" in line for line in discarding.lines)
    assert discarding.storage.list_documents(JOB_ID, "plans") == ["000003.json"]


def test_a_plan_of_an_earlier_release_without_a_digest_is_not_reused(tmp_path: Path) -> None:
    topic = Topic()
    first = Attempt(tmp_path)
    plan, _ = first.plan(topic)
    first.storage.write_document(
        JOB_ID, plan_path(1), {"format": "seatunnel-ckpt/split-plan", "version": 1, "splits": plan}
    )
    topic.produce(5)
    rerun = Attempt(tmp_path)
    assert [spec["start"] for _, spec in rerun.plan(topic)[0]] == [15, 15, 15]
    assert "the source options differ" in rerun.lines[-1]


def test_a_driver_taken_over_stores_no_plan(tmp_path: Path, builder: Any) -> None:
    """The claimant pruned the zombie's plan; neither the zombie's start nor its
    discovery (the driver loop's rewrite) may bring it back."""
    topic = Topic()
    zombie = Attempt(tmp_path)
    _, ref = zombie.plan(topic)
    claimant = Attempt(tmp_path)
    claimant.plan(topic)
    assert claimant.storage.list_documents(JOB_ID, "plans") == ["000002.json"]

    with pytest.raises(Fenced, match="was taken over by another driver"):
        zombie.run.plan_splits(topic, None)
    loop = DriverLoop(
        builder.build().coordinator,
        CompletedCheckpointStore(zombie.storage, JOB_ID, 1),
        committer=None,
        fence=zombie.run.fence,
        properties={REF_KEY: ref},
        split_plan=[*plan_entries(topic.splits(2)), ["t-new", {"partition": 3, "start": 0}]],
        progress=lambda line: None,
    )
    with pytest.raises(Fenced, match="was taken over by another driver"):
        loop._store_plan()
    assert claimant.storage.list_documents(JOB_ID, "plans") == ["000002.json"]


def test_a_driver_taken_over_writes_no_history_segment(tmp_path: Path) -> None:
    """With ``history-size: 1`` the claimant's first write prunes the zombie's segment; the
    zombie's recorder, still running, must not write it again."""
    zombie = Attempt(tmp_path, history_size=1)
    recorder = zombie.run._start_history()
    recorder.close()  # the zombie's restore entry is in storage
    assert zombie.storage.list_documents(JOB_ID, HISTORY_DIR) == ["000001-000000.json"]

    claimant = Attempt(tmp_path, history_size=1)
    claimant.run._start_history().close()
    assert claimant.storage.list_documents(JOB_ID, HISTORY_DIR) == ["000002-000000.json"]

    recorder.record(failed_entry(1, 7, "checkpoint", 1_700_000_000_000, 1_700_000_000_300, "expired", True))
    recorder.flush()
    assert claimant.storage.list_documents(JOB_ID, HISTORY_DIR) == ["000002-000000.json"]


def test_a_finished_job_with_delete_on_finish_leaves_nothing_in_storage(tmp_path: Path) -> None:
    """An attempt killed before its first checkpoint, then one that finishes: claims,
    job.json, attempt records, heartbeats, plans, history all go with the checkpoints."""
    killed = Attempt(tmp_path, retention="delete-on-finish")
    store_plan(killed.storage, JOB_ID, 1, [["t-0", {"partition": 0, "start": 10}]])
    killed.run._start_history().close()
    last = Attempt(tmp_path, retention="delete-on-finish")
    store_plan(last.storage, JOB_ID, 2, [["t-0", {"partition": 0, "start": 10}]])
    last.run._start_heartbeat(60_000)
    history = last.run._history = last.run._start_history()
    # >= 8: the newest claim is alone in fence/ (it compacted the killed attempt's)
    assert len(list((tmp_path / "ns" / JOB_ID).rglob("*.json"))) >= 8

    last.run.end(Outcome(finished=True, final_checkpoint_id=3), last.committer, last.token)
    history.close()  # run() closes it after end() (a second close changes nothing)
    job_dir = tmp_path / "ns" / JOB_ID
    assert not job_dir.exists(), sorted(str(p.relative_to(job_dir)) for p in job_dir.rglob("*"))


def test_a_driver_taken_over_leaves_nothing_in_a_job_deleted_under_it(tmp_path: Path) -> None:
    """The claimant finished the job and deleted it while the old driver, taken over,
    still ran: the old driver's end records nothing and takes its heartbeat back."""
    zombie = Attempt(tmp_path, retention="delete-on-finish")
    zombie.run._start_heartbeat(60_000)
    last = Attempt(tmp_path, retention="delete-on-finish")
    last.run.end(Outcome(finished=True, final_checkpoint_id=3), last.committer, last.token)
    job_dir = tmp_path / "ns" / JOB_ID
    zombie.run._heartbeat._write(zombie.run._heartbeat.record("running"))  # a beat after the deletion
    assert job_dir.exists()

    zombie.run.end(Outcome(error="checkpoint 4 failed"), zombie.committer, zombie.token)
    # no file (local disk keeps the emptied heartbeat/ directory; object stores have none)
    assert [p for p in job_dir.rglob("*") if p.is_file()] == []


def test_driver_starts_leave_the_newest_heartbeats_and_one_claim(tmp_path: Path) -> None:
    """Issue 51, item 3: what each driver start adds. Heartbeats: only the newest
    attempt's, once it is written (a reader takes the newest); the fence log: the newest claim (compaction);
    attempt records: the newest and the fold of the earlier ones, every record kept (the
    recovery operator counts failed attempts)."""
    job_dir = tmp_path / "ns" / JOB_ID
    for start in range(1, 13):
        attempt = Attempt(tmp_path)
        attempt.run._start_heartbeat(60_000)
        attempt.run._heartbeat.stop()
        assert attempt.run.attempt_number == start
        heartbeats = sorted(p.name for p in (job_dir / "heartbeat").glob("*.json"))
        assert heartbeats == [f"{start:06d}.json"]
        assert len(list((job_dir / "fence").glob("*.json"))) == 1
        assert len(list((job_dir / "attempts").glob("*.json"))) == min(start, 2)
    storage = Attempt(tmp_path).run.storage
    assert [record["attempt"] for record in read_attempts(storage, JOB_ID)] == list(range(1, 14))
