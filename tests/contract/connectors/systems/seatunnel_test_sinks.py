"""SeaTunnel's test sinks, which keep nothing a reader could count afterwards: ``InMemory``
(rows held in the subtask's memory), ``Console`` (samples printed by the driver; a
restore prints the restored epoch again, as Structured Streaming's console sink does) and
``Assert`` (rules checked as rows arrive). The cases that do not need the rows back apply:
storage left clean, wiring refused or run, never a hang."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from ..contexts import SinkUnderTest, unique

NO_ROWS_BACK = "keeps no rows a reader can count"


class TestSink(SinkUnderTest):
    readable = False

    def __init__(self, name: str, block: dict[str, Any], keeps_change_rows: bool):
        self.name, self.block, self.keeps_change_rows = name, block, keeps_change_rows
        self.shares_target = True  # nothing is written anywhere
        self.skips = {
            case: NO_ROWS_BACK
            for case in (
                "restart_before_first_checkpoint",
                "replay_committed_epoch",
                "late_commit_of_fenced_driver",
                "restore_older_checkpoint",
            )
        }

    def new_target(self) -> str:
        return unique("none")

    def sink(self, target: str) -> dict[str, Any]:
        return dict(self.block)


@contextlib.contextmanager
def in_memory(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield TestSink("InMemory", {"plugin_name": "InMemory"}, keeps_change_rows=True)


@contextlib.contextmanager
def console(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield TestSink("Console", {"plugin_name": "Console", "limit": 0}, keeps_change_rows=True)


@contextlib.contextmanager
def assert_rules(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    rules = {"field_rules": [{"field_name": "id", "field_type": "bigint", "field_value": [{"rule_type": "NOT_NULL"}]}]}
    yield TestSink("Assert", {"plugin_name": "Assert", "rules": rules}, keeps_change_rows=True)
