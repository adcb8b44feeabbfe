"""Random FakeSource rows pinned, so a job that generates its input can be compared.

A SeaTunnel job whose FakeSource has no ``rows`` makes random values, different on every
run and on every engine, so its output cannot be compared row by row. ``pin_fake_rows``
makes such a job deterministic: every FakeSource table without ``rows`` gets, as explicit
``rows``, the rows this project's FakeSource generates for it (seeded; its ``schema``, its
``row.num``, its templates and ranges honoured), written as SeaTunnel's FakeSource reads
explicit rows (JSON values by SeaTunnel's JsonToRowConverters rules: decimals as text,
bytes as base64, dates and times as ISO text, a row as a list by position, a map as an
object). Its ``split.num`` becomes 1, since explicit rows are emitted once per split.

Both engines then read the same rows, and the comparison covers what the job does with
them: its transforms, the types they make, its sinks. What changes is the input only;
bench/seatunnel_differential.py records such a file as ``pinned``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

#: the most rows pinned into one job file (every FakeSource table of it together): a
#: longer one is left out (SeaTunnel's engine tests generate millions for load)
MAX_PINNED_ROWS = 2_000


class NotPinnable(Exception):
    """Why a job's generated rows cannot be written as explicit rows."""


def pin_fake_rows(doc: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """The job with every FakeSource table's generated rows written as explicit ``rows``,
    and how many tables were pinned (0: the job was left as it was)."""
    from airflow_provider_seatunnel_ckpt.connectors import load_source
    from airflow_provider_seatunnel_ckpt.jobfile.variables import substitute

    job = json.loads(json.dumps(doc, default=str))
    sources = job.get("source")
    sources = [sources] if isinstance(sources, dict) else sources or []
    pinned = total = 0
    for index, entry in enumerate(sources):
        if str(entry.get("plugin_name", "")).lower() != "fakesource":
            continue
        tables = entry.get("tables_configs")
        # generated from the options as the job runs them: ``${name:default}`` filled in
        built = load_source(substitute(entry), f"source[{index}]")
        parts = getattr(built, "sources", None) or [built]
        blocks = tables if isinstance(tables, list) else [entry]
        for block, source in zip(blocks, parts, strict=True):
            if source.rows is not None:
                continue
            rows = generated_rows(source)
            total += len(rows)
            if total > MAX_PINNED_ROWS:
                raise NotPinnable(f"FakeSource generates more than {MAX_PINNED_ROWS} rows: too many to pin")
            block["rows"] = [{"kind": "INSERT", "fields": row} for row in rows]
            pinned += 1
        if pinned:
            entry["split.num"] = 1
            for block in tables if isinstance(tables, list) else []:
                block.pop("split.num", None)
    return job, pinned


def generated_rows(source: Any) -> list[list[Any]]:
    """The rows ``source`` (a FakeSource without explicit rows) makes for its first reader,
    as explicit row literals."""
    from airflow_provider_seatunnel_ckpt.connectors.fake_source import BLOCK_ROWS

    # its blocks, not a reader: a reader would keep split.read-interval between the splits
    splits = [split for split in source.splits(1) if split.spec["reader"] == 0]
    batches = [
        source.block(split, block)
        for split in splits
        for block in range(math.ceil(int(split.spec["rows"]) / BLOCK_ROWS))
    ]
    table = pa.Table.from_batches(batches, schema=source.schema) if batches else source.schema.empty_table()
    kinds = [field.type for field in source.schema]
    return [[literal(value, kind) for value, kind in zip(row.values(), kinds)] for row in table.to_pylist()]


def literal(value: Any, kind: pa.DataType) -> Any:
    """A value of Arrow type ``kind`` as the JSON value SeaTunnel's FakeSource reads back
    to the same value."""
    if value is None:
        return None
    if pa.types.is_floating(kind) and not math.isfinite(value):
        raise NotPinnable(f"a {kind} value {value} has no JSON form")
    if pa.types.is_decimal(kind):
        return format(value, "f") if isinstance(value, decimal.Decimal) else str(value)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return base64.b64encode(value).decode("ascii")
    if pa.types.is_timestamp(kind):
        if value.tzinfo is not None:
            raise NotPinnable("a timestamp with a time zone")
        # one format per column: SeaTunnel picks a column's format from its first value
        return value.strftime("%Y-%m-%d %H:%M:%S") + (f".{value.microsecond:06d}" if value.microsecond else "")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [literal(item, kind.value_type) for item in value]
    if pa.types.is_map(kind):
        return {str(literal(k, kind.key_type)): literal(v, kind.item_type) for k, v in value}
    if pa.types.is_struct(kind):
        return [literal(value.get(field.name), field.type) for field in kind]
    return value
