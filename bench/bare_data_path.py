"""The jobs' per-row work without the engine: a control for what the machine itself loses
when many busy processes share its cores.

``scale_jobs.py`` compares N checkpointed jobs at once with one job alone. With N jobs of
parallelism P, N x P PySpark workers share the machine's cores, and each row costs more
CPU than it does alone, engine or not: caches are shared and refilled at every switch,
and memory is reclaimed and faulted in again. This module measures that part alone.

``run(processes, seconds, ...)`` starts ``processes`` plain Python processes; once all
have imported and set up, they start together. Each one does a subtask's per-row work
and nothing else, for ``seconds``:

* batches of ``batch_size`` ids built the way the ``Sequence`` source builds them;
* the job's query run over each batch by the ``Sql`` transform's own ``BatchQuery``
  (DuckDB, one thread);
* the result written by pyarrow's parquet writer (snappy), with a new file every second,
  as the ``File`` sink starts one at every checkpoint.

There is no Spark, no control channel, no checkpoint and no fsync. Each process reports
its rows and CPU seconds. ``compare`` runs the processes of one job alone (P) and of each
N (N x P) in turns, several rounds, and returns per N the median ratio of total rows/s
(the throughput ratio of the bare path) and of rows per CPU second.

``python bench/bare_data_path.py [--processes 2,16] [--seconds 12] [--rounds 3]``
prints the comparison as JSON (no result file: scale_jobs.py records it with its run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: a new output file this often, as the File sink starts one at every 1 s checkpoint
FILE_SECONDS = 1.0


def work(seconds: float, batch_size: int, query: str, directory: str, ready: Any = None) -> dict[str, Any]:
    """One process's share: batches through the query into parquet files for ``seconds``.

    The imports, the query's set-up and a first batch come before the timing, then
    ``ready()`` (when given) waits for the start: processes started together spend their
    first seconds importing pyarrow and DuckDB, and timed from their own ends of that they
    would each count a different share of the others' imports."""
    import pyarrow.parquet as pq

    from airflow_provider_seatunnel_ckpt.sql.batch_query import BatchQuery
    from bench.workloads import sequence_batches

    batch_query = BatchQuery(query, "query") if query else None
    batches = sequence_batches(2**62, payload_bytes=0, batch_size=batch_size)  # ids without end, as Sequence's
    first = next(batches)
    if batch_query:
        batch_query.run(first, "query")  # the query compiled and DuckDB connected
    if ready is not None:
        ready()
    writer, files, rows = None, 0, 0
    started = time.monotonic()
    file_started = started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    while time.monotonic() - started < seconds:
        batch = next(batches)
        result = batch_query.run(batch, "query") if batch_query else batch
        if result is None:
            continue
        if writer is None or time.monotonic() - file_started >= FILE_SECONDS:
            if writer is not None:
                writer.close()
            path = os.path.join(directory, f"part-{files}.parquet")
            writer = pq.ParquetWriter(path, result.schema, compression="snappy")
            files, file_started = files + 1, time.monotonic()
        writer.write_batch(result)
        rows += result.num_rows
    if writer is not None:
        writer.close()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    return {"rows": rows, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "files": files}


def _wait_for_start() -> None:
    """A child's ``ready``: say so on stdout, then block until the parent's line on stdin."""
    print("ready", flush=True)
    sys.stdin.readline()


def run(processes: int, seconds: float, batch_size: int, query: str) -> dict[str, Any]:
    """``processes`` workers started together; once every one has imported and set up,
    all start at once: their total rows/s and rows per CPU second."""
    with tempfile.TemporaryDirectory(prefix="bare-path-") as tmp:
        children = []
        try:
            for i in range(processes):
                directory = os.path.join(tmp, str(i))
                os.makedirs(directory)
                command = [sys.executable, __file__, "--child", str(seconds), str(batch_size), query, directory]
                children.append(subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            for child in children:
                if child.stdout is None or child.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"a bare data path process failed (exit {child.wait()})")
            for child in children:  # the start: every one is set up
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.flush()
            reports = []
            for child in children:
                out, _ = child.communicate()
                if child.returncode != 0:
                    raise RuntimeError(f"a bare data path process failed (exit {child.returncode})")
                reports.append(json.loads(out))
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait()
    rows = sum(r["rows"] for r in reports)
    wall = max(r["wall_s"] for r in reports)
    cpu = sum(r["cpu_s"] for r in reports)
    return {
        "processes": processes,
        "rows": rows,
        "rows_per_s": round(rows / wall),
        "rows_per_cpu_s": round(rows / cpu) if cpu else None,
    }


def compare(
    parallelism: int, counts: list[int], seconds: float, rounds: int, batch_size: int, query: str
) -> dict[str, Any]:
    """One job's workers (``parallelism`` processes) against N jobs' (N x parallelism) for
    every N of ``counts`` above 1, in turns, ``rounds`` times: per N the medians over the
    rounds of (rows/s of N x P) / (rows/s of P) and the same for rows per CPU second."""
    sizes = [parallelism] + [n * parallelism for n in counts if n > 1]
    measured: dict[int, list[dict[str, Any]]] = {size: [] for size in sizes}
    for _ in range(rounds):
        for size in sizes:
            measured[size].append(run(size, seconds, batch_size, query))
    alone = measured[parallelism]
    ratios: dict[str, Any] = {}
    for n in counts:
        if n <= 1:
            continue
        runs = measured[n * parallelism]
        ratios[str(n)] = {
            "processes": n * parallelism,
            "throughput_ratio": round(
                statistics.median(r["rows_per_s"] / a["rows_per_s"] for r, a in zip(runs, alone)), 3
            ),
            "cpu_efficiency_ratio": round(
                statistics.median(r["rows_per_cpu_s"] / a["rows_per_cpu_s"] for r, a in zip(runs, alone)), 3
            ),
        }
    return {
        "seconds_per_run": seconds,
        "rounds": rounds,
        "batch_size": batch_size,
        "query": query,
        "runs": {str(size): runs for size, runs in measured.items()},
        "ratios": ratios,
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        seconds, batch_size, query, directory = sys.argv[2:6]
        print(json.dumps(work(float(seconds), int(batch_size), query, directory, ready=_wait_for_start)))
        return 0
    from bench.scale_jobs import BATCH_SIZE, PARALLELISM, QUERY

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default="1,8", help="job counts to compare (N x parallelism processes)")
    parser.add_argument("--parallelism", type=int, default=PARALLELISM)
    parser.add_argument("--seconds", type=float, default=12.0, help="seconds of each run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--query", default=QUERY)
    args = parser.parse_args()
    counts = [int(x) for x in args.jobs.split(",") if x.strip()]
    found = compare(args.parallelism, counts, args.seconds, args.rounds, args.batch_size, args.query)
    print(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
