"""The generating sources: ``Sequence`` (ids 0..rows-1 over splits) and SeaTunnel's
``FakeSource`` with explicit rows. Their dataset is their options: nothing can be added."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from ..contexts import SourceUnderTest

ROWS = 1200


class Generator(SourceUnderTest):
    appendable = False
    initial_ids = range(ROWS)

    def __init__(self, name: str, block: dict[str, Any]):
        self.name, self.block = name, block

    def new_dataset(self) -> str:
        return "generated"

    def source(self, dataset: str) -> dict[str, Any]:
        return dict(self.block)


@contextlib.contextmanager
def sequence(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield Generator("Sequence", {"plugin_name": "Sequence", "rows": ROWS})


@contextlib.contextmanager
def fake_source(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    # one reader: explicit rows are emitted whole by each of the source's readers (SeaTunnel's rule)
    yield Generator(
        "FakeSource (rows)",
        {
            "plugin_name": "FakeSource",
            "parallelism": 1,
            "schema": {"fields": {"id": "bigint"}},
            "rows": [{"kind": "INSERT", "fields": [i]} for i in range(ROWS)],
        },
    )
