"""``Filter`` transform: SeaTunnel's (keep the columns ``fields``), or keep the rows where
``condition`` holds (an option SeaTunnel's Filter does not have; its own row filter is a
``Sql`` transform's ``where``).

With ``fields`` (a list of column names) the batch keeps those columns, in that order, as
SeaTunnel's Filter does; nothing else may be given with it.

``condition`` is any SQL boolean expression over the batch's columns, evaluated by the SQL
engine (:mod:`..sql.batch_query`), which returns the numbers of the rows where it holds
(null drops the row, as in a ``where``); the rows are then taken from the batch, whose
columns never go through DuckDB and keep their exact types. The original one-comparison
syntax (docs/jobs.md, "Transforms") is rewritten to SQL first and keeps its meaning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ..connectors.options import Option, OptionTable, given, option_key
from ..errors import ConfigError
from ..sql.passthrough import ROW
from .select import SelectTransform
from .sql import QueryTransform

_LEGACY_CONDITION = re.compile(
    r"^\s*(?P<column>`[^`]+`|[A-Za-z_][\w.]*)\s*(?:%\s*(?P<divisor>-?\d+)\s*)?"
    r"(?P<op>==|!=|<=|>=|<|>)\s*(?P<literal>.+?)\s*$"
)
#: the name the condition's input table gets inside the generated query
_INPUT = "filter_input"


def _rule_fields_or_condition(options: Mapping[str, Any]) -> None:
    """Rule: ``fields`` or ``condition``, not both."""
    if given(options, "fields") and given(options, "condition"):
        raise ConfigError(
            "fields", "give fields (SeaTunnel's: the columns to keep) or condition (the rows to keep), not both"
        )


class FilterTransform(QueryTransform):
    plugin_name = "Filter"
    query_option = "condition"
    OPTIONS = OptionTable(
        Option("condition", "str", "a SQL condition (or SeaTunnel's older syntax): the rows kept"),
        Option("fields", "value", "SeaTunnel's: the columns kept, as Select's fields"),
        rules=(_rule_fields_or_condition,),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self._columns: SelectTransform | None = None
        if opts.given("fields"):
            self._columns = SelectTransform({"fields": opts["fields"]})
            return
        self.condition: str = opts.require("condition")
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
