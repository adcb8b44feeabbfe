"""Merge benchmark results into ``summary.json`` and render ``docs/benchmarks.md``.

Used by ``bench/run_all.py``; also runnable on its own to regenerate both from the result
files already in ``bench/results/`` (``python bench/report.py``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO_ROOT, RESULTS_DIR, machine_info

#: (script, result name, section title), in the order they run and appear in the docs
SCRIPTS: list[tuple[str, str, str]] = [
    ("storage_bench.py", "storage", "Checkpoint storage: our layer vs the raw client"),
    ("throughput_bench.py", "throughput", "Throughput: checkpoint overhead, the pyarrow limit, scaling"),
    ("scaling_bench.py", "scaling", "Scaling: 1 to 8 subtasks on a standalone cluster"),
    ("checkpoint_latency_bench.py", "checkpoint_latency", "Checkpoint latency and state-size scaling"),
    ("streaming_compare_bench.py", "streaming_compare", "Versus Spark Structured Streaming"),
    ("recovery_bench.py", "recovery", "Recovery times"),
    ("jdbc_bench.py", "jdbc", "Jdbc connectors: PostgreSQL read and exactly-once write"),
    ("lakehouse_bench.py", "lakehouse", "Lakehouse sinks: Iceberg and Delta vs the libraries alone"),
    ("sql_bench.py", "sql", "Sql transform vs the same transform in pyarrow.compute"),
    ("kafka_bench.py", "kafka", "Kafka source and exactly-once sink vs the bare clients (Apache Kafka's broker)"),
    ("history_view_bench.py", "history_view", "Checkpoint view: the first page of a 10,000-entry history"),
    ("scale_bench.py", "scale_splits", "Scale: 1,000 to 100,000 splits (files, key ranges, partitions)"),
    ("scale_rows.py", "scale_rows", "Scale: 500 million rows, throughput per tenth"),
    ("scale_skew.py", "scale_skew", "Scale: one file ten times larger than the others"),
    ("scale_jobs.py", "scale_jobs", "Scale: 1 to 8 jobs at once from one Airflow worker"),
    ("scale_soak.py", "scale_soak", "Scale: a 60-minute soak with a driver kill every 10 minutes"),
    ("peers_bench.py", "peers", "Peers: SeaTunnel's Zeta and Flink on the same job"),
]

#: the keys summary.json must hold: key -> (result name, what it means, better)
REQUIRED_KEYS: dict[str, tuple[str, str, str]] = {
    "overhead_ratio_interval_1s": (
        "throughput",
        "rows/s with a checkpoint every 1 s / rows/s with checkpointing off (final checkpoint only)",
        "higher",
    ),
    "overhead_ratio_interval_100ms": (
        "throughput",
        "rows/s with a checkpoint every 100 ms / rows/s with checkpointing off",
        "higher",
    ),
    "ratio_vs_pyarrow_limit": (
        "throughput",
        "our rows/s (2 subtasks on 2 cores, 1 s interval) / a plain single-process pyarrow loop "
        "doing the same transform and parquet write",
        "higher",
    ),
    "cpu_efficiency_ratio_vs_pyarrow_limit": (
        "throughput",
        "rows per CPU-second: ours (2 subtasks, 1 s interval, every process of the run counted) / the "
        "plain pyarrow loop",
        "higher",
    ),
    "cpu_efficiency_ratio_vs_pyarrow_like_sink": (
        "throughput",
        "rows per CPU-second: ours / the pyarrow loop writing as the File sink does (16 MiB files, "
        "fsynced, pages dropped): what the engine costs beyond the writing",
        "higher",
    ),
    "throughput_ratio_vs_structured_streaming": (
        "streaming_compare",
        "our rows/s / Spark Structured Streaming's rows/s on the same workload",
        "higher",
    ),
    "resume_time_ratio_vs_structured_streaming": (
        "streaming_compare",
        "our time to resume after a failure / Structured Streaming's",
        "lower",
    ),
    "checkpoint_latency_ms_p50_1MiB_local": (
        "checkpoint_latency",
        "checkpoint latency (trigger to completed), 1 MiB of state, local disk: p50 ms",
        "lower",
    ),
    "checkpoint_latency_ms_p99_1MiB_local": (
        "checkpoint_latency",
        "checkpoint latency, 1 MiB of state, local disk: p99 ms",
        "lower",
    ),
    "checkpoint_time_ratio_vs_raw_write_1GiB": (
        "checkpoint_latency",
        "time to checkpoint 1 GiB of state / time to write the same bytes raw",
        "lower",
    ),
    "checkpoint_latency_ms_p50_1MiB_s3": (
        "checkpoint_latency",
        "checkpoint latency, 1 MiB of state, S3 (moto on loopback): p50 ms",
        "lower",
    ),
    "checkpoint_time_ratio_vs_raw_write_1GiB_s3": (
        "checkpoint_latency",
        "time to checkpoint 1 GiB of state on S3 (moto) / time to PUT the same bytes raw",
        "lower",
    ),
    "checkpoint_latency_ms_p50_1MiB_hdfs": (
        "checkpoint_latency",
        "checkpoint latency, 1 MiB of state, real HDFS (Hadoop's MiniDFSCluster, through WebHDFS): p50 ms",
        "lower",
    ),
    "checkpoint_latency_ms_p99_1MiB_hdfs": (
        "checkpoint_latency",
        "checkpoint latency, 1 MiB of state, real HDFS (MiniDFSCluster, WebHDFS): p99 ms",
        "lower",
    ),
    "checkpoint_time_ratio_vs_raw_write_1GiB_hdfs": (
        "checkpoint_latency",
        "time to checkpoint 1 GiB of state on the real HDFS / time to write the same files with "
        "hdfs.InsecureClient (WebHDFS)",
        "lower",
    ),
    "region_failover_seconds_p50": (
        "recovery",
        "seconds until a killed subtask runs again (region failover), p50",
        "lower",
    ),
    "region_failover_ratio_vs_stock_daemon": (
        "recovery",
        "region failover p50 with the engine's preloading Python daemon / with PySpark's stock daemon, "
        "same kill schedule, same run",
        "lower",
    ),
    "jdbc_read_ratio_vs_spark_jdbc": (
        "jdbc",
        "rows/s copying a PostgreSQL table to parquet, ours (1 s checkpoints) / spark.read.jdbc, "
        "same parallelism and splits",
        "higher",
    ),
    "jdbc_sink_ratio_vs_copy_limit": (
        "jdbc",
        "rows/s writing into PostgreSQL, ours exactly-once / one plain psycopg COPY of the same Arrow data",
        "higher",
    ),
    "iceberg_sink_ratio_vs_pyiceberg_append": (
        "lakehouse",
        "rows/s into an Iceberg table, ours (1 s checkpoints, one snapshot each) / pyiceberg's append "
        "of the same batches once a second in one process",
        "higher",
    ),
    "delta_sink_ratio_vs_write_deltalake": (
        "lakehouse",
        "rows/s into a Delta table, ours (1 s checkpoints, one version each) / write_deltalake of the "
        "same batches once a second in one process",
        "higher",
    ),
    "iceberg_commit_latency_ms_p50_s3": (
        "lakehouse",
        "driver-side commit of one checkpoint's files as an Iceberg snapshot, moto S3: p50 ms",
        "lower",
    ),
    "delta_commit_latency_ms_p50_s3": (
        "lakehouse",
        "driver-side commit of one checkpoint's files as a Delta version, moto S3: p50 ms",
        "lower",
    ),
    "sql_transform_ratio_vs_python_transform": (
        "sql",
        "rows/s with a projection/filter as a Sql transform / the same as a pyarrow.compute Python transform, "
        "Sequence -> transform -> parquet, 1 s checkpoints",
        "higher",
    ),
    "kafka_source_rows_per_s": (
        "kafka",
        "rows/s the Kafka source reads from Apache Kafka's broker (JSON into Arrow, p=2, 1 s checkpoints)",
        "higher",
    ),
    "kafka_source_ratio_vs_bare_consumer": (
        "kafka",
        "Kafka source rows/s / a bare confluent-kafka consumer loop doing the same reading and JSON decoding "
        "in one process, both on Apache Kafka's broker",
        "higher",
    ),
    "kafka_sink_ratio_vs_bare_transactional_producer": (
        "kafka",
        "rows/s into Apache Kafka's broker, the EXACTLY_ONCE Kafka sink (a transaction per epoch and subtask, "
        "1 s checkpoints, p=2) / one bare transactional confluent-kafka producer committing a transaction "
        "a second, same records",
        "higher",
    ),
    "scale_start_seconds_100k_files": (
        "scale_splits",
        "seconds from the driver's start to the first completed checkpoint, LocalFile over 100,000 files (goal <= 30)",
        "lower",
    ),
    "scale_ckpt_time_ratio_100k_vs_1k_files": (
        "scale_splits",
        "checkpoint duration p50 over 100,000 files / over 1,000 files (finished splits should cost "
        "nothing: goal <= 2)",
        "lower",
    ),
    "scale_ckpt_time_ratio_100k_vs_1k_splits_equal_rows": (
        "scale_splits",
        "checkpoint duration p50 over 100,000 splits / over 1,000 splits, Sequence at the same rows per "
        "epoch whatever N (the split count alone: goal <= 1.5)",
        "lower",
    ),
    "rows_500m_last_vs_first_tenth": (
        "scale_rows",
        "rows/s over the last tenth of 500 million rows / over the first tenth, Sequence -> File, "
        "1 s checkpoints (goal >= 0.95)",
        "higher",
    ),
    "skewed_files_wall_ratio_vs_ideal": (
        "scale_skew",
        "File -> File, p=2: time over 20 files, one 10x larger than the others / over the same rows in 29 "
        "even files (splits dealt on request: goal <= 1.2)",
        "lower",
    ),
    "jobs_at_once_8_throughput_ratio": (
        "scale_jobs",
        "total rows/s of 8 checkpointed jobs started at once by one Airflow worker (LocalExecutor) / "
        "rows/s of one job alone (goal >= 0.9)",
        "higher",
    ),
    "jobs_at_once_8_p99_ratio": (
        "scale_jobs",
        "checkpoint p99 of 8 jobs started at once (max over the jobs) / p99 of one job alone; a barrier "
        "overtakes the batch being read or transformed (goal <= 3.0)",
        "lower",
    ),
    "jobs_at_once_8_bare_path_throughput_ratio": (
        "scale_jobs",
        "the control: the same per-row work without the engine (no Spark, no checkpoints), total rows/s of "
        "16 plain processes at once / of 2, on the same machine in the same run (bare_data_path.py)",
        "higher",
    ),
    "jobs_at_once_8_throughput_vs_bare_path": (
        "scale_jobs",
        "the 8-job throughput ratio / the bare data path's: what the engine keeps of what the machine leaves "
        "(1.0: it loses nothing of its own)",
        "higher",
    ),
    "soak_last_vs_first_window_max": (
        "scale_soak",
        "the worst last-window / first-window ratio over RSS, open files, threads, checkpoint p50/p99 "
        "and storage objects, a 60-minute Kafka -> Sql -> File soak (goal <= 1.10)",
        "lower",
    ),
    "peer_throughput_ratio_vs_zeta": (
        "peers",
        "rows/s at the margin, FakeSource -> Sql -> LocalFile parquet, p=2, 1 s checkpoints: ours / SeaTunnel "
        "2.3.8's Zeta (local mode) on the same job file",
        "higher",
    ),
    "peer_throughput_ratio_vs_flink": (
        "peers",
        "rows/s at the margin, the same workload: ours / Flink 2.3 (PyFlink, datagen -> the same query -> parquet)",
        "higher",
    ),
    "peer_ckpt_overhead_ours": ("peers", "ours: rows/s with 1 s checkpoints / without periodic ones", "higher"),
    "peer_ckpt_overhead_zeta": ("peers", "Zeta: rows/s with 1 s checkpoints / without periodic ones", "higher"),
    "peer_ckpt_overhead_flink": ("peers", "Flink: rows/s with 1 s checkpoints / without periodic ones", "higher"),
    "peer_memory_ratio_vs_zeta": ("peers", "peak RSS of the whole process tree: ours / Zeta", "lower"),
    "peer_memory_ratio_vs_flink": ("peers", "peak RSS of the whole process tree: ours / Flink", "lower"),
    "peer_kafka_throughput_ratio_vs_zeta": (
        "peers",
        "rows/s at the margin, Kafka (a real broker, 4 partitions, JSON) -> LocalFile parquet, p=2, 1 s checkpoints: "
        "ours / Zeta on the same job file",
        "higher",
    ),
    "peer_jdbc_throughput_ratio_vs_zeta": (
        "peers",
        "rows/s at the margin, Jdbc -> Jdbc on a real PostgreSQL (partition_column, the exactly-once XA sink), "
        "p=2, 1 s checkpoints: ours / Zeta on the same job file",
        "higher",
    ),
    "peer_kafka_memory_ratio_vs_zeta": (
        "peers",
        "Kafka -> LocalFile: peak RSS of the process tree, ours / Zeta",
        "lower",
    ),
    "peer_jdbc_memory_ratio_vs_zeta": ("peers", "Jdbc -> Jdbc: peak RSS of the process tree, ours / Zeta", "lower"),
    "peer_kafka_throughput_ratio_vs_flink": (
        "peers",
        "rows/s at the margin, the Kafka workload: ours / Flink 2.3 (SQL: the kafka table bounded at the latest "
        "offsets -> a parquet filesystem table)",
        "higher",
    ),
    "peer_jdbc_throughput_ratio_vs_flink": (
        "peers",
        "rows/s at the margin, the Jdbc workload: ours (XA) / Flink 2.3 (SQL: the jdbc table by "
        "scan.partition.column -> a jdbc table with a primary key, upserts: Flink SQL has no XA sink)",
        "higher",
    ),
    "peer_kafka_memory_ratio_vs_flink": (
        "peers",
        "Kafka -> LocalFile: peak RSS of the process tree, ours / Flink",
        "lower",
    ),
    "peer_jdbc_memory_ratio_vs_flink": ("peers", "Jdbc -> Jdbc: peak RSS of the process tree, ours / Flink", "lower"),
    "peer_recovery_seconds_ours": (
        "peers",
        "ours: SIGKILL of the driver (and all it started) mid-run -> first newly committed row after --restore latest",
        "lower",
    ),
    "peer_recovery_seconds_zeta": (
        "peers",
        "Zeta: SIGKILL of the local-mode JVM mid-run -> first newly committed row after -r <job id>",
        "lower",
    ),
    "peer_recovery_seconds_flink": (
        "peers",
        "Flink: SIGKILL of PyFlink and its MiniCluster mid-run -> first newly committed row after "
        "execution.savepoint.path = the latest retained checkpoint",
        "lower",
    ),
    "peer_recovery_ratio_vs_zeta": (
        "peers",
        "kill -> first newly committed row, ours / Zeta's (every id counted once on both sides)",
        "lower",
    ),
    "peer_recovery_ratio_vs_flink": (
        "peers",
        "kill -> first newly committed row, ours / Flink's (every id counted once on both sides)",
        "lower",
    ),
    "seatunnel_differential_compared": (
        "seatunnel_differential",
        "SeaTunnel job files (accepted, no server or PostgreSQL through Jdbc, deterministic output, a random "
        "FakeSource's rows pinned) run on Zeta 2.3.8 and on ours, rows compared",
        "higher",
    ),
    "seatunnel_differential_compared_postgres": (
        "seatunnel_differential",
        "of those, SeaTunnel's PostgreSQL Jdbc files, run against a real PostgreSQL with PostGIS (the sink tables read back)",
        "higher",
    ),
    "seatunnel_differential_compared_pinned": (
        "seatunnel_differential",
        "of those, the files whose FakeSource's generated rows were pinned as explicit rows for both engines",
        "higher",
    ),
    "seatunnel_differential_identical": (
        "seatunnel_differential",
        "of those, the files whose rows are identical on both engines (values and types, in any order)",
        "higher",
    ),
}
REQUIRED_TOP = ("machine", "date")
#: results written by scripts that bench/run_all.py does not run (they need more than this tree)
OTHER_TITLES = {
    "seatunnel_differential": "SeaTunnel's semantics: the same job files on Zeta and on ours (seatunnel_compat.py --differential)"
}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def load_results(results_dir: Path = RESULTS_DIR) -> dict[str, dict[str, Any]]:
    """Every ``<name>.json`` result in ``results_dir`` (not summary.json), known names first."""
    found: dict[str, dict[str, Any]] = {}
    names = [name for _, name, _ in SCRIPTS]
    files = sorted(results_dir.glob("*.json"), key=lambda p: (names.index(p.stem) if p.stem in names else 99, p.stem))
    for path in files:
        if path.stem == "summary":
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            found[path.stem] = {"_path": path, "_error": f"unreadable: {err}"}
            continue
        if isinstance(doc, dict):
            doc["_path"] = path
            found[path.stem] = doc
    return found


def result_date(doc: Mapping[str, Any]) -> str | None:
    machine = doc.get("machine") or {}
    date = machine.get("date_utc") or doc.get("date")
    if date:
        return str(date)
    path = doc.get("_path")
    if path is not None:
        with_mtime = _dt.datetime.fromtimestamp(Path(path).stat().st_mtime, _dt.UTC)
        return with_mtime.isoformat(timespec="seconds") + " (file time)"
    return None


def _is_quick(doc: Mapping[str, Any]) -> bool:
    settings = doc.get("settings") or {}
    return bool(settings.get("quick")) if isinstance(settings, Mapping) else False


def build_summary(
    results: Mapping[str, Mapping[str, Any]],
    runs: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    quick: bool = False,
) -> dict[str, Any]:
    """Merge every result's flat ``summary`` with machine, date, sources, missing, failed."""
    runs = runs or {}
    merged: dict[str, Any] = {}
    sources: dict[str, Any] = {}
    collisions: list[str] = []
    for name, doc in results.items():
        part = doc.get("summary")
        if not isinstance(part, Mapping):
            continue
        path = doc.get("_path")
        rel = os.path.relpath(path, REPO_ROOT) if path is not None else f"{name}.json"
        run = runs.get(name) or {}
        source = {"file": rel, "date": result_date(doc), "quick": _is_quick(doc)}
        if run and run.get("status") != "ok":
            source["stale"] = True  # this run of its script failed: the figures are an older file's
        for key, value in part.items():
            if not _is_number(value):
                continue
            if key in merged:
                collisions.append(f"{key}: {sources[key]['file']} and {rel} (kept the first)")
                continue
            merged[key] = value
            sources[key] = source
    machine = machine_info()
    summary: dict[str, Any] = dict(merged)
    summary["machine"] = {
        k: machine.get(k)
        for k in (
            "cores",
            "cpus_usable",
            "memory_total_mib",
            "cpu_model",
            "python",
            "platform",
            "git_commit",
            "libraries",
            "loadavg_at_start",
        )
    }
    summary["date"] = _now()
    summary["quick"] = quick
    summary["sources"] = sources
    summary["missing"] = [k for k in REQUIRED_KEYS if not _is_number(summary.get(k))]
    failed = [
        {
            "script": r.get("script"),
            "result": name,
            "status": r.get("status"),
            "reason": r.get("reason"),
            "stderr_tail": r.get("stderr_tail"),
        }
        for name, r in runs.items()
        if r.get("status") != "ok"
    ]
    summary["failed"] = failed
    summary["runs"] = {name: {k: v for k, v in r.items() if k != "stderr_tail"} for name, r in runs.items()}
    if collisions:
        summary["key_collisions"] = collisions
    return summary


# ---- markdown ---------------------------------------------------------------------------
def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, (list, dict)):
        value = json.dumps(value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def md_table(columns: Iterable[Any], rows: Iterable[Iterable[Any]]) -> str:
    columns = list(columns)
    out = ["| " + " | ".join(_cell(c) for c in columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    for row in rows:
        row = list(row)
        row += [""] * (len(columns) - len(row))
        out.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(out)


def _table_of(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    table = doc.get("table")
    if isinstance(table, Mapping) and "columns" in table and "rows" in table:
        return table
    for value in doc.values():  # older result files: the first {"columns", "rows"} found
        if isinstance(value, Mapping) and "columns" in value and "rows" in value:
            return value
    return None


def _targets_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    targets = doc.get("targets")
    if isinstance(targets, list):
        return [t for t in targets if isinstance(t, Mapping)]
    old = doc.get("target_met")  # older format: {figure: bool}
    if isinstance(old, Mapping):
        settings = doc.get("settings") or {}
        target = settings.get("target", "") if isinstance(settings, Mapping) else ""
        return [{"figure": k, "target": target, "value": None, "met": bool(v)} for k, v in old.items()]
    return []


def _met(value: Any) -> str:
    return "met" if value is True else ("**MISSED**" if value is False else "")


#: a figure whose repetitions spread wider than this (max/min) cannot show a 3-5 % change
MAX_SPREAD = 1.10


def spread(summary: Mapping[str, Any], key: str) -> float | None:
    """max/min of a figure's repetitions (None for a single measurement or a percentile)."""
    low, high = summary.get(f"{key}_min"), summary.get(f"{key}_max")
    if _is_number(low) and _is_number(high) and float(low) > 0:
        return float(high) / float(low)
    return None


def _range(summary: Mapping[str, Any], key: str) -> str:
    low, high = summary.get(f"{key}_min"), summary.get(f"{key}_max")
    if _is_number(low) and _is_number(high):
        return f"{_cell(float(low))} - {_cell(float(high))}"
    return ""


def _spread_cell(summary: Mapping[str, Any], key: str) -> str:
    value = spread(summary, key)
    if value is None:
        return ""
    return f"{value:.2f}" if value <= MAX_SPREAD else f"**{value:.2f}: too wide to judge**"


def render_markdown(
    summary: Mapping[str, Any],
    results: Mapping[str, Mapping[str, Any]],
    *,
    doc_path: Path,
    plot_map: Mapping[str, str] | None = None,
    command: str = "scripts/bench",
) -> str:
    """The whole benchmarks page. ``plot_map`` rewrites plot paths (quick runs keep theirs apart)."""
    plot_map = plot_map or {}
    base = doc_path.parent
    lines: list[str] = []
    machine = summary.get("machine") or {}
    quick = bool(summary.get("quick"))
    lines += [
        "# Benchmarks",
        "",
        f"*Generated by `bench/run_all.py` on {summary.get('date')}; do not edit by hand. Regenerate with "
        f"`{command}` (everything, a full run takes about two hours on 2 cores, the soak alone 60 minutes), `scripts/bench --quick` "
        "(a smoke run in a few minutes, written to `bench/results/quick/`, never over these figures) or "
        "`scripts/bench --report-only` (this page and `bench/results/summary.json` from the result files "
        "already in `bench/results/`).*",
        "",
    ]
    if quick:
        lines += [
            "> **Quick smoke run**: tiny sizes, only a check that every script works. Do not quote these figures.",
            "",
        ]
    lines += [
        "Every figure is a ratio of two things measured side by side in one run, interleaved (ABBA order), as "
        "the median of at least 5 repetitions with the minimum and maximum, or a latency percentile. They were "
        "measured on a small shared machine (below): read them as ratios, not as absolute speeds of the "
        "engine on real hardware. The raw numbers of every repetition are in `bench/results/<name>.json`. "
        "The machine is a VM that hands the memory its guest frees back to the host; the `throughput` "
        "benchmark holds freed pages in the guest while it runs (and says so in its machine section), "
        "because the host's faults otherwise swing its CPU figures by up to 1.3x: see its notes.",
        "",
        "## Headline figures",
        "",
    ]
    targets_by_key: dict[str, Mapping[str, Any]] = {}
    for doc in results.values():
        for target in _targets_of(doc):
            targets_by_key.setdefault(str(target.get("figure")), target)
    rows = []
    sources = summary.get("sources") or {}
    for key, (name, meaning, better) in REQUIRED_KEYS.items():
        value = summary.get(key)
        target = targets_by_key.get(key) or {}
        source = sources.get(key) or {}
        flags = []
        if source.get("quick"):
            flags.append("quick run")
        if source.get("stale"):
            flags.append("stale: last run failed")
        rows.append(
            [
                f"`{key}`",
                meaning,
                (_cell(value) if _is_number(value) else "**missing**"),
                _range(summary, key),
                _spread_cell(summary, key),
                better,
                target.get("target", ""),
                _met(target.get("met")),
                f"`{name}`" + (f" ({', '.join(flags)})" if flags else ""),
            ]
        )
    lines.append(
        md_table(
            ["figure", "what it is", "value", "min - max", "spread (max/min)", "better", "target", "status", "from"],
            rows,
        )
    )
    lines += [
        "",
        f"*spread*: the largest repetition's figure over the smallest. Above {MAX_SPREAD:.2f} the "
        "repetitions disagree by more than a small regression would move the median, so such a figure is "
        "flagged: it says which side of its target it is on only when the whole range is.*",
    ]
    lines.append("")
    other_targets = [t for k, t in targets_by_key.items() if k not in REQUIRED_KEYS]
    if other_targets:
        lines += ["Other targets:", ""]
        lines.append(
            md_table(
                ["figure", "target", "value", "status"],
                [[t.get("figure"), t.get("target"), t.get("value"), _met(t.get("met"))] for t in other_targets],
            )
        )
        lines.append("")
    missing = summary.get("missing") or []
    if missing:
        lines += [
            f"**Missing figures**: {', '.join(f'`{k}`' for k in missing)} (their benchmark has not produced "
            "them; see the failures below).",
            "",
        ]
    failed = summary.get("failed") or []
    if failed:
        older = "" if quick else " (their older results, if any, are still shown below, marked stale)"
        lines += [f"**Benchmarks that failed in this run**{older}:", ""]
        for f in failed:
            lines.append(f"* `{f.get('script')}`: {f.get('reason')}")
        lines.append("")
        for f in failed:
            if f.get("stderr_tail"):
                lines += [
                    f"<details><summary>stderr tail of {f.get('script')}</summary>",
                    "",
                    "```",
                    str(f["stderr_tail"]),
                    "```",
                    "",
                    "</details>",
                    "",
                ]

    lines += ["## Machine", ""]
    libs = machine.get("libraries") or {}
    lines.append(
        md_table(
            ["", ""],
            [
                [
                    "CPU",
                    f"{machine.get('cores')} cores ({machine.get('cpus_usable')} usable), {machine.get('cpu_model', '')}",
                ],
                ["memory", f"{machine.get('memory_total_mib')} MiB"],
                ["OS", machine.get("platform")],
                ["Python", machine.get("python")],
                ["libraries", ", ".join(f"{k} {v}" for k, v in libs.items())],
                ["commit", machine.get("git_commit")],
                ["load average when the report was written", machine.get("loadavg_at_start")],
            ],
        )
    )
    lines += [
        "",
        "The machine is shared with other work: each result section records the load average at its "
        "start and end; wide min-max ranges mostly mean a busy machine.",
        "",
    ]

    titles = {**OTHER_TITLES, **{name: title for _, name, title in SCRIPTS}}
    for name, doc in results.items():
        lines += _section(name, titles.get(name, name), doc, base, plot_map, summary)
    lines += [
        "## Running the benchmarks",
        "",
        "```bash",
        "scripts/bench                   # every script in bench/ in full, then summary.json and this page",
        "scripts/bench --quick           # smoke run (tiny sizes) into bench/results/quick/",
        "scripts/bench --only throughput # one script (the others' latest results are kept)",
        "scripts/bench --report-only     # regenerate summary.json and this page only",
        ".venv/bin/python bench/throughput_bench.py --quick   # one script, JSON on stdout",
        "# on the real systems (the JVM servers of tests/servers, built by scripts/jvm-servers):",
        ".venv/bin/python bench/kafka_bench.py --out --profile    # Kafka source and EXACTLY_ONCE sink, Apache Kafka's broker",
        ".venv/bin/python bench/checkpoint_latency_bench.py --out --merge --backends hdfs   # HDFS points only",
        "```",
        "",
        "Each script is a separate process (`.venv/bin/python bench/<script>.py --out`); a script that is "
        "missing or fails is listed as failed with the tail of its stderr and the others still run. See "
        "`bench/README.md` for what each script does and its options.",
        "",
    ]
    return "\n".join(lines)


def _section(
    name: str, title: str, doc: Mapping[str, Any], base: Path, plot_map: Mapping[str, str], summary: Mapping[str, Any]
) -> list[str]:
    path = doc.get("_path")
    rel = os.path.relpath(path, REPO_ROOT) if path is not None else f"bench/results/{name}.json"
    lines = [f"## {title}", ""]
    if doc.get("_error"):
        return lines + [f"`{rel}` could not be read: {doc['_error']}", ""]
    machine = doc.get("machine") or {}
    meta = [f"`{rel}`", f"measured {result_date(doc)}"]
    if _is_quick(doc):
        meta.append("**quick run**")
    if machine.get("loadavg_at_start") is not None:
        meta.append(f"load {machine.get('loadavg_at_start')} -> {machine.get('loadavg_at_end')}")
    lines += ["*" + "; ".join(meta) + "*", ""]
    if doc.get("benchmark"):
        lines += [f"**{doc['benchmark']}**", ""]
    if doc.get("description"):
        lines += [str(doc["description"]), ""]
    table = _table_of(doc)
    if table is not None:
        lines += [md_table(table["columns"], table["rows"]), ""]
    extra = doc.get("figures_table")
    if isinstance(extra, Mapping) and "columns" in extra:
        lines += [md_table(extra["columns"], extra["rows"]), ""]
    for table in doc.get("extra_tables") or []:
        if isinstance(table, Mapping) and "columns" in table:
            lines += [f"**{table.get('title', '')}**", "", md_table(table["columns"], table["rows"]), ""]
    targets = _targets_of(doc)
    if targets:
        lines += ["Targets:", ""]
        for t in targets:
            value = t.get("value")
            lines.append(
                f"* `{t.get('figure')}` {t.get('target', '')}: "
                f"{_cell(value) if value is not None else ''} -> {_met(t.get('met'))}"
            )
        lines.append("")
    for plot in doc.get("plots") or []:
        target = plot_map.get(plot, plot)
        image = REPO_ROOT / target
        link = os.path.relpath(image, base)
        if image.exists():
            lines += [f"![{Path(plot).stem}]({link})", ""]
        else:
            lines += [f"(plot `{plot}` is missing)", ""]
    notes = doc.get("notes")
    if isinstance(notes, list) and notes:
        lines += ["Notes:", ""] + [f"* {n}" for n in notes] + [""]
    settings = doc.get("settings")
    if isinstance(settings, Mapping) and settings:
        lines += ["<details><summary>Settings</summary>", ""]
        lines += [f"* `{k}`: {_cell(v)}" for k, v in settings.items()]
        lines += ["", "</details>", ""]
    return lines


def write_report(
    results: Mapping[str, Mapping[str, Any]],
    summary: Mapping[str, Any],
    *,
    summary_path: Path,
    doc_path: Path,
    plot_map: Mapping[str, str] | None = None,
) -> None:
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    summary_path.write_text(json.dumps(summary, indent=2) + "\n")
    doc_path.parent.mkdir(parents=True, exist_ok=True)
    doc_path.write_text(render_markdown(summary, results, doc_path=doc_path, plot_map=plot_map))


def main() -> int:
    results = load_results()
    summary = build_summary(results)
    write_report(
        results, summary, summary_path=RESULTS_DIR / "summary.json", doc_path=REPO_ROOT / "docs" / "benchmarks.md"
    )
    print(json.dumps({"missing": summary["missing"], "sources": summary["sources"]}, indent=2))
    return 1 if summary["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
