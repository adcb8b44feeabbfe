"""Splits dealt on request: the driver's split enumerator (issue 51).

As SeaTunnel's split enumerator and Flink's FLIP-27 sources do, a subtask asks for its
next splits when it has read those it holds (``RequestSplit``) and the driver deals the lowest
plan indices not dealt yet (``AssignSplits``; a shrinking share of the pool, one split at
the end), so a large split no longer holds up a fixed share. Sources that read their splits together (Kafka) keep round-robin shares.

Exactly-once rests on the FIFO channel: each assignment is tagged with the newest barrier
sent to its subtask before it. A subtask's state at checkpoint C holds every split dealt
to it before barrier C (started or not); the pool not dealt yet is taken as barrier C
goes out and stored in C's manifest (``unassigned_splits``), so states and pool cover the
plan, each split once. A subtask restarted from C gives back what was dealt to it from
barrier C on. Only the driver's event loop calls this, in the order messages go out.
Why and how it is proven: docs/architecture.md, "Splits dealt on request".
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from .messages import AssignSplits
from .split_book import FinishedRuns
from .split_plan import REF_KEY as PLAN_REF_KEY

#: the manifest property holding the pool at the barrier, as runs of plan indices
UNASSIGNED_KEY = "unassigned_splits"
#: an answer deals 1 / (GUIDED * parallelism) of the pool, from one split (at the end,
#: where the balance is decided) to MAX_DEALT (OpenMP's "guided" schedule): 100,000 small
#: files take a few thousand round trips, and a subtask's state names at most MAX_DEALT
#: splits it has not started (each an entry in every checkpoint until it is read)
GUIDED = 4
MAX_DEALT = 32

Send = tuple[int, int, AssignSplits]  # (subtask, attempt, message)


class SplitEnumerator:
    def __init__(
        self, parallelism: int, unassigned: Iterable[int], *, live: bool = False, restored_id: int | None = None
    ):
        # The pool: a range never dealt, [_next, _end), and a heap of the others (given
        # back by restarts, or a restored pool's gaps), so that the snapshot at every
        # barrier costs what the heap holds, not what the plan holds.
        indices = sorted(set(unassigned))
        split = len(indices)
        while split and (split == len(indices) or indices[split - 1] == indices[split] - 1):
            split -= 1
        self._heap = indices[:split]  # a sorted list is a valid heap
        self._next = indices[split] if split < len(indices) else 0
        self._end = indices[-1] + 1 if split < len(indices) else 0
        #: a live source's input never ends: a request the pool cannot answer waits
        self.live = live
        # What is dealt before this run's first barrier is in no checkpoint, the restored
        # one included: tagged with its id, a restore from it gives it back.
        self._last_barrier = [restored_id or 0] * parallelism
        #: per subtask: (tag, index) of the splits dealt since its newest restore that a
        #: restore from a retained checkpoint may give back
        self._dealt: list[list[tuple[int, int]]] = [[] for _ in range(parallelism)]
        self._attempts: list[int | None] = [None] * parallelism
        #: subtask -> attempt whose request waits for a split (live source, empty pool)
        self._waiting: dict[int, int] = {}
        #: checkpoint id -> the pool when its barrier went out (until it completes or aborts)
        self._at_barrier: dict[int, list[list[int]]] = {}
        #: nothing is dealt until every subtask was restored once: the first to start would
        #: take a small job's splits alone (a Python worker may start seconds after another)
        self._everyone_started = False

    @classmethod
    def restored_from(
        cls, parallelism: int, runs: Any, plan_size: int, known: int, *, live: bool, restored_id: int
    ) -> SplitEnumerator:
        """The enumerator of a restore from checkpoint ``restored_id``: the pool of its
        manifest, and the splits discovered after it (indices from ``known``, its plan's
        size, on)."""
        pool = FinishedRuns(FinishedRuns.check(runs, plan_size, UNASSIGNED_KEY)).indices()
        return cls(parallelism, [*pool, *range(known, plan_size)], live=live, restored_id=restored_id)

    @property
    def unassigned(self) -> int:
        return len(self._heap) + self._end - self._next

    def _pool_runs(self) -> list[list[int]]:
        if self._heap and max(self._heap) >= self._next and self._end > self._next:
            everything = sorted([*self._heap, *range(self._next, self._end)])  # gaps: never in practice
            return FinishedRuns.of_sorted(everything).runs
        runs = FinishedRuns.of_sorted(sorted(self._heap)).runs
        if self._end > self._next:
            last = runs[-1] if runs else None
            if last is not None and (last[1] == 1 or last[2] == 1) and last[0] + last[2] == self._next:
                last[1], last[2] = 1, last[2] + self._end - self._next
            else:
                runs.append([self._next, 1, self._end - self._next])
        return runs

    def _push(self, index: int) -> None:
        if index == self._end and self._end > self._next:
            self._end += 1
        elif self._end == self._next and index >= self._end:
            self._next, self._end = index, index + 1
        else:
            heapq.heappush(self._heap, index)

    def _pop(self) -> int | None:
        if self._heap and (self._end == self._next or self._heap[0] < self._next):
            return heapq.heappop(self._heap)
        if self._end > self._next:
            self._next += 1
            return self._next - 1
        return heapq.heappop(self._heap) if self._heap else None

    def request(self, subtask: int, attempt: int) -> list[Send]:
        """A subtask asks for its next split (ignored from an attempt not restored yet)."""
        if self._attempts[subtask] != attempt:
            return []
        self._waiting[subtask] = attempt
        return self._serve()

    def registered(self, subtask: int) -> None:
        """A subtask (re)registered: it restarts from a restore, until which nothing is
        dealt to it (a request of the attempt it replaces is not answered)."""
        self._attempts[subtask] = None
        self._waiting.pop(subtask, None)

    def barrier(self, checkpoint_id: int, targets: Iterable[tuple[int, int]]) -> None:
        """Barrier ``checkpoint_id`` is being sent to ``targets``: the pool it covers."""
        self._at_barrier[checkpoint_id] = self._pool_runs()
        for subtask, _attempt in targets:
            self._last_barrier[subtask] = checkpoint_id

    def unassigned_at(self, checkpoint_id: int) -> list[list[int]] | None:
        """The pool at ``checkpoint_id``'s barrier, for its manifest."""
        return self._at_barrier.get(checkpoint_id)

    def restored(self, subtask: int, attempt: int, checkpoint_id: int | None) -> list[Send]:
        """Subtask ``subtask`` restarts (attempt ``attempt``) from ``checkpoint_id`` (None:
        from the start): what was dealt to it from that barrier on returns to the pool."""
        back = [index for tag, index in self._dealt[subtask] if checkpoint_id is None or tag >= checkpoint_id]
        for index in back:
            self._push(index)
        self._dealt[subtask] = []
        self._attempts[subtask] = attempt
        self._waiting.pop(subtask, None)
        return self._serve()

    def completed(self, checkpoint_id: int) -> None:
        """Restores come from ``checkpoint_id`` or newer from now on: what was dealt
        before its barrier is in its states for good."""
        for subtask, dealt in enumerate(self._dealt):
            self._dealt[subtask] = [(tag, index) for tag, index in dealt if tag >= checkpoint_id]
        for cid in [cid for cid in self._at_barrier if cid <= checkpoint_id]:
            del self._at_barrier[cid]

    def aborted(self, checkpoint_id: int) -> None:
        self._at_barrier.pop(checkpoint_id, None)

    def add(self, indices: Iterable[int]) -> list[Send]:
        """Splits discovered while the job runs."""
        for index in indices:
            self._push(index)
        return self._serve()

    def _serve(self) -> list[Send]:
        if not self._everyone_started:
            if None in self._attempts:
                return []
            self._everyone_started = True
        sends: list[Send] = []
        for subtask, attempt in list(self._waiting.items()):
            chunk = min(MAX_DEALT, max(1, self.unassigned // (GUIDED * len(self._dealt))))
            indices = [index for index in (self._pop() for _ in range(chunk)) if index is not None]
            if indices:
                tag = self._last_barrier[subtask]
                self._dealt[subtask].extend((tag, index) for index in indices)
                sends.append((subtask, attempt, AssignSplits(tuple(indices))))
            elif not self.live:
                sends.append((subtask, attempt, AssignSplits((), no_more=True)))
            else:
                continue
            del self._waiting[subtask]
        return sends


def enumerator_for(source: Any, manifest: Any, plan_size: int, parallelism: int) -> SplitEnumerator | None:
    """The enumerator of a run that restores ``manifest`` (None: from the start), or None
    where subtasks keep round-robin shares: a source that reads its splits together, and
    a checkpoint of round-robin shares (its states do not say what was dealt; the job
    keeps them until it starts over)."""
    if getattr(source, "reads_splits_together", False):
        return None
    live = bool(getattr(source, "discovery_interval_s", None))
    if manifest is None:
        return SplitEnumerator(parallelism, range(plan_size), live=live)
    runs = manifest.properties.get(UNASSIGNED_KEY)
    if runs is None:
        return None
    known = int((manifest.properties.get(PLAN_REF_KEY) or {}).get("count", plan_size))
    return SplitEnumerator.restored_from(
        parallelism, runs, plan_size, min(known, plan_size), live=live, restored_id=int(manifest.checkpoint_id)
    )
