"""spark-submit application: ``spark-submit [options] spark_app.py JOB_FILE [run options]``.

The master and resources come from spark-submit; everything else is as ``seatunnel-ckpt run``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from airflow_provider_seatunnel_ckpt.cli import main as cli_main

    return cli_main(["run", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
