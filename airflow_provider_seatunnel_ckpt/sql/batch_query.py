"""One SQL ``SELECT`` run over each Arrow batch by DuckDB, in the Python worker.

Shared by the ``Sql`` and ``Filter`` transforms and the Kafka sink's record encoding. The
query names one table (SeaTunnel's ``source_table_name``, or ``dual``); each batch is
bound to that name zero-copy and the result comes back as Arrow. A query therefore sees one batch at a time: an aggregate
covers one batch, not the stream.

The connection is the subtask's own: one thread (the subtask is already one of
``parallelism`` processes), no file or network access (a job file's query must not read
``/etc/passwd`` through ``read_csv``), no extension loading, and the configuration locked
so a query cannot undo that. It is opened lazily, on the executor that runs the subtask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import ConfigError
from .functions import install as install_seatunnel_functions
from .syntax import duckdb_syntax

if TYPE_CHECKING:
    from .arrow import ArrowPlan
    from .passthrough import PassThrough

_CONNECTION_CONFIG = {
    "threads": 1,
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    # DuckDB 1.5's reading on DuckDB 2 too, so a job means the same on both: a lambda may
    # be written x -> x + 1 (2 refuses it by default; functions.py writes lambda x: ...)
    "lambda_syntax": "ENABLE_SINGLE_ARROW",
    "lock_configuration": True,
}
#: and an integer division or remainder by zero is null (2 fails the query by default)
_DUCKDB_2_CONFIG = {"error_on_division_by_zero": False}


def _duckdb() -> Any:
    import duckdb  # lazy: only jobs with a Sql or Filter transform pay for the import

    return duckdb


# sqlglot's modules (tree.py and its readers) are imported by the methods that use
# them, as DuckDB is: their import costs about what DuckDB's does, and the Kafka sink's
# module imports this one


def _new_connection(query: str) -> Any:
    duckdb = _duckdb()
    major = int(duckdb.__version__.split(".", 1)[0])
    connection = duckdb.connect(config={**_CONNECTION_CONFIG, **(_DUCKDB_2_CONFIG if major >= 2 else {})})
    install_seatunnel_functions(connection, query)  # SeaTunnel's function names it calls (functions.py)
    return connection


def duckdb_message(err: BaseException) -> str:
    """DuckDB's message on one line, without the caret drawing under the query text."""
    text = str(err).split("\nLINE ", 1)[0]
    return "; ".join(part.strip() for part in text.split("\n") if part.strip()) or type(err).__name__


class BatchQuery:
    """A parsed ``SELECT`` over one input table; ``run`` applies it to a batch.

    Errors are ``ConfigError`` with ``key`` (the option holding the query) as given to
    each call, so the caller names ``transform[1].query`` on the driver or an executor.
    """

    def __init__(self, query: str, key: str, arrow_kernels: bool = True):
        duckdb = _duckdb()
        #: False: always DuckDB (the reference the Arrow plans are tested and measured against)
        self.arrow_kernels = arrow_kernels
        self.query = query = duckdb_syntax(query)
        try:
            statements = duckdb.extract_statements(query)
        except duckdb.Error as err:
            raise ConfigError(key, duckdb_message(err)) from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            kinds = ", ".join(s.type.name for s in statements) or "nothing"
            raise ConfigError(key, f"expected one SELECT statement, got {kinds}")
        try:
            tables = _new_connection(query).get_table_names(query, qualified=False)
        except duckdb.Error as err:
            raise ConfigError(key, duckdb_message(err)) from None
        if len(tables) != 1:
            named = ", ".join(sorted(tables)) or "none"
            raise ConfigError(
                key,
                f"expected the query to read one table (the transform's input, e.g. 'from source' or "
                f"'from dual'), it reads {named}",
            )
        (self.table,) = tables
        self._connection: Any = None
        from .tree import parse

        #: sqlglot's tree of the query (tree.py; None: sqlglot cannot read it)
        self._tree = parse(query)
        #: input schema -> its pass-through rewrite (None: run the query as written)
        self._plans: dict[pa.Schema, PassThrough | None] = {}
        #: input schema -> the query compiled to Arrow kernels (None: DuckDB runs it)
        self._arrow_plans: dict[pa.Schema, ArrowPlan | None] = {}
        #: input schema -> the query with SeaTunnel's readings (rewrites.py), and its tree
        self._queries: dict[pa.Schema, tuple[str, Any]] = {}

    def _connect(self) -> Any:
        if self._connection is None:
            self._connection = _new_connection(self.query)
        return self._connection

    def query_for(self, schema: pa.Schema) -> str:
        """The query as it runs on input ``schema``: with SeaTunnel's readings of casts,
        extract and week (:mod:`.rewrites`), else as written."""
        return self._rewritten(schema)[0]

    def _rewritten(self, schema: pa.Schema) -> tuple[str, Any]:
        if schema not in self._queries:
            from .rewrites import seatunnel_rewrites
            from .tree import parse

            rewritten = seatunnel_rewrites(self._tree, schema)
            self._queries[schema] = (self.query, self._tree) if rewritten is None else (rewritten, parse(rewritten))
        return self._queries[schema]

    def bind(self, schema: pa.Schema, key: str) -> pa.Schema:
        """The output schema for input ``schema``; unknown columns and type errors fail here."""
        return self._execute_on_duckdb(schema.empty_table(), key).schema

    def run(self, batch: pa.RecordBatch, key: str) -> pa.RecordBatch | None:
        """The query's result over ``batch`` as one batch, None when no row is left."""
        result = self._execute(batch, key)
        if result.num_rows == 0:
            return None
        if isinstance(result, pa.RecordBatch):
            return result
        batches = result.combine_chunks().to_batches()
        return batches[0]

    def _execute(self, data: pa.RecordBatch | pa.Table, key: str) -> pa.RecordBatch | pa.Table:
        arrow_plan = self.arrow_plan(data.schema)
        result = arrow_plan.run(data) if arrow_plan is not None else None
        # None: a value the engines treat differently, DuckDB's answer is the one
        return result if result is not None else self._execute_on_duckdb(data, key)

    def _execute_on_duckdb(self, data: pa.RecordBatch | pa.Table, key: str) -> pa.Table:
        duckdb = _duckdb()
        passthrough = self._passthrough(data.schema)
        try:
            if passthrough is not None:
                result = self._run(passthrough.with_rows(data), passthrough.query)
                return passthrough.assemble(data, result)
            return self._run(data, self.query_for(data.schema))
        except duckdb.Error as err:
            raise ConfigError(key, duckdb_message(err)) from None

    def arrow_plan(self, schema: pa.Schema) -> ArrowPlan | None:
        """The query compiled to Arrow kernels for this input schema (:mod:`.arrow`),
        None when it runs on DuckDB."""
        from .arrow import plain_schema

        if not self.arrow_kernels or not plain_schema(schema):
            return None  # checked first: schemas differing only in field metadata are equal keys
        if schema not in self._arrow_plans:
            self._arrow_plans[schema] = self._compile(schema)
        return self._arrow_plans[schema]

    def _compile(self, schema: pa.Schema) -> ArrowPlan | None:
        from .arrow import compile_select

        try:
            tree = self._rewritten(schema)[1]
            if tree is None:
                return None
            expected = self._execute_on_duckdb(schema.empty_table(), "query").schema
            return compile_select(tree, self.table, schema, expected)
        except Exception:  # the query fails, or a type Arrow cannot handle: DuckDB runs it and says so
            return None

    def _run(self, data: pa.RecordBatch | pa.Table, query: str) -> pa.Table:
        return self._connect().from_arrow(data).query(self.table, query).to_arrow_table()

    def _passthrough(self, schema: pa.Schema) -> PassThrough | None:
        """The rewrite for this input schema, kept only when it binds and gives the
        query's own column names (anything else: the query as written)."""
        if schema in self._plans:
            return self._plans[schema]
        from .passthrough import plan

        query, tree = self._rewritten(schema)
        found = plan(query, tree, schema)
        if found is not None:
            empty = schema.empty_table()
            try:
                expected = self._run(empty, query).schema.names
                if found.assemble(empty, self._run(found.with_rows(empty), found.query)).schema.names != expected:
                    found = None
            except Exception:  # the query itself fails: report that, from the query as written
                found = None
        self._plans[schema] = found
        return found
