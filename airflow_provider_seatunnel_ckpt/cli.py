"""``seatunnel-ckpt``: validate configs, run jobs, and look after checkpoints.

User errors (bad config, missing checkpoint, unreachable storage) print one line,
``error: <key or path>: <problem>``, and exit 2 (input) or 1 (operation failed);
tracebacks are kept for bugs (cli_base.py, shared with the spark-submit application).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from .cli_base import EXIT_FAILED, EXIT_OK, command_parser, run_command
from .errors import ConfigError
from .jobfile.variable_options import add_variable_arguments

CONFIG_ENV = "SEATUNNEL_CKPT_CONFIG"


def _load(args: argparse.Namespace) -> Any:
    from .config import load_config

    return load_config(args.config or os.environ.get(CONFIG_ENV) or None)


def _storage(args: argparse.Namespace) -> Any:
    from .storage import create_storage

    return create_storage(_load(args).storage)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False, default=str))


# ---------------------------------------------------------------- commands


def cmd_validate(args: argparse.Namespace) -> int:
    from .config import load_config

    config = load_config(args.file)
    _print_json(config.masked())
    return EXIT_OK


def _pipelines(storage: Any, args: argparse.Namespace) -> list[int]:
    if args.pipeline is not None:
        return [args.pipeline]
    return storage.list_pipelines(args.job_id)


def cmd_list(args: argparse.Namespace) -> int:
    storage = _storage(args)
    if not args.job_id:
        jobs = storage.list_jobs()
        if args.json:
            _print_json(jobs)
        else:
            print("\n".join(jobs) if jobs else f"no jobs under {storage.describe()}")
        return EXIT_OK
    rows = []
    for pipeline_id in _pipelines(storage, args):
        for entry in storage.list_checkpoint_entries(args.job_id, pipeline_id):
            rows.append(
                {
                    "pipeline": pipeline_id,
                    "checkpoint": entry.checkpoint_id,
                    "type": "savepoint" if entry.savepoint else "checkpoint",
                    "completed": entry.completed,
                    "location": entry.location,
                }
            )
    if args.json:
        _print_json(rows)
    elif not rows:
        print(f"no checkpoints for job {args.job_id} under {storage.describe()}")
    else:
        print(f"{'PIPELINE':>8}  {'ID':>8}  {'TYPE':<10}  {'STATUS':<10}  LOCATION")
        for row in rows:
            status = "completed" if row["completed"] else "incomplete"
            print(f"{row['pipeline']:>8}  {row['checkpoint']:>8}  {row['type']:<10}  {status:<10}  {row['location']}")
    return EXIT_OK


def _selected_checkpoints(storage: Any, args: argparse.Namespace) -> list[tuple[int, int, bool]]:
    """(pipeline, checkpoint, savepoint) chosen by --pipeline/--checkpoint (default: latest)."""
    chosen = []
    for pipeline_id in _pipelines(storage, args):
        entries = [e for e in storage.list_checkpoint_entries(args.job_id, pipeline_id) if e.completed]
        if args.checkpoint is not None:
            entries = [e for e in entries if e.checkpoint_id == args.checkpoint]
            if not entries:
                raise ConfigError(
                    "--checkpoint",
                    f"no completed checkpoint {args.checkpoint} for job {args.job_id} pipeline {pipeline_id}",
                )
        elif not getattr(args, "all", False):
            entries = [e for e in entries if not e.savepoint][-1:]
        chosen.extend((pipeline_id, e.checkpoint_id, e.savepoint) for e in entries)
    if not chosen:
        raise ConfigError("--job-id", f"no completed checkpoints for job {args.job_id} under {storage.describe()}")
    return chosen


def _sink_committer(args: argparse.Namespace) -> Any:
    """The committer of ``--job-file``'s sink (None without one): it knows the sink's own
    pending work, such as the Jdbc sink's prepared transactions."""
    if not getattr(args, "job_file", None):
        return None
    from .engine.routing import load_sinks, load_sources, one_sink
    from .jobfile.job import load_job
    from .jobfile.variable_options import job_variables

    job = load_job(args.job_file, job_variables(args))
    return one_sink(load_sinks(job, load_sources(job.sources))).create_committer(args.job_id)


def cmd_inspect(args: argparse.Namespace) -> int:
    storage = _storage(args)
    committer = _sink_committer(args)
    out = []
    for pipeline_id, checkpoint_id, savepoint in _selected_checkpoints(storage, args):
        manifest = storage.read_manifest(args.job_id, pipeline_id, checkpoint_id, savepoint)
        document = json.loads(manifest.to_bytes())
        handles = list(document["subtask_states"].values())
        if document.get("coordinator_state"):
            handles.append(document["coordinator_state"])
        for handle in handles:
            handle.pop("inline", None)  # raw state is binary; its size and hash are shown
        out.append(document)
    if committer is not None and hasattr(committer, "pending"):
        # the sink's work not yet committed, e.g. prepared database transactions
        out = [{**document, "sink_pending": committer.pending()} for document in out]
    _print_json(out if len(out) > 1 else out[0])
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    storage = _storage(args)
    damaged = 0
    results = []
    for pipeline_id, checkpoint_id, savepoint in _selected_checkpoints(storage, args):
        problems = storage.verify_checkpoint(args.job_id, pipeline_id, checkpoint_id, savepoint)
        damaged += bool(problems)
        results.append({"pipeline": pipeline_id, "checkpoint": checkpoint_id, "ok": not problems, "problems": problems})
        if not args.json:
            status = "ok" if not problems else "DAMAGED"
            print(f"pipeline {pipeline_id} checkpoint {checkpoint_id}: {status}")
            for problem in problems:
                print(f"  {problem}")
    if args.json:
        _print_json(results)
    return EXIT_FAILED if damaged else EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    storage = _storage(args)
    if args.pipeline is None and args.checkpoint is None:
        if not args.yes:
            raise ConfigError("--job-id", f"refusing to delete every checkpoint of job {args.job_id} without --yes")
        if args.job_id not in storage.list_jobs():
            raise ConfigError("--job-id", f"no job {args.job_id} under {storage.describe()}")
        committer = _sink_committer(args)
        storage.delete_checkpoint(args.job_id)
        if committer is not None:
            committer.discard_job()  # e.g. roll back the Jdbc sink's prepared transactions
        print(f"deleted job {args.job_id}")
        return EXIT_OK
    if args.checkpoint is not None and args.pipeline is None:
        raise ConfigError("--checkpoint", "needs --pipeline")
    entries = storage.list_checkpoint_entries(args.job_id, args.pipeline)
    if args.checkpoint is not None and all(e.checkpoint_id != args.checkpoint for e in entries):
        raise ConfigError(
            "--checkpoint", f"job {args.job_id} pipeline {args.pipeline} has no checkpoint {args.checkpoint}"
        )
    if not entries:
        raise ConfigError("--pipeline", f"job {args.job_id} has no checkpoints in pipeline {args.pipeline}")
    storage.delete_checkpoint(args.job_id, args.pipeline, args.checkpoint)
    what = f"checkpoint {args.checkpoint}" if args.checkpoint is not None else "all checkpoints"
    print(f"deleted {what} of job {args.job_id} pipeline {args.pipeline}")
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    from .history import read_history
    from .history.text import checkpoint_text, entry_json, history_text, to_json

    storage = _storage(args)
    history = read_history(storage, args.job_id)
    if history.job is None and not history.checkpoints and not history.restores:
        raise ConfigError("--job-id", f"no job {args.job_id} under {storage.describe()}")
    if args.checkpoint is not None:
        entry = history.checkpoint(args.checkpoint)
        if entry is None:
            raise ConfigError(
                "--checkpoint", f"checkpoint {args.checkpoint} is not in the history of job {args.job_id}"
            )
        if args.json:
            _print_json(entry_json(entry))
        else:
            print(checkpoint_text(entry))
        return EXIT_OK
    limit = args.limit or None
    if args.json:
        _print_json(to_json(history, limit))
    else:
        print(history_text(history, limit))
    return EXIT_OK


# ---------------------------------------------------------------- parser


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser, sub = command_parser("Checkpointed, exactly-once PySpark pipelines.")

    validate = sub.add_parser("validate", help="check a seatunnel.yaml and print the effective configuration")
    validate.add_argument("file", help="seatunnel.yaml (or a YAML/JSON checkpoint block)")
    validate.set_defaults(func=cmd_validate)

    def storage_command(name: str, help_text: str, func: Any, job_required: bool = True) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text)
        command.add_argument("--config", help=f"seatunnel.yaml (default: ${CONFIG_ENV}, else built-in defaults)")
        command.add_argument("--job-id", required=job_required)
        command.add_argument("--pipeline", type=int)
        command.add_argument("--checkpoint", type=int)
        command.add_argument("--json", action="store_true", help="machine-readable output")
        command.set_defaults(func=func)
        return command

    storage_command("list", "list jobs, or a job's checkpoints", cmd_list, job_required=False)
    inspect = storage_command("inspect", "print a checkpoint's manifest (default: the latest)", cmd_inspect)
    inspect.add_argument("--job-file", help="the job's file: also list its sink's pending work (prepared transactions)")
    add_variable_arguments(inspect)
    history = storage_command(
        "history",
        "a job's attempts and checkpoint history, newest first; --checkpoint ID: one checkpoint per subtask",
        cmd_history,
    )
    history.add_argument("--limit", type=_non_negative, default=20, help="newest N checkpoints (default 20; 0: all)")
    verify = storage_command("verify", "re-check every checksum; exit 1 on damage", cmd_verify)
    verify.add_argument("--all", action="store_true", help="every completed checkpoint, not just the latest")
    delete = storage_command("delete", "delete a checkpoint, a pipeline's or a whole job's", cmd_delete)
    delete.add_argument("--yes", action="store_true", help="confirm deleting a whole job")
    delete.add_argument(
        "--job-file",
        help="the job's file: with a whole job, also roll back its sink's prepared "
        "transactions and drop its commit log rows",
    )
    add_variable_arguments(delete)

    _add_engine_commands(sub)
    return parser


def _add_engine_commands(sub: Any) -> None:
    """The ``run`` command lives with the engine; absent until the engine is importable."""
    try:
        from .engine.cli import add_run_command
    except ImportError:
        return
    add_run_command(sub)


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
