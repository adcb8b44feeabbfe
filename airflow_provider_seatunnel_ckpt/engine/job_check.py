"""``seatunnel-ckpt run --check``: is this job file valid, and how is it wired?

SeaTunnel's ``--check`` reads a job file and stops. This does the same with the checks
a run makes before it starts Spark, except those that need the live systems: every
connector is built from its options, the tables are wired, each transform is bound to the
schema it will receive and each sink is told its own. What it prints is the job as the
engine will run it, one line per source, transform and sink, with the tables between them.
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from ..connectors.api import has_kinds, without_kinds
from ..jobfile.spec import JobSpec
from .composite import TableSinks
from .routing import bind_schemas, load_sinks, load_sources, load_transforms, preflight


def check_job(job: JobSpec) -> list[str]:
    """The lines to print for a valid job; raises ``ConfigError`` (one line) otherwise."""
    sources, transforms = load_sources(job.sources), load_transforms(job.transforms)
    sinks = load_sinks(job, sources)
    sink_schemas = bind_schemas(job.graph, sources, transforms, sinks)
    for sink, schema in zip(sinks, sink_schemas):
        # its errors name the sink's key, as a run's do; a check contacts no system
        if schema is not None and not sink.accepts_reads_the_target:
            preflight(sink, functools.partial(sink.accepts, schema))
    graph = job.graph
    named = job.wiring is not None  # a chain's table names are internal
    mode = str(job.env.get("job.mode", "BATCH")).upper()
    lines = [f"job {job.name}: {job.parallelism} subtask{'s' if job.parallelism != 1 else ''}, {mode}"]
    for index, (entry, source) in enumerate(zip(job.sources, sources)):
        tables = getattr(source, "table_names", None)
        what = f"tables {', '.join(tables)}" if tables else _columns(without_kinds(source.produced_schema()))
        if source.change_rows:
            what += f"; change rows ({'/'.join(source.change_rows)})"
        lines.append(f"source[{index}] {entry['plugin_name']}{_arrow(named, graph.source_outputs[index])}: {what}")
    for index in graph.transform_order:
        inputs = ", ".join(graph.transform_inputs[index]) if named else ""
        output = f" -> {graph.transform_outputs[index]}" if named else ""
        lines.append(
            f"transform[{index}] {job.transforms[index]['plugin_name']}{f' ({inputs}{output})' if named else ''}"
        )
    for index, (entry, sink, schema) in enumerate(zip(job.sinks, sinks, sink_schemas)):
        inputs = f" <- {', '.join(graph.sink_inputs[index])}" if named else ""
        tables = sink.table_names if isinstance(sink, TableSinks) else None
        what = f"one per table ({', '.join(tables)})" if tables else _columns(schema)
        if sink.accepts_reads_the_target:
            what += "; its target's columns are checked when the job runs"
        lines.append(f"sink[{index}] {entry['plugin_name']}{inputs}: {what}")
    lines += [f"warning: {line}" for line in job.warnings]
    lines.append("ok: the job file is valid (the systems it names were not contacted: a run checks them first)")
    return lines


def _arrow(named: bool, table: str) -> str:
    return f" -> {table}" if named else ""


def _columns(schema: Any) -> str:
    if schema is None:
        return "columns known when read"
    assert isinstance(schema, pa.Schema)
    columns = ", ".join(f"{field.name} {field.type}" for field in without_kinds(schema))
    # the kind column is the engine's, not the user's: say that rows have kinds, not its name
    return f"{columns}; each row with its kind" if has_kinds(schema) else columns
