"""Scale, skewed splits (issue #51, item 1): one file ten times larger than the others.

A subtask that reads a fixed round-robin share of the files ends long after the other
when one file is ten times larger: with 20 files (one of 10 units, 19 of 1) and
parallelism 2, the big file's share is 10 + 9 = 19 units against an ideal 14.5, 1.31x.
Dealt on request (engine/split_enumerator.py), the other subtask reads the small files
while one reads the big one.

Two layouts of the same rows, each run ``--repeat`` times in turn by a real
``seatunnel-ckpt run`` (``File`` parquet -> ``File`` parquet, parallelism 2 on
``local[2]``, 1 s checkpoints to local disk):

* **skewed**: ``a-big.parquet`` of 10 units (listed first: plan index 0) and 19 files of 1;
* **even**: 29 files of 1 unit, the ideal: no layout reads these rows faster.

The time of a run is from the driver's line that starts the attempt (``attempt 1: 2
subtasks, N splits``, printed as the Spark job starts) to its final checkpoint's
``completed`` line, so the JVM's start is not in it. Headline
``skewed_files_wall_ratio_vs_ideal`` = median skewed time / median even time (goal
<= 1.2). Every run's output is checked id by id (each id once).

``python bench/scale_skew.py [--unit-rows 5000000] [--repeat 3] [--quick] [--no-out]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._procs import Proc
from bench.common import emit, machine_info, progress, write_local_job

NAME = "scale_skew"
GOAL = 1.2
SMALL_FILES = 19
BIG_UNITS = 10
QUICK_UNIT_ROWS = 100_000


def log(message: str) -> None:
    progress(NAME, message)


def write_layouts(root: Path, unit_rows: int) -> dict[str, Path]:
    """The two input directories; ids 0 .. 29 units - 1 in both."""
    units = BIG_UNITS + SMALL_FILES
    layouts = {
        "skewed": [("a-big", BIG_UNITS)] + [(f"b-{i:02d}", 1) for i in range(SMALL_FILES)],
        "even": [(f"b-{i:02d}", 1) for i in range(units)],
    }
    out = {}
    for name, files in layouts.items():
        directory = root / name
        directory.mkdir(parents=True)
        start = 0
        for file_name, size in files:
            ids = np.arange(start, start + size * unit_rows, dtype=np.int64)
            table = pa.table({"id": ids, "v": (ids % 1000).astype(np.float64)})
            pq.write_table(table, directory / f"{file_name}.parquet", row_group_size=256 * 1024)
            start += size * unit_rows
        out[name] = directory
    return out


def run_once(work: Path, name: str, inputs: Path, index: int, rows: int) -> float:
    """One run of a layout; its seconds from the attempt's start line to the final checkpoint."""
    run_dir = work / f"{name}-{index}"
    output = run_dir / "out"
    job = {
        "env": {"job.name": f"skew-{name}", "parallelism": 2},
        "source": [{"plugin_name": "File", "path": f"file://{inputs}/", "format": "parquet"}],
        "sink": [{"plugin_name": "File", "path": f"file://{output}/", "format": "parquet"}],
    }
    run_dir.mkdir(parents=True)
    job_path, config_path = write_local_job(run_dir, job, {"interval": 1000}, f"{run_dir}/checkpoints/")
    command = [
        str(Path(sys.executable).parent / "seatunnel-ckpt"),
        "run",
        str(job_path),
        "--config",
        str(config_path),
        "--job-id",
        f"skew-{name}-{index}",
        "--master",
        "local[2]",
    ]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = Proc(command, env, run_dir / "driver.log")
    code = proc.proc.wait(timeout=1800)
    time.sleep(0.2)  # the reader thread takes the last lines
    if code != 0:
        raise SystemExit(f"{name} run {index} exited {code}: see {run_dir / 'driver.log'}")
    started = next(t for t, line in proc.lines if " attempt 1: " in line and " splits, from " in line)
    finished = next(t for t, line in proc.lines if "(final) completed" in line)
    seen = np.zeros(rows, dtype=bool)
    count = 0
    for path in output.rglob("part-*.parquet"):
        ids = pq.read_table(path, columns=["id"]).column("id").to_numpy()
        count += len(ids)
        seen[ids] = True
    if count != rows or not seen.all():
        raise SystemExit(f"{name} run {index}: {count} rows out, {int(seen.sum())} distinct of {rows} ids")
    shutil.rmtree(output, ignore_errors=True)
    return finished - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unit-rows", type=int, default=5_000_000, help="rows of a small file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_UNIT_ROWS:,} rows a unit, once")
    parser.add_argument("--out", action="store_true", help="write the result file (the default)")
    parser.add_argument("--no-out", action="store_true", help="do not write bench/results/scale_skew.json")
    args = parser.parse_args()
    unit_rows = QUICK_UNIT_ROWS if args.quick else args.unit_rows
    repeat = 1 if args.quick else args.repeat
    rows = (BIG_UNITS + SMALL_FILES) * unit_rows
    work = Path(tempfile.mkdtemp(prefix="scale_skew_"))
    try:
        log(f"{rows:,} rows in 20 files (one of {BIG_UNITS} units) and in 29 even files; {repeat} runs each")
        layouts = write_layouts(work / "inputs", unit_rows)
        seconds: dict[str, list[float]] = {"skewed": [], "even": []}
        for index in range(repeat):
            for name in ("skewed", "even"):  # in turn: a busy moment of the machine hits both
                took = run_once(work, name, layouts[name], index, rows)
                seconds[name].append(round(took, 3))
                log(f"{name} run {index + 1}: {took:.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    skewed, even = statistics.median(seconds["skewed"]), statistics.median(seconds["even"])
    ratio = round(skewed / even, 3)
    result: dict[str, Any] = {
        "benchmark": NAME,
        "description": (
            f"File parquet -> File parquet, parallelism 2, 1 s checkpoints: {rows:,} rows in one file of "
            f"{BIG_UNITS} units and {SMALL_FILES} of 1 unit ({unit_rows:,} rows), against the same rows in "
            f"{BIG_UNITS + SMALL_FILES} even files"
        ),
        "machine": machine_info(),
        "settings": {"unit_rows": unit_rows, "repeat": repeat, "parallelism": 2, "interval_ms": 1000},
        "results": {"seconds": seconds, "rows": rows},
        "summary": {
            "skewed_files_wall_ratio_vs_ideal": ratio,
            "scale_skew_skewed_s_median": skewed,
            "scale_skew_even_s_median": even,
            "scale_skew_round_robin_ratio_arithmetic": round(
                (BIG_UNITS + SMALL_FILES // 2) / ((BIG_UNITS + SMALL_FILES) / 2), 3
            ),
        },
        "targets": [
            {
                "figure": "skewed files: time / the same rows in even files (median of runs)",
                "target": f"<= {GOAL}",
                "value": ratio,
                "met": ratio <= GOAL,
            }
        ],
        "notes": [
            "Time: from the driver's attempt line (the Spark job starts) to the final checkpoint's completed line.",
            "Round-robin shares (before issue 51) give the big file's subtask 10 + 9 units against an ideal of "
            "14.5: 1.31 by arithmetic (scale_skew_round_robin_ratio_arithmetic), not measured here.",
        ],
        "plots": [],
    }
    emit(result, NAME, write=not args.no_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
