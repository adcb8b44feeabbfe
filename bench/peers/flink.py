"""Run a Flink SQL pipeline on Flink 2.3 (PyFlink from PyPI), checkpointed exactly-once.

PyFlink runs the pipeline in a local MiniCluster inside the JVM its Python process starts.
``scripts/jvm-servers flink`` installs it into a virtualenv of its own (.cache/flink/venv,
from tests/servers/flink/requirements.txt: its pins conflict with the project's lock) and
resolves what its lib/ lacks for a parquet file sink (the manifest's ``flink`` profile:
``flink-sql-parquet`` and Hadoop's shaded client), which each run adds to
``pipeline.jars``. bench/peers/flink_job.py is the program PyFlink's Python runs.

``python -m bench.peers.flink [--rows N] [--checkpoint-interval-ms MS]`` runs the
FakeSource -> Sql -> LocalFile workload's Flink form (``datagen`` -> a SQL projection and
filter -> ``filesystem`` parquet) and prints its timings as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peers.process import REPO_ROOT, PeerRun, ensure_installed, run_logged

FLINK_VERSION = "2.3.0"  # tests/servers/flink/requirements.txt, tests/servers/jvm/pom.xml
CACHE = REPO_ROOT / ".cache" / "flink"
JOB_PROGRAM = Path(__file__).with_name("flink_job.py")


@dataclass
class FlinkRun(PeerRun):
    """A ``PeerRun`` (``wall_s``: Python, the JVM, the MiniCluster, the job, shutdown),
    with ``job_s``: from submitting the pipeline to its end."""

    job_s: float | None = None


def ensure_flink() -> Path:
    """PyFlink's Python, installed on first use (``scripts/jvm-servers flink``: about 20 s
    and 750 MB from an empty cache, then a stamp check)."""
    ensure_installed("flink")
    return CACHE / "venv" / "bin" / "python"


def extra_jars() -> list[str]:
    """file: URLs of the jars the flink profile resolved (parquet format, Hadoop client)."""
    jars = (CACHE / "flink.classpath").read_text().strip().split(os.pathsep)
    return [Path(jar).resolve().as_uri() for jar in jars if jar]


@dataclass
class FlinkLaunch:
    """A Flink run laid out in its work directory, not started yet."""

    command: list[str]
    env: dict[str, str]
    work_dir: Path
    log: Path
    checkpoint_dir: Path


def prepare_pipeline(
    statements: Sequence[str],
    *,
    parallelism: int = 2,
    checkpoint_interval_ms: int | None = 1000,
    work_dir: str | os.PathLike | None = None,
    settings: Mapping[str, Any] | None = None,
    log_name: str = "flink.log",
) -> FlinkLaunch:
    """Lay out a run of the SQL ``statements`` (see ``run_pipeline``) and build its command;
    ``log_name`` and a ``settings`` file of its own let a second launch share ``work_dir``."""
    python = ensure_flink()
    work = (Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="flink-run-"))).resolve()
    checkpoints = work / "checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "parallelism.default": parallelism,
        "pipeline.jars": ";".join(extra_jars()),
        "execution.checkpointing.dir": checkpoints.as_uri(),
    }
    if checkpoint_interval_ms is not None:
        config["execution.checkpointing.interval"] = f"{int(checkpoint_interval_ms)}ms"
        config["execution.checkpointing.mode"] = "EXACTLY_ONCE"
    config.update(settings or {})
    spec = work / f"{Path(log_name).stem}.spec.json"
    spec.write_text(json.dumps({"settings": config, "statements": list(statements)}, indent=2))
    command = [str(python), str(JOB_PROGRAM), str(spec)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return FlinkLaunch(command, env, work, work / log_name, checkpoints)


def run_pipeline(
    statements: Sequence[str],
    *,
    parallelism: int = 2,
    checkpoint_interval_ms: int | None = 1000,
    work_dir: str | os.PathLike | None = None,
    settings: Mapping[str, Any] | None = None,
    timeout_s: float = 600.0,
) -> FlinkRun:
    """Run the SQL ``statements`` (tables first, the pipeline last) and wait for the job.

    Checkpoints exactly-once every ``checkpoint_interval_ms`` (None: none) into the run's
    ``checkpoints/`` (a finished job's are discarded, as Flink does). ``settings`` add or override Flink
    configuration keys. ``work_dir`` (default: a new temporary directory, kept) gets
    ``flink.spec.json``, ``checkpoints/`` and ``flink.log`` (the process's stdout and stderr)."""
    launch = prepare_pipeline(
        statements,
        parallelism=parallelism,
        checkpoint_interval_ms=checkpoint_interval_ms,
        work_dir=work_dir,
        settings=settings,
    )
    log = launch.log
    finished = run_logged(launch.command, cwd=launch.work_dir, env=launch.env, log=log, timeout_s=timeout_s)
    job_s = None
    lines = log.read_text(errors="replace").strip().splitlines()
    if finished.exit_code == 0 and lines and lines[-1].startswith("{"):
        job_s = json.loads(lines[-1]).get("job_s")
    return FlinkRun(
        **finished.run_fields(),
        work_dir=launch.work_dir,
        log=log,
        checkpoint_dir=launch.checkpoint_dir,
        command=launch.command,
        job_s=job_s,
    )


def latest_checkpoint(checkpoints: Path) -> Path | None:
    """The newest retained checkpoint under ``checkpoints`` (``<job id>/chk-N`` with its
    ``_metadata``, the completed ones only), for ``execution.savepoint.path``."""
    done = [p.parent for p in checkpoints.glob("*/chk-*/_metadata")]
    return max(done, key=lambda p: (p.stat().st_mtime, int(p.name.split("-")[1])), default=None)


#: the workload's SQL transform, in both engines' dialects (FakeSource's and datagen's
#: columns: id, name, score)
WORKLOAD_QUERY = "SELECT id, UPPER(name) AS name, score * 2 AS score2 FROM fake WHERE score >= 0"


def datagen_sql_to_parquet(rows: int, out: str | os.PathLike, rows_per_second: int = 10_000_000) -> list[str]:
    """FakeSource -> Sql -> LocalFile in Flink's terms: ``datagen`` with ids 0..rows-1 (a
    sequence), an 8-character name and a score in [0, 1000), the workload's query, a
    parquet ``filesystem`` sink. datagen's default rate caps it at 10,000 rows/s: raised,
    to measure like for like."""
    return [
        f"""CREATE TABLE fake (id BIGINT, name STRING, score DOUBLE) WITH (
            'connector' = 'datagen', 'number-of-rows' = '{int(rows)}',
            'rows-per-second' = '{int(rows_per_second)}',
            'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '{int(rows) - 1}',
            'fields.name.length' = '8', 'fields.score.min' = '0', 'fields.score.max' = '1000')""",
        f"""CREATE TABLE sink (id BIGINT, name STRING, score2 DOUBLE) WITH (
            'connector' = 'filesystem', 'path' = '{Path(out).resolve().as_uri()}', 'format' = 'parquet')""",
        f"INSERT INTO sink {WORKLOAD_QUERY}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The FakeSource -> Sql -> LocalFile workload on Flink, timed.")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--checkpoint-interval-ms", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args(argv)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="flink-bench-"))
    run = run_pipeline(
        datagen_sql_to_parquet(args.rows, work / "out"),
        parallelism=args.parallelism,
        checkpoint_interval_ms=args.checkpoint_interval_ms,
        work_dir=work / "run",
    )
    print(json.dumps(run.as_json(), indent=2))
    return 0 if run.exit_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
