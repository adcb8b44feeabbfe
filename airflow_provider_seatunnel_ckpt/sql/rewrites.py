"""SeaTunnel's meanings that DuckDB spells the same but reads otherwise, rewritten in the
query's sqlglot tree (:mod:`.tree`) before DuckDB reads it: a cast or a built-in
function cannot be redefined in DuckDB.

A cast of an integer expression reads it SeaTunnel's way (to ``timestamp``: epoch
milliseconds; to ``date``: ``yyyyMMdd`` digits; to ``time``: ``HHmmss`` digits), a number
with a decimal point is a ``double``, ``extract``, ``week``, ``mod`` by a double,
``to_date``'s type, and the ``int`` results of ``year``... ``ceil``... and of arithmetic on
``tinyint``/``smallint``. Each reading, with its SeaTunnel source, is listed in
docs/seatunnel.md ("SeaTunnel's readings"). The types are sqlglot's, from the input
schema, so an expression is read like a column (``cast(id + 1 as timestamp)``).

The query is rewritten once per input schema (:class:`.batch_query.BatchQuery`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlglot import exp

from . import tree as sql_tree

_OPERAND = "__seatunnel_operand__"
_SECOND = "__seatunnel_operand_2__"
_EXACT = "CAST(CAST(CAST({} AS DOUBLE) AS VARCHAR) AS DECIMAL(38, 12))"
_YEAR_START_DOW = f"isodow(date_trunc('year', {_OPERAND}))"
#: SeaTunnel's reading -> its DuckDB expression over the placeholder operands
_TEMPLATES = {
    "cast TIMESTAMP": f"epoch_ms(CAST({_OPERAND} AS BIGINT))",
    "cast DATE": f"CAST(strptime(CAST({_OPERAND} AS VARCHAR), '%Y%m%d') AS DATE)",
    "cast TIME": f"CAST(strptime(lpad(CAST({_OPERAND} AS VARCHAR), 6, '0'), '%H%M%S') AS TIME)",
    **{
        f"extract {unit}": f"CAST(date_part('{unit}', {_OPERAND}) AS INTEGER)"
        for unit in ("year", "month", "day", "hour", "minute", "second", "dayofyear")
    },
    **{
        f"part {part}": f"CAST(date_part('{part}', {_OPERAND}) AS INTEGER)"
        for part in ("year", "quarter", "month", "hour", "minute", "second")
    },
    "as DATE": f"CAST({_OPERAND} AS DATE)",
    "as TIME": f"CAST({_OPERAND} AS TIME)",
    "as DOUBLE": f"CAST({_OPERAND} AS DOUBLE)",
    "decimal mod": f"CAST({_EXACT.format(_OPERAND)} % {_EXACT.format(_SECOND)} AS DOUBLE)",
    "as INTEGER": f"CAST({_OPERAND} AS INTEGER)",
    "extract millisecond": f"CAST(date_part('millisecond', {_OPERAND}) % 1000 AS INTEGER)",
    "extract dayofweek": f"CAST(isodow({_OPERAND}) AS INTEGER)",
    "week": f"CAST((dayofyear({_OPERAND}) + {_YEAR_START_DOW} - 2) // 7 + "
    f"CASE WHEN {_YEAR_START_DOW} <= 4 THEN 1 ELSE 0 END + 1 AS INTEGER)",
}
#: the type each reading gives (what an enclosing rule sees)
_RESULT = {
    "cast TIMESTAMP": "TIMESTAMP",
    "cast DATE": "DATE",
    "cast TIME": "TIME",
    "as DATE": "DATE",
    "as TIME": "TIME",
    "as DOUBLE": "DOUBLE",
    "decimal mod": "DOUBLE",
}
_CASTS = {
    sql_tree.types("TIMESTAMP", "TIMESTAMPNTZ", "DATETIME"): "cast TIMESTAMP",
    sql_tree.types("DATE"): "cast DATE",
    sql_tree.types("TIME"): "cast TIME",
}
_INTEGERS = sql_tree.types(
    "TINYINT", "SMALLINT", "INT", "BIGINT", "UTINYINT", "USMALLINT", "UINT", "UBIGINT", "INT128", "UINT128"
)
_SMALL = sql_tree.types("TINYINT", "SMALLINT", "UTINYINT")
_FLOATING = sql_tree.types("FLOAT", "DOUBLE")
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Mod)
_INTEGER_FUNCTIONS = ("ceil", "ceiling", "floor", "sign")

_parsed: dict[str, exp.Expression] = {}


def seatunnel_rewrites(tree: exp.Expression | None, schema: pa.Schema) -> str | None:
    """The query of ``tree`` with SeaTunnel's readings for input ``schema``; None when it
    needs none (or sqlglot could not read it)."""
    if tree is None:
        return None
    tree = tree.copy()
    changed = False
    for literal in list(tree.find_all(exp.Literal)):
        if _decimal_literal(literal):  # before the types: 10.3 * x is a double
            literal.replace(_expression("as DOUBLE", literal.copy()))
            changed = True
    sql_tree.annotate(tree, schema)
    # children first: a reading's operands are already SeaTunnel's
    for node in reversed(list(tree.walk(bfs=False))):
        if isinstance(node, _ARITHMETIC):
            changed |= _widen_small_operands(node)
            continue
        name, *operands = _reading(node)
        if name is not None:
            node.replace(_expression(name, *operands))
            changed = True
    return sql_tree.render(tree) if changed else None


def _reading(node: exp.Expression) -> tuple[Any, ...]:
    """Which of SeaTunnel's readings ``node`` is, and its operands."""
    if type(node) is exp.Cast:  # not TRY_CAST
        for kinds, name in _CASTS.items():
            if node.to.this in kinds and sql_tree.is_type(node.this, _INTEGERS):
                return name, node.this
    elif isinstance(node, exp.Extract):
        name = f"extract {node.this.name.lower()}"
        if name in _TEMPLATES:
            return name, node.expression
    elif isinstance(node, exp.Anonymous) and not isinstance(node.parent, exp.Dot):  # main.hour(t) stays DuckDB's
        function, arguments = node.name.lower(), node.expressions
        if function in ("to_date", "parsedatetime") and len(arguments) == 2 and arguments[1].is_string:
            pattern = arguments[1].name
            if ("yy" in pattern) != ("mm" in pattern):
                return ("as DATE" if "yy" in pattern else "as TIME"), node
        if function == "mod" and len(arguments) == 2 and sql_tree.is_type(arguments[1], _FLOATING):
            return "decimal mod", *arguments
        if function in _INTEGER_FUNCTIONS and len(arguments) == 1:
            return "as INTEGER", node
        if function == "week" and len(arguments) == 1:
            return "week", arguments[0]
        if f"part {function}" in _TEMPLATES and len(arguments) == 1:
            return f"part {function}", arguments[0]
    return (None,)


def _widen_small_operands(node: exp.Expression) -> bool:
    """``+ - * %`` over ``tinyint``/``smallint`` give an ``int``, as in SeaTunnel."""
    widened = False
    for key in ("this", "expression"):
        operand = node.args[key]
        if sql_tree.is_type(operand, _SMALL):
            operand.replace(_expression("as INTEGER", operand.copy()))
            widened = True
    if widened:
        node.type = "INT"  # what the enclosing arithmetic sees: no second cast
    return widened


def _decimal_literal(node: exp.Literal) -> bool:
    """A number with a decimal point and no exponent: DuckDB's DECIMAL literal."""
    text = node.this
    return not node.is_string and "." in text and not any(c in text for c in "eE")


def _expression(name: str, *operands: exp.Expression) -> exp.Expression:
    """The template of reading ``name`` over copies of ``operands``, typed as its result."""
    if name not in _parsed:
        _parsed[name] = sql_tree.parse_expression(_TEMPLATES[name])
    values = dict(zip((_OPERAND, _SECOND), operands))

    def replace(n: exp.Expression) -> exp.Expression:
        return values[n.name].copy() if isinstance(n, exp.Column) and n.name in values else n

    expression = _parsed[name].transform(replace)
    expression.type = _RESULT.get(name, "INT")
    return expression
