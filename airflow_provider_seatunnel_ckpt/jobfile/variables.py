"""``${VAR}`` in job files, substituted as SeaTunnel substitutes them.

Any string value of a job file may hold ``${NAME}`` or ``${NAME:default}``; when the job is
loaded each is replaced by the value of ``NAME`` from the job's variables (``seatunnel-ckpt
run -i NAME=value`` / ``--variable``, or ``--variables FILE``: what the Airflow operator
fills from connections), else from the environment, else by its default. So credentials
never have to be written in a job file::

    sink: [{plugin_name: Jdbc, url: "${PG_URL}", user: "${PG_USER}", password: "${PG_PASSWORD}", ...}]

A reference that is none of these is left as it is, as SeaTunnel leaves it: connectors
fill some themselves (a file sink's ``${transactionId}``, ``${now}``, ``${k0}`` in name
and partition expressions). It is reported as a warning, except for those known
placeholders, and it is an error in an option that holds a secret (``password``,
``token``...): a password of ``${PG_PASSWORD}`` is never what was meant.
``$${NAME}`` stands for a literal ``${NAME}``.

Where SeaTunnel differs: it does not read the environment for a quoted reference (only
``-i`` and JVM properties), and it treats an empty ``-i NAME=`` as unset.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..errors import ConfigError
from .secret_keys import is_secret_key

_REFERENCE = re.compile(r"\$(\$?)\{([^:{}$]+?)(?::([^}]*))?\}")
#: filled by connectors when they write (SeaTunnel's file sinks and sink placeholders)
RUNTIME_PLACEHOLDERS = re.compile(
    r"(transactionId|now|uuid|[kv]\d+|database_name|schema_name|table_name|schema_full_name|table_full_name"
    r"|primary_key|unique_key|field_names|rowtype_\w+|table|database)")


def substitute(document: Any, variables: Mapping[str, str] | None = None, key: str = "",
               warnings: list[str] | None = None) -> Any:
    """A copy of ``document`` with every ``${NAME}`` in its string values replaced;
    references left as they are go to ``warnings``."""
    if isinstance(document, Mapping):
        return {k: substitute(v, variables, f"{key}.{k}" if key else str(k), warnings) for k, v in document.items()}
    if isinstance(document, list):
        return [substitute(v, variables, f"{key}[{i}]", warnings) for i, v in enumerate(document)]
    if isinstance(document, str) and "${" in document:
        return _fill(document, variables or {}, key, warnings)
    return document


def _fill(text: str, variables: Mapping[str, str], key: str, warnings: list[str] | None) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped, name, default = match.group(1), match.group(2).strip(), match.group(3)
        if escaped:
            return match.group(0)[1:]
        if name in variables:
            return str(variables[name])
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default.strip()
        if is_secret_key(key.rsplit(".", 1)[-1]):
            raise ConfigError(key, f"variable ${{{name}}} is not set (neither a variable of the job nor in the environment)")
        if warnings is not None and not RUNTIME_PLACEHOLDERS.fullmatch(name):
            warnings.append(f"{key}: ${{{name}}} is not set (neither a variable of the job nor in the environment); "
                            f"left as it is")
        return match.group(0)

    return _REFERENCE.sub(replace, text)


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
    pieces, depth, quoted, current = [], 0, False, []
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
    parser.add_argument("--variables", metavar="FILE", help="YAML/JSON mapping of values for ${NAME} references in "
                        "the job file (before the environment); keep it private: it may hold credentials")
    parser.add_argument("-i", "--variable", action="append", default=[], metavar="NAME=VALUE",
                        help="a value for ${NAME} in the job file, as SeaTunnel's -i (repeatable; a=1,b=2 sets two); "
                             "wins over --variables")


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
