"""SeaTunnel's ``json`` files: one object per line, read through pyarrow's json reader
(or, without a schema, each object's ``content`` member as text); the sink's encoder is
:class:`..seatunnel_sink._JsonEncoder`."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ...seatunnel_types import Column, has_map
from ..config import CONTENT_COLUMN
from ..storage import STREAM_BLOCK_SIZE


def _json_parse_type(kind: pa.DataType) -> pa.DataType | None:
    """The type pyarrow's json reader reads for a column of ``kind`` (converted after):
    dates, times, timestamps and bytes as text; None: let it infer (maps, which it reads
    as rows). A row holding a map names its other fields, the map left to inference, so
    that its decimals read exactly (inferred, they would pass through a double)."""
    if pa.types.is_map(kind):
        return None
    if pa.types.is_date(kind) or pa.types.is_time(kind) or pa.types.is_timestamp(kind) or pa.types.is_binary(kind):
        return pa.string()
    if pa.types.is_list(kind):
        value_type = _json_parse_type(kind.value_type)
        return None if value_type is None else pa.list_(value_type)
    if pa.types.is_struct(kind):
        fields = [(f.name, _json_parse_type(f.type)) for f in kind]
        return pa.struct([pa.field(name, sub) for name, sub in fields if sub is not None])
    return kind


def _json_content(lines: pa.Array) -> pa.Array:
    """Each json line's ``content`` member as text (a string as it is, another value as its
    json text, as Jackson's ``JsonNode.toString`` gives it; absent or null: null)."""
    values = []
    for line in lines.to_pylist():
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"a line is not json ({exc}): {line[:80]!r}") from None
        value = row.get(CONTENT_COLUMN) if isinstance(row, dict) else None
        if value is not None and not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        values.append(value)
    return pa.array(values, pa.string())


def open_json(stream: Any, selected: list[tuple[int, Column]]) -> Any:
    """pyarrow's json reader over ``stream``, reading the ``selected`` columns."""
    import pyarrow.json as pajson

    parse = [(c.name, _json_parse_type(c.type)) for _, c in selected]
    explicit = pa.schema([pa.field(name, kind) for name, kind in parse if kind is not None])
    infer = any(has_map(c.type) for _, c in selected)
    return pajson.open_json(
        stream,
        read_options=pajson.ReadOptions(block_size=STREAM_BLOCK_SIZE),
        parse_options=pajson.ParseOptions(
            explicit_schema=explicit, unexpected_field_behavior="infer" if infer else "ignore"
        ),
    )
