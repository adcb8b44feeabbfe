"""The driver's heartbeat in checkpoint storage, and the rule that tells a live driver from a dead one.

Every run attempt's driver writes ``heartbeat/<attempt>.json`` every
``spark.seatunnel.heartbeatInterval`` on a thread of its own (:class:`HeartbeatWriter`),
with a sequence that grows by one per write, and a last record whose ``state`` says how
the run ended. A reader (:class:`Liveness`, sans-I/O: the caller reads and passes its own
clock) calls a driver alive while the sequence advances on the *reader's* monotonic
clock, stale once it stood still for ``stale_after_ms(interval)``; clocks are never
compared across hosts. Nothing here knows Spark or Airflow.

The record, the rule and why: docs/airflow.md, "When the worker dies: resumable
tracking"; where the records lie: docs/storage.md, "What is on storage".
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..errors import ConfigError

log = logging.getLogger(__name__)

HEARTBEAT_DIR = "heartbeat"
#: job env (``spark.`` keys pass to Spark) or ``--conf``: milliseconds between heartbeats; 0 turns them off
INTERVAL_KEY = "spark.seatunnel.heartbeatInterval"
DEFAULT_INTERVAL_MS = 2_000
MIN_INTERVAL_MS = 100
#: a sequence that stood still this many intervals (and at least MIN_STALE_MS) is a dead driver
STALE_INTERVALS = 3
MIN_STALE_MS = 10_000
#: the driver loop has not stepped for this long: the driver is not healthy, heartbeats pause
LOOP_STALL_S = 60.0
FORMAT_VERSION = 1

RUNNING = "running"
FINISHED = "finished"
STOPPED = "stopped"
FAILED = "failed"
FENCED = "fenced"
ENDED_STATES = frozenset({FINISHED, STOPPED, FAILED, FENCED})


def record_path(attempt: int) -> str:
    return f"{HEARTBEAT_DIR}/{int(attempt):06d}.json"


def stale_after_ms(interval_ms: int) -> int:
    """How long a reader watches a sequence stand still before it calls the driver dead."""
    return max(STALE_INTERVALS * max(int(interval_ms), MIN_INTERVAL_MS), MIN_STALE_MS)


def parse_interval(value: Any, key: str = INTERVAL_KEY) -> int:
    """``2000``, ``"2000"``, ``"2000ms"`` or ``"2s"`` -> milliseconds; ``0`` turns heartbeats off."""
    text = str(value).strip().lower()
    match = re.fullmatch(r"(\d+)\s*(ms|s)?", text)
    if not match:
        raise ConfigError(
            key, f"expected milliseconds (e.g. 2000, 2000ms or 2s; 0 turns heartbeats off), got {value!r}"
        )
    ms = int(match.group(1)) * (1000 if match.group(2) == "s" else 1)
    if 0 < ms < MIN_INTERVAL_MS:
        raise ConfigError(key, f"must be 0 (off) or at least {MIN_INTERVAL_MS} ms, got {value!r}")
    return ms


def job_fingerprint(job_json: Mapping[str, Any]) -> str:
    """A short digest of a job definition (``JobSpec.to_json()``): a reader attaches only
    to a driver running the same definition. A digest, so the record holds no option
    values (credentials may be among them). The name is left out: it is a label, and
    defaults to the job file's name, which differs between the task's copy and the driver's."""
    definition = {k: v for k, v in job_json.items() if k != "name"}
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Beat:
    """One heartbeat record as read."""

    attempt: int
    sequence: int
    state: str
    interval_ms: int
    host: str | None = None
    pid: int | None = None
    application_id: str | None = None
    last_checkpoint_id: int | None = None
    written_ms: int | None = None
    job_fingerprint: str | None = None
    error: str | None = None
    #: the checkpoints in flight as the driver last saw them (``DriverLoop.live``): what
    #: the checkpoint view shows, never what liveness decides on
    in_flight: tuple[Mapping[str, Any], ...] = ()
    consecutive_failures: int | None = None
    tolerable_failures: int | None = None

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    def where(self) -> str:
        """``host h, pid p, Spark application a`` (what is known)."""
        parts = [
            f"host {self.host}" if self.host else None,
            f"pid {self.pid}" if self.pid else None,
            f"Spark application {self.application_id}" if self.application_id else None,
        ]
        return ", ".join(p for p in parts if p) or "unknown host"

    @classmethod
    def from_document(cls, doc: Mapping[str, Any] | None) -> Beat | None:
        """None for a missing or malformed record (never raises on content)."""
        if not isinstance(doc, Mapping):
            return None
        try:
            last = doc.get("last_checkpoint_id")
            pid = doc.get("pid")
            written = doc.get("written_ms")
            return cls(
                attempt=int(doc["attempt"]),
                sequence=int(doc["sequence"]),
                state=str(doc.get("state") or RUNNING),
                interval_ms=int(doc.get("interval_ms") or DEFAULT_INTERVAL_MS),
                host=str(doc["host"]) if doc.get("host") else None,
                pid=int(pid) if pid is not None else None,
                application_id=str(doc["application_id"]) if doc.get("application_id") else None,
                last_checkpoint_id=int(last) if last is not None else None,
                written_ms=int(written) if written is not None else None,
                job_fingerprint=str(doc["job_fingerprint"]) if doc.get("job_fingerprint") else None,
                error=str(doc["error"]) if doc.get("error") else None,
                in_flight=tuple(c for c in doc.get("in_flight") or () if isinstance(c, Mapping)),
                consecutive_failures=_count(doc.get("consecutive_failures")),
                tolerable_failures=_count(doc.get("tolerable_failures")),
            )
        except (KeyError, TypeError, ValueError):
            return None


def _count(value: Any) -> int | None:
    return int(value) if value is not None else None


def read_newest(storage: Any, job_id: str) -> Beat | None:
    """The heartbeat of the job's newest attempt that wrote one (None: no driver ever did,
    e.g. a release without heartbeats). Storage errors other than "not found" raise."""
    attempts = []
    for name in storage.list_documents(job_id, HEARTBEAT_DIR):
        stem = name[: -len(".json")] if name.endswith(".json") else ""
        if stem.isdigit():
            attempts.append(int(stem))
    for attempt in sorted(attempts, reverse=True):
        beat = Beat.from_document(storage.read_document(job_id, record_path(attempt)))
        if beat is not None:
            return beat
    return None


# ---- the reader's rule (sans-I/O) --------------------------------------------------------------
class Verdict(Enum):
    NONE = "none"  #: no heartbeat record: no driver to wait for
    WATCHING = "watching"  #: not decided yet: the sequence has not moved since the first read
    ALIVE = "alive"  #: the sequence moved within the stale window
    STALE = "stale"  #: the sequence stood still for the stale window: the driver is gone
    ENDED = "ended"  #: the driver wrote its last record (finished, stopped, failed, fenced)


class Liveness:
    """Feed it every record read (or None) with the reader's monotonic time in ms.

    Alive once the sequence of one attempt grew since an earlier read; stale once it has
    not grown for ``stale_after_ms(interval)`` of the reader's time, counted from the first
    read of that attempt or its last advance. A record of another (newer) attempt starts
    over: a claimant that has just started must show its own sequence moving."""

    def __init__(self) -> None:
        self.beat: Beat | None = None
        self._since: int | None = None  #: reader time of the first read or the last advance
        self._advanced = False

    def observe(self, beat: Beat | None, now_ms: int) -> Verdict:
        if beat is None:
            return Verdict.NONE if self.beat is None else self._still(now_ms)
        previous = self.beat
        if previous is None or beat.attempt != previous.attempt:
            self.beat, self._since, self._advanced = beat, now_ms, False
        elif beat.sequence > previous.sequence:
            self.beat, self._since, self._advanced = beat, now_ms, True
        elif beat.ended and not previous.ended:
            self.beat = beat  # a last record with no newer sequence (written by an older release)
        if self.beat is not None and self.beat.ended:
            return Verdict.ENDED
        return self._still(now_ms)

    def _still(self, now_ms: int) -> Verdict:
        assert self.beat is not None and self._since is not None
        if now_ms - self._since >= stale_after_ms(self.beat.interval_ms):
            return Verdict.STALE
        return Verdict.ALIVE if self._advanced else Verdict.WATCHING

    def waited_ms(self, now_ms: int) -> int:
        """Reader time since the sequence last moved (or since the first read)."""
        return 0 if self._since is None else now_ms - self._since


# ---- the writer (the driver) ---------------------------------------------------------------------
class HeartbeatWriter:
    """Writes one attempt's heartbeat every interval on its own daemon thread.

    ``status()`` returns the live fields (``last_checkpoint_id``, ``application_id``);
    ``health()`` returns None while the driver is healthy, else why it is not: then no
    heartbeat is written (the sequence stands still and a reader takes the job over)."""

    def __init__(
        self,
        storage: Any,
        job_id: str,
        attempt: int,
        *,
        interval_ms: int = DEFAULT_INTERVAL_MS,
        fingerprint: str | None = None,
        status: Callable[[], Mapping[str, Any]] | None = None,
        health: Callable[[], str | None] | None = None,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ):
        self.storage = storage
        self.job_id = job_id
        self.attempt = attempt
        self.interval_ms = interval_ms
        self.fingerprint = fingerprint
        self.status = status or (lambda: {})
        self.health = health or (lambda: None)
        self.wall_ms = wall_ms
        self.sequence = 0
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self._lock = threading.Lock()  # one write at a time, in sequence order
        self._stop = threading.Event()
        self._ended = False
        self._thread: threading.Thread | None = None
        self._failing: str | None = None
        self._unhealthy: str | None = None

    def start(self) -> HeartbeatWriter:
        self.beat()  # the first record before anything slow (Spark's start) happens
        self._thread = threading.Thread(target=self._run, name="checkpoint-heartbeat", daemon=True)
        self._thread.start()
        return self

    def set_interval(self, interval_ms: int) -> None:
        self.interval_ms = interval_ms

    def _run(self) -> None:
        while not self._stop.wait(self.interval_ms / 1000):
            self.beat()

    def record(self, state: str = RUNNING, error: str | None = None, **fields: Any) -> dict[str, Any]:
        """The next record (advances the sequence)."""
        self.sequence += 1
        document: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "job_id": self.job_id,
            "attempt": self.attempt,
            "sequence": self.sequence,
            "state": state,
            "interval_ms": self.interval_ms,
            "host": self.host,
            "pid": self.pid,
            "application_id": None,
            "last_checkpoint_id": None,
            "job_fingerprint": self.fingerprint,
            "written_ms": self.wall_ms(),
        }
        try:
            document.update(self.status())
        except Exception as err:  # the fields are informative; the beat matters
            log.debug("heartbeat status unavailable: %s", err)
        document.update(fields)
        if error is not None:
            document["error"] = error
        return document

    def beat(self) -> bool:
        """Write a ``running`` record now; False when unhealthy, ended or the write failed."""
        reason = self.health()
        if reason is not None:
            if reason != self._unhealthy:
                self._unhealthy = reason
                log.warning("job %s: heartbeat paused: %s", self.job_id, reason)
            return False
        self._unhealthy = None
        with self._lock:
            if self._ended:
                return False
            return self._write(self.record())

    def end(self, state: str, error: str | None = None, **fields: Any) -> bool:
        """Stop the thread and write the last record: ``state`` is one of ENDED_STATES."""
        assert state in ENDED_STATES, state
        self._stop.set()
        with self._lock:
            if self._ended:
                return True
            self._ended = True
            written = self._write(self.record(state, error, **fields))
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        return written

    def stop(self) -> None:
        """Stop the thread without a last record (the run's end writes it)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _write(self, document: Mapping[str, Any]) -> bool:
        try:
            self.storage.write_document(self.job_id, record_path(self.attempt), document)
        except Exception as err:  # a missed beat only makes a reader wait or take over
            if str(err) != self._failing:
                self._failing = str(err)
                log.warning("job %s: could not write the heartbeat: %s", self.job_id, err)
            return False
        self._failing = None
        return True
