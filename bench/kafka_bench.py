"""The Kafka connectors on Apache Kafka's own broker, each against the bare client doing the same.

* **source** (``kafka_source_ratio_vs_bare_consumer``, goal >= 0.8): rows/s of ``Kafka``
  (bounded: earliest to the end offsets at start, JSON records ``{"id": n, "s": n % 100}``
  decoded into Arrow) -> ``File`` parquet sink (exactly-once; 12 bytes a row, so the read
  dominates), ``local[2]``, parallelism 2, a checkpoint every second / a bare
  confluent-kafka consumer loop in this process (one consumer per partition, polled in
  turn without waiting: the fastest single-process loop we found; one consumer for all
  partitions is 4x slower) doing the same reading and decoding (``consume`` of up to
  65,536 records, Arrow's JSON reader over the joined values), nothing else. The rows
  the File sink wrote are counted; the bare loop counts the rows it decoded.
* **sink** (``kafka_sink_ratio_vs_bare_transactional_producer``, goal >= 0.8): rows/s of
  ``Sequence`` (ids) -> ``Kafka`` sink, ``semantics: EXACTLY_ONCE`` (a transaction per
  epoch and subtask, committed by the driver after each 1-s checkpoint), JSON values
  ``{"id": n}``, ``local[2]``, parallelism 2 / one transactional confluent-kafka producer
  in this process writing the same batches (``bench.workloads.sequence_batches``, the
  values made by ``pyarrow.compute``) with the same producer settings (idempotent,
  ``acks=all``, ``linger.ms=5``), committing a transaction every second, nothing else.
  Each run writes a topic of its own; afterwards a ``read_committed`` consumer reads it
  whole and every id must be there exactly once.

The broker is one KRaft node of Apache Kafka 4.1 (tests/servers/kafka_broker.py, the
one the Kafka suites use) on loopback, started once; one SparkSession for every run
(its start is not timed). The whole run of ours is timed (split planning, the Spark job,
the final checkpoint and its commit). ABBA repetitions after one warm-up round; every
run counts its rows. ``--profile`` adds one unmeasured run of ours per connector with
py-spy on the executors' Python workers (bench/cpu_profile.py).

``python bench/kafka_bench.py [--quick] [--out] [--repeat N] [--rows N] [--sink-rows N]
[--only source|sink] [--profile]``
"""

from __future__ import annotations

import gc
import io
import os
import shutil
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow.parquet as pq

from bench.common import emit, machine_info, progress, summary
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
SOURCE_KEY = "kafka_source_ratio_vs_bare_consumer"
SINK_KEY = "kafka_sink_ratio_vs_bare_transactional_producer"
#: the sink's own producer settings (connectors/kafka/sink.py producer_config), for the bare producer
PRODUCER_SETTINGS = {"enable.idempotence": True, "acks": "all", "linger.ms": 5}
#: what the Kafka connectors' code is, for the profile's categories (bench/cpu_profile.py)
PROFILE_CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("sink: encoding (DuckDB to_json)", ("KafkaSink.encode", "sql/batch_query.py")),
    ("sink: producing (produce calls, delivery callbacks)", ("kafka/producing.py",)),
    ("sink: transactions (start, fence, prepare, commit)", ("kafka/exactly_once.py", "kafka/transactions.py")),
    ("source: decoding (Arrow JSON reader)", ("kafka/records.py",)),
    ("source: polling and positions", ("kafka/source.py",)),
    ("source: Sequence generating batches", ("connectors/sequence.py",)),
    ("File sink: parquet and files", ("connectors/file/", "storage/")),
    ("engine: checkpoints, control channel, read loop", ("engine/",)),
    ("PySpark: worker start, task (de)serialisation", ("pyspark/", "daemon.py", "worker_util.py")),
]


def _log(message: str) -> None:
    progress(NAME, message)


# ---- the source ----------------------------------------------------------------------------
def source_ours(spark: Any, broker: Any, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    job = {
        "env": job_env(f"bench-{tag}"),
        "source": [
            {
                "plugin_name": "Kafka",
                "bootstrap.servers": broker.bootstrap_servers,
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
    return {**result, "rows_counted": written}


def source_bare(spark: Any, broker: Any, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    """The limit: one consumer per partition, consume and decode, nothing else."""
    import pyarrow as pa
    import pyarrow.json as pajson
    from confluent_kafka import Consumer, TopicPartition

    schema = pa.schema([("id", pa.int64()), ("s", pa.int32())])
    started = time.perf_counter()
    consumers = []
    for partition in range(PARTITIONS):  # one consumer per partition, as fast as one process reads
        consumer = Consumer(broker.config(**{"group.id": f"bench-{tag}", "enable.auto.commit": False}))
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
    return {"seconds": round(seconds, 4), "rows_counted": count}


# ---- the sink ------------------------------------------------------------------------------
def _sink_topic(broker: Any, tag: str) -> str:
    name = f"bench-sink-{tag}-{uuid.uuid4().hex[:6]}"
    broker.create_topic(name, PARTITIONS)
    return name


def count_committed(broker: Any, topic: str, rows: int, tag: str) -> int:
    """What a ``read_committed`` consumer reads of ``topic``: every id of 0..rows-1 exactly once."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.json as pajson

    from tests.servers.kafka_records import consume

    messages = consume(broker, topic, PARTITIONS)
    buffer = b"\n".join([m.value() for m in messages]) + b"\n"
    del messages
    ids = (
        pajson.read_json(
            io.BytesIO(buffer),
            read_options=pajson.ReadOptions(block_size=len(buffer) + 1),
            parse_options=pajson.ParseOptions(explicit_schema=pa.schema([("id", pa.int64())])),
        )
        .column("id")
        .to_numpy()
    )
    if len(ids) != rows or not np.array_equal(np.sort(ids), np.arange(rows, dtype=np.int64)):
        raise RuntimeError(
            f"{tag}: {len(ids):,} committed records in {topic} ({len(np.unique(ids)):,} distinct ids), "
            f"expected ids 0..{rows - 1:,} once each"
        )
    return len(ids)


def _drop_topic(broker: Any, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.config(log_level=0))  # alive until the answer came
    admin.delete_topics([topic], operation_timeout=30)[topic].result(30)


def sink_ours(spark: Any, broker: Any, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    topic = _sink_topic(broker, tag)
    job = {
        "env": job_env(f"bench-{tag}"),
        "source": [{"plugin_name": "Sequence", "rows": rows, "payload_bytes": 0}],
        "sink": [
            {
                "plugin_name": "Kafka",
                "bootstrap.servers": broker.bootstrap_servers,
                "topic": topic,
                "format": "json",
                "semantics": "EXACTLY_ONCE",
            }
        ],
    }
    result = run_engine(spark, job, workdir, tag)
    counted = count_committed(broker, topic, rows, tag)
    _drop_topic(broker, topic)
    return {**result, "rows_counted": counted}


def sink_bare(spark: Any, broker: Any, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    """The limit: the same batches as JSON values, one transactional producer, a
    transaction a second (as ours commits one per 1-s epoch), nothing else."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from confluent_kafka import Producer

    from bench.workloads import sequence_batches

    topic = _sink_topic(broker, tag)
    gc.collect()
    started = time.perf_counter()
    producer = Producer(broker.config(**PRODUCER_SETTINGS, **{"transactional.id": f"bench-bare-{tag}"}))
    producer.init_transactions(30)
    producer.begin_transaction()
    epoch_ends = started + INTERVAL_MS / 1000
    transactions = 1
    for batch in sequence_batches(rows, payload_bytes=0):
        values = pc.binary_join_element_wise('{"id":', pc.cast(batch.column("id"), pa.string()), "}", "")
        for value in values.to_pylist():
            while True:
                try:
                    producer.produce(topic, value)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.05)
        producer.poll(0)
        if time.perf_counter() >= epoch_ends:  # commit_transaction flushes and fails on a lost record
            producer.commit_transaction(60)
            producer.begin_transaction()
            transactions += 1
            epoch_ends = time.perf_counter() + INTERVAL_MS / 1000
    producer.commit_transaction(60)
    seconds = time.perf_counter() - started
    counted = count_committed(broker, topic, rows, tag)
    _drop_topic(broker, topic)
    return {"seconds": round(seconds, 4), "transactions": transactions, "rows_counted": counted}


# ---- profile ---------------------------------------------------------------------------------
def profile(variant: Any, rows: int, tag: str) -> dict[str, Any]:
    """One more run of ours (not measured) with py-spy on the executors' Python workers."""
    from bench.cpu_profile import breakdown, daemon_of, record

    daemon = daemon_of(os.getpid())
    if daemon is None:
        return {"error": "no PySpark daemon found below this process"}
    _log(f"{tag}: profiled run (py-spy on the Python workers; not a measured run)")
    with record(daemon, native=True) as recorded:
        run = variant(rows, tag)
    if "raw" not in recorded:
        return {"error": recorded.get("error", "py-spy wrote nothing"), "run": run}
    shares = breakdown(recorded["raw"], PROFILE_CATEGORIES)
    gc_samples = sum(n for line in recorded["raw"].splitlines() for n in _gc_count(line))
    return {
        "how": "py-spy record --subprocesses --native --rate 100 of the PySpark daemon and its "
        "forked workers for one extra run of ours (native frames: the garbage collector shows); each sample counted for the first category (in order) that a "
        "frame of its stack matches (bench/kafka_bench.py PROFILE_CATEGORIES)",
        "samples": shares["samples"],
        "percent": shares["percent"],
        "gc_percent": round(100 * gc_samples / shares["samples"], 1) if shares["samples"] else 0.0,
        "top_leaf_frames": shares["top_leaf_frames"],
        "run": run,
    }


def profile_notes(profiles: dict[str, Any]) -> list[str]:
    """One line per profiled connector: where the workers' CPU went."""
    notes = []
    for mode, found in profiles.items():
        if "percent" not in found:
            notes.append(f"Profile of the {mode} run: {found.get('error')}")
            continue
        shares = sorted(((v, k) for k, v in found["percent"].items() if v >= 5), reverse=True)
        notes.append(
            f"Profile of one more {mode} run of ours (py-spy --native on the executors' Python workers, "
            f"{found['samples']:,} samples): "
            + "; ".join(f"{k} {v:.0f} %" for v, k in shares)
            + f"; the garbage collector {found['gc_percent']:.1f} % of all samples (it was 24 % in the sink and "
            "34 % in the source before the fixes of 2026-12-03: a delivery callback object per record, and "
            "collections every 700 of a poll's Message objects)."
        )
    return notes


def _gc_count(line: str) -> list[int]:
    """The sample count of a py-spy raw line whose stack is in the garbage collector."""
    stack, _, count = line.rpartition(" ")
    return [int(count)] if count.isdigit() and "gc_collect" in stack else []


# ---- the benchmark ---------------------------------------------------------------------------
LABELS = {
    ("source", "ours"): "Kafka source -> File parquet, exactly-once, checkpoints every 1 s, p=2",
    ("source", "bare"): "bare confluent-kafka consumer loop + Arrow JSON decoding, one process",
    ("sink", "ours"): "Sequence -> Kafka sink EXACTLY_ONCE (a transaction per epoch and subtask), 1 s, p=2",
    ("sink", "bare"): "bare transactional confluent-kafka producer, a transaction a second, one process",
}


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, NAME, "records in the source's topic (default 2,000,000)")
    parser.add_argument("--sink-rows", type=int, help="rows each sink run writes (default 4,000,000)")
    parser.add_argument("--only", choices=("source", "sink"), help="one connector only")
    parser.add_argument("--profile", action="store_true", help="one more profiled run of ours per connector")
    args = parser.parse_args(argv)
    rows = args.rows or (100_000 if args.quick else 2_000_000)
    sink_rows = args.sink_rows or (100_000 if args.quick else 4_000_000)
    repeat = args.repeat or (1 if args.quick else 4)
    modes = [args.only] if args.only else ["source", "sink"]

    from tests.servers.kafka_broker import KAFKA_VERSION, KafkaBroker

    machine = machine_info(extra_libraries=("confluent_kafka",))
    workdir = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    profiles: dict[str, Any] = {}
    try:
        with KafkaBroker(nodes=1) as broker:
            _log(f"Kafka {KAFKA_VERSION} broker at {broker.bootstrap_servers} ({broker.start_seconds:.1f} s to start)")
            if "source" in modes:
                broker.create_topic(TOPIC, PARTITIONS)
                started = time.perf_counter()
                broker.produce_json(TOPIC, ({"id": i, "s": i % 100} for i in range(rows)), PARTITIONS)
                _log(f"{rows:,} records produced into {TOPIC} in {time.perf_counter() - started:.1f} s")
            spark = spark_session("bench-kafka")
            try:
                functions = {"source": (source_ours, source_bare, rows), "sink": (sink_ours, sink_bare, sink_rows)}
                for mode in modes:
                    ours, bare, n = functions[mode]
                    variants = {
                        "ours": partial(ours, spark, broker, workdir),
                        "bare": partial(bare, spark, broker, workdir),
                    }
                    run_abba(f"{NAME} {mode}", variants, n, 1, f"{mode}_warm")
                    runs[mode] = run_abba(f"{NAME} {mode}", variants, n, repeat, f"{mode}")
                    if args.profile:
                        profiles[mode] = profile(variants["ours"], n, f"{mode}_profile")
            finally:
                spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    keys = {"source": SOURCE_KEY, "sink": SINK_KEY}
    ratios, figures = ratio_figures({keys[mode]: paired(runs[mode], "ours", "bare") for mode in modes})
    if "source" in runs:
        figures["kafka_source_rows_per_s"] = summary(r["rows_per_s"] for r in runs["source"]["ours"])["median"]
    if "sink" in runs:
        figures["kafka_sink_rows_per_s"] = summary(r["rows_per_s"] for r in runs["sink"]["ours"])["median"]
    table_rows = []
    for mode, by_variant in runs.items():
        for variant, entries in by_variant.items():
            speeds = summary(r["rows_per_s"] for r in entries)
            table_rows.append(
                [LABELS[(mode, variant)], speeds["median"], f"{speeds['min']:,.0f} - {speeds['max']:,.0f}"]
            )
    load_start, load_end = machine.get("loadavg_at_start"), [round(x, 2) for x in os.getloadavg()]
    result = {
        "benchmark": NAME,
        "description": (
            f"Apache Kafka {KAFKA_VERSION}'s broker (one KRaft node on loopback), {PARTITIONS} partitions; "
            f"source: {rows:,} JSON records, sink: {sink_rows:,} ids per run; {MASTER}, parallelism "
            f"{PARALLELISM}, checkpoint every {INTERVAL_MS} ms, {repeat} ABBA repetitions after a warm-up round."
        ),
        "machine": machine,
        "settings": {
            "quick": args.quick,
            "broker": f"Apache Kafka {KAFKA_VERSION}, one KRaft node (tests/servers/kafka_broker.py)",
            "rows": rows,
            "sink_rows": sink_rows,
            "repeat": repeat,
            "partitions": PARTITIONS,
            "checkpoint_interval_ms": INTERVAL_MS,
            "producer_settings": PRODUCER_SETTINGS,
        },
        "summary": figures,
        "ratios": ratios,
        "table": {"columns": ["variant", "rows/s (median)", "range"], "rows": table_rows},
        "targets": [
            {"figure": key, "target": f">= {GOAL}", "value": figures[key], "met": figures[key] >= GOAL}
            for key in ratios
        ],
        "notes": [
            "Both sides of each ratio run on the same broker in the same process tree, alternating (ABBA), "
            f"so they see the same load: load average (1, 5, 15 min) {load_start} at the start, {load_end} at "
            "the end, on 2 cores shared with other work.",
            "The bare sides are single processes with no engine: no Spark, no checkpoints, no staging. "
            "Ours runs 2 subtasks, each with its own consumers or transactional producers.",
            "The sink's cost per record that the bare producer does not have: the bare producer commits its own "
            "transactions, and commit_transaction reports a record that was not delivered; ours prepares a "
            "transaction that the driver commits after the checkpoint, so each subtask must see every "
            "record's delivery report itself (one shared callback, called once per record from librdkafka's "
            "delivery queue), and it encodes the rows with DuckDB's to_json where the bare loop uses one "
            "pyarrow.compute call on the id column.",
            *profile_notes(profiles),
        ],
        "runs": {mode: described(by_variant) for mode, by_variant in runs.items()},
    }
    if profiles:
        result["cpu_profile"] = profiles
    emit(result, NAME, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
