"""The job model: a ``JobSpec``, what a job file says once it is read and checked.

It is plain JSON-safe data: it travels inside the Spark task closure to the executors,
which build the connectors from it there. Connector options are validated on the driver
first (``JobSpec.validate``), so a typo fails before Spark starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .env import SPARK_PREFIX
from .wiring import Wiring


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
        return {k: str(v) for k, v in self.env.items() if k.startswith(SPARK_PREFIX)}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "parallelism": self.parallelism,
            "source": dict(self.source),
            "sink": dict(self.sink),
            "transforms": [dict(t) for t in self.transforms],
            "env": dict(self.env),
            "batch_size": self.batch_size,
            **(
                {
                    "extra_sources": [dict(e) for e in self.extra_sources],
                    "extra_sinks": [dict(e) for e in self.extra_sinks],
                    "wiring": self.wiring.to_json(),
                }
                if self.wiring is not None
                else {}
            ),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobSpec:
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

    def with_parallelism(self, parallelism: int) -> JobSpec:
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
