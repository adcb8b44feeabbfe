"""Moving batches along a job's wiring (:mod:`..jobfile.wiring`), and building its parts.

A batch read from a source carries its table; each transform reading the table gets it
once and passes its result on under its own table; each sink reading a table gets its
batches. The same walk runs on the driver before Spark starts, with schemas instead of
batches (:func:`bind_schemas`): each transform checks its options against its input,
tables read together must have one row type, and each sink is told its schema. Change
rows follow the same walk: only a transform or sink that declares it takes them
(``Transform.takes_change_rows``, ``Sink.change_rows``); the router removes the kind
column before every other consumer.

The rules: docs/seatunnel.md, "Table wiring and common options" and "Change rows
(RowKind)".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from ..connectors import (
    SourceUnion,
    load_sink,
    load_sink_of_table,
    load_source,
    load_table_sinks,
    load_transform,
    sink_writes_tables,
)
from ..connectors.api import KINDS, Sink, Source, Transform, has_kinds, strip_kinds, with_kinds, without_kinds
from ..errors import ConfigError, ConnectorError
from ..jobfile.wiring import Wiring
from .composite import SinkGroup, TableSinks


class Router:
    def __init__(
        self,
        wiring: Wiring,
        transforms: Sequence[Transform],
        sinks: Sequence[Sink] = (),
        sources: Sequence[Source] = (),
    ):
        self.wiring = wiring
        self.transforms = list(transforms)
        names = {*wiring.source_outputs, *wiring.transform_outputs}
        self._consumers = {name: wiring.consumers(name) for name in names}
        #: the consumers that read the row kind column; it is removed before the others
        self._reads_kinds = {("transform", i) for i, t in enumerate(self.transforms) if t.takes_change_rows}
        self._reads_kinds |= {("sink", k) for k, sink in enumerate(sinks) if sink.change_rows == "keep"}
        #: the sinks among them fed by change rows: every batch they get carries kinds
        changes = table_changes(wiring, sources, self.transforms) if sources else None
        self._all_kinds = {
            ("sink", k)
            for k, inputs in enumerate(wiring.sink_inputs)
            if changes is not None and ("sink", k) in self._reads_kinds and any(changes[name][0] for name in inputs)
        }

    def route(
        self, batch: pa.RecordBatch, source: int, operator_state: Callable[[int], dict[str, Any]]
    ) -> list[tuple[int, pa.RecordBatch]]:
        """(sink index, batch) for every sink the batch reaches; ``operator_state(i)`` is
        the split's state of stateful transform ``i``."""
        out: list[tuple[int, pa.RecordBatch]] = []
        self._deliver(batch, self.wiring.source_outputs[source], operator_state, out)
        return out

    def _deliver(
        self,
        batch: pa.RecordBatch,
        table: str,
        operator_state: Callable[[int], dict[str, Any]],
        out: list[tuple[int, pa.RecordBatch]],
    ) -> None:
        for kind, index in self._consumers[table]:
            given = batch if (kind, index) in self._reads_kinds else strip_kinds(batch)
            if (kind, index) in self._all_kinds:
                given = with_kinds(given)
            if kind == "sink":
                if given.num_rows:
                    out.append((index, given))
                continue
            transform = self.transforms[index]
            result = transform.process(given, operator_state(index) if transform.stateful else None)
            if result is not None:
                self._deliver(result, self.wiring.transform_outputs[index], operator_state, out)


def bind_schemas(
    wiring: Wiring, sources: Sequence[Source], transforms: Sequence[Transform], sinks: Sequence[Sink] = ()
) -> list[pa.Schema | None]:
    """The schema each sink will receive (None where only reading tells), after checking
    each transform against its input. A source of several tables (``tables_configs``)
    feeds sinks that write several tables, alone, and no transform (SeaTunnel's rules).
    Errors name the job-file key."""
    tables: dict[str, pa.Schema | None] = {name: s.produced_schema() for name, s in zip(wiring.source_outputs, sources)}
    changes = table_changes(wiring, sources, transforms)
    several = _several_tables(wiring, sources)
    for index in wiring.transform_order:
        inputs = wiring.transform_inputs[index]
        _no_tables(
            several,
            inputs,
            f"transform[{index}]",
            "a transform on a source of several tables (tables_configs) is not supported, as in SeaTunnel",
        )
        transform = transforms[index]
        schema = _one_schema(tables, inputs, f"transform[{index}]")
        kinds, origins = _changes_in(changes, inputs)
        if kinds and not transform.takes_change_rows:
            _refuse(f"transform[{index}]", transform.plugin_name, kinds, origins)
        output = wiring.transform_outputs[index]
        tables[output] = transform.output_schema(schema if transform.takes_change_rows else without_kinds(schema))
    for k, inputs in enumerate(wiring.sink_inputs):
        if k < len(sinks):
            kinds, origins = _changes_in(changes, inputs)
            if kinds and sinks[k].change_rows not in ("ignore", "keep"):
                _refuse(f"sink[{k}]", _plugin(sinks[k]), kinds, origins)
            if kinds and sinks[k].change_rows == "keep":  # also when no schema is known (tables_configs)
                target = sinks[k]
                for part in target.sinks if isinstance(target, TableSinks) else [target]:
                    preflight(part, part.accepts_change_rows)
        if any(name in several for name in inputs):
            sink = sinks[k] if k < len(sinks) else None
            if len(inputs) > 1:
                _no_tables(
                    several,
                    inputs,
                    f"sink[{k}]",
                    "a source of several tables (tables_configs) feeds a sink alone, as in SeaTunnel",
                )
            if sink is not None and not getattr(sink, "writes_tables", False):  # built without its tables
                raise ConfigError(
                    f"sink[{k}].plugin_name",
                    f"{sink.plugin_name} reads several tables ({', '.join(several[inputs[0]])}) and was built for one",
                )
    schemas = [_one_schema(tables, inputs, f"sink[{k}]") for k, inputs in enumerate(wiring.sink_inputs)]
    return [
        schema if k < len(sinks) and sinks[k].change_rows == "keep" else without_kinds(schema)
        for k, schema in enumerate(schemas)
    ]


#: the change kinds a table's rows may have, and the sources they come from
_Changes = tuple[tuple[str, ...], tuple[str, ...]]


def table_changes(wiring: Wiring, sources: Sequence[Source], transforms: Sequence[Transform]) -> dict[str, _Changes]:
    """The change kinds each table's rows may have (and their sources), from what the
    sources declare and the transforms let through: known without reading a row."""
    changes: dict[str, _Changes] = {
        name: (tuple(s.change_rows), (f"source[{i}]",) if s.change_rows else ())
        for i, (name, s) in enumerate(zip(wiring.source_outputs, sources))
    }
    for index in wiring.transform_order:
        kinds, origins = _changes_in(changes, wiring.transform_inputs[index])
        out_kinds = transforms[index].change_rows_out(kinds) if kinds else ()
        changes[wiring.transform_outputs[index]] = (tuple(out_kinds), origins if out_kinds else ())
    return changes


def _changes_in(changes: dict[str, _Changes], inputs: Sequence[str]) -> _Changes:
    kinds = tuple(k for k in KINDS if any(k in changes[name][0] for name in inputs))
    return kinds, tuple(dict.fromkeys(origin for name in inputs for origin in changes[name][1]))


def _refuse(key: str, plugin: str, kinds: Sequence[str], origins: Sequence[str]) -> None:
    raise ConfigError(
        f"{key}.plugin_name",
        f"{plugin} does not support change rows ({'/'.join(kinds)} from "
        f"{', '.join(origins)}); put FilterRowKind or RowKindExtractor before it",
    )


def _plugin(sink: Sink) -> str:
    return sink.sinks[0].plugin_name if isinstance(sink, TableSinks) else sink.plugin_name


def _several_tables(wiring: Wiring, sources: Sequence[Source]) -> dict[str, list[str]]:
    """The tables of each source output that holds several (``tables_configs``)."""
    return {
        name: list(tables)
        for name, s in zip(wiring.source_outputs, sources)
        if len(tables := getattr(s, "table_names", None) or ()) > 1
    }


def _no_tables(several: dict[str, Any], inputs: Sequence[str], key: str, problem: str) -> None:
    if any(name in several for name in inputs):
        raise ConfigError(f"{key}.plugin_input", problem)


def _one_schema(tables: dict[str, pa.Schema | None], inputs: Sequence[str], key: str) -> pa.Schema | None:
    """The one row type of ``inputs``; with the kind column when any of them has it (the
    others are inserts: the column is not part of the row type)."""
    schemas = [tables[name] for name in inputs]
    known = [(name, s) for name, s in zip(inputs, schemas) if s is not None]
    known.sort(key=lambda item: not has_kinds(item[1]))
    for name, schema in known[1:]:
        if _row_type(schema) != _row_type(known[0][1]):
            raise ConfigError(
                f"{key}.plugin_input",
                f"tables {known[0][0]!r} and {name!r} have different row types "
                f"({_columns(known[0][1])} vs {_columns(schema)}); a transform or sink reads several "
                "tables only when their rows have one type (SeaTunnel's rule)",
            )
    if len(known) != len(schemas):
        return None  # one input is only known when read: nothing to bind against
    return known[0][1] if known else None


def _row_type(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    """Names and types, as SeaTunnel compares row types: nullability and metadata (a
    table's name, a column's comment) are not part of it."""
    return [(f.name, f.type) for f in without_kinds(schema)]


def _columns(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in without_kinds(schema))


# ---- the job's parts --------------------------------------------------------------------------
def preflight(connector: Any, check: Callable[[], None] | None = None) -> None:
    """Run a connector's checks (``preflight`` unless ``check`` says otherwise); its
    errors name the job-file key (``sink[0].table``), once: a key the connector already
    named in full (``option_key``) stays as it is."""
    try:
        (check or connector.preflight)()
    except ConfigError as err:
        prefix = getattr(connector, "config_key", "")
        if not prefix or err.key == prefix or err.key.startswith(f"{prefix}."):
            raise
        raise ConfigError(f"{prefix}.{err.key}" if err.key else prefix, err.problem) from None
    except ConnectorError as err:
        prefix = getattr(connector, "config_key", "")
        raise ConnectorError(f"{prefix}: {err}" if prefix else str(err)) from None


def load_sources(entries: Sequence[Any]) -> list[Source]:
    return [load_source(entry, f"source[{i}]") for i, entry in enumerate(entries)]


def load_transforms(entries: Sequence[Any]) -> list[Transform]:
    return [load_transform(entry, f"transform[{i}]") for i, entry in enumerate(entries)]


def load_sinks(job: Any, sources: Sequence[Source]) -> list[Sink]:
    """The job's sinks; one fed by a source of several tables alone is one sink per table
    (:class:`.composite.TableSinks`) unless it takes several tables itself (Assert). A
    sink of one source's table gets that table's placeholders filled (``${table_name}``),
    as SeaTunnel fills them for every sink. ``job``: its ``sinks``, ``sources`` (the
    entries) and ``graph``; ``sources``: the sources built from them."""
    wiring: Wiring = job.graph
    several = _several_tables(wiring, sources)
    sinks: list[Sink] = []
    for k, entry in enumerate(job.sinks):
        key = f"sink[{k}]"
        inputs = wiring.sink_inputs[k] if k < len(wiring.sink_inputs) else ()
        tables = several.get(inputs[0]) if len(inputs) == 1 else None
        if tables and not sink_writes_tables(entry, key):
            sinks.append(TableSinks(load_table_sinks(entry, key, tables), tables))
            continue
        origins = wiring.sources_feeding(inputs)
        if len(origins) == 1 and not tables:
            sinks.append(load_sink_of_table(entry, key, job.sources[min(origins)]))
        else:
            sinks.append(load_sink(entry, key))
    _name_instances(sinks)
    return sinks


def _name_instances(sinks: Sequence[Sink]) -> None:
    """``Sink.instance``: None for the first sink of each class, else its place in the job
    (the same on the driver and every executor: both build the sinks from the job file)."""
    seen: set[type] = set()
    for k, sink in enumerate(sinks):
        parts = zip(sink.sinks, sink.table_names) if isinstance(sink, TableSinks) else [(sink, None)]
        for part, table in parts:
            part.instance = None if type(part) not in seen else f"sink[{k}]" + (f" table {table}" if table else "")
            seen.add(type(part))


def one_source(sources: Sequence[Source]) -> Source:
    """The job's sources as the engine reads them: the source itself, or their union."""
    return sources[0] if len(sources) == 1 else SourceUnion(sources)


def one_sink(sinks: Sequence[Sink]) -> Sink:
    """The job's sinks as the engine writes them: the sink itself, or their group."""
    return sinks[0] if len(sinks) == 1 else SinkGroup(sinks)
