"""Job files, SeaTunnel style: ``env``, ``source``, ``transform``, ``sink``, read into a
``JobSpec`` (spec.py).

::

    env: {job.name: demo, parallelism: 2, checkpoint.interval: 2000}
    source:    [{plugin_name: Sequence, rows: 1000000}]
    transform: [{plugin_name: Python, function: "my_module:my_batch_fn"}]
    sink:      [{plugin_name: File, path: "file:///tmp/out/", format: parquet}]

The document may be HOCON, YAML or JSON (documents.py); its ``env`` is checked by env.py,
its tables wired by wiring.py, and every connector is built once from its options.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .documents import read_job_document
from .env import decode_shaded_options, read_env
from .spec import JobSpec
from .wiring import wire

log = logging.getLogger(__name__)


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

    env, mode = read_env(doc, warnings)
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

    name = env.get("job.name") or (
        os.path.splitext(os.path.basename(origin))[0] if not origin.startswith("<") else "job"
    )
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
