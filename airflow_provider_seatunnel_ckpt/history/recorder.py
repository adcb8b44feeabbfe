"""The driver's side of the history: entries go into memory at once, and a thread of the
recorder's own writes them to storage in batches.

Why batched and off the driver's loop: at 1 s checkpoints a write per checkpoint would
put a storage round trip next to every checkpoint, and a slow object store would slow
the job down. Here ``record`` only appends to a list; every ``flush_interval_s`` the
thread rewrites the attempt's open segment (one document write, whatever the number of
new entries), seals it once it holds ``segment_entries`` entries or about
``SEGMENT_BYTES`` of JSON, and deletes the oldest segments past ``max_entries``.

A sealed segment takes in the segments before it (:meth:`_fold`), and a new attempt folds
what earlier ones left: two documents, however many driver starts (docs/history.md).

A driver killed without closing the recorder loses at most the last interval's entries:
the history is a record of what happened, not what decides anything (checkpoints and
their ``_metadata`` are). Each attempt writes only segments named after itself, so a
taken-over driver that still runs never overwrites its successor's; and once it was
taken over it writes none at all (``taken_over``, asked before every write): the
claimant prunes old segments, and a driver that has lost the job creates nothing.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .entries import FORMAT, HISTORY_DIR, segment_name, segment_order

log = logging.getLogger(__name__)

DEFAULT_FLUSH_INTERVAL_S = 1.0
SEGMENT_ENTRIES = 200
#: compact JSON bytes that seal a segment early (wide jobs: many subtasks per entry); far
#: below the storage's document limit, whatever the backend's formatting adds
SEGMENT_BYTES = 256 * 1024
#: compact JSON bytes a folded segment may hold: with the document's own formatting, well
#: below the storage's 1 MiB document limit
FOLD_BYTES = 640 * 1024


class HistoryRecorder:
    def __init__(
        self,
        storage: Any,
        job_id: str,
        attempt: int,
        max_entries: int,
        *,
        flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S,
        segment_entries: int = SEGMENT_ENTRIES,
        taken_over: Callable[[], bool] | None = None,
    ):
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.storage = storage
        self.job_id = job_id
        self.attempt = attempt
        self.max_entries = max_entries
        self.flush_interval_s = flush_interval_s
        # A small history keeps small segments: at most one segment more than asked is stored.
        self.segment_entries = max(1, min(segment_entries, max_entries))
        self._lock = threading.Lock()
        self._incoming: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: segments in storage, oldest first: name -> entries (this attempt's included)
        self._segments: dict[str, int] | None = None
        self._segment = 0
        #: the entries of the segment being filled (and any not written yet), with their sizes
        self._open: list[tuple[dict[str, Any], int]] = []
        self._failing: str | None = None
        #: CPU seconds spent writing (the benchmark reports it beside the job's CPU)
        self.cpu_s = 0.0
        #: everything recorded is in storage (a failed write leaves it False: written next time)
        self._written = True
        #: whether another attempt claimed the job (the fence log's answer; None: never asked)
        self._taken_over = taken_over
        self._silenced = False

    # ---- driver side (any thread) ----------------------------------------------------------
    def record(self, entry: Mapping[str, Any]) -> None:
        with self._lock:
            self._incoming.append(dict(entry))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="checkpoint-history", daemon=True)
        self._thread.start()

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is left and stop; never raises (a lost entry costs only the record)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
            if self._thread.is_alive():
                log.warning("job %s: the checkpoint history was not written within %.0f s", self.job_id, timeout_s)
        else:
            self.flush()

    # ---- recorder thread --------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.wait(self.flush_interval_s):
            self.flush()
        self.flush()

    def flush(self) -> None:
        started = time.thread_time()
        try:
            self._flush()
        finally:
            self.cpu_s += time.thread_time() - started

    def _flush(self) -> None:
        with self._lock:
            new, self._incoming = self._incoming, []
        self._open.extend((entry, len(json.dumps(entry, separators=(",", ":")))) for entry in new)
        if not new and self._written:
            return
        self._written = False
        try:
            if self._lost_the_job():
                return
            if self._segments is None:
                self._segments = self._inventory()
                if len(self._segments) > 1:  # earlier attempts' segments: one of this attempt's from now on
                    self._fold([])
                    self._segment += 1
            while True:
                fits = self._entries_that_fit()
                if fits == len(self._open):
                    self._write_segment(self._open)
                    break
                # The segment is full: sealed only now that it is written (with the
                # segments before it), so a failed write leaves every entry in _open for
                # the next flush.
                self._fold(self._open[:fits])
                del self._open[:fits]
                self._segment += 1
            self._written = True
            self._prune()
        except Exception as err:  # the history must never fail the job
            del self._open[: max(0, len(self._open) - self.max_entries)]  # storage stays away: oldest go
            if str(err) != self._failing:
                self._failing = str(err)
                log.warning("job %s: could not write the checkpoint history: %s", self.job_id, err)
            return
        self._failing = None

    def _lost_the_job(self) -> bool:
        """Another attempt claimed the job: nothing more is written, for good (a storage
        error while asking is raised, and the write waits for the next flush)."""
        if not self._silenced and self._taken_over is not None and self._taken_over():
            self._silenced = True
            log.warning(
                "job %s: attempt %d was taken over by another driver; its checkpoint history is no longer written",
                self.job_id,
                self.attempt,
            )
        if self._silenced:
            self._open.clear()  # nothing will write them: a zombie's entries must not pile up
        return self._silenced

    def _entries_that_fit(self) -> int:
        """How many of the open entries the current segment takes (at least one)."""
        total = 0
        for count, (_, size) in enumerate(self._open):
            total += size
            if count and (count >= self.segment_entries or total > SEGMENT_BYTES):
                return count
        return len(self._open)

    def _inventory(self) -> dict[str, int]:
        """What earlier attempts left, oldest first, with their entry counts (read once,
        so that pruning can keep ``max_entries`` across attempts)."""
        names = sorted(
            (order, name)
            for name in self.storage.list_documents(self.job_id, HISTORY_DIR)
            if (order := segment_order(name)) is not None
        )
        segments: dict[str, int] = {}
        for (attempt, segment), name in names:
            if attempt == self.attempt:  # a recorder of this attempt started before (a restarted driver loop)
                self._segment = max(self._segment, segment + 1)
            document = self.storage.read_document(self.job_id, f"{HISTORY_DIR}/{name}") or {}
            entries = document.get("entries")
            segments[name] = len(entries) if isinstance(entries, list) else 0
        return segments

    def _write_segment(self, entries: list[tuple[dict[str, Any], int]]) -> None:
        name = segment_name(self.attempt, self._segment)
        document = {
            "format": FORMAT,
            "attempt": self.attempt,
            "segment": self._segment,
            "entries": [entry for entry, _ in entries],
        }
        self.storage.write_document(self.job_id, f"{HISTORY_DIR}/{name}", document)
        assert self._segments is not None
        self._segments[name] = len(entries)

    def _fold(self, sealed: list[tuple[dict[str, Any], int]]) -> None:
        """Write the current segment as ``sealed`` with the entries of the stored segments
        before it (newest first, as many whole segments as fit ``FOLD_BYTES``; the newest
        ``max_entries`` in all), then delete the segments it took in.

        Written before anything is deleted, so a reader finds each entry at least once
        (and a reader between the two drops the copies: ``reader.read_history``). A
        segment deleted meanwhile (a concurrent claimant's fold) adds nothing."""
        assert self._segments is not None
        own = segment_name(self.attempt, self._segment)
        earlier: list[tuple[str, list[Any]]] = []
        total = sum(size for _, size in sealed)
        for name in reversed([n for n in self._segments if n != own]):
            document = self.storage.read_document(self.job_id, f"{HISTORY_DIR}/{name}") or {}
            entries = document.get("entries")
            entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
            size = sum(len(json.dumps(e, separators=(",", ":"))) for e in entries)
            if total + size > FOLD_BYTES:
                break
            total += size
            earlier.insert(0, (name, entries))
        folded, seen = [], set()
        for entry, size in [(entry, 0) for _, entries in earlier for entry in entries] + sealed:
            text = json.dumps(entry, sort_keys=True)  # a copy a stray segment still held
            if text not in seen:
                seen.add(text)
                folded.append((entry, size))
        self._write_segment(folded[-self.max_entries :])
        for name, _ in earlier:
            del self._segments[name]  # its entries are in the fold now, whether or not it goes
            try:
                self.storage.delete_document(self.job_id, f"{HISTORY_DIR}/{name}")
            except Exception as err:  # a stray copy: the reader drops the duplicates, a later fold takes it
                log.info("job %s: could not delete history segment %s: %s", self.job_id, name, err)

    def _prune(self) -> None:
        """Delete the oldest segments while the rest still hold ``max_entries``."""
        assert self._segments is not None
        total = sum(self._segments.values())
        for name in list(self._segments):
            if len(self._segments) == 1 or total - self._segments[name] < self.max_entries:
                break
            self.storage.delete_document(self.job_id, f"{HISTORY_DIR}/{name}")
            total -= self._segments.pop(name)
