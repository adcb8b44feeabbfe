"""``Filter`` transform: SeaTunnel's (keep the columns ``fields``), or keep the rows where
``condition`` holds (an option SeaTunnel's Filter does not have; its own row filter is a
``Sql`` transform's ``where``).

With ``fields`` (a list of column names) the batch keeps those columns, in that order, as
SeaTunnel's Filter does; nothing else may be given with it.

DuckDB evaluates the condition over the batch's columns and returns the numbers of the
rows that hold; the rows are then taken from the batch (its columns never go through
DuckDB and keep their exact types).

``condition`` is any SQL boolean expression over the batch's columns, evaluated by
DuckDB (:mod:`.batch_sql`): ``id % 2 = 0 and name like 'a%'``. Rows where it is null
(a null column compared) are dropped, as in a SQL ``where``.

The original one-comparison syntax keeps working and keeps its meaning:
``<column> [% <divisor>] <op> <literal>`` with ``op`` one of ``== != < <= > >=``, the
column in backticks when it is not an identifier and the literal a JSON number,
``true``/``false`` or a string in single *or double* quotes. Such a condition is
rewritten to SQL first, so ```user name` == "bob"`` compares the column with the text
``bob`` (in plain SQL ``"bob"`` would name a column).
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from ..errors import ConfigError
from .batch_sql import QueryTransform
from .select import SelectTransform
from .options import Options, option_key
from .sql_passthrough import ROW

_LEGACY_CONDITION = re.compile(
    r"^\s*(?P<column>`[^`]+`|[A-Za-z_][\w.]*)\s*(?:%\s*(?P<divisor>-?\d+)\s*)?"
    r"(?P<op>==|!=|<=|>=|<|>)\s*(?P<literal>.+?)\s*$"
)
#: the name the condition's input table gets inside the generated query
_INPUT = "filter_input"


class FilterTransform(QueryTransform):
    plugin_name = "Filter"
    query_option = "condition"

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = Options(self.plugin_name, options, known={"condition", "fields"})
        self._columns: SelectTransform | None = None
        if opts.has("fields"):
            if opts.has("condition"):
                raise ConfigError("fields", "give fields (SeaTunnel's: the columns to keep) or condition "
                                            "(the rows to keep), not both")
            self._columns = SelectTransform({"fields": options["fields"]})
            return
        self.condition: str = opts.str("condition")
        where = legacy_condition_as_sql(self.condition) or self.condition
        # DuckDB only says which rows hold; the batch itself never goes through it
        self.use_query(f"SELECT {ROW} FROM {_INPUT} WHERE {where}")

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        if self._columns is not None:
            return self._keeping_columns().output_schema(input_schema)
        self._query.bind(input_schema.append(pa.field(ROW, pa.int64())), option_key(self, self.query_option))
        return input_schema

    def _keeping_columns(self) -> SelectTransform:
        assert self._columns is not None
        self._columns.config_key = getattr(self, "config_key", "")  # its errors name this entry
        return self._columns

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        if self._columns is not None:
            return self._keeping_columns().process(batch, split_state)
        numbered = batch.append_column(ROW, pa.array(np.arange(batch.num_rows, dtype=np.int64)))
        kept = self._query.run(numbered, option_key(self, self.query_option))
        return batch.take(kept.column(0)) if kept is not None else None


def legacy_condition_as_sql(condition: str) -> str | None:
    """The SQL for a condition in the original syntax, None when it is not in it."""
    match = _LEGACY_CONDITION.match(condition)
    if match is None:
        return None
    literal = _legacy_literal(match["literal"])
    if literal is None:
        return None
    column = '"' + match["column"].strip("`").replace('"', '""') + '"'
    if match["divisor"] is not None:
        column = f"({column} % {int(match['divisor'])})"
    return f"{column} {match['op']} {literal}"


def _legacy_literal(text: str) -> str | None:
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return _sql_string(text[1:-1])
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _sql_string(value)
    return None


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
