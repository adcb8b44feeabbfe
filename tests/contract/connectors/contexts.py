"""What a connector gives the contract suite: how to point a job at its system, and how to
read back what the system holds (Flink's external-system contexts).

A sink's context names a fresh *target* (a directory, a table, a topic), writes the job-file
block for it, and reads back the ids of the committed rows as a reader of committed data
sees them (Kafka: ``read_committed``; a table: its current snapshot). A source's context
makes a fresh *dataset*, appends rows with an ``id`` column to it, and says which ids a
job reads. Every row has an ``int64`` column ``id``; the suite counts each one.

A context skips a case only with a reason (``skips``); the table of connector x case in
``docs/connectors.md`` is made from these (``python -m tests.contract.connectors.table``).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

#: the sink cases, in the table's order: name -> what it proves
SINK_CASES: dict[str, str] = {
    "restart_before_first_checkpoint": "(i) a driver killed before its first checkpoint; the rerun starts over and ends exact",
    "replay_committed_epoch": "(ii) committing a checkpoint's output again, old and new, in any order, changes nothing",
    "late_commit_of_fenced_driver": "(iii) a driver taken over while it stood still commits its first, then a later, checkpoint after "
    "the claimant's newer commits: nothing changes (retries inside client libraries included)",
    "two_writers_one_target": "(iv) two tables and two subtasks with the same ids on one target: never hangs, exact",
    "mixed_schemas_and_row_kinds": "(v) change rows and plain rows from two sources into one sink: written correctly, or refused by --check",
    "restore_older_checkpoint": "(vi) a restore to an older checkpoint than the latest (rolled back, or refused in one line) ends exact",
    "nothing_left_after_delete_on_finish": "(vii) a finished delete-on-finish job leaves nothing in checkpoint storage and no staged work behind",
    "sink_layout_changed": "(viii) sinks reordered, or one removed, between a kill and the restore: exact, or refused in one line",
}

#: the source cases
SOURCE_CASES: dict[str, str] = {
    "restart_before_first_checkpoint": "(i) a driver killed before its first checkpoint; the rerun reads the positions the first attempt planned",
    "kill_and_resume": "a driver killed after some checkpoints; the rerun continues from the latest, every row once",
    "restore_older_checkpoint": "(vi) a restore to an older checkpoint ends exact",
    "nothing_left_after_delete_on_finish": "(vii) a finished delete-on-finish job leaves nothing in checkpoint storage",
}

_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}_{next(_names)}_{uuid.uuid4().hex[:6]}"


class SinkUnderTest:
    """One sink connector in one configuration."""

    #: the row label in the table
    name = "abstract"
    #: case -> why it does not apply to this sink
    skips: Mapping[str, str] = {}
    #: rows with the same ``id`` replace each other (an upsert by primary key); otherwise every row is kept
    upsert = False
    #: the sink may be written by the two tables of one source (``Sink.tables_may_share_target``)
    shares_target = False
    #: it accepts change rows; otherwise a job sending some is refused by ``--check``
    keeps_change_rows = False
    #: ``committed`` reads the rows back (False: a test sink that keeps nothing to count)
    readable = True
    #: ``module:Class.method`` the committer calls to read what is already committed before it
    #: writes (a table's newest commit of the job): a late commit freezes right after it, so
    #: it writes on a stale read. None: the commit has no such read (a prepared transaction,
    #: a file move: done or not, atomically)
    commit_seam: str | None = None

    def new_target(self) -> str:
        raise NotImplementedError

    def sink(self, target: str) -> dict[str, Any]:
        """The job-file block writing rows ``{id: int64, ...}`` to ``target`` (keyed by ``id``
        where the sink takes keys)."""
        raise NotImplementedError

    def committed(self, target: str) -> list[int]:
        """The ids of the committed rows, once per row (duplicates show as repeats)."""
        raise NotImplementedError

    def leftovers(self, target: str) -> list[str]:
        """Staged or uncommitted work the sink left in its system once the job finished
        (hidden staging files, prepared transactions...): names, for the message."""
        return []

    def ids_of_changes(self, changes: Sequence[tuple[str, int]]) -> list[int]:
        """The committed ids that change rows ``(kind, id)``, in order, leave: an upsert
        sink applies them (the last kind of each key decides), any other sink keeps
        every row."""
        if not self.upsert:
            return [key for _, key in changes]
        final: dict[int, str] = {}
        for kind, key in changes:
            final[key] = kind
        return [key for key, kind in final.items() if kind in ("INSERT", "UPDATE_AFTER")]


class SourceUnderTest:
    """One source connector in one configuration."""

    name = "abstract"
    skips: Mapping[str, str] = {}
    #: the source ends at the end of its data; otherwise the suite stops the job with a savepoint
    bounded = True
    #: rows can be added to a dataset (``append``); a generator's dataset is its options
    appendable = True
    #: the ids a dataset holds when it cannot be appended to
    initial_ids: Sequence[int] = ()

    def new_dataset(self) -> str:
        raise NotImplementedError

    def append(self, dataset: str, ids: Sequence[int]) -> None:
        """Add rows ``{id: int64}`` to the dataset, in several pieces (files, commits) so a
        reader's work spans several checkpoints."""
        raise NotImplementedError

    def source(self, dataset: str) -> dict[str, Any]:
        raise NotImplementedError

    def expected(self, before: Sequence[int], during: Sequence[int], after: Sequence[int]) -> list[int]:
        """The ids a job reads whose first attempt started after ``before`` was appended and
        before ``during`` was; ``after`` was appended once that attempt had died, before its
        rerun. Default: what was there when the job first started (a snapshot)."""
        return list(before)
