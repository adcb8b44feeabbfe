"""Late and concurrent commits of the table sinks (issue 47, defect 2), against the real
libraries: pyiceberg with its SQL catalog (sqlite; warehouse on local disk and on moto's
S3) and with our hadoop catalog on a local warehouse, delta-rs on local disk and on S3.

Two drivers of one job commit: the fenced one (taken over, still running: its commit was
already in flight when the claim landed) and the claimant, which restored the same
checkpoint and replays its commit. Each test has two committers on their own sink objects
(their own catalog connections), and lets the fenced one read the table *before* the
claimant's commits and send its commit *after* them: its first ``load_table`` returns the
table as it was, then the claimant commits. That is the window the fence log cannot close
(a request already on its way), so only the table commit itself can keep it exact.

Every test counts every id on the branch the job writes: each exactly once."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from tests.integration.engine.conftest import s3_options

from .conftest import ids_batch

JOB = "job-late"


@dataclass
class Target:
    """A table a job's two drivers commit to: the sink options, and its rows and commits
    read back with the format's own library, on the branch the job writes."""

    kind: str  #: "iceberg" (SQL catalog), "iceberg-hadoop" or "delta"
    url: str
    catalog_db: Path
    storage: dict[str, str]

    @property
    def iceberg(self) -> bool:
        return self.kind.startswith("iceberg")

    def options(self, **extra: Any) -> dict[str, Any]:
        if self.kind == "delta":
            return {"plugin_name": "Delta", "path": f"{self.url}/delta/t", **self.storage, **extra}
        catalog = (
            {"type": "hadoop", "warehouse": self.url}
            if self.kind == "iceberg-hadoop"
            else {"type": "sql", "uri": f"sqlite:///{self.catalog_db}", "warehouse": self.url}
        )
        return {
            "plugin_name": "Iceberg",
            "catalog_name": "test",
            "namespace": "ns",
            "table": "t",
            "iceberg.catalog.config": catalog,
            **self.storage,
            **extra,
        }

    def sink(self, **extra: Any) -> Any:
        """A driver's sink: its own object, its own catalog connection."""
        return load_sink(self.options(**extra))

    def ids(self, sink: Any, branch: str = "main") -> list[int]:
        table = sink.load_table()
        if not self.iceberg:
            return sorted(table.to_pyarrow_table(columns=["id"]).column("id").to_pylist())
        head = table.snapshot_by_name(branch)
        if head is None:
            return []
        return sorted(table.scan(snapshot_id=head.snapshot_id).to_arrow().column("id").to_pylist())

    def commits(self, sink: Any, branch: str = "main") -> list[str]:
        """Checkpoint ids of the job's commits, oldest first; for Iceberg the line of the
        branch, walked back from its head (what the replay rule walks)."""
        table = sink.load_table()
        if not self.iceberg:
            return [h["seatunnel.checkpoint-id"] for h in reversed(table.history()) if h.get("seatunnel.job-id") == JOB]
        found, snapshot = [], table.snapshot_by_name(branch)
        while snapshot is not None:
            if snapshot.summary.get("seatunnel.job-id") == JOB:
                found.append(snapshot.summary["seatunnel.checkpoint-id"])
            snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
        return found[::-1]

    def snapshots(self, sink: Any) -> list[str]:
        """Checkpoint ids of every commit the job made to the table, oldest first; for
        Iceberg every snapshot in the table's metadata, on the branch or not (a late commit
        that lands beside the branch is a commit too)."""
        if not self.iceberg:
            return self.commits(sink)
        return [
            s.summary["seatunnel.checkpoint-id"]
            for s in sink.load_table().snapshots()
            if s.summary.get("seatunnel.job-id") == JOB
        ]


TARGETS = [("iceberg", "local"), ("iceberg", "s3"), ("iceberg-hadoop", "local"), ("delta", "local"), ("delta", "s3")]


@pytest.fixture(params=TARGETS, ids=[f"{kind}-{where}" for kind, where in TARGETS])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    kind, where = request.param
    if where == "local":
        yield Target(kind, f"file://{tmp_path}/warehouse", tmp_path / "catalog.db", {})
        return
    server = request.getfixturevalue("s3_process_server")
    bucket = server.create_bucket(f"late-{uuid.uuid4().hex[:12]}")
    yield Target(kind, f"s3://{bucket}/warehouse", tmp_path / "catalog.db", s3_options(server))


def assert_exact(ids: list[int], expected: range) -> None:
    """Every id of ``expected`` exactly once, with what was lost and duplicated if not."""
    lost = sorted(set(expected) - set(ids))
    duplicated = len(ids) - len(set(ids))
    assert ids == list(expected), f"{len(ids)} rows: lost {len(lost)} {lost[:5]}..., duplicated {duplicated}"


def read_before(sink: Any, others_commit: Callable[[], None]) -> None:
    """``sink``'s next table read returns the table as it is now; ``others_commit`` runs
    right after that read, so a commit based on it reaches the table after theirs."""
    real = sink.load_table
    pending = [others_commit]

    def load() -> Any:
        table = real()
        if pending:
            pending.pop()()
        return table

    sink.load_table = load


def first_epoch(target: Target, **extra: Any) -> tuple[Any, Any]:
    """The fenced driver's sink and its checkpoint 1 (ids 0..9), prepared and never committed
    by it before the takeover. Its writer creates the table: no snapshot yet."""
    fenced = target.sink(**extra)
    writer = fenced.create_writer(JOB, 0, 0)
    writer.write(ids_batch(0, 10))
    return fenced, writer.prepare_commit(1)


def claimant_commits(target: Target, first: Any, **extra: Any) -> tuple[Any, Any, Callable[[], None]]:
    """The claimant's sink, its checkpoint 2 (ids 10..24), and what it does once it restored
    checkpoint 1: replay checkpoint 1's commit, then commit checkpoint 2."""
    claimant = target.sink(**extra)
    writer = claimant.create_writer(JOB, 0, 1)
    writer.write(ids_batch(10, 25))
    second = writer.prepare_commit(2)
    committer = claimant.create_committer(JOB)

    def commits() -> None:
        committer.commit([first])
        committer.commit([second])

    return claimant, second, commits


def test_a_fenced_drivers_late_commit_after_the_claimants_commits_changes_nothing(target: Target) -> None:
    """Defect 2b: the fenced driver found checkpoint 1 uncommitted; by the time its commit
    arrives the claimant has replayed 1 and committed 2. Before the fix pyiceberg retried
    the refused append by itself on the refreshed table, without the replay rule: ids 0..9
    twice, and the branch's newest snapshot of the job said checkpoint 1, so the claimant's
    next replay of checkpoint 2 added ids 10..24 again (25 duplicates)."""
    fenced, first = first_epoch(target)
    claimant, second, commits = claimant_commits(target, first)
    read_before(fenced, commits)
    fenced.create_committer(JOB).commit([first])  # finds checkpoint 1 landed: no error, nothing added
    assert_exact(target.ids(claimant), range(25))
    assert target.commits(claimant) == ["1", "2"]
    assert target.snapshots(claimant) == ["1", "2"]
    if target.iceberg:  # the sink turns pyiceberg's retries off for its own commits only
        assert "commit.retry.num-retries" not in claimant.load_table().properties
    # the claimant's driver dies after committing 2; its next run restores 2 and replays it
    target.sink().create_committer(JOB).commit([first, second])
    assert_exact(target.ids(claimant), range(25))
    assert target.commits(claimant) == ["1", "2"]


@pytest.mark.parametrize(
    "target",
    [t for t in TARGETS if t[0].startswith("iceberg")],
    indirect=True,
    ids=[f"{kind}-{where}" for kind, where in TARGETS if kind.startswith("iceberg")],
)
def test_a_fenced_drivers_late_first_commit_to_a_new_branch_changes_nothing(target: Target) -> None:
    """Defect 2a: on a table without snapshots the sink's first commit starts the branch.
    The fenced driver read the table before the claimant started the branch and committed
    25 rows to it; its first commit must not point the branch at a snapshot of its own
    (no parent: the branch went from 25 rows to 10, ids 10..24 lost for good)."""
    branch = {"iceberg.table.commit-branch": "audit"}
    fenced, first = first_epoch(target, **branch)
    claimant, second, commits = claimant_commits(target, first, **branch)
    read_before(fenced, commits)
    fenced.create_committer(JOB).commit([first])  # finds checkpoint 1 landed: no error, nothing added
    assert_exact(target.ids(claimant, "audit"), range(25))
    assert target.commits(claimant, "audit") == ["1", "2"]
    assert target.snapshots(claimant) == ["1", "2"]
    table = claimant.load_table()
    assert table.current_snapshot() is None  # main stays empty, as with Java's sink
    target.sink(**branch).create_committer(JOB).commit([first, second])  # and a later replay
    assert_exact(target.ids(claimant, "audit"), range(25))
    assert target.commits(claimant, "audit") == ["1", "2"]


@pytest.mark.parametrize("branch", ["main", "audit"])
def test_two_drivers_committing_the_same_checkpoints_at_once_land_each_once(target: Target, branch: str) -> None:
    """Both drivers read the table before either commits, then both commit the same
    checkpoint: the first commit to the table (and, on Iceberg, to the branch) and a later
    one. Either may win; the other's commit must find the winner's and add nothing."""
    if branch != "main" and not target.iceberg:
        pytest.skip("Delta has no branches")
    extra = {"iceberg.table.commit-branch": branch} if branch != "main" else {}
    fenced, first = first_epoch(target, **extra)
    claimant = target.sink(**extra)
    writer = claimant.create_writer(JOB, 0, 1)
    writer.write(ids_batch(10, 25))
    second = writer.prepare_commit(2)
    committers = [fenced.create_committer(JOB), claimant.create_committer(JOB)]
    for infos, expected in (([first], range(10)), ([first, second], range(25))):
        both_read = threading.Barrier(2, timeout=60)
        for sink in (fenced, claimant):
            read_before(sink, both_read.wait)
        outcomes: list[Any] = [None, None]

        def commit(index: int, infos: list[Any] = infos) -> None:
            try:
                committers[index].commit(infos)
                outcomes[index] = "ok"  # noqa: B023 - its threads end within this iteration
            except Exception as err:  # reported below
                outcomes[index] = err  # noqa: B023 - its threads end within this iteration

        threads = [threading.Thread(target=commit, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert outcomes == ["ok", "ok"]  # the loser finds the winner's commit instead of failing its run
        assert_exact(target.ids(claimant, branch), expected)
    assert target.commits(claimant, branch) == ["1", "2"]
    assert target.snapshots(claimant) == ["1", "2"]  # one commit per checkpoint, none beside the branch


def test_the_new_branch_requirement_is_the_specs_and_reads_as_java_reads_it(tmp_path: Path) -> None:
    """What a catalog receives for a branch the sink starts: a REST catalog gets the plain
    ``assert-ref-snapshot-id`` with a null id (checked on its side), and catalogs checked
    by pyiceberg (SQL, hadoop) read it as Java does: the ref must not exist, whether or not
    the table has snapshots (pyiceberg's own reading refuses any branch of a table without)."""
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.table.update import AssertRefSnapshotId

    from airflow_provider_seatunnel_ckpt.connectors.lakehouse.iceberg_commit import BranchMustNotExist

    ours, theirs = BranchMustNotExist(ref="audit", snapshot_id=None), AssertRefSnapshotId(ref="audit", snapshot_id=None)
    assert ours.model_dump_json(by_alias=True) == theirs.model_dump_json(by_alias=True)
    sink = Target("iceberg", f"file://{tmp_path}/warehouse", tmp_path / "catalog.db", {}).sink()
    writer = sink.create_writer(JOB, 0, 0)
    writer.write(ids_batch(0, 1))  # creates the table: no snapshots
    empty = sink.load_table().metadata
    ours.validate(empty)
    with pytest.raises(CommitFailedException, match="can only be written to the main"):
        theirs.validate(empty)
    sink.create_committer(JOB).commit([writer.prepare_commit(1)])
    table = sink.load_table()
    ours.validate(table.metadata)  # main exists, audit does not
    table.manage_snapshots().create_branch(table.current_snapshot().snapshot_id, "audit").commit()
    with pytest.raises(CommitFailedException, match="branch audit was created concurrently"):
        ours.validate(sink.load_table().metadata)
