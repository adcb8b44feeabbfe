"""Columns a query passes through unchanged skip DuckDB: they are taken from the batch.

Profiling the ``Sql`` transform showed that most of its cost over pyarrow.compute is
moving wide columns (a 100-byte payload, strings) into DuckDB and back, even when the
query only selects them (``select id, payload, ... where ...``). So when a select-list
item is just an input column of a wide type, the query is rewritten to select a row
number in its place (``__st_row``, appended to the batch), and the column is taken from
the input by those row numbers (``Array.take``: one copy, and the column keeps its exact
Arrow type). Filters, ``order by`` and ``limit`` move the row numbers with the rows, so
the result is the same.

The rewrite is only made when it cannot change the meaning: one base table, no
``distinct``, ``group by``, ``having``, ``qualify`` or ``order by`` (``limit`` is fine), no
``select *``, and only for items not renamed (so any other mention of the name still
means the same input column); the rewritten query is
parsed and bound by DuckDB itself (``json_serialize_sql``/``json_deserialize_sql``, no
home-made SQL parsing), and if anything about it fails, the original query runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

ROW = "__st_row"
_PREFIX = "__st_pass_"


def _wide(kind: pa.DataType) -> bool:
    return (pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind)
            or pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_nested(kind))


@dataclass(frozen=True)
class PassThrough:
    """The rewritten query, and for each of its ``__st_pass_N`` columns the input column
    to take and the name the output gives it."""

    query: str
    columns: dict[str, tuple[str, str]]

    def with_rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        import numpy as np

        return batch.append_column(ROW, pa.array(np.arange(batch.num_rows, dtype=np.int64)))

    def assemble(self, batch: pa.RecordBatch, result: pa.Table) -> pa.Table:
        arrays, names = [], []
        for name, column in zip(result.schema.names, result.columns):
            if name in self.columns:
                source, output = self.columns[name]
                arrays.append(batch.column(source).take(column.combine_chunks()))
                names.append(output)
            else:
                arrays.append(column)
                names.append(name)
        return pa.Table.from_arrays(arrays, names=names)


def parse_select(connection: Any, query: str) -> dict[str, Any] | None:
    """DuckDB's parse tree of a one-statement query (``json_serialize_sql``), None when
    DuckDB cannot serialise it."""
    try:
        tree = json.loads(connection.execute("SELECT json_serialize_sql($1::VARCHAR)", [query]).fetchone()[0])
    except Exception:
        return None
    statements = tree.get("statements") or []
    if tree.get("error") or len(statements) != 1 or not isinstance(statements[0].get("node"), dict):
        return None
    return tree


def plan(connection: Any, query: str, table: str, schema: pa.Schema) -> PassThrough | None:
    """The pass-through rewrite of ``query`` for input ``schema``, or None."""
    if ROW in schema.names or len(set(schema.names)) != len(schema.names):
        return None
    tree = parse_select(connection, query)
    if tree is None:
        return None
    node = tree["statements"][0]["node"]
    source = node.get("from_table") or {}
    if (node.get("type") != "SELECT_NODE" or source.get("type") != "BASE_TABLE" or node.get("group_expressions")
            or node.get("group_sets") or node.get("aggregate_handling") != "STANDARD_HANDLING"
            or node.get("having") or node.get("qualify")
            or any(m.get("type") != "LIMIT_MODIFIER" for m in node.get("modifiers") or [])):
        return None
    columns: dict[str, tuple[str, str]] = {}
    for index, item in enumerate(node.get("select_list") or []):
        if item.get("class") == "STAR":
            return None
        names = item.get("column_names") or []
        if item.get("class") != "COLUMN_REF" or not names or names[-1] not in schema.names:
            continue
        if len(names) > 1 and names[-2] not in (table, source.get("alias")):
            continue
        if not _wide(schema.field(names[-1]).type) or item.get("alias") not in ("", None, names[-1]):
            continue  # renamed: a where clause naming the alias would see another column
        alias = f"{_PREFIX}{index}"
        columns[alias] = (names[-1], item.get("alias") or names[-1])
        item["column_names"] = [ROW]
        item["alias"] = alias
    if not columns:
        return None
    try:
        rewritten = connection.execute("SELECT json_deserialize_sql($1::JSON)", [json.dumps(tree)]).fetchone()[0]
    except Exception:
        return None
    return PassThrough(rewritten, columns)
