"""Batches sized by time: how many rows a subtask asks its readers for next.

A barrier is taken between two batches, or while a batch is read or transformed (the cut
then goes before it: engine/subtask.py), so it waits for the write of the batch in flight,
which takes as long as the CPU the subtask gets allows. The sizer measures each
batch's wall time and sets the most rows the next one may have, so that one batch takes
about ``target_s``: fewer rows while the CPU is shared, the configured size again once it
is free. The limit reaches the readers through ``ReaderContext.row_limit``; batch ends
were already the only barrier points, so no position or state changes.

The rules (floor, growth, short batches): :class:`BatchSizer`. The design choice:
docs/architecture.md, "Design choices" (batches sized by time).
"""

from __future__ import annotations

#: the default target of one batch's read + transforms + writes (env ``batch_time_ms``):
#: 0, fixed batches: measured, the sizing does not pay (docs/architecture.md; 50 ms with
#: eight jobs at once on a quiet machine kept 0.80 of the rows per CPU second, p99 0.89x)
DEFAULT_TARGET_MS = 0
#: the floor: this fraction of the configured batch size. A batch has fixed costs (a
#: DuckDB query's set-up, the Python between the stages): the jobs-at-once bench's
#: Sequence -> Sql (sha256) -> File pipeline in one process (a loaded machine) made 0.71-0.81
#: of the 65,536-row batches' rows per CPU second with 16,384-row batches, 0.46-0.59 with
#: 4,096. The floor bounds that loss; the wait for a batch is then bounded only by it.
FLOOR_FRACTION = 4


class BatchSizer:
    """The row limit of a subtask's next batch, from the wall time of the batches before.

    Never below ``floor`` rows (a batch has a fixed cost: tiny batches would trade
    throughput for latency without bound), never above ``ceiling``: the limit is lifted
    (``None``) once a batch of that size fits the target. Shrinking takes effect at once;
    growing at most doubles per batch, so one fast batch does not undo a measured
    slowdown. Only a full batch is evidence for growing: a batch the source gave short
    (a split's end) shrinks the limit only when it took longer than the target itself."""

    def __init__(self, ceiling: int, target_s: float, floor: int | None = None):
        if ceiling < 1:
            raise ValueError(f"ceiling must be >= 1, got {ceiling}")
        self.ceiling = ceiling
        self.target_s = target_s
        self.floor = max(1, min(ceiling, floor if floor is not None else ceiling // FLOOR_FRACTION))
        #: the most rows the next batch may have; None: no limit (the configured sizes)
        self.limit: int | None = None

    @property
    def enabled(self) -> bool:
        return self.target_s > 0

    def record(self, rows: int, seconds: float) -> int | None:
        """One batch of ``rows`` (as read from the source) took ``seconds`` from its read
        to its last write: the new limit (None: no limit)."""
        if not self.enabled or rows <= 0 or seconds <= 0:
            return self.limit
        # a batch larger than the configured size (a source's own batch_size): the ceiling
        self.ceiling = max(self.ceiling, rows)
        asked = self.limit if self.limit is not None else self.ceiling
        full = rows >= asked
        fits = round(rows * self.target_s / seconds)  # rows that would take target_s at this pace
        if fits < asked:
            # a short batch's fixed costs weigh more: it shrinks the limit only when it
            # took longer than the target itself
            if full or seconds > self.target_s:
                self.limit = max(self.floor, fits)
        elif full:  # quicker than the target: grow
            grown = min(fits, 2 * asked)
            self.limit = None if grown >= self.ceiling else grown
        return self.limit
