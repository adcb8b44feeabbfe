"""What the Jdbc sink's driver has committed survives a crash of the database server, even
on a server that acknowledges commits before they are durable (``synchronous_commit =
off``, a common tuning: "Asynchronous Commit" in PostgreSQL's manual).

``COMMIT PREPARED`` is always flushed before it returns, whatever the setting, but the
driver's other transactions are plain ones: the apply of an epoch's staged rows, and a
restore's delete of newer epochs' rows. Acknowledged but lost in a crash, an apply leaves
the epoch committed for the engine with its rows still in the stage: never applied, and
dropped with the stage when the job finishes. The chaos suite lost one such epoch (15,000
ids) under a server crash-restart.

A server of its own: the test sets the WAL writer's delay to its maximum, so an
asynchronous commit stays in memory until the crash (``pg_ctl restart -m immediate``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from tests.servers.postgres import PostgresServer

from .conftest import Database

pytestmark = pytest.mark.timeout(120)

ROWS = 2_000


@pytest.fixture
def async_commit_db() -> Iterator[Database]:
    with PostgresServer() as server:
        name = server.create_database()
        server.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        server.execute("ALTER SYSTEM SET wal_writer_delay = '10s'")
        server.execute("SELECT pg_reload_conf()")
        yield Database(server, name)


def _batch(start: int, stop: int) -> pa.RecordBatch:
    ids = list(range(start, stop))
    return pa.record_batch({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def test_an_applied_epoch_survives_a_server_crash_right_after_the_commit(async_commit_db: Database) -> None:
    db = async_commit_db
    db.sql("CREATE TABLE out (id bigint PRIMARY KEY, name text)")
    sink = load_sink({"plugin_name": "Jdbc", **db.options(table="out", primary_keys=["id"])})
    sink.preflight()
    sink.run_attempt = 0
    infos = []
    for subtask, (start, stop) in enumerate([(0, ROWS // 2), (ROWS // 2, ROWS)]):
        writer = sink.create_writer("durable", subtask, 0)
        writer.open(0)
        writer.write(_batch(start, stop))
        infos.append(writer.prepare_commit(1))
    sink.create_committer("durable").commit(infos)
    assert db.ids("out") == (ROWS, ROWS, 0, ROWS - 1)

    db.server.restart_immediate()

    assert db.ids("out") == (ROWS, ROWS, 0, ROWS - 1), "the applied epoch was lost in the crash"


def test_a_restores_delete_of_newer_epochs_survives_a_server_crash(async_commit_db: Database) -> None:
    """Restoring checkpoint 1 deletes the rows epoch 2 committed (they are written again by
    the replay). Back after a crash, they would be there twice once the replay is done."""
    db = async_commit_db
    db.sql("CREATE TABLE out (id bigint, name text)")  # no key: rows are appended (COPY)
    sink = load_sink({"plugin_name": "Jdbc", **db.options(table="out")})
    sink.preflight()
    sink.run_attempt = 0
    committer = sink.create_committer("durable")
    for checkpoint_id, (start, stop) in enumerate([(0, ROWS // 2), (ROWS // 2, ROWS)], start=1):
        writer = sink.create_writer("durable", 0, 0)
        writer.open(checkpoint_id - 1)
        writer.write(_batch(start, stop))
        committer.commit([writer.prepare_commit(checkpoint_id)])
    assert db.ids("out") == (ROWS, ROWS, 0, ROWS - 1)

    committer.rollback(1)
    assert db.ids("out") == (ROWS // 2, ROWS // 2, 0, ROWS // 2 - 1)
    db.server.restart_immediate()

    assert db.ids("out") == (ROWS // 2, ROWS // 2, 0, ROWS // 2 - 1), "epoch 2's rows came back after the crash"


@pytest.mark.parametrize("keys", [["id"], []], ids=["upsert", "at-least-once"])
def test_without_two_phase_commit_a_flushed_batch_survives_a_server_crash(
    async_commit_db: Database, keys: list[str]
) -> None:
    """``is_exactly_once: false``: each flush commits, and the checkpoint after it counts
    its rows written; the replay never writes them again."""
    db = async_commit_db
    db.sql(f"CREATE TABLE out (id bigint {'PRIMARY KEY' if keys else ''}, name text)")
    options = db.options(table="out", is_exactly_once=False, **({"primary_keys": keys} if keys else {}))
    sink = load_sink({"plugin_name": "Jdbc", **options})
    sink.preflight()
    writer = sink.create_writer("durable", 0, 0)
    writer.open(0)
    writer.write(_batch(0, ROWS))
    assert writer.prepare_commit(1) is None  # flushed and committed: nothing for the driver

    db.server.restart_immediate()

    assert db.ids("out") == (ROWS, ROWS, 0, ROWS - 1), "a committed flush was lost in the crash"
