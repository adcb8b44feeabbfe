"""The exactly-once defects of issue 47, reintroduced one at a time, to show the connector
contract suite catches each (not only the test written for it).

``python -m tests.contract.connectors.mutations [NAME ...] [--all-cases]`` runs, for each
mutation, the contract cases expected to catch it (or, with ``--all-cases``, the whole
suite) with the mutation in place, and prints a table: mutation, defect, the failing
cases. A mutation is in place in every driver process of the run (``$CONTRACT_MUTATION``,
applied by ``driver.py``) and in the test process itself (``conftest.py``).

Engine defects reuse the simulation's mutations (``tests/simulation/mutations.py``), which
put the old behaviour back the same way; connector defects are patched here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

MUTATION_ENV = "CONTRACT_MUTATION"
REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class ContractMutation:
    name: str
    defect: str
    patch: Callable[[], contextlib.AbstractContextManager[Any]]
    #: ``pytest -k`` expression of the cases expected to catch it
    cases: str


def _simulation(name: str) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    def patch() -> contextlib.AbstractContextManager[Any]:
        from tests.simulation.mutations import MUTATIONS

        return next(m for m in MUTATIONS if m.name == name).patch()

    return patch


# ---- 2: Iceberg late commits ------------------------------------------------------------------
def _new_branch_unasserted() -> contextlib.AbstractContextManager[Any]:
    from airflow_provider_seatunnel_ckpt.connectors.lakehouse import iceberg_commit

    original = iceberg_commit.StartBranch._commit

    def without_requirement(self: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        updates, _ = original(self)
        return updates, ()  # as before: the branch is set whatever it points at now

    return mock.patch.object(iceberg_commit.StartBranch, "_commit", without_requirement)


def _library_retries_left_on() -> contextlib.AbstractContextManager[Any]:
    from airflow_provider_seatunnel_ckpt.connectors.lakehouse import iceberg_commit

    return mock.patch.object(iceberg_commit, "without_library_retries", lambda table: table)


# ---- 3, 4: the Jdbc sink -------------------------------------------------------------------------
def _changes_applied_in_prepared_transaction() -> contextlib.AbstractContextManager[Any]:
    """As before the stage: a subtask applies its rows by key to the table inside its own
    epoch transaction (prepared at the barrier, so it holds their row locks until the
    driver commits), and waits for a lock as long as it takes."""
    from airflow_provider_seatunnel_ckpt.connectors.jdbc import client, sink, staging

    original = sink.JdbcSinkWriter._write_changes

    def write_then_apply(self: Any, batches: list[Any]) -> None:
        original(self, batches)
        if self.sink.exactly_once and self._stage is not None:
            client.execute(self._connection, "SET LOCAL lock_timeout = 0")
            xid = client.query(self._connection, "SELECT txid_current()")[0][0]
            staging.apply(
                self._connection,
                sink.qualified(self.sink.schema, self._stage),
                self.sink.table,
                self.sink.primary_keys,
                [int(xid)],
            )

    return mock.patch.object(sink.JdbcSinkWriter, "_write_changes", write_then_apply)


def _one_schema_per_flush() -> contextlib.AbstractContextManager[Any]:
    """As before: a sink fed by a change source and a plain one gets the plain rows without
    kinds, and a flush is written the way its first batch is (appended, or staged by
    key), all of it as one table of the first batch's schema."""
    import pyarrow as pa

    from airflow_provider_seatunnel_ckpt.connectors import api
    from airflow_provider_seatunnel_ckpt.connectors.jdbc import sink
    from airflow_provider_seatunnel_ckpt.engine import routing

    router_init = routing.Router.__init__

    def plain_rows_without_kinds(self: Any, *args: Any, **kwargs: Any) -> None:
        router_init(self, *args, **kwargs)
        self._all_kinds = set()

    flush = sink.JdbcSinkWriter._flush

    def flush_as_the_first_batch(self: Any) -> None:
        if self._buffer:
            pa.Table.from_batches(self._buffer)  # the flush's one table: every batch of the first's schema
            first = self._buffer[0].schema
            with mock.patch.object(sink, "has_kinds", lambda schema: api.has_kinds(first)):
                return flush(self)
        return flush(self)

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(routing.Router, "__init__", plain_rows_without_kinds))
    stack.enter_context(mock.patch.object(sink.JdbcSinkWriter, "_flush", flush_as_the_first_batch))
    stack.enter_context(
        mock.patch.object(sink, "_same_schema_runs", lambda batches: iter([pa.Table.from_batches(batches)]))
    )
    return stack


# ---- found by the suite: two Kafka sinks of one job ----------------------------------------------
def _kafka_ids_without_sink_place() -> contextlib.AbstractContextManager[Any]:
    from airflow_provider_seatunnel_ckpt.connectors.kafka import sink

    original = sink.id_prefix
    return mock.patch.object(sink, "id_prefix", lambda prefix, job_id, instance=None: original(prefix, job_id))


MUTATIONS: tuple[ContractMutation, ...] = (
    ContractMutation(
        "rerun-without-checkpoint-makes-a-new-plan",
        "47.1 (plan of the first attempt)",
        _simulation("rerun-without-checkpoint-makes-a-new-plan"),
        "test_source_contract and restart_before_first_checkpoint",
    ),
    ContractMutation(
        "iceberg-new-branch-unasserted",
        "47.2a (late first commit to a branch)",
        _new_branch_unasserted,
        "late_commit_of_fenced_driver and Iceberg-branch",
    ),
    ContractMutation(
        "iceberg-library-retries",
        "47.2b (pyiceberg's own retries)",
        _library_retries_left_on,
        "late_commit_of_fenced_driver and Iceberg",
    ),
    ContractMutation(
        "jdbc-changes-applied-in-prepared-transaction",
        "47.3 (two writers, one key, one epoch)",
        _changes_applied_in_prepared_transaction,
        "two_writers_one_target and Jdbc",
    ),
    ContractMutation(
        "jdbc-one-schema-per-flush",
        "47.4 (change and plain rows into one sink)",
        _one_schema_per_flush,
        "mixed_schemas_and_row_kinds and Jdbc",
    ),
    ContractMutation(
        "sink-output-matched-by-place",
        "47.5 (sink identity)",
        _simulation("sink-output-matched-by-place"),
        "sink_layout_changed",
    ),
    ContractMutation(
        "delete-on-finish-keeps-the-job",
        "47.6 (storage outliving its job)",
        _simulation("delete-on-finish-keeps-the-job"),
        "nothing_left_after_delete_on_finish",
    ),
    ContractMutation(
        "kafka-sinks-share-transactional-ids",
        "found by the suite (two Kafka sinks of one job)",
        _kafka_ids_without_sink_place,
        "sink_layout_changed and Kafka",
    ),
)


def by_name(name: str) -> ContractMutation:
    for mutation in MUTATIONS:
        if mutation.name == name:
            return mutation
    raise KeyError(f"no contract mutation {name!r}; known: {', '.join(m.name for m in MUTATIONS)}")


@contextlib.contextmanager
def in_place_from_environment() -> Iterator[None]:
    """The mutation ``$CONTRACT_MUTATION`` names, for as long as the block runs (none: nothing)."""
    name = os.environ.get(MUTATION_ENV)
    if not name:
        yield
        return
    with by_name(name).patch():
        yield


def _failed_cases(output: str) -> list[str]:
    return sorted(set(re.findall(r"^FAILED tests/contract/connectors/\S+::(\S+)", output, re.MULTILINE)))


def _caught_by(failed: list[str], shown: int = 4) -> str:
    if not failed:
        return "**NOT CAUGHT**"
    more = f" and {len(failed) - shown} more" if len(failed) > shown else ""
    return f"{len(failed)}: " + ", ".join(failed[:shown]) + more


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--all-cases", action="store_true", help="run the whole suite under each mutation")
    parser.add_argument("--workers", type=int, default=0, help="pytest-xdist workers for each run (default: none)")
    args = parser.parse_args(argv)
    chosen = [by_name(n) for n in args.names] if args.names else list(MUTATIONS)
    rows = ["| mutation | defect | cases run | caught by |", "| --- | --- | --- | --- |"]
    missed = 0
    for mutation in chosen:
        selection = [] if args.all_cases else ["-k", mutation.cases]
        if args.workers:
            selection += ["-n", str(args.workers)]
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/contract/connectors", "-q", "-p", "no:cacheprovider", *selection],
            cwd=REPO,
            env={**os.environ, MUTATION_ENV: mutation.name},
            capture_output=True,
            text=True,
        )
        failed = _failed_cases(run.stdout)
        missed += not failed
        rows.append(
            f"| `{mutation.name}` | {mutation.defect} | {'all' if args.all_cases else mutation.cases} | "
            f"{_caught_by(failed)} |"
        )
        print(rows[-1], flush=True)
    print("\n".join(rows))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
