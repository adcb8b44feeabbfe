"""SeaTunnel's own Kafka change-format and avro jobs (tests/fixtures/seatunnel/connector-kafka-e2e,
unchanged but for the servers' addresses and credentials), on the session's real Kafka
broker (Apache Kafka 4.1, KRaft, ``kafka_broker``) and PostgreSQL server, with the records SeaTunnel's KafkaFormatIT produces and the
results it expects: every record value the Kafka sink writes, in order, and every row of
the PostgreSQL table the Jdbc sink applies the changes to.

The jobs run in-process (tests/seatunnel_jobs.run_in_process: the connectors as their
subtasks would run them, one epoch, then the commit); the change-row path through Spark
and restores is tested in tests/integration/engine and tests/chaos."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from tests.integration.jdbc.conftest import Database, db, on_our_server  # noqa: F401 - fixture
from tests.seatunnel_jobs import run_in_process
from tests.servers.kafka_records import consume

FILES = Path(__file__).parents[2] / "fixtures" / "seatunnel" / "connector-kafka-e2e"

pytestmark = pytest.mark.timeout(180)


def on_our_servers(name: str, kafka: Any, db: Database | None, directory: Path) -> Path:
    """The job file with SeaTunnel's container addresses replaced by ours (nothing else)."""
    text = (FILES / name).read_text()
    text = text.replace("kafka_e2e:9092", kafka.bootstrap_servers).replace("kafkaCluster:9092", kafka.bootstrap_servers)
    if db is not None:
        text = on_our_server(text, db)
    path = directory / name
    path.write_text(text)
    return path


def load_topic(kafka: Any, topic: str, data_file: str) -> None:
    """A topic of one partition holding the data file's records, once per session."""
    try:
        kafka.create_topic(topic, 1)
    except KafkaException as err:
        if err.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return  # created by an earlier test of the session, with the records
        raise
    lines = [line for line in (FILES / data_file).read_text().splitlines() if line.strip()]
    kafka.produce(topic, [line.encode() for line in lines])


def values_of(kafka: Any, topic: str) -> list[str]:
    return [message.value().decode() for message in consume(kafka, topic, 1)]


def table(db: Database, name: str) -> list[list[Any]]:
    return [list(row) for row in db.sql(f"SELECT id, name, description, weight FROM {name} ORDER BY id")]


def sink_table(db: Database) -> None:
    """SeaTunnel's KafkaFormatIT creates this table before its jobs run."""
    db.sql(
        "CREATE TABLE sink (id INT NOT NULL PRIMARY KEY, name varchar(255), description varchar(255), "
        "weight varchar(255))"
    )


def _canal(row: tuple[Any, ...], kind: str) -> str:
    id_, name, description, weight = row
    return '{"data":{"id":%d,"name":"%s","description":"%s","weight":"%s"},"type":"%s"}' % (
        id_,
        name,
        description,
        weight,
        kind,
    )


# KafkaFormatIT's expected rows (apache/seatunnel at the fixtures' commit)
PRODUCTS = {
    1101: ("scooter", "Small 2-wheel scooter"),
    1102: ("car battery", "12V car battery"),
    1103: ("12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3"),
    1104: ("hammer", "12oz carpenter's hammer"),
    1105: ("hammer", "14oz carpenter's hammer"),
    1106: ("hammer", "16oz carpenter's hammer"),
    1107: ("rocks", "box of assorted rocks"),
    1108: ("jacket", "water resistent black wind breaker"),
    1109: ("spare tire", "24 inch spare tire"),
}


def _product(id_: int, weight: str, offset: int = 0) -> tuple[Any, ...]:
    return (id_ - offset, *PRODUCTS[id_], weight)


CANAL_INSERTS = [
    (1101, "3.14"),
    (1102, "8.1"),
    (1103, "0.8"),
    (1104, "0.75"),
    (1105, "0.875"),
    (1106, "1.0"),
    (1107, "5.3"),
    (1108, "0.1"),
    (1109, "22.2"),
]
CANAL_CHANGES = [
    (1101, "3.14", "DELETE"),
    (1101, "4.56", "INSERT"),
    (1107, "5.3", "DELETE"),
    (1107, "7.88", "INSERT"),
    (1109, "22.2", "DELETE"),
]
CANAL_TABLE = [
    [1101, "scooter", "Small 2-wheel scooter", "4.56"],
    [1102, "car battery", "12V car battery", "8.1"],
    [1103, "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", "0.8"],
    [1104, "hammer", "12oz carpenter's hammer", "0.75"],
    [1105, "hammer", "14oz carpenter's hammer", "0.875"],
    [1106, "hammer", "16oz carpenter's hammer", "1.0"],
    [1107, "rocks", "box of assorted rocks", "7.88"],
    [1108, "jacket", "water resistent black wind breaker", "0.1"],
]


@pytest.mark.parametrize(
    "fmt, offset, files",
    [
        (
            "canal",
            0,
            (
                "canal_data.txt",
                "test-cdc_mds",
                "kafka_source_canal_to_kafka.conf",
                "test-canal-sink",
                "kafka_source_canal_cdc_to_pgsql.conf",
            ),
        ),
        (
            "maxwell",
            1000,
            (
                "maxwell_data.txt",
                "maxwell-test-cdc_mds",
                "kafkasource_maxwell_to_kafka.conf",
                "test-maxwell-sink",
                "kafkasource_maxwell_cdc_to_pgsql.conf",
            ),
        ),
    ],
)
def test_canal_and_maxwell_changes_reach_kafka_as_seatunnel_writes_them_and_postgres_by_key(
    kafka_broker: Any, db: Database, tmp_path: Path, fmt: str, offset: int, files: tuple[str, ...]
) -> None:
    data, source_topic, to_kafka, sink_topic, to_pg = files
    load_topic(kafka_broker, source_topic, data)
    kafka_broker.create_topic(sink_topic, 1)

    # 9 inserts, 2 updates (each an UPDATE_BEFORE and an UPDATE_AFTER), 1 delete; DDL records give nothing
    assert run_in_process(on_our_servers(to_kafka, kafka_broker, None, tmp_path)) == 14
    expected = [_canal(_product(i, w, offset), "INSERT") for i, w in CANAL_INSERTS]
    expected += [_canal(_product(i, w, offset), kind) for i, w, kind in CANAL_CHANGES]
    assert values_of(kafka_broker, sink_topic) == expected

    sink_table(db)
    run_in_process(on_our_servers(to_pg, kafka_broker, db, tmp_path))
    assert table(db, "sink") == [[row[0] - offset, *row[1:]] for row in CANAL_TABLE]
    assert not db.sql(f"SELECT gid FROM pg_prepared_xacts WHERE database = '{db.name}'")


OGG_WEIGHTS = {
    101: "3.140000104904175",
    102: "8.100000381469727",
    103: "0.800000011920929",
    104: "0.75",
    105: "0.875",
    106: "1",
    107: "5.300000190734863",
    108: "0.10000000149011612",
    109: "22.200000762939453",
}


def ogg_table() -> list[list[Any]]:
    """The PostgreSQL table after ogg_data.txt's changes (KafkaFormatIT.checkOggFormat)."""
    rows = [[i, *PRODUCTS[i + 1000], w] for i, w in OGG_WEIGHTS.items()]
    rows[5][2:] = ["18oz carpenter hammer", "1"]  # 106 updated
    rows[6][3] = "5.099999904632568"  # 107 updated
    return rows + [[110, "jacket", "new water resistent white wind breaker", "0.5"]]  # 111 deleted


def test_ogg_changes_to_kafka_and_postgres(kafka_broker: Any, db: Database, tmp_path: Path) -> None:
    load_topic(kafka_broker, "test-ogg-source", "ogg_data.txt")
    kafka_broker.create_topic("test-ogg-sink", 1)
    assert run_in_process(on_our_servers("kafka_source_ogg_to_kafka.conf", kafka_broker, None, tmp_path)) == 20
    values = values_of(kafka_broker, "test-ogg-sink")
    # KafkaFormatIT's first 9 and last 4 values
    assert values[:9] == [_canal(_product(i + 1000, w, 1000), "INSERT") for i, w in OGG_WEIGHTS.items()]
    big = (111, "scooter", "Big 2-wheel scooter ")
    assert values[-4:] == [
        _canal((110, "jacket", "new water resistent white wind breaker", "0.5"), "INSERT"),
        _canal((*big, "5.179999828338623"), "DELETE"),
        _canal((*big, "5.170000076293945"), "INSERT"),
        _canal((*big, "5.170000076293945"), "DELETE"),
    ]

    sink_table(db)
    run_in_process(on_our_servers("kafka_source_ogg_to_pgsql.conf", kafka_broker, db, tmp_path))
    assert table(db, "sink") == ogg_table()


def test_debezium_records_with_their_schema_envelope_to_kafka_and_postgres(
    kafka_broker: Any, db: Database, tmp_path: Path
) -> None:
    load_topic(kafka_broker, "dbserver1.debezium.products", "debezium_data.txt")
    kafka_broker.create_topic("test-debezium-sink", 1)
    assert run_in_process(on_our_servers("kafkasource_debezium_to_kafka.conf", kafka_broker, None, tmp_path)) == 3
    values = values_of(kafka_broker, "test-debezium-sink")
    assert len(values) == 3 and all(
        v.startswith('{"before":null,"after":{"id":') and v.endswith('"op":"c"}') for v in values
    )

    run_in_process(on_our_servers("kafkasource_debezium_cdc_to_pgsql.conf", kafka_broker, db, tmp_path))
    rows = db.sql(
        "SELECT id, f_smallint, f_int_unsigned, f_bigint_unsigned::text, f_float, f_date::text, "
        "f_datetime::text, f_timestamp::text, f_bit1, f_bit64, f_time::text, f_tinyint, f_year FROM sink2 "
        "ORDER BY id"
    )
    # KafkaFormatIT's expected values (the bit(64) text Debezium sends reads as 0, as in SeaTunnel)
    assert [row[0] for row in rows] == [1, 2, 3]
    assert [row[-1] for row in rows] == [2022, 2013, 2021]
    assert rows[0][1:-1] == (
        12345,
        7654321,
        "987654321",
        pytest.approx(12.34),
        "2022-04-27",
        "2022-04-27 14:30:00",
        "2023-04-27 03:08:40",
        True,
        0,
        "14:30:00",
        -128,
    )


def test_kafka_connect_json_records_are_inserts(kafka_broker: Any, db: Database, tmp_path: Path) -> None:
    load_topic(kafka_broker, "jdbc_source_record", "compatible_data.txt")
    sink_table(db)
    assert run_in_process(on_our_servers("kafkasource_jdbc_record_to_pgsql.conf", kafka_broker, db, tmp_path)) == 3
    assert table(db, "sink") == [[15, "test", "test", "20"], [16, "test-001", "test", "30"], [18, "sdc", "sdc", "sdc"]]


def test_canal_changes_reach_postgres_under_spark(
    kafka_broker: Any, db: Database, tmp_path: Path, workspace: Any
) -> None:
    """The same file through ``seatunnel-ckpt run`` on local Spark: the change rows cross
    the engine (subtask, barriers, the driver's two-phase commit) with their kinds."""
    load_topic(kafka_broker, "test-cdc_mds", "canal_data.txt")
    sink_table(db)
    job = on_our_servers("kafka_source_canal_cdc_to_pgsql.conf", kafka_broker, db, tmp_path)
    result = workspace.run(job, workspace.write_config(interval=1000), "canal-to-pg")
    assert result.returncode == 0, result.explain()
    assert table(db, "sink") == CANAL_TABLE
    assert not db.sql(f"SELECT gid FROM pg_prepared_xacts WHERE database = '{db.name}'")


def test_a_table_list_of_two_topics_and_formats_into_one_table(kafka_broker: Any, db: Database, tmp_path: Path) -> None:
    """``table_list``: an ogg topic (by pattern) and a canal topic, each its own table and
    format, both applied to one PostgreSQL table (KafkaFormatIT.checkFormatCanalAndOgg)."""
    load_topic(kafka_broker, "test-ogg-source", "ogg_data.txt")
    load_topic(kafka_broker, "test-cdc_mds", "canal_data.txt")
    sink_table(db)
    run_in_process(on_our_servers("kafka_multi_source_to_pg.conf", kafka_broker, db, tmp_path))
    assert table(db, "sink") == ogg_table() + CANAL_TABLE
    assert not db.sql(f"SELECT gid FROM pg_prepared_xacts WHERE database = '{db.name}'")


# SeaTunnel's Avro schema of kafka_avro_to_assert.conf's row type, written out by hand from
# SeaTunnelRowTypeToAvroSchemaConverter (not from connectors/kafka/avro_format.py)
ASSERT_SCHEMA = {
    "type": "record",
    "name": "SeaTunnelRecord",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "c_map", "type": {"type": "map", "values": "int"}},
        {"name": "c_array", "type": {"type": "array", "items": "int"}},
        {"name": "c_string", "type": "string"},
        {"name": "c_boolean", "type": "boolean"},
        {"name": "c_tinyint", "type": "int"},
        {"name": "c_smallint", "type": "int"},
        {"name": "c_int", "type": "int"},
        {"name": "c_bigint", "type": "long"},
        {"name": "c_float", "type": "float"},
        {"name": "c_double", "type": "double"},
        {"name": "c_decimal", "type": {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 1}},
        {"name": "c_bytes", "type": "bytes"},
        {"name": "c_date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "c_timestamp", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    ],
}


def test_avro_records_as_seatunnel_writes_them_are_read_and_written(kafka_broker: Any, tmp_path: Path) -> None:
    import datetime as dt
    import decimal
    import io

    import fastavro

    from airflow_provider_seatunnel_ckpt.connectors.kafka.avro_format import AvroCodec
    from airflow_provider_seatunnel_ckpt.connectors.seatunnel_types import parse_schema

    # KafkaIT.testKafkaAvroToAssert's 100 rows (generateTestData), as SeaTunnel's serializer writes them
    parsed = fastavro.parse_schema(ASSERT_SCHEMA)
    values = []
    for i in range(100):
        out = io.BytesIO()
        fastavro.schemaless_writer(
            out,
            parsed,
            {
                "id": i,
                "c_map": {"key": 1},
                "c_array": [1],
                "c_string": "string",
                "c_boolean": False,
                "c_tinyint": 1,
                "c_smallint": 1,
                "c_int": 1,
                "c_bigint": 1,
                "c_float": 1.1,
                "c_double": 1.1,
                "c_decimal": decimal.Decimal("1.1"),
                "c_bytes": b"test",
                "c_date": dt.date(2024, 1, 1),
                "c_timestamp": dt.datetime(2024, 1, 1, 12, 0, 0, 123000),
            },
        )
        values.append(out.getvalue())
    kafka_broker.create_topic("test_avro_topic", 1)
    kafka_broker.produce("test_avro_topic", values)
    # its Assert rules: id in 0..99, c_string of 6 characters
    assert run_in_process(on_our_servers("kafka_avro_to_assert.conf", kafka_broker, None, tmp_path)) == 100

    kafka_broker.create_topic("test_avro_topic_fake_source", 1)
    assert run_in_process(on_our_servers("fake_source_to_kafka_avro_format.conf", kafka_broker, None, tmp_path)) == 90
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    job = load_job(FILES / "fake_source_to_kafka_avro_format.conf")
    codec = AvroCodec(parse_schema(job.sources[0]["schema"]))
    rows = [codec.decode_one(message.value()) for message in consume(kafka_broker, "test_avro_topic_fake_source", 1)]
    # KafkaIT.testFakeSourceToKafkaAvroFormat: 90 records, every field of its type
    assert len(rows) == 90 and all(row["c_string"] == "fake_source_avro" for row in rows)
    assert all(
        isinstance(row["c_timestamp"], dt.datetime)
        and isinstance(row["c_decimal"], decimal.Decimal)
        and isinstance(row["c_row"]["c_date"], dt.date)
        for row in rows
    )
