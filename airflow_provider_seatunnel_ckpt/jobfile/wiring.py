"""SeaTunnel's table wiring: which sources, transforms and sinks feed which, by table name.

Sources and transforms name the table they produce (``plugin_output``, or
``result_table_name``); transforms and sinks the tables they read (``plugin_input``, or
``source_table_name``). Fan-out and fan-in follow SeaTunnel Zeta's rules
(``MultipleTableJobConfigParser``): a simple graph is wired in file order, every other
graph is strict. Our one addition: a job without wiring names, one source and one sink,
is a chain through its transforms in file order. This module knows names only;
:mod:`..engine.routing` moves batches along the result.

The rules: docs/seatunnel.md, "Table wiring and common options"; jobs without names:
docs/jobs.md, "A job file".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

OUTPUT_KEYS = ("plugin_output", "result_table_name")
INPUT_KEYS = ("plugin_input", "source_table_name")


@dataclass(frozen=True)
class Wiring:
    """Table names: what each source and transform produces, what each transform and
    sink reads. ``transform_order`` lists the transforms so that each comes after the
    ones it reads from."""

    source_outputs: tuple[str, ...]
    transform_inputs: tuple[tuple[str, ...], ...]
    transform_outputs: tuple[str, ...]
    sink_inputs: tuple[tuple[str, ...], ...]
    transform_order: tuple[int, ...]

    @property
    def is_chain(self) -> bool:
        """One source, one sink, every transform reading the one before it: the shape the
        engine ran before wiring existed (its checkpoints and commit infos unchanged)."""
        if len(self.source_outputs) != 1 or len(self.sink_inputs) != 1:
            return False
        upstream = self.source_outputs[0]
        for index, inputs in enumerate(self.transform_inputs):
            if inputs != (upstream,) or self.transform_order[index] != index:
                return False
            upstream = self.transform_outputs[index]
        return self.sink_inputs[0] == (upstream,)

    def consumers(self, table: str) -> list[tuple[str, int]]:
        """("transform", i) and ("sink", k) reading ``table``, transforms first."""
        found = [("transform", i) for i in self.transform_order if table in self.transform_inputs[i]]
        return found + [("sink", k) for k, inputs in enumerate(self.sink_inputs) if table in inputs]

    def sources_feeding(self, tables: Sequence[str]) -> set[int]:
        """The sources whose rows reach ``tables`` (through any transforms)."""
        found: set[int] = set()
        pending, seen = list(tables), set()
        while pending:
            table = pending.pop()
            if table in seen:
                continue
            seen.add(table)
            found.update(i for i, name in enumerate(self.source_outputs) if name == table)
            for i, name in enumerate(self.transform_outputs):
                if name == table:
                    pending.extend(self.transform_inputs[i])
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "source_outputs": list(self.source_outputs),
            "transform_inputs": [list(names) for names in self.transform_inputs],
            "transform_outputs": list(self.transform_outputs),
            "sink_inputs": [list(names) for names in self.sink_inputs],
            "transform_order": list(self.transform_order),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Wiring:
        return cls(
            source_outputs=tuple(data["source_outputs"]),
            transform_inputs=tuple(tuple(names) for names in data["transform_inputs"]),
            transform_outputs=tuple(data["transform_outputs"]),
            sink_inputs=tuple(tuple(names) for names in data["sink_inputs"]),
            transform_order=tuple(data["transform_order"]),
        )

    @classmethod
    def chain(cls, sources: int, transforms: int, sinks: int) -> Wiring:
        """Source 0 -> every transform in order -> sink 0 (internal table names)."""
        assert sources == 1 and sinks == 1, (sources, sinks)
        names = [f"#{i}" for i in range(transforms + 1)]
        return cls(
            source_outputs=(names[0],),
            transform_inputs=tuple((names[i],) for i in range(transforms)),
            transform_outputs=tuple(names[1:]),
            sink_inputs=((names[-1],),),
            transform_order=tuple(range(transforms)),
        )


def wire(
    sources: Sequence[Mapping[str, Any]],
    transforms: Sequence[Mapping[str, Any]],
    sinks: Sequence[Mapping[str, Any]],
    warnings: list[str],
) -> Wiring:
    """The wiring of a job's plugin entries (already checked to be mappings)."""
    named = any(_has(entry, OUTPUT_KEYS) or _has(entry, INPUT_KEYS) for entry in (*sources, *transforms, *sinks))
    single = len(sources) == 1 and len(sinks) == 1
    if not named:
        if single:
            return Wiring.chain(1, len(transforms), 1)
        kind, count = ("source", len(sources)) if len(sources) > 1 else ("sink", len(sinks))
        raise ConfigError(
            kind,
            f"{count} {kind}s need table names to be wired: plugin_output on each source and "
            "transform, plugin_input on each transform and sink (SeaTunnel's options)",
        )
    if single and len(transforms) <= 1:
        try:
            return _strict(sources, transforms, sinks)
        except ConfigError as err:
            # SeaTunnel's simple graph: names that do not fit are a warning, the chain runs
            # (a name left out, such as a sink without plugin_input, is common and silent)
            if not err.problem.startswith("is required"):
                warnings.append(
                    f"{err.key}: {err.problem}; this job has one source, at most one transform and one sink, "
                    "so it is wired in file order, as SeaTunnel does"
                )
            return Wiring.chain(1, len(transforms), 1)
    return _strict(sources, transforms, sinks)


def _strict(
    sources: Sequence[Mapping[str, Any]], transforms: Sequence[Mapping[str, Any]], sinks: Sequence[Mapping[str, Any]]
) -> Wiring:
    source_outputs = tuple(_output(entry, f"source[{i}]") for i, entry in enumerate(sources))
    transform_outputs = tuple(_output(entry, f"transform[{i}]") for i, entry in enumerate(transforms))
    transform_inputs = tuple(_inputs(entry, f"transform[{i}]") for i, entry in enumerate(transforms))
    sink_inputs = tuple(_inputs(entry, f"sink[{k}]") for k, entry in enumerate(sinks))

    producers: dict[str, str] = {}
    for key, name in [
        *((f"source[{i}]", n) for i, n in enumerate(source_outputs)),
        *((f"transform[{i}]", n) for i, n in enumerate(transform_outputs)),
    ]:
        if name in producers:
            raise ConfigError(
                f"{key}.plugin_output",
                f"table {name!r} is already produced by {producers[name]}; each table name is produced once",
            )
        producers[name] = key
    for key, inputs in [
        *((f"transform[{i}]", n) for i, n in enumerate(transform_inputs)),
        *((f"sink[{k}]", n) for k, n in enumerate(sink_inputs)),
    ]:
        for name in inputs:
            if name not in producers:
                known = ", ".join(repr(n) for n in producers)
                raise ConfigError(
                    f"{key}.plugin_input", f"no source or transform produces table {name!r} (produced: {known})"
                )
    read = {name for inputs in (*transform_inputs, *sink_inputs) for name in inputs}
    for name, key in producers.items():
        if name not in read:
            raise ConfigError(f"{key}.plugin_output", f"table {name!r} is read by no transform or sink")
    order = _topological(transform_inputs, transform_outputs)
    return Wiring(source_outputs, transform_inputs, transform_outputs, sink_inputs, order)


def _topological(inputs: Sequence[tuple[str, ...]], outputs: Sequence[str]) -> tuple[int, ...]:
    """Transforms in an order where each comes after those it reads (file order where
    free, as SeaTunnel's queue); a cycle is an error naming one of its transforms."""
    produced_by = {name: index for index, name in enumerate(outputs)}
    done: list[int] = []
    waiting = list(range(len(outputs)))
    while waiting:
        ready = [i for i in waiting if all(produced_by.get(n) in done or n not in produced_by for n in inputs[i])]
        if not ready:
            raise ConfigError(
                f"transform[{waiting[0]}].plugin_input",
                f"the transforms {sorted(waiting)} read each other's tables in a cycle",
            )
        done.append(ready[0])
        waiting.remove(ready[0])
    return tuple(done)


def _has(entry: Mapping[str, Any], keys: Sequence[str]) -> bool:
    return any(entry.get(key) not in (None, "", []) for key in keys)


def _value(entry: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, Any]:
    for key in keys:
        if entry.get(key) not in (None, "", []):
            return key, entry[key]
    return keys[0], None


def _output(entry: Mapping[str, Any], where: str) -> str:
    key, value = _value(entry, OUTPUT_KEYS)
    if value is None:
        raise ConfigError(
            f"{where}.plugin_output",
            "is required when a job wires tables by name (or result_table_name, its older name)",
        )
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}.{key}", f"expected a table name, got {value!r}")
    return value.strip()


def _inputs(entry: Mapping[str, Any], where: str) -> tuple[str, ...]:
    key, value = _value(entry, INPUT_KEYS)
    if value is None:
        raise ConfigError(
            f"{where}.plugin_input",
            "is required when a job wires tables by name (or source_table_name, its older name)",
        )
    # SeaTunnel reads a list, a JSON-like list or names separated by commas
    items = value if isinstance(value, list) else str(value).strip().strip("[]").split(",")
    names = tuple(str(item).strip().strip("'\"").strip() for item in items)
    if not names or not all(names):
        raise ConfigError(f"{where}.{key}", f"expected table names, got {value!r}")
    return tuple(dict.fromkeys(names))
