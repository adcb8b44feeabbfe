"""Chaos, exactly-once, for change rows: a SeaTunnel HOCON job reads Canal change records
from Kafka (``format = canal_json``: inserts, updates, deletes and inserts again of the
same keys) and applies them to a PostgreSQL table by ``primary_keys`` through prepared
transactions, under executor-worker kills, a PostgreSQL crash-restart and driver SIGKILLs
with reruns (``--restore latest``).

Every key's final row is known from the records, so the table is compared with it key by
key: a lost epoch leaves a key at an older value (or present when it was deleted), an
epoch applied out of order leaves another one, and a leftover prepared transaction fails."""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest

from tests.integration.jdbc.conftest import Database, prepared_gids, variables_file
from tests.support.chaos import ChaosRecord, chaos_runs
from tests.support.postgres import restart_postgres
from tests.support.workspace import Workspace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

KEYS = 16_000
PARTITIONS = 4
ROWS_PER_RECORD = 25
TOPIC = "chaos-canal"
JOB = """
env {
  parallelism = 2
  job.mode = "BATCH"
}
source {
  Kafka {
    bootstrap.servers = "%(servers)s"
    topic = "%(topic)s"
    start_mode = earliest
    format = canal_json
    batch_size = 20
    schema = { fields { id = "int", name = "string", weight = "string" } }
  }
}
sink {
  Jdbc {
    url = "${PG_URL}"
    user = "${PG_USER}"
    password = "${PG_PASSWORD}"
    table = "public.products"
    primary_keys = ["id"]
    batch_size = 100
  }
}
"""


@pytest.fixture
def db(postgres_server: Any, pg_database: str) -> Database:
    return Database(postgres_server, pg_database)


def _row(key: int, weight: str) -> dict[str, str]:
    return {"id": str(key), "name": f"n{key}", "weight": weight}  # Canal writes every value as text


def _records(keys: list[int]) -> list[bytes]:
    """One partition's Canal records: inserts, updates of every third key, deletes of every
    fifth, inserts again of every tenth, in that order (a key's changes stay in its partition)."""

    def chunks(selected: list[int]) -> list[list[int]]:
        return [selected[i : i + ROWS_PER_RECORD] for i in range(0, len(selected), ROWS_PER_RECORD)]

    records = [{"type": "INSERT", "data": [_row(k, "0") for k in chunk]} for chunk in chunks(keys)]
    records += [
        {"type": "UPDATE", "data": [_row(k, "1") for k in chunk], "old": [{"weight": "0"} for _ in chunk]}
        for chunk in chunks([k for k in keys if k % 3 == 0])
    ]
    records += [
        {"type": "DELETE", "data": [_row(k, "1" if k % 3 == 0 else "0") for k in chunk]}
        for chunk in chunks([k for k in keys if k % 5 == 0])
    ]
    records += [
        {"type": "INSERT", "data": [_row(k, "2") for k in chunk]} for chunk in chunks([k for k in keys if k % 10 == 0])
    ]
    return [json.dumps(record).encode() for record in records]


def _expected() -> dict[int, tuple[str, str]]:
    final = {}
    for key in range(KEYS):
        if key % 10 == 0:
            final[key] = (f"n{key}", "2")
        elif key % 5 != 0:
            final[key] = (f"n{key}", "1" if key % 3 == 0 else "0")
    return final


def test_change_rows_from_kafka_reach_postgres_exactly_once_under_kills(
    workspace: Workspace, db: Database, kafka_cluster: Any, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    rng, record = chaos
    started = time.monotonic()
    kafka_cluster.create_topic(TOPIC, PARTITIONS)
    for partition in range(PARTITIONS):
        values = _records([k for k in range(KEYS) if k % PARTITIONS == partition])
        kafka_cluster.produce(TOPIC, values, partition_of=lambda _, p=partition: p)
    assert kafka_cluster.low_watermarks(TOPIC, PARTITIONS) == [0] * PARTITIONS
    db.sql("CREATE TABLE products (id int PRIMARY KEY, name text, weight text)")
    # a slow table (about 1 ms a row changed: pg_sleep sleeps at least that), so the kills land while the changes are applied
    db.sql(
        "CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_sleep(0.00025); RETURN COALESCE(NEW, OLD); END $$"
    )
    db.sql("CREATE TRIGGER slow BEFORE INSERT OR UPDATE OR DELETE ON products FOR EACH ROW EXECUTE FUNCTION slow_row()")
    job = workspace.root / "canal_to_pg.conf"
    job.write_text(JOB % {"servers": kafka_cluster.bootstrap_servers, "topic": TOPIC})
    config = workspace.write_config(interval=500, tolerable_failure=10)
    chaos_runs(
        workspace,
        record,
        rng,
        job,
        config,
        "chaos-canal",
        "--variables",
        str(variables_file(db, workspace.root)),
        disrupt=lambda driver: restart_postgres(db, driver, record),
    )
    record.elapsed_s = time.monotonic() - started

    table = {row[0]: (row[1], row[2]) for row in db.sql("SELECT id, name, weight FROM products")}
    expected = _expected()
    wrong = sorted(k for k in expected.keys() | table.keys() if table.get(k) != expected.get(k))
    record.rows = len(table)
    record.lost = sum(1 for k in wrong if k in expected)
    record.duplicated = sum(1 for k in wrong if k not in expected)  # deleted keys that came back
    assert not wrong, (
        f"seed {record.seed}: {len(wrong)} keys wrong, e.g. "
        f"{[(k, table.get(k), expected.get(k)) for k in wrong[:5]]}; kill points: {record.kill_points}"
    )
    assert prepared_gids(db) == [], "prepared transactions left behind"
    assert len(record.kill_points) >= 3, record.kill_points
