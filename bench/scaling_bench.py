"""Scaling: the same job at 1, 2, 4 and 8 subtasks on a Spark standalone cluster.

A master and one worker on 127.0.0.1 (``spark-class``, as in tests/integration/engine),
the worker offering 8 cores so every parallelism gets one task slot per subtask; one
SparkSession (one application, one executor) runs every job, so the executor's JVM and
its Python daemon start once and are not timed. The job is the throughput benchmark's:
``Sequence`` (payload 100 B) -> ``Python`` transform (pyarrow.compute) -> ``File``
parquet sink, checkpoints every 1 s to local disk (bench/throughput_bench.py
``run_engine``). Parallelisms are interleaved (the order reversed on every other
repetition).

Per run: rows/s of the Spark job and CPU seconds per million rows of everything involved
(this process, which is the driver; the master, the worker, the executor JVM and its
Python workers, and their reaped children). ``speedup`` = rows/s at p / rows/s at p=1,
``efficiency`` = speedup / p. On a machine with fewer cores than subtasks, the extra
subtasks share cores: the curve shows where it stops and what that costs in CPU per row.

``python bench/scaling_bench.py [--quick] [--out] [--repeat N] [--rows N] [--parallelisms 1,2,4,8]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import emit, machine_info, progress, save_figure, summary
from bench.throughput_bench import run_engine
from bench.workloads import make_importable_on_executors, throughput_job

NAME = "scaling"
INTERVAL_MS = 1000
CLUSTER_CORES = 8


def _log(message: str) -> None:
    progress(NAME, message)


def _start_cluster(root: Path) -> Any:
    from tests.support.workspace import spark_environment, start_standalone_cluster

    return start_standalone_cluster(root, spark_environment(), cores=CLUSTER_CORES, memory="6g")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small runs, 1 repetition")
    parser.add_argument("--out", action="store_true", help="write bench/results/scaling.json and the plot")
    parser.add_argument("--repeat", type=int, help="repetitions per parallelism (default 3; quick: 1)")
    parser.add_argument("--rows", type=int, help="rows per run (default 30,000,000; quick: 600,000)")
    parser.add_argument("--parallelisms", default="1,2,4,8", help="comma-separated subtask counts (<= 8)")
    args = parser.parse_args(argv)
    rows = args.rows or (600_000 if args.quick else 30_000_000)
    repeat = args.repeat or (1 if args.quick else 3)
    parallelisms = [int(p) for p in args.parallelisms.split(",") if p.strip()]
    if not parallelisms or any(p < 1 or p > CLUSTER_CORES for p in parallelisms):
        parser.error(f"--parallelisms: each between 1 and {CLUSTER_CORES}")
    machine = machine_info()
    started = time.perf_counter()

    make_importable_on_executors()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    workdir = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    results: dict[int, list[dict[str, Any]]] = {p: [] for p in parallelisms}
    cluster = spark = None
    try:
        _log(f"starting a standalone master and a worker with {CLUSTER_CORES} cores")
        cluster = _start_cluster(workdir / "cluster")
        roots = [proc.pid for proc in cluster.processes]
        from airflow_provider_seatunnel_ckpt.config import load_config
        from airflow_provider_seatunnel_ckpt.engine.run_state import RunRequest
        from airflow_provider_seatunnel_ckpt.engine.spark_start import build_spark
        from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

        warm = load_job(throughput_job(1000, str(workdir / "w"), parallelism=max(parallelisms)))
        spark = build_spark(
            RunRequest(
                job=warm,
                config=load_config({}),
                job_id="warm",
                master=cluster.master_url,
                spark_conf={"spark.ui.enabled": "false"},
            )
        )
        _log("warm-up runs (not measured)")
        for p in parallelisms:
            run_engine(
                spark,
                "",
                min(rows, 400_000),
                workdir,
                f"warmup-p{p}",
                spec={"parallelism": p, "interval_ms": INTERVAL_MS},
                master=cluster.master_url,
                cpu_roots=roots,
            )
        for rep in range(repeat):
            for p in parallelisms if rep % 2 == 0 else list(reversed(parallelisms)):
                result = run_engine(
                    spark,
                    "",
                    rows,
                    workdir,
                    f"p{p}-r{rep}",
                    spec={"parallelism": p, "interval_ms": INTERVAL_MS},
                    master=cluster.master_url,
                    cpu_roots=roots,
                )
                result["cpu_s_per_million_rows"] = round(result["cpu_s"] * 1e6 / rows, 4)
                results[p].append(result)
                _log(
                    f"rep {rep + 1}/{repeat} p={p}: {result['rows_per_s']:>12,.0f} rows/s, "
                    f"{result['cpu_s_per_million_rows']:.3f} CPU s per million rows ({result['spark_job_s']:.2f} s)"
                )
    finally:
        if spark is not None:
            spark.stop()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    curve = _curve(parallelisms, results)
    doc = {
        "benchmark": "scaling: rows/s and CPU per row at 1, 2, 4, 8 subtasks on a standalone cluster",
        "description": __doc__.split("\n\n")[1].replace("\n", " "),
        "machine": machine,
        "settings": {
            "rows": rows,
            "repeat": repeat,
            "parallelisms": parallelisms,
            "cluster": f"standalone master + 1 worker on 127.0.0.1, {CLUSTER_CORES} cores offered, one executor",
            "interval_ms": INTERVAL_MS,
            "job": "Sequence (100 B payload) -> Python transform (pyarrow.compute) -> File parquet",
            "order": "parallelisms interleaved, reversed on every other repetition, after a warm-up run each",
            "quick": args.quick,
            "total_seconds": round(time.perf_counter() - started, 1),
        },
        "results": {str(p): rs for p, rs in results.items()},
        "curve": curve,
        "summary": {f"scaling_rows_per_s_p{c['parallelism']}": c["rows_per_s"]["median"] for c in curve}
        | {f"scaling_speedup_p{c['parallelism']}": c["speedup"] for c in curve}
        | {f"scaling_cpu_s_per_million_rows_p{c['parallelism']}": c["cpu_s_per_million_rows"]["median"] for c in curve},
        "table": {
            "columns": [
                "subtasks",
                "rows/s (median)",
                "rows/s (min - max)",
                "speedup vs p=1",
                "efficiency (speedup/p)",
                "CPU s per million rows (median)",
                "CPU by process, median s (driver / JVMs / Python workers)",
            ],
            "rows": [
                [
                    c["parallelism"],
                    f"{c['rows_per_s']['median']:,.0f}",
                    f"{c['rows_per_s']['min']:,.0f} - {c['rows_per_s']['max']:,.0f}",
                    c["speedup"],
                    c["efficiency"],
                    c["cpu_s_per_million_rows"]["median"],
                    c["cpu_split"],
                ]
                for c in curve
            ],
        },
        "plots": _plot(curve) if args.out else [],
        "notes": _notes(curve, machine),
    }
    emit(doc, NAME, args.out)
    return 0


def _curve(parallelisms: list[int], results: dict[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    base = summary([r["rows_per_s"] for r in results[1]], digits=0)["median"] if results.get(1) else None
    curve = []
    for p in parallelisms:
        rs = results[p]
        rate = summary([r["rows_per_s"] for r in rs], digits=0)
        speedup = round(rate["median"] / base, 3) if base else None
        split = {
            k: summary([r["cpu_s_by_process"][k] for r in rs], digits=2)["median"] for k in ("driver", "jvm", "workers")
        }
        curve.append(
            {
                "parallelism": p,
                "rows_per_s": rate,
                "speedup": speedup,
                "efficiency": round(speedup / p, 3) if speedup else None,
                "cpu_s_per_million_rows": summary([r["cpu_s_per_million_rows"] for r in rs], digits=4),
                "cpu_split": f"{split['driver']} / {split['jvm']} / {split['workers']}",
            }
        )
    return curve


def _notes(curve: list[dict[str, Any]], machine: dict[str, Any]) -> list[str]:
    cores = machine.get("cpus_usable") or machine.get("cores")
    best = max(curve, key=lambda c: c["rows_per_s"]["median"])
    by_p = {c["parallelism"]: c for c in curve}
    notes = []
    if 1 in by_p and 2 in by_p:
        notes.append(
            f"From 1 to 2 subtasks rows/s grows {by_p[2]['speedup']}x, not 2x: at p=1 one Python worker keeps one core "
            "busy and the JVM and the driver (CPU by process, in the table) use part of the other; at p=2 both cores "
            "run a worker, and the JVM, the driver and the checkpoints take their CPU from them."
        )
    widest = max(curve, key=lambda c: c["rows_per_s"]["max"] / max(c["rows_per_s"]["min"], 1))
    notes.append(
        f"Repetitions of one parallelism vary by up to {widest['rows_per_s']['max'] / max(widest['rows_per_s']['min'], 1):.2f}x "
        f"(p={widest['parallelism']}), and CPU per row varies with them (CPU time stretches on a shared VM whose "
        "neighbours take the caches and the memory bandwidth): differences of less than about 15 % between "
        "parallelisms of 2 and more are within that noise."
    )
    top = max(by_p)
    cpu_change = ""
    if 2 in by_p and top > 2:
        change = by_p[top]["cpu_s_per_million_rows"]["median"] / by_p[2]["cpu_s_per_million_rows"]["median"] - 1
        cpu_change = (
            f" CPU per row at p={top} is {change * 100:+.0f} % of p=2's: the per-subtask extras (more "
            "parquet files, one state upload and one ACK per subtask and checkpoint, more context "
            "switches) are small next to the rows' own work."
        )
    notes += [
        f"This machine has {cores} usable cores; rows/s peaks at p={best['parallelism']} "
        f"({best['rows_per_s']['median']:,.0f} rows/s). Each subtask is one Python worker that is busy all the time "
        "(generate, transform, encode parquet), so past the number of cores more subtasks only share the same "
        f"cores: it stops scaling at {cores}, where the cores run out, and more subtasks neither help nor cost much."
        + cpu_change,
        "CPU is counted for every process of the run: this process (the driver, with the engine's coordinator), "
        "the master and worker JVMs, the executor JVM they start and its Python workers (user + system time, "
        "reaped children included), as deltas around each run.",
    ]
    return notes


def _plot(curve: list[dict[str, Any]]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ps = [c["parallelism"] for c in curve]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    med = [c["rows_per_s"]["median"] / 1e6 for c in curve]
    lo = [m - c["rows_per_s"]["min"] / 1e6 for m, c in zip(med, curve)]
    hi = [c["rows_per_s"]["max"] / 1e6 - m for m, c in zip(med, curve)]
    left.errorbar(ps, med, yerr=[lo, hi], marker="o", capsize=4, label="measured (median, min-max)")
    cores = os.cpu_count() or 1
    if curve[0]["parallelism"] == 1:
        left.plot(
            ps,
            [med[0] * min(p, cores) for p in ps],
            linestyle="--",
            color="grey",
            label=f"ideal: linear from p=1 up to {cores} cores",
        )
    for axis in (left, right):
        axis.axvline(cores, color="red", linewidth=0.8, linestyle=":", label=f"cores: {cores}")
        axis.set_xscale("log", base=2)
        axis.set_xticks(ps, [str(p) for p in ps])
        axis.set_xlabel("subtasks (parallelism)")
    left.set_ylabel("million rows/s")
    left.set_ylim(bottom=0)
    left.set_title("Throughput")
    left.legend(fontsize=8)
    cpu = [c["cpu_s_per_million_rows"]["median"] for c in curve]
    right.plot(ps, cpu, marker="o")
    right.set_ylabel("CPU seconds per million rows (median)")
    right.set_title("CPU per row")
    right.set_ylim(bottom=0)
    right.legend(fontsize=8)
    return save_figure(fig, "bench_scaling.png")


if __name__ == "__main__":
    sys.exit(main())
