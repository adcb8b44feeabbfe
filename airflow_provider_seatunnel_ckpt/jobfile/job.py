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
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..errors import ConfigError
from .documents import read_job_document
from .wiring import Wiring, wire

log = logging.getLogger(__name__)

_ENV_KEYS = {
    "job.name": str,
    "job.mode": str,
    "shade.identifier": str,
    "parallelism": int,
    "checkpoint.interval": int,
    "checkpoint.timeout": int,
    "batch_size": int,
}
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
                        raise ConfigError(f"{section}[{index}].{option}", "is not base64 text "
                                                                          "(env.shade.identifier = base64)") from None


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
    #: a job with several sources or sinks: the ones after the first, and how tables
    #: connect them (jobfile/wiring.py); None: the chain source -> transforms -> sink
    extra_sources: tuple[Mapping[str, Any], ...] = ()
    extra_sinks: tuple[Mapping[str, Any], ...] = ()
    wiring: Wiring | None = None

    @property
    def sources(self) -> tuple[Mapping[str, Any], ...]:
        return (self.source, *self.extra_sources)

    @property
    def sinks(self) -> tuple[Mapping[str, Any], ...]:
        return (self.sink, *self.extra_sinks)

    @property
    def graph(self) -> Wiring:
        return self.wiring or Wiring.chain(1, len(self.transforms), 1)

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
            **({"extra_sources": [dict(e) for e in self.extra_sources], "extra_sinks": [dict(e) for e in self.extra_sinks],
                "wiring": self.wiring.to_json()} if self.wiring is not None else {}),
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
            extra_sources=tuple(data.get("extra_sources") or ()),
            extra_sinks=tuple(data.get("extra_sinks") or ()),
            wiring=Wiring.from_json(data["wiring"]) if data.get("wiring") else None,
        )

    def with_parallelism(self, parallelism: int) -> "JobSpec":
        return replace(self, parallelism=parallelism)

    def validate(self) -> None:
        """Instantiate every connector once, so bad options fail here with their key path."""
        from ..connectors import load_sink, load_source, load_transform

        for index, entry in enumerate(self.sources):
            load_source(entry, f"source[{index}]")
        for index, entry in enumerate(self.transforms):
            load_transform(entry, f"transform[{index}]")
        for index, entry in enumerate(self.sinks):
            load_sink(entry, f"sink[{index}]")


def load_job(source: str | os.PathLike | Mapping[str, Any], variables: Mapping[str, str] | None = None) -> JobSpec:
    """Parse and check a job file (HOCON, YAML or JSON: a path, text, or a dict).

    ``${NAME}`` references in its values are filled from ``variables``, then from the
    environment (:mod:`.variables`)."""
    from .variables import substitute

    doc, origin, warnings = read_job_document(source, variables)
    doc = substitute(doc, variables, warnings=warnings)
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
                warnings.append(f"env.{key}: {_ignored_env_reason(str(key))} (ignored)")
            continue
        if kind is int:
            if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
                env[key] = value = int(value)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"env.{key}", f"expected a positive integer, got {value!r}")
        elif not isinstance(value, str):
            raise ConfigError(f"env.{key}", f"expected a string, got {value!r}")
    mode = str(env.get("job.mode", "BATCH")).strip().upper()
    if mode not in ("BATCH", "STREAMING"):
        raise ConfigError("env.job.mode", f"expected BATCH or STREAMING, got {env['job.mode']!r}")
    if mode == "STREAMING":
        warnings.append("env.job.mode: STREAMING runs the job until its source ends, as BATCH does: a Kafka source "
                        "never ends, a FakeSource or file source does (SeaTunnel keeps a streaming FakeSource "
                        "job running after its rows until it is cancelled)")
    decode_shaded_options(doc, env.get("shade.identifier"))

    sources = _plugin_list(doc, "source")
    if "job.mode" in env:
        # a source whose end depends on the mode (Kafka reads to the end offsets of the
        # start in a BATCH job) reads it as an option; the others never see it
        sources = [{**entry, "job.mode": mode} if isinstance(entry, Mapping) else entry for entry in sources]
    sinks = _plugin_list(doc, "sink")
    transforms = doc.get("transform") or []
    if isinstance(transforms, Mapping):
        transforms = [transforms]
    if not isinstance(transforms, list):
        raise ConfigError("transform", "expected a list of plugin entries")
    for index, entry in enumerate(transforms):
        _check_entry(entry, f"transform[{index}]")
    wiring = wire(sources, transforms, sinks, warnings)

    name = env.get("job.name") or (os.path.splitext(os.path.basename(origin))[0] if not origin.startswith("<") else "job")
    spec = JobSpec(
        name=name,
        parallelism=env.get("parallelism", 1),
        source=dict(sources[0]),
        sink=dict(sinks[0]),
        transforms=tuple(dict(t) for t in transforms),
        env=env,
        batch_size=env.get("batch_size", 65_536),
        warnings=tuple(warnings),
        extra_sources=tuple(dict(e) for e in sources[1:]),
        extra_sinks=tuple(dict(e) for e in sinks[1:]),
        wiring=None if wiring.is_chain else wiring,
    )
    spec.validate()
    for line in warnings:
        log.warning("%s", line)
    return spec


def _plugin_list(doc: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    entries = doc.get(key)
    if entries is None:
        raise ConfigError(key, "missing: a job needs at least one source and one sink")
    if isinstance(entries, Mapping):
        entries = [entries]
    if not isinstance(entries, list) or not entries:
        raise ConfigError(key, "expected a list of plugin entries (at least one)")
    for index, entry in enumerate(entries):
        _check_entry(entry, f"{key}[{index}]")
    return entries


def _check_entry(entry: Any, key: str) -> None:
    if not isinstance(entry, Mapping):
        raise ConfigError(key, "expected a mapping with plugin_name and options")
    name = entry.get("plugin_name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{key}.plugin_name", "missing or not a string")
