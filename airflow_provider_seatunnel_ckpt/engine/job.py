"""Job files, SeaTunnel style: ``env``, ``source``, ``transform``, ``sink``.

::

    env: {job.name: demo, parallelism: 2, checkpoint.interval: 2000}
    source:    [{plugin_name: Sequence, rows: 1000000}]
    transform: [{plugin_name: Python, function: "my_module:my_batch_fn"}]
    sink:      [{plugin_name: File, path: "file:///tmp/out/", format: parquet}]

A ``JobSpec`` is plain JSON-safe data: it travels inside the Spark task closure to the
executors, which build the connectors from it there. Connector options are validated
on the driver first (``JobSpec.validate``), so a typo fails before Spark starts.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..config import load_document
from ..errors import ConfigError

log = logging.getLogger(__name__)

_ENV_KEYS = {
    "job.name": str,
    "job.mode": str,
    "parallelism": int,
    "checkpoint.interval": int,
    "checkpoint.timeout": int,
    "batch_size": int,
}
#: env keys passed through to Spark, as SeaTunnel's Spark engine does
_SPARK_PREFIX = "spark."


@dataclass(frozen=True)
class JobSpec:
    name: str
    parallelism: int
    source: Mapping[str, Any]
    sink: Mapping[str, Any]
    transforms: tuple[Mapping[str, Any], ...] = ()
    env: Mapping[str, Any] = field(default_factory=dict)
    batch_size: int = 65_536
    warnings: tuple[str, ...] = ()

    @property
    def spark_conf(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.env.items() if k.startswith(_SPARK_PREFIX)}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "parallelism": self.parallelism,
            "source": dict(self.source),
            "sink": dict(self.sink),
            "transforms": [dict(t) for t in self.transforms],
            "env": dict(self.env),
            "batch_size": self.batch_size,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "JobSpec":
        return cls(
            name=data["name"],
            parallelism=data["parallelism"],
            source=data["source"],
            sink=data["sink"],
            transforms=tuple(data.get("transforms") or ()),
            env=data.get("env") or {},
            batch_size=data.get("batch_size", 65_536),
        )

    def with_parallelism(self, parallelism: int) -> "JobSpec":
        return JobSpec(self.name, parallelism, self.source, self.sink, self.transforms, self.env, self.batch_size, self.warnings)

    def validate(self) -> None:
        """Instantiate every connector once, so bad options fail here with their key path."""
        from .connectors import load_sink, load_source, load_transform

        load_source(self.source, "source[0]")
        for index, entry in enumerate(self.transforms):
            load_transform(entry, f"transform[{index}]")
        load_sink(self.sink, "sink[0]")


def load_job(source: str | os.PathLike | Mapping[str, Any], variables: Mapping[str, str] | None = None) -> JobSpec:
    """Parse and check a job file (YAML or JSON path, text, or a dict).

    ``${NAME}`` references in its values are filled from ``variables``, then from the
    environment (:mod:`.variables`)."""
    from .variables import substitute

    doc, origin, warnings = load_document(source)
    doc = substitute(doc, variables)
    if not isinstance(doc, Mapping):
        raise ConfigError(origin, "expected a mapping with env, source, transform and sink")
    for key in doc:
        if key not in ("env", "source", "transform", "sink"):
            warnings.append(f"{key}: unknown top-level key (ignored); expected env, source, transform, sink")

    env = doc.get("env") or {}
    if not isinstance(env, Mapping):
        raise ConfigError("env", "expected a mapping")
    env = dict(env)
    for key, value in env.items():
        kind = _ENV_KEYS.get(key)
        if kind is None:
            if not str(key).startswith(_SPARK_PREFIX):
                warnings.append(f"env.{key}: unknown key (ignored)")
            continue
        if kind is int:
            if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
                env[key] = value = int(value)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"env.{key}", f"expected a positive integer, got {value!r}")
        elif not isinstance(value, str):
            raise ConfigError(f"env.{key}", f"expected a string, got {value!r}")

    source = _single_plugin_list(doc, "source")
    sink = _single_plugin_list(doc, "sink")
    transforms = doc.get("transform") or []
    if isinstance(transforms, Mapping):
        transforms = [transforms]
    if not isinstance(transforms, list):
        raise ConfigError("transform", "expected a list of plugin entries")
    for index, entry in enumerate(transforms):
        _check_entry(entry, f"transform[{index}]")

    name = env.get("job.name") or (os.path.splitext(os.path.basename(origin))[0] if not origin.startswith("<") else "job")
    spec = JobSpec(
        name=name,
        parallelism=env.get("parallelism", 1),
        source=dict(source),
        sink=dict(sink),
        transforms=tuple(dict(t) for t in transforms),
        env=env,
        batch_size=env.get("batch_size", 65_536),
        warnings=tuple(warnings),
    )
    spec.validate()
    for line in warnings:
        log.warning("%s", line)
    return spec


def _single_plugin_list(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    entries = doc.get(key)
    if entries is None:
        raise ConfigError(key, "missing: a job needs exactly one source and one sink")
    if isinstance(entries, Mapping):
        entries = [entries]
    if not isinstance(entries, list) or not entries:
        raise ConfigError(key, "expected a list with one plugin entry")
    if len(entries) > 1:
        raise ConfigError(f"{key}[1]", f"only one {key} per job is supported (a pipeline is one {key} -> transforms -> one sink)")
    _check_entry(entries[0], f"{key}[0]")
    return entries[0]


def _check_entry(entry: Any, key: str) -> None:
    if not isinstance(entry, Mapping):
        raise ConfigError(key, "expected a mapping with plugin_name and options")
    name = entry.get("plugin_name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{key}.plugin_name", "missing or not a string")
