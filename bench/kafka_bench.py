"""The Kafka source's read rate against librdkafka's mock cluster, and its ratio to the limit.

* ``kafka_source_rows_per_s``: rows/s of ``Kafka`` (bounded: earliest to the end offsets at
  start, JSON records ``{"id": n, "s": n % 100}`` decoded into Arrow) -> ``File`` parquet
  sink (exactly-once; 12 bytes a row, so the read dominates), ``local[2]``, parallelism 2,
  a checkpoint every second, one SparkSession. The whole run is timed (split planning, the
  Spark job, the final checkpoint); the rows written are counted.
* ``kafka_source_ratio_vs_bare_consumer``: that / a bare confluent-kafka consumer loop in
  this process (one consumer per partition, polled in turn without waiting: the fastest
  single-process loop we found; one consumer for all partitions is 4x slower) doing the
  same reading and decoding (``consume`` of up to 65,536 records, Arrow's JSON reader
  over the joined values), nothing else.

The broker is librdkafka's mock cluster in its own process on loopback (no Kafka broker
installs here): it serves the Kafka protocol over TCP, so both sides pay real fetches,
but its speed is not a real broker's. ABBA repetitions; every run counts its rows.

``python bench/kafka_bench.py [--quick] [--out] [--repeat N] [--rows N]``
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow.parquet as pq

from bench.common import emit, machine_info, summary
from bench.engine_runs import (
    INTERVAL_MS,
    MASTER,
    PARALLELISM,
    bench_arguments,
    described,
    job_env,
    paired,
    ratio_figures,
    run_abba,
    run_engine,
    spark_session,
)

NAME = "kafka"
GOAL = 0.8
PARTITIONS = 6
TOPIC = "bench-events"
SCHEMA = {"fields": {"id": "bigint", "s": "int"}}
POLL = 65_536


def ours(spark: Any, cluster: Any, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    job = {
        "env": job_env(f"bench-{tag}"),
        "source": [
            {
                "plugin_name": "Kafka",
                "bootstrap.servers": cluster.bootstrap_servers,
                "topic": TOPIC,
                "consumer.group": f"bench-{tag}",
                "start_mode": "earliest",
                "stop_mode": "end_offsets_at_start",
                "format": "json",
                "schema": SCHEMA,
                "commit_on_checkpoint": False,
            }
        ],
        "sink": [{"plugin_name": "File", "path": f"file://{workdir}/{tag}/", "format": "parquet"}],
    }
    result = run_engine(spark, job, workdir, tag)
    written = sum(pq.read_metadata(path).num_rows for path in (workdir / tag).glob("*.parquet"))
    if written != rows:
        raise RuntimeError(f"{tag}: {written:,} rows written, expected {rows:,}")
    shutil.rmtree(workdir / tag, ignore_errors=True)
    return result


def bare(spark: Any, cluster: Any, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    """The limit: one consumer, every partition, consume and decode, nothing else."""
    import pyarrow as pa
    import pyarrow.json as pajson
    from confluent_kafka import Consumer, TopicPartition

    schema = pa.schema([("id", pa.int64()), ("s", pa.int32())])
    started = time.perf_counter()
    consumers = []
    for partition in range(PARTITIONS):  # one consumer per partition, as fast as one process reads
        consumer = Consumer(cluster.config(**{"group.id": f"bench-{tag}", "enable.auto.commit": False}))
        consumer.assign([TopicPartition(TOPIC, partition, 0)])
        consumers.append(consumer)
    count = 0
    while count < rows:  # the topic holds exactly ``rows`` records: count them in, nothing per record
        for consumer in consumers:
            messages = consumer.consume(POLL, timeout=0)
            if not messages:
                continue
            buffer = b"\n".join([m.value() for m in messages])
            table = pajson.read_json(
                io.BytesIO(buffer),
                read_options=pajson.ReadOptions(block_size=len(buffer) + 1),
                parse_options=pajson.ParseOptions(explicit_schema=schema),
            )
            count += table.num_rows
    for consumer in consumers:
        consumer.close()
    seconds = time.perf_counter() - started
    if count != rows:
        raise RuntimeError(f"bare consumer read {count:,} records, expected {rows:,}")
    return {"seconds": round(seconds, 4)}


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(
        __doc__, NAME, "records in the topic (default 1,000,000: the mock keeps ~5 MB a partition)"
    )
    args = parser.parse_args(argv)
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    repeat = args.repeat or (1 if args.quick else 4)

    from tests.servers.kafka import KafkaMockCluster

    machine = machine_info(extra_libraries=("confluent_kafka",))
    workdir = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    try:
        with KafkaMockCluster(brokers=3) as cluster:
            cluster.create_topic(TOPIC, PARTITIONS)
            cluster.produce_json(TOPIC, ({"id": i, "s": i % 100} for i in range(rows)), PARTITIONS)
            if cluster.low_watermarks(TOPIC, PARTITIONS) != [0] * PARTITIONS:
                raise RuntimeError("the mock dropped records (it keeps ~5 MB a partition): use fewer --rows")
            spark = spark_session("bench-kafka")
            try:
                variants = {
                    "ours": partial(ours, spark, cluster, workdir),
                    "bare": partial(bare, spark, cluster, workdir),
                }
                run_abba(NAME, variants, rows, 1, "warm")
                runs = run_abba(NAME, variants, rows, repeat, "run")
            finally:
                spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    ratios, figures = ratio_figures({"kafka_source_ratio_vs_bare_consumer": paired(runs, "ours", "bare")})
    figures["kafka_source_rows_per_s"] = summary(r["rows_per_s"] for r in runs["ours"])["median"]
    labels = {
        "ours": "Kafka source -> File parquet, exactly-once, checkpoints every 1 s, p=2",
        "bare": "bare confluent-kafka consumer loop + Arrow JSON decoding, one process",
    }
    table_rows = []
    for variant, entries in runs.items():
        speeds = summary(r["rows_per_s"] for r in entries)
        table_rows.append([labels[variant], speeds["median"], f"{speeds['min']:,.0f} - {speeds['max']:,.0f}"])
    result = {
        "benchmark": NAME,
        "description": (
            f"{rows:,} JSON records on {PARTITIONS} partitions of librdkafka's mock cluster, {MASTER}, "
            f"parallelism {PARALLELISM}, checkpoint every {INTERVAL_MS} ms, {repeat} ABBA repetitions."
        ),
        "machine": machine,
        "settings": {
            "quick": args.quick,
            "rows": rows,
            "repeat": repeat,
            "partitions": PARTITIONS,
            "checkpoint_interval_ms": INTERVAL_MS,
        },
        "summary": figures,
        "ratios": ratios,
        "table": {"columns": ["variant", "rows/s (median)", "range"], "rows": table_rows},
        "targets": [
            {"figure": key, "target": f">= {GOAL}", "value": figures[key], "met": figures[key] >= GOAL}
            for key in ratios
        ],
        "notes": [
            "The broker is librdkafka's in-process mock (in its own process here), not a Kafka server: "
            "absolute rates say little about a real cluster; the ratio compares like with like."
        ],
        "runs": described(runs),
    }
    emit(result, NAME, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
