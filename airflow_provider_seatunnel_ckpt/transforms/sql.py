"""``Sql`` transform: ``query`` is a SQL ``SELECT`` over the transform's input table.

SeaTunnel's syntax: ``select ... from <source_table_name>`` (any one table name; ``dual``
works too), run by DuckDB over each batch (:mod:`..sql.batch_query`), so the dialect and
the functions are DuckDB's. Stateless: an aggregate or ``distinct`` covers one batch, not
the whole input. The query is parsed when the job file is loaded and bound against the
input schema before Spark starts whenever the source knows its schema then, so a typo or
an unknown column fails with ``transform[N].query: <DuckDB's message>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..connectors.api import Transform
from ..connectors.options import REQUIRED, Option, OptionTable, option_key
from ..sql.batch_query import BatchQuery


class QueryTransform(Transform):
    """A transform that is one ``BatchQuery``, built from the option ``query_option``
    (shared by ``Sql`` and ``Filter``)."""

    query_option = "query"

    def use_query(self, query: str) -> None:
        self._query = BatchQuery(query, self.query_option)

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        return self._query.bind(input_schema, option_key(self, self.query_option))

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        return self._query.run(batch, option_key(self, self.query_option))


class SqlTransform(QueryTransform):
    plugin_name = "Sql"
    OPTIONS = OptionTable(Option("query", "str", "a SELECT over the input table, run by DuckDB per batch", REQUIRED))

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.query: str = self.parse_options()["query"]
        self.use_query(self.query)
