"""A ``Sql`` query as a sqlglot tree: parsed, typed by the input's columns, and rendered
back for DuckDB. What the SeaTunnel rewrites (:mod:`.rewrites`), the pass-through
(:mod:`.passthrough`) and the Arrow plans (:mod:`.arrow`) read.

The dialect is DuckDB's with every function call kept as written: SeaTunnel's function
names are DuckDB macros here (:mod:`.functions`), and sqlglot's own reading of a
name (``insert``, ``to_char``, ``regexp_like``...) would turn it into another function. A
rendered tree reads in DuckDB as the text it came from (test_sql_tree.py compares
DuckDB's parse of the two on SeaTunnel's job files' queries and on DuckDB's syntax).

Types are sqlglot's (``annotate_types``) over the input's Arrow schema; a type sqlglot
cannot tell is ``UNKNOWN``, and no rule rewrites on it.
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
from sqlglot import exp, parse_one
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.scope import traverse_scope

log = logging.getLogger(__name__)

#: the calls with syntax of their own (``cast(x AS t)``, ``extract(f FROM t)``...); any
#: other name is an ``Anonymous`` call, rendered as written
_SYNTAX = ("CAST", "TRY_CAST", "EXTRACT", "POSITION", "SUBSTRING", "TRIM")


class _DuckDBAsWritten(DuckDB):
    class Tokenizer(DuckDB.Tokenizer):
        # SeaTunnel's type name byte is a type of the query's connection (functions.TYPES)
        KEYWORDS = {word: token for word, token in DuckDB.Tokenizer.KEYWORDS.items() if word != "BYTE"}

    class Parser(DuckDB.Parser):
        FUNCTIONS: dict[str, Any] = {}
        FUNCTION_PARSERS = {name: parse for name, parse in DuckDB.Parser.FUNCTION_PARSERS.items() if name in _SYNTAX}

        def _parse_types(self, *args: Any, **kwargs: Any) -> Any:
            # a type as written: DuckDB 2 names a column CAST(x AS string), not CAST(x AS TEXT)
            start = self._curr
            parsed = super()._parse_types(*args, **kwargs)
            if isinstance(parsed, exp.DataType) and start is not None and self._prev is not None:
                parsed.meta["written"] = self._find_sql(start, self._prev)
            return parsed

    class Generator(DuckDB.Generator):
        # spellings DuckDB parses to another tree than the query's own (a column's name
        # is DuckDB's text of its expression, so the tree must stay the same)
        TRANSFORMS = {
            **DuckDB.Generator.TRANSFORMS,
            exp.Not: lambda self, e: _not(self, e),
            exp.StrPosition: lambda self, e: f"position({self.sql(e, 'substr')} IN {self.sql(e, 'this')})",
            exp.CurrentDate: lambda self, e: "current_date",
            exp.CurrentTime: lambda self, e: "current_time",
            exp.CurrentTimestamp: lambda self, e: "current_timestamp",
            exp.DataType: lambda self, e: e.meta.get("written") or self.datatype_sql(e),
        }


#: x IS NOT NULL, x NOT LIKE p...: one operator to DuckDB, where NOT (x IS NULL) is two
_NEGATED = {exp.Is: "IS NOT", exp.Like: "NOT LIKE", exp.ILike: "NOT ILIKE"}


def _not(generator: Any, node: exp.Not) -> str:
    operator = _NEGATED.get(type(node.this))
    if operator is None:
        return f"NOT {generator.sql(node, 'this')}"
    return f"{generator.sql(node.this, 'this')} {operator} {generator.sql(node.this, 'expression')}"


def parse(query: str) -> exp.Expression | None:
    """The tree of a one-statement query, None when sqlglot cannot read it (DuckDB then
    runs the query as written)."""
    try:
        return parse_one(query, dialect=_DuckDBAsWritten)
    except Exception as err:  # SqlglotError, or a recursion error on a deep expression
        log.debug("sqlglot cannot read the query (%s); DuckDB runs it as written", err)
        return None


def parse_expression(text: str) -> exp.Expression:
    """One SQL expression (a template of a rewrite)."""
    return parse_one(f"SELECT {text}", dialect=_DuckDBAsWritten).expressions[0]


def render(tree: exp.Expression) -> str:
    """DuckDB's text of ``tree``, its sqlglot types dropped: sqlglot's DuckDB generator
    rewrites some typed nodes into another dialect's meaning."""
    for node in tree.walk():
        node.type = None
    return tree.sql(dialect=_DuckDBAsWritten, normalize_functions=False)


def plain_table(tree: exp.Expression | None, clauses: tuple[str, ...]) -> exp.Table | None:
    """The table of ``select ... from <table>`` with no clause but ``clauses`` (``where``,
    ``limit``...), a table by name with no column aliases; None for any other query."""
    if not isinstance(tree, exp.Select) or any(
        value for key, value in tree.args.items() if key not in ("expressions", "from", "from_", *clauses)
    ):
        return None  # distinct, group by, having, qualify, order by, joins, with...
    source = tree.args.get("from") or tree.args.get("from_")
    table = source.this if isinstance(source, exp.From) else None
    if (
        not isinstance(table, exp.Table)
        or not isinstance(table.this, exp.Identifier)
        or any(value for key, value in table.args.items() if key not in ("this", "alias"))
    ):
        return None
    alias = table.args.get("alias")
    return None if alias is not None and alias.columns else table


def annotate(tree: exp.Expression, schema: pa.Schema) -> None:
    """Set sqlglot's type on every node of ``tree``, the input table's columns typed by
    ``schema``. The tree is left as parsed otherwise: columns are qualified only while
    sqlglot reads them."""
    columns = _column_types(schema)
    tables: dict[str, dict[str, str]] = {}
    qualified = []
    try:
        for scope in traverse_scope(tree):
            sources = list(scope.sources.items())
            if len(sources) != 1 or not isinstance(sources[0][1], exp.Table):
                continue  # a join, or a derived table: its columns stay untyped
            name, table = sources[0]
            tables[table.name] = columns
            for column in scope.columns:
                if not column.table and column.name.lower() in columns:
                    column.set("table", exp.to_identifier(name))
                    qualified.append(column)
        annotate_types(tree, schema=tables or None, dialect=_DuckDBAsWritten)
    except Exception as err:  # a shape sqlglot's optimizer refuses: no types, so no typed rule applies
        log.debug("sqlglot cannot type the query (%s)", err)
    finally:
        for column in qualified:
            column.set("table", None)


def is_type(node: exp.Expression, kinds: frozenset[Any]) -> bool:
    """Whether sqlglot typed ``node`` (its parentheses aside) as one of ``kinds``."""
    kind = node.unnest().type
    return kind is not None and kind.this in kinds


def types(*names: str) -> frozenset[Any]:
    """sqlglot's type enum members of these names (those its version has: DuckDB's
    ``timestamp`` is ``TIMESTAMPNTZ`` in newer sqlglot)."""
    return frozenset(getattr(exp.DataType.Type, name) for name in names if hasattr(exp.DataType.Type, name))


#: Arrow type -> the SQL type DuckDB reads it as (what sqlglot is told)
_SQL_TYPES = {
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INT",
    pa.int64(): "BIGINT",
    pa.uint8(): "UTINYINT",
    pa.uint16(): "USMALLINT",
    pa.uint32(): "UINT",
    pa.uint64(): "UBIGINT",
    pa.float16(): "FLOAT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.string(): "VARCHAR",
    pa.large_string(): "VARCHAR",
    pa.binary(): "BLOB",
    pa.large_binary(): "BLOB",
    pa.date32(): "DATE",
    pa.date64(): "DATE",
}


def _column_types(schema: pa.Schema) -> dict[str, str]:
    """Lower-case column name -> SQL type; names equal but for case are left out (DuckDB
    renames one of them)."""
    names = [f.name.lower() for f in schema]
    return {f.name.lower(): _sql_type(f.type) for f in schema if names.count(f.name.lower()) == 1}


def _sql_type(kind: pa.DataType) -> str:
    if kind in _SQL_TYPES:
        return _SQL_TYPES[kind]
    if pa.types.is_timestamp(kind):
        return "TIMESTAMPTZ" if kind.tz else "TIMESTAMP"
    if pa.types.is_time(kind):
        return "TIME"
    if pa.types.is_decimal(kind):
        return f"DECIMAL({kind.precision}, {kind.scale})"
    return "UNKNOWN"
