"""Side by side with the peers: this engine, SeaTunnel's Zeta and Flink on the same job,
each as its user runs it, on the same 2 cores, in one run.

The workload is FakeSource -> Sql -> LocalFile (parquet), parallelism 2, with exactly-once
checkpoints every second (and, for the overhead, without periodic ones):

* ours: the job file below, unchanged, with ``seatunnel-ckpt run --master local[2]``
  (spark-submit's driver, a local Spark and its Python workers);
* Zeta: the same job file, on SeaTunnel 2.3.4's engine in local mode (bench/peers/zeta.py);
* Flink: the same pipeline in Flink SQL (``datagen`` -> the same query -> a parquet
  ``filesystem`` sink) on PyFlink 2.3's local MiniCluster (bench/peers/flink.py).

Each run is a whole process, timed from its start to its exit, with the peak resident
memory of its process tree. A process's start (a JVM, a Spark or Flink cluster in it) is
a fixed cost that no row pays, so throughput is taken at the margin: the rows of a large
job over its wall time minus that of a tiny job of the same engine in the same repetition.
The engines take turns (ABBA: the order reverses on every other repetition); every run's
output rows are counted, and a run that lost or added rows fails the benchmark.

Keys (summary.json): ``peer_throughput_ratio_vs_{zeta,flink}`` (ours over theirs, 1 s
checkpoints), ``peer_ckpt_overhead_{ours,zeta,flink}`` (throughput with 1 s checkpoints
over without), ``peer_memory_ratio_vs_{zeta,flink}`` (peak RSS, ours over theirs).

``python bench/peers_bench.py [--quick] [--out] [--repeat N] [--rows N]``
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow.dataset as ds

from bench.common import emit, machine_info, progress, summary
from bench.peers import flink, zeta
from bench.peers.process import PeerRun, run_logged

NAME = "peers"
PARALLELISM = 2
INTERVAL_MS = 1000
#: "without periodic checkpoints": longer than any run (ours and Zeta still take the final one)
NO_CHECKPOINT_MS = 3_600_000
TINY_ROWS = 2_000
ENGINES = ("ours", "zeta", "flink")

JOB = """\
env {
  parallelism = %(parallelism)d
  job.mode = "BATCH"
  checkpoint.interval = %(interval)d
}
source {
  FakeSource {
    result_table_name = "fake"
    row.num = %(rows_per_reader)d
    split.num = 4
    schema = { fields { id = "bigint", name = "string", score = "double" } }
  }
}
transform {
  Sql {
    source_table_name = "fake"
    result_table_name = "shaped"
    query = "%(query)s"
  }
}
sink {
  LocalFile {
    source_table_name = "shaped"
    path = "%(out)s"
    file_format_type = "parquet"
  }
}
"""

OUR_CONFIG = """\
seatunnel:
  engine:
    checkpoint:
      interval: %(interval)d
      timeout: 120000
      storage:
        type: hdfs
        max-retained: 3
        plugin-config:
          storage.type: local
          namespace: %(work)s/checkpoints/
"""


def _job_file(work: Path, rows: int, interval_ms: int) -> tuple[Path, Path]:
    out = work / "out"
    job = work / "job.conf"
    job.write_text(
        JOB
        % {
            "parallelism": PARALLELISM,
            "interval": interval_ms,
            # FakeSource's row.num is per reader, in SeaTunnel and here
            "rows_per_reader": rows // PARALLELISM,
            "query": flink.WORKLOAD_QUERY,
            "out": out,
        }
    )
    return job, out


def _rows_written(out: Path) -> int:
    files = [str(p) for p in out.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
    return ds.dataset(files, format="parquet").count_rows() if files else 0


def run_ours(rows: int, interval_ms: int, work: Path) -> tuple[PeerRun, Path]:
    job, out = _job_file(work, rows, interval_ms)
    config = work / "seatunnel.yaml"
    config.write_text(OUR_CONFIG % {"interval": interval_ms, "work": work})
    cli = Path(sys.executable).with_name("seatunnel-ckpt")
    command = [str(cli), "run", str(job), "--config", str(config), "--job-id", "peers", "--master", "local[2]"]
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    log = work / "ours.log"
    finished = run_logged(command, cwd=work, env=env, log=log, timeout_s=1800)
    run = PeerRun(
        **finished.run_fields(),
        work_dir=work,
        log=log,
        checkpoint_dir=work / "checkpoints",
        command=command,
    )
    return run, out


def run_zeta(rows: int, interval_ms: int, work: Path) -> tuple[PeerRun, Path]:
    job, out = _job_file(work, rows, interval_ms)
    return zeta.run_job(job, checkpoint_interval_ms=interval_ms, work_dir=work / "run", timeout_s=1800), out


def run_flink(rows: int, interval_ms: int, work: Path) -> tuple[PeerRun, Path]:
    out = work / "out"
    statements = flink.datagen_sql_to_parquet(rows, out)
    return flink.run_pipeline(
        statements, checkpoint_interval_ms=interval_ms, work_dir=work / "run", timeout_s=1800
    ), out


RUNNERS: dict[str, Callable[[int, int, Path], tuple[PeerRun, Path]]] = {
    "ours": run_ours,
    "zeta": run_zeta,
    "flink": run_flink,
}


def measure(engine: str, rows: int, interval_ms: int, root: Path, tag: str) -> dict[str, Any]:
    work = root / f"{engine}-{tag}"
    work.mkdir(parents=True)
    run, out = RUNNERS[engine](rows, interval_ms, work)
    if run.exit_code != 0 or run.timed_out:
        tail = run.log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{engine} {tag}: exit {run.exit_code}, timed out {run.timed_out}; log ends:\n{tail}")
    written = _rows_written(out)
    if written != rows:
        raise RuntimeError(f"{engine} {tag}: {written:,} rows written, {rows:,} expected")
    result = {"wall_s": run.wall_s, "peak_rss_mib": run.peak_rss_mib, "rows": rows}
    shutil.rmtree(work, ignore_errors=True)
    progress(NAME, f"{engine} {tag}: {rows:,} rows in {run.wall_s:.1f} s, peak {run.peak_rss_mib:,.0f} MiB")
    return result


def main() -> None:
    from bench.engine_runs import bench_arguments

    args = bench_arguments(__doc__ or "", NAME, "rows of the large job (default 4,000,000)").parse_args()
    rows = args.rows or (200_000 if args.quick else 4_000_000)
    repeat = args.repeat or (1 if args.quick else 3)
    zeta.ensure_home()
    flink.ensure_flink()
    root = Path(tempfile.mkdtemp(prefix="peers-bench-"))
    runs: dict[str, list[dict[str, Any]]] = {engine: [] for engine in ENGINES}
    try:
        for rep in range(repeat):
            order = ENGINES if rep % 2 == 0 else ENGINES[::-1]
            for engine in order:
                tiny = measure(engine, TINY_ROWS, INTERVAL_MS, root, f"tiny-{rep}")
                with_ckpt = measure(engine, rows, INTERVAL_MS, root, f"ckpt-{rep}")
                without = measure(engine, rows, NO_CHECKPOINT_MS, root, f"nockpt-{rep}")
                runs[engine].append(
                    {
                        "tiny": tiny,
                        "checkpointed": with_ckpt,
                        "unchecked": without,
                        # the margin: what the rows cost beyond starting the engine
                        "rows_per_s": round((rows - TINY_ROWS) / max(with_ckpt["wall_s"] - tiny["wall_s"], 1e-3), 1),
                        "rows_per_s_unchecked": round(
                            (rows - TINY_ROWS) / max(without["wall_s"] - tiny["wall_s"], 1e-3), 1
                        ),
                        "peak_rss_mib": with_ckpt["peak_rss_mib"],
                    }
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def per_rep(key: str, engine: str) -> list[float]:
        return [r[key] for r in runs[engine]]

    ratios: dict[str, list[float]] = {}
    for peer in ("zeta", "flink"):
        ratios[f"peer_throughput_ratio_vs_{peer}"] = [
            round(a / b, 4) for a, b in zip(per_rep("rows_per_s", "ours"), per_rep("rows_per_s", peer))
        ]
        ratios[f"peer_memory_ratio_vs_{peer}"] = [
            round(a / b, 4) for a, b in zip(per_rep("peak_rss_mib", "ours"), per_rep("peak_rss_mib", peer))
        ]
    for engine in ENGINES:
        ratios[f"peer_ckpt_overhead_{engine}"] = [
            round(a / b, 4) for a, b in zip(per_rep("rows_per_s", engine), per_rep("rows_per_s_unchecked", engine))
        ]
    figures = {key: summary(values, 3) for key, values in ratios.items()}
    flat = {key: value["median"] for key, value in figures.items()}
    emit(
        {
            "machine": machine_info(),
            "rows": rows,
            "repeat": repeat,
            "interval_ms": INTERVAL_MS,
            "engines": {
                "ours": "this engine, seatunnel-ckpt run --master local[2]",
                "zeta": f"SeaTunnel {zeta.SEATUNNEL_VERSION} (Zeta, local mode)",
                "flink": f"Flink {flink.FLINK_VERSION} (PyFlink, local MiniCluster)",
            },
            "per_engine": {
                engine: {
                    "rows_per_s": summary(per_rep("rows_per_s", engine)),
                    "rows_per_s_unchecked": summary(per_rep("rows_per_s_unchecked", engine)),
                    "peak_rss_mib": summary(per_rep("peak_rss_mib", engine)),
                    "runs": runs[engine],
                }
                for engine in ENGINES
            },
            "ratios": figures,
            **flat,
        },
        NAME,
        write=args.out,
    )


if __name__ == "__main__":
    main()
