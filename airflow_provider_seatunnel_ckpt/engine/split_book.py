"""A subtask's book of its splits: which are finished, where the others stand.

Finished splits must cost nothing once finished (issue #34), so the book keeps apart
``states`` (split id -> ``SplitState``: the splits being read, and finished ones whose
transforms keep state) and ``finished`` (the finished splits without state, as indices
into the job's split plan, run-length encoded: ``FinishedRuns``). Plan indices are stable
for the whole job (engine/split_plan.py). A finished split's last position is handed to
the source's checkpoint-complete hook once (``positions``), then forgotten.

Why, and what it saved: docs/architecture.md, "Design choices where the brief left
room" (state scoped to splits).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..connectors.api import Split
from ..storage import CorruptCheckpointError
from .state_codec import SplitState, StateSnapshot, SubtaskState, snapshot_split_states

Run = list  # [start, step, count]: the indices start, start + step, ... (count of them)


def share_of(plan: Sequence[Split], parallelism: int, subtask: int) -> list[tuple[int, Split]]:
    """A subtask's round-robin share of the plan, with each split's plan index (as
    ``connectors.api.assign_splits`` deals them)."""
    return [(index, plan[index]) for index in range(subtask, len(plan), parallelism)]


#: runs are merged again (sorted) once there are this many and twice as many as after the
#: last merge: splits read together (Kafka's partitions) finish in any order
COMPACT_FROM = 16


class FinishedRuns:
    """A set of plan indices as arithmetic runs. Adding indices in increasing order with
    a constant step (a subtask finishing its share in order) extends the last run: O(1)
    per index, one run in all. Other orders make more runs, never a wrong set; they are
    merged again from time to time (amortised O(log n) per index), so a share finished
    in any order ends as one run."""

    def __init__(self, runs: Iterable[Sequence[int]] = ()):
        self.runs: list[Run] = [list(run) for run in runs]
        self._count = sum(run[2] for run in self.runs)
        self._compact_at = COMPACT_FROM
        #: a run was started since the last merge: merging may make fewer
        self.fragmented = False

    def add(self, index: int) -> None:
        self._extend(index)
        if len(self.runs) >= self._compact_at:
            self.compact()

    def compact(self) -> None:
        """The fewest runs for the set, from its sorted indices."""
        self.runs = FinishedRuns.of_sorted(sorted(self.indices())).runs
        self._compact_at = max(COMPACT_FROM, 2 * len(self.runs))
        self.fragmented = False

    def _extend(self, index: int) -> None:
        self._count += 1
        if self.runs:
            last = self.runs[-1]
            start, step, count = last
            if count == 1 and index > start:
                last[1], last[2] = index - start, 2
                return
            if index == start + step * count:
                last[2] = count + 1
                return
            self.fragmented = True
        self.runs.append([index, 1, 1])

    def __len__(self) -> int:
        return self._count

    def indices(self) -> Iterator[int]:
        for start, step, count in self.runs:
            yield from range(start, start + step * count, step)

    @classmethod
    def of_sorted(cls, indices: Iterable[int]) -> FinishedRuns:
        runs = cls()
        for index in indices:
            runs._extend(index)
        return runs

    @staticmethod
    def check(raw: Any, plan_size: int, where: str) -> list[Run]:
        """Runs as stored, checked against the plan before any is expanded (a damaged
        count must not make a restore build a set of billions)."""
        if not isinstance(raw, list):
            raise CorruptCheckpointError(f"{where}: finished splits are not a list of runs")
        runs = []
        for run in raw:
            if (
                not isinstance(run, list)
                or len(run) != 3
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in run)
            ):
                raise CorruptCheckpointError(f"{where}: malformed run of finished splits {run!r}")
            start, step, count = run
            if start < 0 or step < 1 or count < 1 or start + step * (count - 1) >= plan_size:
                raise CorruptCheckpointError(
                    f"{where}: finished splits {run!r} (start, step, count) are outside the plan of {plan_size} splits"
                )
            runs.append([start, step, count])
        return runs


class SplitBook:
    """The splits of one subtask in one run attempt (see module doc). Used on the
    subtask's processing thread only."""

    def __init__(
        self,
        share: Sequence[tuple[int, Split]],
        states: dict[str, SplitState],
        finished: FinishedRuns,
        *,
        dealt: bool = False,
    ):
        self.share = list(share)
        self.states = states
        self.finished = finished
        #: splits dealt on request (engine/split_enumerator.py): the book names every split
        #: dealt to it, started or not, and no finished one (the pool in the manifest and
        #: the other subtasks' books name the rest), so dealing in any order keeps it small
        self.dealt = dealt
        self._finished_set = set(finished.indices())
        #: last positions of splits finished since the previous barrier (for ``positions``)
        self._just_finished: dict[str, Any] = {}

    @classmethod
    def restored(
        cls, share: Sequence[tuple[int, Split]], restored: SubtaskState, plan_size: int, where: str, dealt: bool = False
    ) -> SplitBook:
        """This subtask's part of a restored state (all subtasks' states merged: after a
        rescale a split may have been finished by another subtask)."""
        finished_anywhere: set[int] = set()
        runs = FinishedRuns.check(restored.finished, plan_size, where)
        for start, step, count in runs:
            finished_anywhere.update(range(start, start + step * count, step))
        if len(finished_anywhere) != sum(run[2] for run in runs):
            raise CorruptCheckpointError(f"{where}: a split is finished in more than one subtask's state")
        states, mine_finished = {}, []
        for index, split in share:
            if index in finished_anywhere:
                if split.split_id in restored.splits:
                    raise CorruptCheckpointError(f"{where}: split {split.split_id!r} is both finished and in progress")
                mine_finished.append(index)
            elif split.split_id in restored.splits:
                state = restored.splits[split.split_id]
                if state.finished and not any(state.operators.values()):  # an earlier release's entry
                    mine_finished.append(index)
                else:
                    states[split.split_id] = state
        return cls(share, states, FinishedRuns.of_sorted(mine_finished), dealt=dealt)

    def is_finished(self, index: int, split: Split) -> bool:
        if index in self._finished_set:
            return True
        state = self.states.get(split.split_id)
        return state is not None and state.finished

    def unfinished(self, entries: Iterable[tuple[int, Split]] | None = None) -> list[tuple[int, Split]]:
        return [(i, s) for i, s in (self.share if entries is None else entries) if not self.is_finished(i, s)]

    def add(self, entries: Sequence[tuple[int, Split]]) -> None:
        """Splits discovered while the job runs (appended to the plan: higher indices)."""
        self.share.extend(entries)

    def assign(self, entries: Sequence[tuple[int, Split]]) -> None:
        """Splits dealt to this subtask: in its state from now on, read or not."""
        self.share.extend(entries)
        for _, split in entries:
            self.states.setdefault(split.split_id, SplitState())

    def state_of(self, split: Split) -> SplitState:
        """The state of a split about to be read (made when it starts)."""
        state = self.states.get(split.split_id)
        if state is None:
            state = self.states[split.split_id] = SplitState()
        return state

    def finish(self, index: int, split: Split, position: Any) -> None:
        state = self.state_of(split)
        state.finished, state.position = True, position
        if any(state.operators.values()):  # a transform keeps state for it: it stays
            return
        del self.states[split.split_id]
        if not self.dealt:
            self.finished.add(index)
            self._finished_set.add(index)
        if position is not None:
            self._just_finished[split.split_id] = position

    def snapshot(self, subtask: int) -> StateSnapshot:
        if self.finished.fragmented:  # only after splits finished out of order (read together)
            self.finished.compact()
        return snapshot_split_states(subtask, self.states, self.finished.runs, keep_unstarted=self.dealt)

    def positions(self) -> dict[str, Any]:
        """The positions a barrier covers, for the source's checkpoint-complete hook: the
        splits being read, and the last position of those finished since the previous
        barrier (each handed on once)."""
        positions = {split_id: state.position for split_id, state in self.states.items() if state.position is not None}
        positions.update(self._just_finished)
        self._just_finished = {}
        return positions
