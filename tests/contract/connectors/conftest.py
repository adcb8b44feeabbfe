"""Fixtures of the connector contract suite: one workspace per case, and the connectors,
each ONE entry in ``SINKS`` or ``SOURCES`` (a factory ``(request) -> context manager``
giving its context, see ``contexts.py``). A new connector gets the whole suite by adding
its entry. Servers start once per session, only when a case needs them.

At the end, the suite prints its table: connector x case, ``pass``, ``FAIL`` or the skip
reason, by registry key (the row labels of the table in ``docs/connectors.md``); with
``CONTRACT_TABLE_OUT=path`` it also writes it there as Markdown.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.support.workspace import spark_environment

from .contexts import SINK_CASES, SOURCE_CASES, SinkUnderTest, SourceUnderTest
from .systems import files, generators, jdbc, kafka, lakehouse, seatunnel_test_sinks
from .workspace import ContractWorkspace

REPO = Path(__file__).resolve().parents[3]

SinkFactory = Callable[[pytest.FixtureRequest], AbstractContextManager[SinkUnderTest]]
SourceFactory = Callable[[pytest.FixtureRequest], AbstractContextManager[SourceUnderTest]]

SINKS: dict[str, SinkFactory] = {
    "File-local": files.local_file_sink,
    "LocalFile": files.seatunnel_local_file_sink,
    "File-S3": files.s3_file_sink,
    "S3File": files.seatunnel_s3_file_sink,
    "Jdbc": jdbc.exactly_once,
    "Jdbc-keys": jdbc.exactly_once_by_key,
    "Kafka": kafka.exactly_once,
    "Iceberg-sql": lakehouse.iceberg_sql,
    "Iceberg-branch": lakehouse.iceberg_sql_branch,
    "Iceberg-hadoop": lakehouse.iceberg_hadoop,
    "Delta": lakehouse.delta,
    "InMemory": seatunnel_test_sinks.in_memory,
    "Console": seatunnel_test_sinks.console,
    "Assert": seatunnel_test_sinks.assert_rules,
}
SOURCES: dict[str, SourceFactory] = {
    "Sequence": generators.sequence,
    "FakeSource": generators.fake_source,
    "File-local": files.local_file_source,
    "LocalFile": files.seatunnel_local_file_source,
    "S3File": files.seatunnel_s3_file_source,
    "Jdbc": jdbc.source,
    "Kafka-earliest": kafka.source_earliest,
    "Kafka-latest": kafka.source_latest,
    "Iceberg-sql": lakehouse.iceberg_sql_source,
    "Iceberg-hadoop": lakehouse.iceberg_hadoop_source,
    "Delta": lakehouse.delta_source,
}


@pytest.fixture(autouse=True, scope="session")
def _mutation_in_place() -> Iterator[None]:
    """A defect put back on purpose in this process too (``mutations.py``), if asked."""
    from .mutations import in_place_from_environment

    with in_place_from_environment():
        yield


@pytest.fixture
def ws(tmp_path: Path) -> ContractWorkspace:
    env = spark_environment()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    (tmp_path / "ws").mkdir()
    return ContractWorkspace(tmp_path / "ws", env)


@pytest.fixture(params=list(SINKS))
def sink_context(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    with SINKS[request.param](request) as context:
        request.node.user_properties.append(("contract", ("sink", request.param)))
        yield context


@pytest.fixture(params=list(SOURCES))
def source_context(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    with SOURCES[request.param](request) as context:
        request.node.user_properties.append(("contract", ("source", request.param)))
        yield context


# ---- the table --------------------------------------------------------------------------------
_outcomes: dict[tuple[str, str, str], list[str]] = defaultdict(list)


def _case_of(nodeid: str) -> str:
    name = nodeid.split("::")[-1].split("[")[0]
    return name.removeprefix("test_")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    contract = dict(report.user_properties).get("contract")
    if contract is None:
        return
    kind, connector = contract
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            outcome = f"skip: {reason.removeprefix('Skipped: ')}"
        else:
            outcome = "pass" if report.passed else "FAIL"
        _outcomes[(kind, connector, _case_of(report.nodeid))].append(outcome)


def _cell(outcomes: list[str]) -> str:
    if "FAIL" in outcomes:
        return "FAIL"
    if outcomes and all(o == "pass" for o in outcomes):
        return "pass"
    return next((o for o in outcomes if o != "pass"), "")


def markdown_table(kind: str) -> list[str]:
    """The results of ``kind`` ("sink" or "source") as a Markdown table, one row per connector run."""
    cases = SINK_CASES if kind == "sink" else SOURCE_CASES
    registry = SINKS if kind == "sink" else SOURCES
    ran = [c for c in registry if any(k == kind and name == c for k, name, _ in _outcomes)]
    lines = [f"| {kind} | " + " | ".join(cases) + " |", "| --- |" + " --- |" * len(cases)]
    for connector in ran:
        cells = [_cell(_outcomes.get((kind, connector, case), [])) or "not run" for case in cases]
        lines.append(f"| {connector} | " + " | ".join(cells) + " |")
    return lines if ran else []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _outcomes:
        return
    written: list[str] = []
    for kind in ("sink", "source"):
        lines = markdown_table(kind)
        if lines:
            terminalreporter.write_sep("-", f"connector contract: {kind}s")
            for line in lines:
                terminalreporter.write_line(line)
            written += [*lines, ""]
    if os.environ.get("CONTRACT_TABLE_OUT"):
        Path(os.environ["CONTRACT_TABLE_OUT"]).write_text("\n".join(written))
