"""Where a job's variables come from on a command line: SeaTunnel's ``-i NAME=VALUE``
(``-i a=1,b=2`` sets two) and a ``--variables FILE`` of names and values, which the
Airflow operator writes from connections. variables.py fills them in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError


def parse_variable_options(values: list[str] | None) -> dict[str, str]:
    """``-i a=1,b=2 -i c=[x,y]``: pairs split at commas outside ``[...]`` and quotes, each at
    its first ``=``, as SeaTunnel splits them."""
    variables: dict[str, str] = {}
    for value in values or ():
        for piece in _split_outside(value):
            name, sep, content = piece.partition("=")
            if not sep or not name.strip():
                raise ConfigError("--variable", f"expected NAME=VALUE, got {piece!r}")
            variables[name.strip()] = content
    return variables


def _split_outside(text: str) -> list[str]:
    pieces, depth, quoted = [], 0, False
    current: list[str] = []
    for char in text:
        if char == '"':
            quoted = not quoted
        elif char == "[" and not quoted:
            depth += 1
        elif char == "]" and not quoted:
            depth = max(0, depth - 1)
        if char == "," and depth == 0 and not quoted:
            pieces.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    pieces.append("".join(current).strip())
    return [p for p in pieces if p]


def add_variable_arguments(parser: Any) -> None:
    """``--variables FILE`` and SeaTunnel's ``-i/--variable NAME=VALUE`` on a command."""
    parser.add_argument(
        "--variables",
        metavar="FILE",
        help="YAML/JSON mapping of values for ${NAME} references in "
        "the job file (before the environment); keep it private: it may hold credentials",
    )
    parser.add_argument(
        "-i",
        "--variable",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a value for ${NAME} in the job file, as SeaTunnel's -i (repeatable; a=1,b=2 sets two); "
        "wins over --variables",
    )


def job_variables(args: Any) -> dict[str, str] | None:
    """The variables a command was given: its ``--variables`` file, then its ``-i`` pairs."""
    variables = load_variables(args.variables) if getattr(args, "variables", None) else {}
    variables.update(parse_variable_options(getattr(args, "variable", None)))
    return variables or None


def load_variables(path: str | os.PathLike) -> dict[str, str]:
    """A variables file: a YAML or JSON mapping of names to string values."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError("--variables", f"cannot read {path}: {err.strerror or err}") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        raise ConfigError("--variables", f"{path} is not valid YAML or JSON") from None  # never echo its values
    if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
        raise ConfigError("--variables", f"{path} must be a mapping of variable names to values")
    return {k: "" if v is None else str(v) for k, v in data.items()}
