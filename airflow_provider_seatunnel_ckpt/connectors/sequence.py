"""``Sequence`` source: the deterministic test source for exactly-once checks.

Emits an ``id`` int64 column with every value ``0 .. rows-1`` exactly once. The ids are
cut into ``splits`` contiguous ranges (split ``i`` of ``n`` holds
``[rows*i//n, rows*(i+1)//n)``); a reader's position is the next id it will emit, so a
restored reader continues exactly where the checkpoint left off. ``payload_bytes`` reuses
the same pseudo-random bytes for every batch, so it costs no CPU. ``rows_per_second`` is
the whole job's rate: a subtask gets its splits' share, its readers share one limiter,
and batches are cut to about 0.1 s of rows so a barrier never waits long behind a
sleeping reader.

Options: docs/options.md ("Sequence source"); docs/jobs.md, "`Sequence`".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from .api import JsonValue, ReaderContext, Source, SourceReader, Split
from .options import REQUIRED, Option, OptionTable

#: a rate-limited batch holds at most this many seconds' worth of rows
RATE_LIMITED_BATCH_S = 0.1


class RateLimiter:
    """Monotonic-clock token bucket that sleeps only when the caller is ahead of the rate.

    ``acquire(n)`` waits until the rows booked before are due, then books ``n`` rows at
    ``rate`` rows/s: a request's cost is paid by the next one (as Guava's RateLimiter
    does), so the first batch of a fresh reader goes at once, and a subtask retried in a
    new process does not start with a batch interval of sleep. Time not used (the caller
    was slower than the rate) is credited for at most ``max_credit_s`` seconds, so a
    reader that was paused catches up briefly instead of bursting. Whatever happens,
    ``elapsed >= (rows_acquired - rows of the last call) / rate`` after each call.
    The clock and sleep are injectable for tests.
    """

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        max_credit_s: float = 1.0,
    ):
        if rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        self.rate = rate
        self._clock = clock
        self._sleep = sleep
        self._max_credit_s = max_credit_s
        self._paid_until: float | None = None
        self._lock = threading.Lock()

    def acquire(self, n: int) -> float:
        """Book ``n`` rows; return the seconds slept."""
        with self._lock:
            now = self._clock()
            if self._paid_until is None or self._paid_until < now - self._max_credit_s:
                self._paid_until = now - (0.0 if self._paid_until is None else self._max_credit_s)
            wait = self._paid_until - now  # what the rows booked before still owe
            self._paid_until += n / self.rate
        if wait > 0:
            self._sleep(wait)
            return wait
        return 0.0


class SequenceSource(Source):
    plugin_name = "Sequence"
    OPTIONS = OptionTable(
        Option("rows", "int", "rows made, ids 0 to rows - 1", REQUIRED, minimum=0),
        Option("splits", "int", "splits (default: the parallelism)", minimum=1),
        Option("batch_size", "int", "rows per batch (default: the engine's)", minimum=1),
        Option("payload_bytes", "int", "bytes of a fixed-size binary payload column (0: none)", 0, minimum=0),
        Option("rows_per_second", "float", "rows per second of the whole job (0: no limit)", 0.0, minimum=0.0),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.rows: int = opts["rows"]
        self.split_count: int | None = opts["splits"]
        self.batch_size: int | None = opts["batch_size"]
        self.payload_bytes: int = opts["payload_bytes"]
        self.rows_per_second: float = opts["rows_per_second"]
        fields = [pa.field("id", pa.int64(), nullable=False)]
        if self.payload_bytes:
            fields.append(pa.field("payload", pa.binary(self.payload_bytes), nullable=False))
        self.schema = pa.schema(fields)
        self._lock = threading.Lock()
        self._limiters: dict[tuple[int, int], RateLimiter] = {}
        self._payload: pa.Buffer | None = None

    def __getstate__(self) -> dict[str, Any]:
        # configuration only: limiters and the payload buffer belong to one process
        state = self.__dict__.copy()
        for name in ("_lock", "_limiters", "_payload"):
            state.pop(name)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._limiters = {}
        self._payload = None

    def produced_schema(self) -> pa.Schema | None:
        return self.schema

    def splits(self, parallelism: int) -> list[Split]:
        if parallelism < 1:
            raise ValueError(f"parallelism must be >= 1, got {parallelism}")
        n = self.split_count or parallelism
        return [
            Split(
                f"range-{i:05d}",
                {"start": self.rows * i // n, "end": self.rows * (i + 1) // n, "index": i, "count": n},
            )
            for i in range(n)
        ]

    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        start, end = int(split.spec["start"]), int(split.spec["end"])
        if position is None:
            position = start
        if isinstance(position, bool) or not isinstance(position, int) or not start <= position <= end:
            raise ValueError(f"Sequence split {split.split_id}: position {position!r} is not an id in [{start}, {end}]")
        batch_size = self.batch_size or context.batch_size
        limiter = None
        if self.rows_per_second > 0:
            limiter = self._limiter(context, int(split.spec["count"]))
            batch_size = min(batch_size, max(1, int(limiter.rate * RATE_LIMITED_BATCH_S)))
        return SequenceReader(self, position, end, batch_size, limiter, context)

    def _limiter(self, context: ReaderContext, count: int) -> RateLimiter:
        """One limiter per subtask, shared by the readers of its splits."""
        with self._lock:
            key = (context.subtask, context.parallelism)
            limiter = self._limiters.get(key)
            if limiter is None:
                mine = len(range(context.subtask, count, context.parallelism))
                # a subtask without splits never reads; keep the rate positive anyway
                limiter = RateLimiter(self.rows_per_second * max(mine, 1) / count)
                self._limiters[key] = limiter
            return limiter

    def payload_buffer(self, rows: int) -> pa.Buffer:
        """``rows * payload_bytes`` reusable bytes (grown on demand, shared by readers)."""
        need = rows * self.payload_bytes
        with self._lock:
            if self._payload is None or self._payload.size < need:
                data = np.random.default_rng(0).integers(0, 256, size=need, dtype=np.uint8)
                self._payload = pa.py_buffer(data)
            return self._payload


class SequenceReader(SourceReader):
    def __init__(
        self,
        source: SequenceSource,
        position: int,
        end: int,
        batch_size: int,
        limiter: RateLimiter | None,
        context: ReaderContext | None = None,
    ):
        self._source = source
        self._context = context  #: its row limit is read at every batch (batches sized by time)
        self._next = position
        self._end = end
        self._batch_size = batch_size
        self._limiter = limiter

    def read_batch(self) -> pa.RecordBatch | None:
        rows = self._batch_size if self._context is None else self._context.rows_for_next_batch(self._batch_size)
        n = min(rows, self._end - self._next)
        if n <= 0:
            return None
        if self._limiter is not None:
            self._limiter.acquire(n)
        # from_buffers, not pa.array(ndarray): zero-copy, and pa.array's array-like probe
        # imports pandas (~1 s) in every freshly forked Python worker, delaying failover.
        ids = np.arange(self._next, self._next + n, dtype=np.int64)
        columns = [pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(ids)])]
        width = self._source.payload_bytes
        if width:
            buffer = self._source.payload_buffer(n).slice(0, n * width)
            columns.append(pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, buffer]))
        self._next += n
        return pa.RecordBatch.from_arrays(columns, schema=self._source.schema)

    def position(self) -> JsonValue:
        return self._next
