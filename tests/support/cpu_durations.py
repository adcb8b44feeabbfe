"""``--cpu-durations=N``: the N tests that cost the most CPU, beside pytest's wall-clock
``--durations``.

Why: the whole suite is CPU-bound on two cores (scripts/test runs its suites side by side),
so a test's wall time says more about what ran beside it than about what it costs. This
counts the CPU of the pytest process and of the children it has reaped (servers, Spark
drivers, Airflow subprocesses) over a test's setup, call and teardown. A server a
module-scoped fixture starts is counted at the teardown that stops it, so a file's last
test carries its servers. A process nobody waits for is not counted: a daemon that outlives
its parent (PostgreSQL), and most Spark driver JVMs (PySpark does not wait for its
gateway's): it counted 494 CPU-seconds for the 58 Spark tests of a CI, about a third of
what a cpuacct cgroup measured for that suite in the CI before. So it ranks the tests that
cost CPU in Python and in the servers they stop; the whole run's CPU is the machine's to tell.
"""

from __future__ import annotations

import resource
from collections.abc import Iterator
from typing import Any

import pytest


def _cpu_seconds() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


class CpuDurations:
    """Registered by tests/conftest.py when ``--cpu-durations`` is above 0."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.spent: dict[str, float] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[Any]:
        before = _cpu_seconds()
        try:
            return (yield)
        finally:
            self.spent[item.nodeid] = _cpu_seconds() - before

    # pytest-xdist: a worker hands its figures to the controller, which prints them all
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["cpu_durations"] = self.spent

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.spent.update(getattr(node, "workeroutput", {}).get("cpu_durations", {}))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.spent:
            return
        terminalreporter.section(f"the {self.count} tests that cost the most CPU")
        ranked = sorted(self.spent.items(), key=lambda kv: kv[1], reverse=True)
        for nodeid, seconds in ranked[: self.count]:
            terminalreporter.write_line(f"{seconds:8.2f} CPU-s  {nodeid}")
        terminalreporter.write_line(f"{sum(self.spent.values()):8.2f} CPU-s  all {len(self.spent)} tests")
