"""``seatunnel-ckpt run``: run a job file with checkpoints (driver in this process).

The same entry point is a spark-submit application::

    spark-submit --master spark://host:7077 $(python -c 'import airflow_provider_seatunnel_ckpt.engine.spark_app as m; print(m.__file__)') \\
        job.yaml --config seatunnel.yaml --job-id nightly
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from ..jobfile.variable_options import add_variable_arguments

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_JOB_FAILED = 1


def add_run_command(sub: Any) -> None:
    run = sub.add_parser("run", help="run a job file with checkpoints; resumes from the latest checkpoint by default")
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "job_file", help="job file (SeaTunnel's HOCON .conf, YAML or JSON): env, source, transform, sink"
    )
    parser.add_argument(
        "--config",
        help="seatunnel.yaml with the checkpoint configuration (default: $SEATUNNEL_CKPT_CONFIG, else built-in defaults)",
    )
    parser.add_argument("--job-id", help="stable id of this job; checkpoints are kept under it (default: the job name)")
    parser.add_argument(
        "--restore",
        default="latest",
        help="latest (default): resume from the newest valid checkpoint, "
        "or start fresh when there is none; none: refuse to run over existing checkpoints; or a checkpoint id",
    )
    parser.add_argument(
        "--discard-existing", action="store_true", help="with --restore none: delete the job's checkpoints first"
    )
    parser.add_argument(
        "--allow-non-restored-state",
        action="store_true",
        help="restore a checkpoint that holds output of a sink the job no longer has, dropping that "
        "output (without it such a restore is refused)",
    )
    parser.add_argument("--master", help="Spark master URL (default: from spark-submit, else local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark configuration")
    parser.add_argument(
        "-ck",
        "--check",
        action="store_true",
        help="check the job file and print how it is wired, "
        "then stop (SeaTunnel's --check): nothing is run and no system is contacted",
    )
    add_variable_arguments(parser)


def cmd_run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..errors import CheckpointError, ConfigError
    from ..extras import require
    from ..jobfile.job import load_job
    from ..jobfile.variable_options import job_variables

    # The job file first: each connector checks the extra it needs (one line naming the
    # pip install), then the engine's own; both before anything imports or starts Spark.
    job = load_job(args.job_file, job_variables(args))
    require("engine", "seatunnel-ckpt run")
    if getattr(args, "check", False):
        from .job_check import check_job

        print("\n".join(check_job(job)))
        return EXIT_OK

    from .run_state import RunRequest
    from .spark_settings import check_spark_settings
    from .spark_start import SparkStart, starts_its_own_jvm
    from .yarn_attempt import application_master_attempt, restore_for_attempt

    config = load_config(args.config or os.environ.get("SEATUNNEL_CKPT_CONFIG") or None, job_env=job.env)
    spark_conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--conf", f"expected KEY=VALUE, got {item!r}")
        spark_conf[key.strip()] = value
    master = args.master
    # Under spark-submit the master is spark-submit's. Its launcher script sets
    # SPARK_ENV_LOADED; Spark's PythonRunner, which starts this driver, sets
    # PYSPARK_GATEWAY_PORT, also in YARN's application master (cluster mode), whose
    # container does not inherit the launcher's environment.
    under_spark_submit = "SPARK_ENV_LOADED" in os.environ or "PYSPARK_GATEWAY_PORT" in os.environ
    if master is None and not under_spark_submit and not os.environ.get("SEATUNNEL_CKPT_MASTER"):
        master = "local[*]"  # not under spark-submit: run locally
    restore, discard_existing = restore_for_attempt(args.restore, args.discard_existing)
    if (restore, discard_existing) != (args.restore, args.discard_existing):
        print(
            f"YARN application attempt {application_master_attempt()}: resuming from the latest checkpoint "
            f"(--restore {args.restore}{' --discard-existing' if args.discard_existing else ''} was the first attempt's)",
            file=sys.stderr,
        )
    request = RunRequest(
        job=job,
        config=config,
        job_id=args.job_id or job.name,
        restore=restore,
        discard_existing=discard_existing,
        allow_non_restored_state=args.allow_non_restored_state,
        master=master,
        spark_conf=spark_conf,
    )
    # Spark starts now, beside the engine's imports, the live checks, the claim and the
    # restore (engine/spark_start.py); a setting that breaks the engine is refused first.
    check_spark_settings({**job.spark_conf, **spark_conf})
    starting = SparkStart(request) if starts_its_own_jvm() else None
    try:
        from .driver import first_line
        from .runner import JobRun

        run = JobRun(request)
    except BaseException:
        if starting is not None:
            starting.abandon()
        raise
    try:
        outcome = run.run(starting)
    except (ConfigError, CheckpointError):
        raise  # the CLI prints these as one line
    except Exception as err:  # e.g. Spark could not start; the attempt is recorded as failed
        log.debug("job %s failed", request.job_id, exc_info=True)
        print(f"error: job {request.job_id} failed: {first_line(f'{type(err).__name__}: {err}')}", file=sys.stderr)
        return EXIT_JOB_FAILED
    if outcome.stopped_with_savepoint:
        print(
            f"job {request.job_id} stopped with savepoint {outcome.stopped_savepoint_id}, "
            f"{len(outcome.completed)} checkpoints completed in this run; rerun to resume from it",
            file=sys.stderr,
        )
        return EXIT_OK
    if outcome.finished:
        print(
            f"job {request.job_id} finished: final checkpoint {outcome.final_checkpoint_id}, "
            f"{len(outcome.completed)} checkpoints completed in this run",
            file=sys.stderr,
        )
        return EXIT_OK
    print(f"error: job {request.job_id} failed: {outcome.error}", file=sys.stderr)
    return EXIT_JOB_FAILED
