"""How the Iceberg sink's commit is tied to the table state its replay rule read.

The committer reads the table, finds the newest checkpoint of the job on the branch
(``IcebergCommitter.last_committed``) and appends only files of newer checkpoints. That
is exact only if the append applies to the table it read, or fails: another driver of
the same job (a fenced one whose commit was already in flight, or the claimant replaying
the checkpoint it restored) may commit the same files in between. Two things make it so:

* every commit asserts the branch as it was read: an existing branch's head (pyiceberg's
  own requirement on an append), a branch the commit starts "does not exist yet"
  (:class:`StartBranch`, as Java's SnapshotProducer asserts the ref even when it creates it);
* nothing retries a refused commit but the committer, which reads the table and checks
  the rule again first (:func:`without_library_retries`).

Imported only when a commit runs (pyiceberg is the ``iceberg`` extra)."""

from __future__ import annotations

from typing import Any

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table, TableProperties
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.update import AssertRefSnapshotId, SetSnapshotRefUpdate, UpdateTableMetadata


def without_library_retries(table: Table) -> Table:
    """``table``, with pyiceberg's own retry of a refused commit turned off.

    pyiceberg retries a commit the catalog refused by itself (``commit.retry.num-retries``,
    default 4): it reloads the table and rebuilds the append on the branch's new head. That
    passes over the replay rule, checked on the table the commit was built from: when the
    refusal came from another driver of this job committing the same checkpoint, the rebuilt
    append adds the same files a second time, and the branch's newest snapshot of the job
    then names the older checkpoint, so later replays add theirs again.

    pyiceberg reads the setting from the metadata of the table a transaction starts from,
    so only this in-memory copy carries it: the catalog applies the commit's updates (a
    snapshot, a branch) to the table it holds, whose properties stay the user's."""
    metadata = table.metadata.model_copy(
        update={"properties": {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}}
    )
    return Table(table.name(), metadata, table.metadata_location, table.io, table.catalog, table.config)


class BranchMustNotExist(AssertRefSnapshotId):
    """``AssertRefSnapshotId`` without a snapshot id, "the ref does not exist yet", read as
    the Iceberg spec and Java read it. pyiceberg's own check of it refuses every branch but
    main while the table has no snapshot, which is exactly when the sink starts a branch;
    this one only asks whether the ref exists. It is the same JSON, so a REST catalog
    checks it on its side, the spec's way."""

    def validate(self, base_metadata: TableMetadata | None) -> None:
        if base_metadata is None:
            raise CommitFailedException("Requirement failed: current table metadata is missing")
        if self.ref in base_metadata.refs:
            raise CommitFailedException(f"Requirement failed: branch {self.ref} was created concurrently")


class StartBranch(UpdateTableMetadata["StartBranch"]):
    """Point a new branch at the snapshot the transaction just added (to no branch), on the
    condition that the branch still does not exist.

    pyiceberg refuses to write a branch other than main on a table without snapshots,
    while Java's SnapshotProducer creates the branch with its first snapshot, main staying
    empty: what SeaTunnel's Iceberg sink with ``iceberg.table.commit-branch`` does on a new
    table. Without the condition, a fenced driver that read the table before the claimant
    started the branch would point the branch at its own snapshot, which has no parent:
    every row the claimant had committed to the branch gone from it. An update of the
    transaction like pyiceberg's own ``ManageSnapshots``, whose ``create_branch`` cannot
    serve here: its requirement is checked pyiceberg's way."""

    def __init__(self, transaction: Any, branch: str, snapshot_id: int):
        super().__init__(transaction)
        self.branch = branch
        self.snapshot_id = snapshot_id

    def _commit(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        update = SetSnapshotRefUpdate(ref_name=self.branch, type=SnapshotRefType.BRANCH, snapshot_id=self.snapshot_id)
        return (update,), (BranchMustNotExist(ref=self.branch, snapshot_id=None),)
