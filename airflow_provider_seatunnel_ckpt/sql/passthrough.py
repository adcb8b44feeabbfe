"""Columns a query passes through unchanged skip DuckDB: they are taken from the batch.

Moving wide columns (strings, payloads) into DuckDB and back is most of a plain query's
cost. So when a select-list item is just an input column of a wide type, the query is
rewritten to select a row number in its place (``__st_row``, appended to the batch), and
the column is taken from the input by those row numbers (``Array.take``: one copy, the
exact Arrow type kept). Filters and ``limit`` move the row numbers with the rows.

The rewrite is made only when it cannot change the meaning: one base table, no
``distinct``, ``group by``, ``having``, ``qualify``, ``order by`` or ``select *``, and
only for items not renamed. The query is read by sqlglot (:mod:`.tree`) and only those
items' text is replaced, by its positions; if anything about the result fails in DuckDB,
the original query runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from . import tree as sql_tree

ROW = "__st_row"
_PREFIX = "__st_pass_"


def _wide(kind: pa.DataType) -> bool:
    return (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_nested(kind)
    )


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


def plan(query: str, tree: exp.Expression | None, schema: pa.Schema) -> PassThrough | None:
    """The pass-through rewrite of ``query`` (parsed: ``tree``) for input ``schema``, or None."""
    if ROW in schema.names or len(set(schema.names)) != len(schema.names):
        return None
    table = sql_tree.plain_table(tree, ("where", "limit", "offset"))
    if table is None or tree is None:
        return None
    if any(item.find(exp.Star) for item in tree.expressions):
        return None  # a star would select the row numbers too
    names = (table.name, table.alias)
    columns: dict[str, tuple[str, str]] = {}
    spans: list[tuple[int, int, str]] = []
    for index, item in enumerate(tree.expressions):
        column, alias = (item.this, item.alias) if isinstance(item, exp.Alias) else (item, "")
        if not isinstance(column, exp.Column) or column.args.get("db"):
            continue
        name = column.name
        if name not in schema.names or (column.table and column.table not in names):
            continue
        if not _wide(schema.field(name).type) or alias not in ("", name):
            continue  # renamed: a where clause naming the alias would see another column
        positions = [n.meta.get("start") for n in item.find_all(exp.Identifier)] + [
            n.meta.get("end") for n in item.find_all(exp.Identifier)
        ]
        if None in positions:
            return None  # a sqlglot that does not say where its names are
        new = f"{_PREFIX}{index}"
        columns[new] = (name, alias or name)
        spans.append((min(positions), max(positions) + 1, f"{ROW} AS {new}"))
    if not columns:
        return None
    for start, end, text in sorted(spans, reverse=True):
        query = query[:start] + text + query[end:]
    return PassThrough(query, columns)
