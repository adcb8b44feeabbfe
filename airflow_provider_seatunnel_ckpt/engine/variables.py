"""``${VAR}`` in job files (SeaTunnel's variable syntax), filled in when the job is loaded.

Any string value of a job file may hold ``${NAME}`` references; they are replaced by the
value of ``NAME`` from the variables handed to the engine (``seatunnel-ckpt run
--variables FILE``: what the Airflow operator fills from connections) or, failing that,
from the environment. So credentials never have to be written in a job file::

    sink: [{plugin_name: Jdbc, url: "${PG_URL}", user: "${PG_USER}", password: "${PG_PASSWORD}", ...}]

``$${NAME}`` stands for a literal ``${NAME}``. A reference to a variable that is not set
is an error naming the job-file key, never a silent empty string.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..errors import ConfigError

_REFERENCE = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def substitute(document: Any, variables: Mapping[str, str] | None = None, key: str = "") -> Any:
    """A copy of ``document`` with every ``${NAME}`` in its string values replaced."""
    if isinstance(document, Mapping):
        return {k: substitute(v, variables, f"{key}.{k}" if key else str(k)) for k, v in document.items()}
    if isinstance(document, list):
        return [substitute(v, variables, f"{key}[{i}]") for i, v in enumerate(document)]
    if isinstance(document, str) and "${" in document:
        return _fill(document, variables or {}, key)
    return document


def _fill(text: str, variables: Mapping[str, str], key: str) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped, name = match.group(1), match.group(2)
        if escaped:
            return "${" + name + "}"
        if name in variables:
            return str(variables[name])
        if name in os.environ:
            return os.environ[name]
        raise ConfigError(key, f"variable ${{{name}}} is not set (neither in the variables file nor in the environment)")

    return _REFERENCE.sub(replace, text)


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
