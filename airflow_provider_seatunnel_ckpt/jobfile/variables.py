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
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .secret_keys import is_secret_key

_REFERENCE = re.compile(r"\$(\$?)\{([^:{}$]+?)(?::([^}]*))?\}")
#: filled by connectors when they write (SeaTunnel's file sinks and sink placeholders)
RUNTIME_PLACEHOLDERS = re.compile(
    r"(transactionId|now|uuid|[kv]\d+|database_name|schema_name|table_name|schema_full_name|table_full_name"
    r"|primary_key|unique_key|field_names|rowtype_\w+|table|database)"
)


def substitute(
    document: Any, variables: Mapping[str, str] | None = None, key: str = "", warnings: list[str] | None = None
) -> Any:
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
            raise ConfigError(
                key, f"variable ${{{name}}} is not set (neither a variable of the job nor in the environment)"
            )
        if warnings is not None and not RUNTIME_PLACEHOLDERS.fullmatch(name):
            warnings.append(
                f"{key}: ${{{name}}} is not set (neither a variable of the job nor in the environment); left as it is"
            )
        return match.group(0)

    return _REFERENCE.sub(replace, text)
