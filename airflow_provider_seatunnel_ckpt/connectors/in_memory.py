"""``InMemory`` sink: SeaTunnel's engine e2e test sink (``seatunnel-e2e-common``'s
``InMemorySinkFactory``), so SeaTunnel's own test jobs run unchanged.

It writes nothing anywhere: each writer keeps the batches of the current epoch in memory
(dropped at every barrier and when the subtask ends) and hands the row count over as its
commit info. Its options exist to make a job fail on purpose, and do so here too; only
``throw_runtime_exception_list`` is retryable (``ConnectorError``), the others fail the
job at once (``DataError``: the same options fail the same way again).

The options and where they differ from SeaTunnel: docs/seatunnel.md, "InMemory".
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..errors import ConfigError, ConnectorError, DataError
from .api import JsonValue, Sink, SinkCommitter, SinkWriter
from .options import Option, OptionTable

log = logging.getLogger(__name__)

#: placeholders left in an option after the engine filled the table ones it knows
_UNFILLED = re.compile(r"\$\{[^}]*\}")


def _assert_options_match(key: str | None, value: str | None) -> None:
    if key is None:
        return
    if value is None:
        raise ConfigError("assert_options_value", "is required with assert_options_key")
    if key == value:
        return
    unfilled = _UNFILLED.findall(key)
    if unfilled:
        pattern = "".join(
            ".*" if _UNFILLED.fullmatch(part) else re.escape(part) for part in re.split(r"(\$\{[^}]*\})", key)
        )
        if re.fullmatch(pattern, value, flags=re.DOTALL):
            log.warning(
                "InMemory: assert_options_key placeholders %s are not filled by this engine; "
                "the rest of the key matched assert_options_value, those parts were not checked",
                ", ".join(unfilled),
            )
            return
    raise ConfigError("assert_options_key", f"assert key and value not match! key = {key}, value = {value}")


def _messages(errors: Any) -> list[str] | None:
    if errors is None:
        return None
    if isinstance(errors, str) or not isinstance(errors, (list, tuple)) or not errors:
        raise ConfigError("throw_runtime_exception_list", f"expected a non-empty list of messages, got {errors!r}")
    return [str(e) for e in errors]


def _assert_value(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError("assert_options_value", f"expected a string, got {value!r}")
    return value


class InMemorySink(Sink):
    plugin_name = "InMemory"
    #: SeaTunnel's is a multi-table sink: one instance takes every table's batches
    writes_tables = True
    #: rows are only counted, so a change row is as good as an insert
    change_rows = "ignore"
    #: seconds SeaTunnel's writer sleeps in prepareCommit (tests set them to 0)
    exception_sleep_s = 4.0
    checkpoint_sleep_s = 5.0
    OPTIONS = OptionTable(
        Option("throw_exception", "bool", "the writer fails in prepareCommit", False),
        Option("throw_out_of_memory", "bool", "the writer fails with an OutOfMemoryError", False),
        Option("checkpoint_sleep", "bool", "the writer sleeps in prepareCommit", False),
        Option("throw_exception_of_committer", "bool", "the committer fails", False),
        Option(
            "throw_runtime_exception_list",
            "value",
            "messages the writer fails with, one per attempt",
            convert=_messages,
        ),
        Option("assert_options_key", "str", "checked to equal assert_options_value (placeholders filled)"),
        Option("assert_options_value", "value", "what assert_options_key must be", convert=_assert_value),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.throw_exception: bool = opts["throw_exception"]
        self.throw_out_of_memory: bool = opts["throw_out_of_memory"]
        self.checkpoint_sleep: bool = opts["checkpoint_sleep"]
        self.throw_exception_of_committer: bool = opts["throw_exception_of_committer"]
        self.runtime_errors: list[str] | None = opts["throw_runtime_exception_list"]
        _assert_options_match(opts["assert_options_key"], opts["assert_options_value"])

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> InMemorySinkWriter:
        return InMemorySinkWriter(self, subtask, attempt)

    def create_committer(self, job_id: str) -> InMemorySinkCommitter:
        return InMemorySinkCommitter(self.throw_exception_of_committer)


class InMemorySinkWriter(SinkWriter):
    """Keeps the current epoch's batches; they are dropped at the barrier."""

    def __init__(self, sink: InMemorySink, subtask: int, attempt: int):
        self.sink = sink
        self.subtask = subtask
        self.attempt = attempt
        self.batches: list[pa.RecordBatch] = []
        self.rows = 0
        #: rows received by this writer over all epochs
        self.total_rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if self.sink.throw_out_of_memory:
            raise DataError("InMemory: java.lang.OutOfMemoryError thrown by the writer (throw_out_of_memory = true)")
        errors = self.sink.runtime_errors
        if errors is not None:
            raise ConnectorError(
                f"InMemory: {errors[min(self.attempt, len(errors) - 1)]} "
                f"(throw_runtime_exception_list, subtask attempt {self.attempt})"
            )
        self.batches.append(batch)
        self.rows += batch.num_rows
        self.total_rows += batch.num_rows

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        if self.sink.throw_exception:
            time.sleep(self.sink.exception_sleep_s)
            raise DataError("InMemory: write failed (throw_exception = true, at prepare_commit)")
        if self.sink.checkpoint_sleep:
            time.sleep(self.sink.checkpoint_sleep_s)
        rows, self.rows, self.batches = self.rows, 0, []
        return {"subtask": self.subtask, "checkpoint": checkpoint_id, "rows": rows} if rows else None

    def close(self) -> None:
        self.batches = []


class InMemorySinkCommitter(SinkCommitter):
    """Nothing is staged or published, so commit, cleanup and rollback are idempotent."""

    def __init__(self, throw_exception: bool):
        self.throw_exception = throw_exception
        #: rows committed in this run by (checkpoint, subtask): a replayed info counts once
        self.committed: dict[tuple[int, int], int] = {}

    def start_fresh(self) -> None:
        # SeaTunnel's save mode handler only logs; like it, not on a restore
        log.info("InMemory: handle schema savemode (CREATE_SCHEMA_WHEN_NOT_EXIST) and data savemode (APPEND_DATA)")

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        if self.throw_exception:
            raise DataError("InMemory: commit failed (throw_exception_of_committer = true)")
        for info in commit_infos:
            if isinstance(info, dict) and "checkpoint" in info:
                key = (int(info["checkpoint"]), int(info.get("subtask") or 0))
                self.committed.setdefault(key, int(info.get("rows") or 0))

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        pass

    def rollback(self, after_checkpoint_id: int) -> None:
        for key in [k for k in self.committed if k[0] > after_checkpoint_id]:
            del self.committed[key]
