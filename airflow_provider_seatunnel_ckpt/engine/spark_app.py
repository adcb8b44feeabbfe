"""spark-submit application: ``spark-submit [options] spark_app.py JOB_FILE [run options]``.

The master and resources come from spark-submit; everything else is as ``seatunnel-ckpt run``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from airflow_provider_seatunnel_ckpt.cli_base import command_parser, run_command
    from airflow_provider_seatunnel_ckpt.engine.cli import add_run_command

    parser, sub = command_parser()
    add_run_command(sub)
    return run_command(parser, ["run", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
