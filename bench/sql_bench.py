"""The ``Sql`` transform vs the same work as a pyarrow.compute ``Python`` transform.

``sql_transform_ratio_vs_python_transform``: rows/s of ``Sequence`` (id and a 100-byte
payload: the throughput benchmark's workload) -> ``Sql`` (a projection with two computed
columns and a filter dropping one row in ten: ``bench.workloads.PROJECTION_FILTER_SQL``)
-> ``File`` parquet sink, exactly-once with a checkpoint every second, ``local[2]``,
parallelism 2 / the same job with the transform written in pyarrow.compute
(``bench.workloads:projection_filter``) through the ``Python`` transform. One
SparkSession, ABBA repetitions; both outputs are checked id by id (the same ids, each
once) and column by column on a sample.

``python bench/sql_bench.py [--quick] [--out] [--repeat N] [--rows N]``
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench.common import emit, machine_info, summary  # noqa: E402
from bench.engine_runs import (  # noqa: E402
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
from bench.workloads import (  # noqa: E402
    PAYLOAD_BYTES,
    PROJECTION_FILTER_FUNCTION,
    PROJECTION_FILTER_SQL,
    make_importable_on_executors,
    projection_filter_ids,
)

NAME = "sql"
GOAL = 0.9
TRANSFORMS = {
    "sql": {"plugin_name": "Sql", "query": PROJECTION_FILTER_SQL},
    "python": {"plugin_name": "Python", "function": PROJECTION_FILTER_FUNCTION},
}


def run(variant: str, spark: Any, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    output = workdir / tag
    job = {"env": job_env(f"bench-{tag}"),
           "source": [{"plugin_name": "Sequence", "rows": rows, "payload_bytes": PAYLOAD_BYTES}],
           "transform": [TRANSFORMS[variant]],
           "sink": [{"plugin_name": "File", "path": f"file://{output}/", "format": "parquet"}]}
    result = run_engine(spark, job, workdir, tag)
    _check(output, rows)
    shutil.rmtree(output, ignore_errors=True)
    return result


def _check(output: Path, rows: int) -> None:
    """Every kept id exactly once, and the computed columns right on every row."""
    import pyarrow.dataset as ds

    table = ds.dataset(str(output), format="parquet", exclude_invalid_files=True,
                       ignore_prefixes=["_", "."]).to_table(columns=["id", "bucket", "score"]).sort_by("id")
    ids = table.column("id").to_numpy()
    if not np.array_equal(ids, projection_filter_ids(rows)):
        raise RuntimeError(f"{output}: the kept ids are not each exactly once ({len(ids):,} rows)")
    if not (np.array_equal(table.column("bucket").to_numpy(), ids & 15)
            and np.allclose(table.column("score").to_numpy(), ((ids * 31 + 7) % 1000) / 1000)):
        raise RuntimeError(f"{output}: computed columns differ from the definition")


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, NAME, "rows per run (default 20,000,000)")
    args = parser.parse_args(argv)
    rows = args.rows or (200_000 if args.quick else 20_000_000)
    repeat = args.repeat or (1 if args.quick else 4)

    make_importable_on_executors()
    machine = machine_info(extra_libraries=("duckdb",))
    workdir = Path(tempfile.mkdtemp(prefix="bench-sql-"))
    try:
        spark = spark_session("bench-sql")
        try:
            variants = {name: partial(run, name, spark, workdir) for name in TRANSFORMS}
            run_abba(NAME, variants, max(rows // 10, 10_000), 1, "warm")
            runs = run_abba(NAME, variants, rows, repeat, "run")
        finally:
            spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    ratios, figures = ratio_figures({"sql_transform_ratio_vs_python_transform": paired(runs, "sql", "python")})
    labels = {"sql": "Sql transform (DuckDB per batch)", "python": "Python transform (pyarrow.compute)"}
    table_rows = []
    for variant, entries in runs.items():
        speeds = summary(r["rows_per_s"] for r in entries)
        table_rows.append([labels[variant], speeds["median"], f"{speeds['min']:,.0f} - {speeds['max']:,.0f}"])
    result = {
        "benchmark": NAME,
        "description": (f"{rows:,} input rows per run (one in ten filtered out), Sequence -> transform -> File "
                        f"parquet, {MASTER}, parallelism {PARALLELISM}, checkpoint every {INTERVAL_MS} ms, "
                        f"{repeat} ABBA repetitions; outputs checked id by id."),
        "machine": machine,
        "settings": {"quick": args.quick, "rows": rows, "repeat": repeat, "checkpoint_interval_ms": INTERVAL_MS,
                     "query": PROJECTION_FILTER_SQL},
        "summary": figures,
        "ratios": ratios,
        "table": {"columns": ["transform", "rows/s (median)", "range"], "rows": table_rows},
        "targets": [{"figure": key, "target": f">= {GOAL}", "value": figures[key], "met": figures[key] >= GOAL}
                    for key in ratios],
        "notes": ["rows/s count input rows; both variants keep and write the same 90 %."],
        "runs": described(runs),
    }
    emit(result, NAME, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
