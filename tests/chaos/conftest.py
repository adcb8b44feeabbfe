"""Fixtures for the chaos suite: the integration suite's Spark fixtures, a fixed random
seed, and a report of every kill point, printed at the end of the session (by tests/conftest.py, so the cluster suite reports too).

The seed is ``$SEATUNNEL_CKPT_CHAOS_SEED`` (default below); it is printed in the report
and in every failure message, so a failing run can be replayed exactly (as far as
timing allows: the *decisions* repeat, the interleavings they land in may not).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.integration.engine.conftest import (  # noqa: F401 - fixtures re-exported
    s3_bucket,
    s3_plugin_config,
    spark_env,
    webhdfs_server,
    workspace,
)

DEFAULT_SEED = 20251121
SEED = int(os.environ.get("SEATUNNEL_CKPT_CHAOS_SEED", DEFAULT_SEED))


@dataclass
class ChaosRecord:
    test: str
    seed: int
    kill_points: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  #: other events (runs failed by injected storage errors)
    rows: int = 0
    lost: int | None = None
    duplicated: int | None = None
    driver_runs: int = 0
    elapsed_s: float = 0.0

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for point in self.kill_points:
            kinds[point.split(":")[0]] = kinds.get(point.split(":")[0], 0) + 1
        what = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
        return (
            f"{self.test}: seed {self.seed}, {len(self.kill_points)} kill points ({what}), "
            f"{self.driver_runs} driver runs, {self.rows:,} rows, lost {self.lost}, duplicated {self.duplicated}, "
            f"{self.elapsed_s:.0f} s"
        )


RECORDS: list[ChaosRecord] = []


@pytest.fixture
def chaos(request: pytest.FixtureRequest) -> Iterator[tuple[random.Random, ChaosRecord]]:
    """A seeded random generator per test (seed + the test's name) and its record."""
    name = request.node.name
    rng = random.Random(f"{SEED}:{name}")
    record = ChaosRecord(name, SEED)
    RECORDS.append(record)
    yield rng, record
