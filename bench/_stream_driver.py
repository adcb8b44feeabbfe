"""One driver process of streaming_compare_bench.py: our engine or Spark Structured Streaming.

``python -m bench._stream_driver --side ours|theirs --input DIR --output DIR --checkpoint DIR
--rows N --interval-ms MS --job-id ID [--max-files-per-trigger K] [--transform plain|logged]``

Both sides build the same SparkSession (the engine's ``build_spark``: ``local[2]``, the
venv's Python for workers) and run the same pipeline over the same input files:

* ours: ``JobRun(RunRequest(...)).run(spark)``: ``File`` source (parquet) -> ``Python``
  transform -> ``File`` parquet sink (2PC), checkpoints every ``interval`` ms on local
  disk, restore ``latest`` (so a rerun with the same ``--checkpoint`` resumes);
* theirs: ``readStream.parquet`` -> ``mapInArrow`` (the same pyarrow function) ->
  ``writeStream.format("parquet")`` with ``checkpointLocation`` and a processing-time
  trigger of ``interval`` ms (exactly-once file sink: ``_spark_metadata`` log); a rerun
  with the same checkpoint location resumes. It is stopped once the committed output
  (the files listed in ``_spark_metadata``) holds all ``rows`` rows.

Events go to stderr as ``BENCHEVENT {json}`` lines (with the wall time they happened).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq


def event(kind: str, **fields: Any) -> None:
    fields.setdefault("wall", time.time())
    print("BENCHEVENT " + json.dumps({"event": kind, **fields}), file=sys.stderr, flush=True)


# ---- committed output of a Structured Streaming file sink ------------------------------------
def spark_committed_files(output: str) -> list[str]:
    """Files the ``_spark_metadata`` log lists as added (what ``spark.read`` would see)."""
    meta = Path(output) / "_spark_metadata"
    files: set[str] = set()
    if not meta.is_dir():
        return []
    for entry in meta.iterdir():
        if entry.name.startswith(".") or entry.name.endswith(".tmp"):
            continue
        try:
            lines = entry.read_text().splitlines()
        except OSError:
            continue
        for line in lines[1:]:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("action", "add") == "add":
                files.add(record["path"])
            else:
                files.discard(record["path"])
    return sorted(p.removeprefix("file://") for p in files)


class CommittedRows:
    """Rows in the committed output of a Structured Streaming query (footers cached)."""

    def __init__(self, output: str):
        self.output = output
        self._rows: dict[str, int] = {}

    def count(self) -> int:
        total = 0
        for path in spark_committed_files(self.output):
            if path not in self._rows:
                self._rows[path] = pq.read_metadata(path).num_rows
            total += self._rows[path]
        return total


def _iso_ms(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


CURRENT: dict[str, Any] = {"run": None, "progress": []}


def build_job(
    args: argparse.Namespace, run: str, output: str, checkpoint: str, max_file_bytes: int = 0
) -> tuple[Any, Any]:
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    function = "bench._idlog:transform" if args.transform == "logged" else "bench.workloads:transform"
    job = load_job(
        {
            "env": {
                "job.name": run,
                "parallelism": 2,
                "checkpoint.interval": args.interval_ms,
                "checkpoint.timeout": 120_000,
            },
            "source": [{"plugin_name": "File", "path": f"file://{args.input}/", "format": "parquet"}],
            "transform": [{"plugin_name": "Python", "function": function}],
            "sink": [
                {
                    "plugin_name": "File",
                    "path": f"file://{output}/",
                    "format": "parquet",
                    **({"max_file_bytes": max_file_bytes} if max_file_bytes else {}),
                }
            ],
        }
    )
    config = load_config(
        {
            "seatunnel": {
                "engine": {
                    "checkpoint": {
                        "interval": args.interval_ms,
                        "timeout": 120_000,
                        "storage": {
                            "type": "hdfs",
                            "max-retained": 3,
                            "plugin-config": {
                                "storage.type": "hdfs",
                                "fs.defaultFS": "file:///",
                                "namespace": f"{checkpoint}/",
                            },
                        },
                    }
                }
            }
        },
        job_env=job.env,
    )
    return job, config


def run_ours(
    spark: Any, args: argparse.Namespace, run: str, output: str, checkpoint: str, max_file_bytes: int = 0
) -> bool:
    from airflow_provider_seatunnel_ckpt.engine.runner import JobRun, RunRequest

    job, config = build_job(args, run, output, checkpoint, max_file_bytes)
    request = RunRequest(job=job, config=config, job_id=args.job_id or run, restore="latest", master="local[2]")

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        if " completed in " in line and line.startswith("checkpoint "):
            event("checkpoint", run=run, line=line)

    job_run = JobRun(request, progress=progress)
    event("t0", run=run)
    outcome = job_run.run(spark)
    end = time.time()
    records = [
        {"id": r.checkpoint_id, "kind": r.kind, "duration_ms": r.duration_ms, "rows": r.rows} for r in outcome.completed
    ]
    event(
        "done",
        run=run,
        wall=end,
        end=end,
        finished=bool(outcome.finished),
        error=outcome.error,
        checkpoints=records,
        restored_from=job_run.restored_id,
    )
    return bool(outcome.finished)


def run_theirs(spark: Any, args: argparse.Namespace, run: str, output: str, checkpoint: str, max_files: int) -> bool:
    from bench import _idlog, workloads

    batch_fn = _idlog.transform_batches if args.transform == "logged" else workloads.transform_batches
    committed = CommittedRows(output)
    before = committed.count()  # rows committed by an earlier (killed) run
    CURRENT["run"], CURRENT["progress"] = run, []
    event("restored", run=run, committed_rows=before)
    event("t0", run=run)
    reader = spark.readStream.schema("id bigint, payload binary")
    if max_files:
        reader = reader.option("maxFilesPerTrigger", max_files)
    frame = reader.parquet(args.input).mapInArrow(batch_fn, workloads.SPARK_OUTPUT_DDL)
    query = (
        frame.writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{args.interval_ms} milliseconds")
        .start()
    )
    rows = before
    while True:
        if query.exception() is not None:
            event("done", run=run, finished=False, error=str(query.exception())[:2000])
            return False
        rows = committed.count()
        if rows >= args.rows:
            break
        time.sleep(0.05)
    seen = time.time()
    # the progress event of the batch that completed the output (it follows the commit)
    deadline = time.time() + 5
    end = None
    while time.time() < deadline:
        done_batches = [p for p in CURRENT["progress"] if p["rows"] > 0]
        if done_batches and sum(p["rows"] for p in done_batches) + before >= args.rows:
            last = max(done_batches, key=lambda p: p["batch"])
            end = last["trigger_start"] + last["duration_ms"].get("triggerExecution", 0) / 1000
            break
        time.sleep(0.05)
    query.stop()
    event("done", run=run, end=end if end is not None else seen, seen=seen, finished=True, committed_rows=rows)
    CURRENT["run"] = None
    return True


def main(argv: list[str] | None = None) -> int:
    event("process_start")
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--runs",
        required=True,
        help="comma-separated RUN=SIDE[:N] items (theirs:N = maxFilesPerTrigger, ours:N = the File sink's max_file_bytes), run in order in one SparkSession; "
        "each writes OUTPUT_ROOT/RUN/out and OUTPUT_ROOT/RUN/ckpt",
    )
    parser.add_argument("--input", required=True)
    parser.add_argument("--output-root", required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--job-id", default=None)
    parser.add_argument("--transform", choices=("plain", "logged"), default="plain")
    args = parser.parse_args(argv)

    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.engine.run_state import RunRequest
    from airflow_provider_seatunnel_ckpt.engine.spark_start import build_spark
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    warm = load_job(
        {
            "env": {"job.name": "session", "parallelism": 2},
            "source": [{"plugin_name": "Sequence", "rows": 1}],
            "sink": [{"plugin_name": "Console"}],
        }
    )
    spark = build_spark(RunRequest(job=warm, config=load_config({}), job_id="session", master="local[2]"))
    event("session_ready")

    from pyspark.sql.streaming import StreamingQueryListener

    class Listener(StreamingQueryListener):
        def onQueryStarted(self, e: Any) -> None:
            pass

        def onQueryProgress(self, e: Any) -> None:
            p = e.progress
            record = {
                "batch": p.batchId,
                "rows": p.numInputRows,
                "duration_ms": dict(p.durationMs or {}),
                "trigger_start": _iso_ms(p.timestamp),
            }
            if CURRENT["run"] is not None:
                CURRENT["progress"].append(record)
            event("progress", run=CURRENT["run"], **record)

        def onQueryIdle(self, e: Any) -> None:
            pass

        def onQueryTerminated(self, e: Any) -> None:
            pass

    spark.streams.addListener(Listener())
    ok = True
    for item in args.runs.split(","):
        run, _, side = item.partition("=")
        side, _, max_files = side.partition(":")
        output = os.path.join(args.output_root, run, "out")
        checkpoint = os.path.join(args.output_root, run, "ckpt")
        if side == "ours":
            ok = run_ours(spark, args, run, output, checkpoint, int(max_files or 0)) and ok
        else:
            ok = run_theirs(spark, args, run, output, checkpoint, int(max_files or 0)) and ok
    spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
