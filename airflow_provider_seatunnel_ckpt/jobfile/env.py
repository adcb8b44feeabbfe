"""A job file's ``env`` block: the keys it knows, the SeaTunnel keys it ignores and why,
the ``spark.*`` keys it passes to Spark, and ``shade.identifier``'s encoded credentials.

docs/seatunnel.md#env lists them with SeaTunnel's meanings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

#: env keys passed through to Spark, as SeaTunnel's Spark engine does
SPARK_PREFIX = "spark."
#: env keys with a meaning here, and the type of their value
_ENV_KEYS = {
    "job.name": str,
    "job.mode": str,
    "shade.identifier": str,
    "parallelism": int,
    "checkpoint.interval": int,
    "checkpoint.timeout": int,
    "batch_size": int,
    #: batches sized by time: the target ms of one batch, 0 = fixed batches (engine/batch_sizer.py)
    "batch_time_ms": int,
}
#: int keys that may be 0
_ZERO_ALLOWED = frozenset({"batch_time_ms"})
#: SeaTunnel env keys with no meaning here, and why (job files shared with SeaTunnel keep them)
_SEATUNNEL_ENV = {
    "job.retry.times": "SeaTunnel's own restarts; here the Airflow task's retries resume the job",
    "job.retry.interval.seconds": "SeaTunnel's own restarts; here the Airflow task's retry_delay",
    "read_limit.rows_per_second": "not supported yet",
    "read_limit.bytes_per_second": "not supported yet",
    "savemode.execute.location": "SeaTunnel's Zeta engine only",
    "tag_filter": "SeaTunnel's Zeta engine only",
    "custom_parameters": "read by no engine",
    "jars": "Spark's jars are spark.jars here",
}


def _ignored_env_reason(key: str) -> str:
    if key in _SEATUNNEL_ENV:
        return _SEATUNNEL_ENV[key]
    if key.startswith(("flink.", "execution.", "pipeline")):
        return "a Flink engine setting"
    return "unknown key"


#: options ``shade.identifier`` encodes, in every source and sink entry (SeaTunnel's list)
SHADED_OPTIONS = ("username", "password", "auth", "token")


def decode_shaded_options(doc: Mapping[str, Any], identifier: Any) -> None:
    """``env.shade.identifier = base64``: SeaTunnel's encoded credentials, decoded in place."""
    if identifier is None or str(identifier).strip().lower() == "default":
        return
    if str(identifier).strip().lower() != "base64":
        raise ConfigError("env.shade.identifier", f"{identifier!r} is not supported (base64 or default)")
    import base64
    import binascii

    for section in ("source", "sink"):
        entries = doc.get(section)
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if not isinstance(entry, dict):
                continue
            for option in SHADED_OPTIONS:
                if isinstance(entry.get(option), str):
                    try:
                        entry[option] = base64.b64decode(entry[option], validate=True).decode("utf-8")
                    except (binascii.Error, UnicodeDecodeError):
                        raise ConfigError(
                            f"{section}[{index}].{option}", "is not base64 text (env.shade.identifier = base64)"
                        ) from None


def read_env(doc: Mapping[str, Any], warnings: list[str]) -> tuple[dict[str, Any], str]:
    """A job document's ``env`` block, checked (numbers written as digits read as numbers),
    and its job mode, BATCH or STREAMING; the keys it ignores go to ``warnings``."""
    env = doc.get("env") or {}
    if not isinstance(env, Mapping):
        raise ConfigError("env", "expected a mapping")
    env = dict(env)
    for key, value in env.items():
        kind = _ENV_KEYS.get(key)
        if kind is None:
            if not str(key).startswith(SPARK_PREFIX):
                warnings.append(f"env.{key}: {_ignored_env_reason(str(key))} (ignored)")
            continue
        if kind is int:
            if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
                env[key] = value = int(value)
            least = 0 if key in _ZERO_ALLOWED else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                expected = "an integer >= 0" if least == 0 else "a positive integer"
                raise ConfigError(f"env.{key}", f"expected {expected}, got {value!r}")
        elif not isinstance(value, str):
            raise ConfigError(f"env.{key}", f"expected a string, got {value!r}")
    mode = str(env.get("job.mode", "BATCH")).strip().upper()
    if mode not in ("BATCH", "STREAMING"):
        raise ConfigError("env.job.mode", f"expected BATCH or STREAMING, got {env['job.mode']!r}")
    if mode == "STREAMING":
        warnings.append(
            "env.job.mode: STREAMING runs the job until its source ends, as BATCH does: a Kafka source "
            "never ends, a FakeSource or file source does (SeaTunnel keeps a streaming FakeSource "
            "job running after its rows until it is cancelled)"
        )
    return env, mode
