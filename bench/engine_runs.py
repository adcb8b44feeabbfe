"""Running the engine's real job inside a benchmark process, and the ABBA bookkeeping the
connector benchmarks share (jdbc_bench, lakehouse_bench).

``run_engine`` runs one job through ``JobRun(...).run(spark)`` in an already started
SparkSession (its start-up is not timed) and times the whole run: preflight, claim, the
Spark job, the final checkpoint and its commit. ``run_abba`` interleaves the variants
(the order reverses on every other repetition) and logs each run's rows/s.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import progress, summary

MASTER = "local[2]"
PARALLELISM = 2
INTERVAL_MS = 1000

#: a variant: ``(rows, tag) -> {"seconds": ..., ...}``
Variant = Callable[[int, str], dict[str, Any]]


def bench_arguments(doc: str, name: str, rows_help: str) -> argparse.ArgumentParser:
    """The options every connector benchmark takes; a script may add its own."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repetition (smoke run)")
    parser.add_argument("--out", action="store_true", help=f"also write bench/results/{name}.json")
    parser.add_argument("--repeat", type=int, help="repetitions of each variant (default 4, quick 1)")
    parser.add_argument("--rows", type=int, help=rows_help)
    return parser


def spark_session(name: str, jars: Sequence[str] = ()) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(MASTER)
        .appName(name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def job_env(name: str, interval_ms: int = INTERVAL_MS) -> dict[str, Any]:
    return {
        "job.name": name,
        "parallelism": PARALLELISM,
        "checkpoint.interval": interval_ms,
        "checkpoint.timeout": 120_000,
    }


def run_engine(spark: Any, job_doc: dict[str, Any], workdir: Path, tag: str) -> dict[str, Any]:
    """Run one engine job in ``spark``; seconds of the whole ``JobRun.run`` and its checkpoints."""
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.engine.runner import JobRun, RunRequest
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    job = load_job(job_doc)
    config = load_config(
        {
            "checkpoint": {
                "storage": {
                    "type": "hdfs",
                    "max-retained": 3,
                    "plugin-config": {"storage.type": "local", "namespace": f"{workdir}/ckpt-{tag}/"},
                }
            }
        },
        job_env=job.env,
    )
    lines: list[str] = []
    job_run = JobRun(RunRequest(job=job, config=config, job_id=f"bench-{tag}", master=MASTER), progress=lines.append)
    gc.collect()
    started = time.perf_counter()
    outcome = job_run.run(spark)
    seconds = time.perf_counter() - started
    if not outcome.finished:
        raise RuntimeError(f"{tag}: job failed: {outcome.error}\n" + "\n".join(lines[-5:]))
    return {
        "seconds": round(seconds, 4),
        "checkpoints_completed": len(outcome.completed),
        "periodic_checkpoints": sum(1 for c in outcome.completed if c.kind == "checkpoint"),
    }


def run_abba(
    bench: str, variants: dict[str, Variant], rows: int, repeat: int, label: str
) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    names = list(variants)
    for rep in range(repeat):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            tag = f"{label}_{name}_{rep}"
            gc.collect()
            result = variants[name](rows, tag)
            result["rows_per_s"] = round(rows / result["seconds"], 1)
            results[name].append(result)
            progress(bench, f"{label} {name} rep {rep}: {result['seconds']:.2f} s, {result['rows_per_s']:,.0f} rows/s")
    return results


def paired(results: dict[str, list[dict[str, Any]]], numerator: str, denominator: str) -> list[float]:
    return [round(a["rows_per_s"] / b["rows_per_s"], 4) for a, b in zip(results[numerator], results[denominator])]


def described(results: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        name: {"rows_per_s": summary(r["rows_per_s"] for r in runs), "runs": runs} for name, runs in results.items()
    }


def ratio_figures(ratios: dict[str, list[float]]) -> tuple[dict[str, Any], dict[str, float]]:
    """Each ratio's summary, and the flat summary.json keys (median, ``_min``, ``_max``)."""
    summaries = {key: summary(values) for key, values in ratios.items()}
    flat: dict[str, float] = {}
    for key, value in summaries.items():
        flat.update({key: value["median"], f"{key}_min": value["min"], f"{key}_max": value["max"]})
    return summaries, flat
