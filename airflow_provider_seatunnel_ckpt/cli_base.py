"""What the two command lines share: ``seatunnel-ckpt`` (cli.py) and the spark-submit
application (engine/spark_app.py), which is ``seatunnel-ckpt run``.

The parser whose errors are one line, log records as one line each, and the exit code of
each error: user errors (bad config, missing checkpoint, unreachable storage) print
``error: <key or path>: <problem>`` and exit 2 (input) or 1 (operation failed);
tracebacks are kept for bugs. Below both, so the engine's entry point needs nothing of
cli.py.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from .errors import CheckpointError, CheckpointStorageError, ConfigError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

PROG = "seatunnel-ckpt"


class OneLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}"


def setup_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        OneLineFormatter() if not verbose else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger("airflow_provider_seatunnel_ckpt")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as for every user error
        self.exit(EXIT_USAGE, f"error: {message} (see {self.prog} --help)\n")


def command_parser(description: str | None = None) -> tuple[argparse.ArgumentParser, Any]:
    """``seatunnel-ckpt [-v] COMMAND ...``: the parser and its subcommands, to add commands to."""
    parser = Parser(prog=PROG, description=description)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    return parser, sub


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse ``argv``, run the command it names, and turn user errors into one line and an exit code."""
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    try:
        return int(args.func(args) or EXIT_OK)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except CheckpointStorageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    except CheckpointError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `seatunnel-ckpt list | head`
        return EXIT_OK
