"""The driver's discovery thread: new splits only, failures said once and retried."""

from __future__ import annotations

import logging
import threading

import pytest

from airflow_provider_seatunnel_ckpt.connectors.api import Source, Split
from airflow_provider_seatunnel_ckpt.engine.split_discovery import SplitDiscovery, split_names

pytestmark = pytest.mark.timeout(30)


class Growing(Source):
    """Answers with every split that 'exists' now; fails while ``failing`` is set."""

    def __init__(self) -> None:
        super().__init__({})
        self.existing = [Split("a"), Split("b")]
        self.failing = 0
        self.calls = 0

    def discover_splits(self, known):
        self.calls += 1
        if self.failing:
            self.failing -= 1
            raise ConnectionError("broker down")
        ids = {s.split_id for s in known}
        return [s for s in self.existing if s.split_id not in ids]


def test_each_split_is_reported_once_and_failures_once_until_recovered(caplog):
    source = Growing()
    found: list[list[str]] = []
    got = threading.Event()

    def on_found(splits):
        found.append([s.split_id for s in splits])
        got.set()

    discovery = SplitDiscovery(source, [Split("a")], 0.02, on_found)
    assert [s.split_id for s in discovery.discover_once()] == ["b"]
    assert discovery.discover_once() == []  # remembered
    source.failing = 5
    source.existing.append(Split("c"))
    with caplog.at_level(logging.WARNING):
        discovery.start()
        try:
            assert got.wait(10)
        finally:
            discovery.stop()
    assert found == [["c"]]
    warnings = [r.getMessage() for r in caplog.records if "split discovery failed" in r.getMessage()]
    assert warnings == ["split discovery failed (tried again every 0.02 s): broker down"]


def test_a_non_positive_interval_is_refused():
    with pytest.raises(ValueError, match="must be > 0"):
        SplitDiscovery(Growing(), [], 0, lambda splits: None)


def test_split_names_shows_the_first_few():
    assert split_names(["a", "b"]) == "a, b"
    assert split_names([str(i) for i in range(7)]) == "0, 1, 2, 3, 4 ..."
