"""``Sql`` transform: ``query`` is a SQL ``SELECT`` over the transform's input table.

SeaTunnel's syntax: ``select ... from <source_table_name>`` (any one table name; ``dual``
works too), run by DuckDB over each batch (:mod:`.batch_sql`), so the dialect and the
functions are DuckDB's. Stateless: an aggregate or ``distinct`` covers one batch, not the
whole input. The query is parsed when the job file is loaded and bound against the
input schema before Spark starts whenever the source knows its schema then, so a typo or
an unknown column fails with ``transform[N].query: <DuckDB's message>``.
"""

from __future__ import annotations

from typing import Any, Mapping

from .batch_sql import QueryTransform
from .options import Options


class SqlTransform(QueryTransform):
    plugin_name = "Sql"

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.query: str = Options(self.plugin_name, options, known={"query"}).str("query")
        self.use_query(self.query)
