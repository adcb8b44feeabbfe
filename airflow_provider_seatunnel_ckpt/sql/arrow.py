"""Plain projections and filters run on Arrow's compute kernels instead of DuckDB.

Over a batch DuckDB spends about a millisecond before it computes anything (Arrow scan,
parse, bind, plan: each batch is a new table). A query made only of columns, arithmetic,
comparisons and a ``where`` (the subset: docs/jobs.md, "Sql") is compiled once, from its
sqlglot tree (:mod:`.tree`), into pyarrow.compute calls with DuckDB's meaning kept
exactly: integer literals take the other operand's type, as DuckDB's binder does; an
operator on two literals is left to DuckDB; the plan's output types and names must equal
DuckDB's for the input schema, or the query runs on DuckDB.

A batch holding a value the engines treat differently (a compared NaN, a zero divisor of
``%``) or on which a kernel raises runs on DuckDB, so the result, or the error, is always
DuckDB's. ``tests/unit/transforms/test_sql_arrow.py`` checks the two engines against each
other on generated queries and data.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from . import tree as sql_tree

Data = pa.RecordBatch | pa.Table
Value = pa.Array | pa.ChunkedArray | pa.Scalar

INT, FLOAT, BOOL, TEXT, OTHER = "BIGINT", "DOUBLE", "BOOLEAN", "VARCHAR", "other"
_KINDS = {pa.int64(): INT, pa.float64(): FLOAT, pa.bool_(): BOOL, pa.string(): TEXT}
_ARROW = {INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_(), TEXT: pa.string()}
_CHECKED = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}
_IEEE = {"+": pc.add, "-": pc.subtract, "*": pc.multiply, "/": pc.divide}
_COMPARE = {
    exp.EQ: pc.equal,
    exp.NEQ: pc.not_equal,
    exp.LT: pc.less,
    exp.LTE: pc.less_equal,
    exp.GT: pc.greater,
    exp.GTE: pc.greater_equal,
}
_ARITHMETIC = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.BitwiseAnd: "&",
    exp.BitwiseOr: "|",
}
#: a cast's target type, by DuckDB's name of it (the types an expression here can have)
_TYPE_IDS = {
    exp.DataType.Type.BIGINT: INT,
    exp.DataType.Type.DOUBLE: FLOAT,
    exp.DataType.Type.BOOLEAN: BOOL,
    exp.DataType.Type.VARCHAR: TEXT,
    exp.DataType.Type.TEXT: TEXT,
}
_INTEGER_TEXT = re.compile(r"\d+")
_DOUBLE_TEXT = re.compile(r"(\d+\.?\d*|\.\d+)[eE][+-]?\d+")
_INT64_MAX = 2**63 - 1
_UNCHANGED_BY_DUCKDB = (
    pa.float32(),
    pa.float64(),
    pa.bool_(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.date32(),
)
_SPEED_ONLY = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


class FallBack(Exception):
    """This batch holds a value the two engines treat differently: run it on DuckDB."""


class NotCompiled(Exception):
    """The query is outside what this module compiles."""


@dataclass(frozen=True)
class Expr:
    """A compiled expression: its SQL type, and how to compute it over a batch. A literal
    (``literal`` set) has no fixed type yet: it takes its operand's."""

    kind: str
    evaluate: Callable[[Data], Value]
    literal: Any = None

    @property
    def is_literal(self) -> bool:
        return self.literal is not None

    def as_kind(self, kind: str) -> Callable[[Data], Value]:
        if self.is_literal:
            scalar = pa.scalar(float(self.literal) if kind == FLOAT else self.literal, _ARROW[kind])
            return lambda data: scalar
        if self.kind == INT and kind == FLOAT:
            return lambda data: pc.cast(self.evaluate(data), pa.float64(), safe=False)
        return self.evaluate


@dataclass(frozen=True)
class ArrowPlan:
    """``select <items> from <table> [where <condition>]`` as Arrow kernel calls."""

    items: tuple[Callable[[Data], Value], ...]
    condition: Callable[[Data], Value] | None
    schema: pa.Schema

    def run(self, data: Data) -> Data | None:
        """The query's result over ``data``; None when DuckDB must decide."""
        try:
            if self.condition is not None:
                data = data.filter(self.condition(data))
            columns = [item(data) for item in self.items]
            return type(data).from_arrays(columns, schema=self.schema)
        except (FallBack, *_SPEED_ONLY):
            return None


def compile_select(tree: exp.Expression, table: str, schema: pa.Schema, expected: pa.Schema) -> ArrowPlan | None:
    """The plan for one parsed query (sqlglot's tree, :mod:`.tree`) over input
    ``schema`` (one that passes ``plain_schema``: the caller checks, before its plan
    cache), or None when the query must run on DuckDB. ``expected`` is DuckDB's result
    schema for the same input."""
    try:
        source = sql_tree.plain_table(tree, ("where",))
        if source is None:
            raise NotCompiled("not a plain select ... from <table> where")
        compiler = _Compiler(table, source, schema)
        items: list[Callable[[Data], Value]] = []
        for item in tree.expressions:
            items.extend(compiler.select_item(item))
        condition = None
        if tree.args.get("where") is not None:
            where = compiler.expression(tree.args["where"].this)
            if where.kind != BOOL or where.is_literal:
                raise NotCompiled("where is not a boolean expression of the columns")
            condition = where.evaluate
    except (NotCompiled, KeyError, TypeError, ValueError):
        return None  # a tree shaped otherwise than expected only costs speed: DuckDB runs it
    if len(items) != len(expected):
        return None
    plan = ArrowPlan(tuple(items), condition, expected)
    try:
        produced = [column.type for column in (item(schema.empty_table()) for item in items)]
    except (FallBack, *_SPEED_ONLY):
        return None  # e.g. "% 0" written in the query: every batch would be DuckDB's
    if produced != expected.types:
        return None
    return plan


def _kept_exactly(kind: pa.DataType) -> bool:
    """Whether DuckDB hands a column of this type back exactly as it received it, so a
    selected column may be taken from the batch as it is (an interval, say, would lose
    its nanoseconds in DuckDB). DuckDB returns no fixed-size binary: when the expected
    result has one, the pass-through (passthrough.py) took it from the batch too."""
    return (
        kind in _UNCHANGED_BY_DUCKDB
        or pa.types.is_integer(kind)
        or pa.types.is_fixed_size_binary(kind)
        or pa.types.is_decimal128(kind)
        or (pa.types.is_timestamp(kind) and kind.tz is None)
    )


def plain_schema(schema: pa.Schema) -> bool:
    """Whether DuckDB sees this schema's columns as their Arrow types say: no extension
    types (DuckDB reads ``arrow.json`` as JSON, some opaque types as its own), and no two
    names equal but for case (DuckDB's names are case-insensitive: it renames one)."""
    lowered = {name.lower() for name in schema.names}
    return len(lowered) == len(schema.names) and not any(
        field.metadata and b"ARROW:extension:name" in field.metadata for field in schema
    )


class _Compiler:
    def __init__(self, table: str, source: exp.Table, schema: pa.Schema):
        self.schema = schema
        # an aliased table is known by its alias only; a bare "source.x" then names a column
        self.names = {source.alias} if source.alias else {table, source.name}

    def select_item(self, item: exp.Expression) -> list[Callable[[Data], Value]]:
        star = item if isinstance(item, exp.Star) else item.this if isinstance(item, exp.Column) else None
        if isinstance(star, exp.Star):
            if any(star.args.values()) or (
                isinstance(item, exp.Column) and (item.args.get("db") or item.table not in self.names)
            ):
                raise NotCompiled("a star with modifiers")
            return [self._selected(name) for name in self.schema.names]
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Column):
            return [self._selected(self._column_name(node))]
        expr = self.expression(node)
        if expr.is_literal:
            raise NotCompiled("a constant column")
        return [expr.evaluate]

    def expression(self, node: exp.Expression) -> Expr:
        if isinstance(node, exp.Paren):
            return self.expression(node.this)
        if isinstance(node, exp.Column):
            name = self._column_name(node)
            column_kind = _KINDS.get(self.schema.field(name).type)
            if column_kind is None:
                raise NotCompiled(f"column {name} of type {self.schema.field(name).type}")
            return Expr(column_kind, self._column(name))
        if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
            return _constant(node)
        if type(node) in _ARITHMETIC:
            return self._operator(
                _ARITHMETIC[type(node)], [self.expression(node.this), self.expression(node.expression)]
            )
        if isinstance(node, exp.Neg):
            return self._operator("-", [self.expression(node.this)])
        if type(node) in _COMPARE:
            return _compare(type(node), self.expression(node.this), self.expression(node.expression))
        if isinstance(node, (exp.And, exp.Or)):
            children = [self.expression(c) for c in node.flatten()]
            if any(c.kind != BOOL for c in children) or all(c.is_literal for c in children):
                raise NotCompiled("and/or over non-boolean values")
            function = pc.and_kleene if isinstance(node, exp.And) else pc.or_kleene
            return Expr(BOOL, _fold(function, [c.as_kind(BOOL) for c in children]))
        if isinstance(node, exp.Not) and isinstance(node.this, exp.Is):
            return self._is_null(node.this, pc.is_valid)
        if isinstance(node, exp.Is):
            return self._is_null(node, pc.is_null)
        if isinstance(node, exp.Not):
            child = self.expression(node.this)
            if child.kind == BOOL and not child.is_literal:
                return Expr(BOOL, lambda data: pc.invert(child.evaluate(data)))
            raise NotCompiled("not of a non-boolean")
        if type(node) is exp.Cast:  # not TRY_CAST
            return _cast(self.expression(node.this), _TYPE_IDS.get(node.to.this))
        raise NotCompiled(type(node).__name__)

    def _is_null(self, node: exp.Is, test: Callable[[Value], Value]) -> Expr:
        if not isinstance(node.expression, exp.Null):
            raise NotCompiled("is true/false")
        operand = node.this.unnest()
        child = (
            Expr(OTHER, self._column(self._column_name(operand)))
            if isinstance(operand, exp.Column)
            else self.expression(operand)
        )
        if child.is_literal:
            raise NotCompiled("is null of a constant")
        return Expr(BOOL, lambda data: test(child.evaluate(data)))

    def _operator(self, name: str, operands: list[Expr]) -> Expr:
        if len(operands) == 1 and name == "-" and operands[0].is_literal and operands[0].kind in (INT, FLOAT):
            return _literal(operands[0].kind, -operands[0].literal)  # a negative number in the query text
        if len(operands) == 1 and name == "-" and operands[0].kind in (INT, FLOAT) and not operands[0].is_literal:
            (operand,) = operands
            negate = pc.negate_checked if operand.kind == INT else pc.negate
            return Expr(operand.kind, lambda data: negate(operand.evaluate(data)))
        if (
            len(operands) != 2
            or any(o.kind not in (INT, FLOAT) for o in operands)
            or all(o.is_literal for o in operands)
        ):
            raise NotCompiled(f"operator {name}")
        kind = FLOAT if name == "/" or FLOAT in (operands[0].kind, operands[1].kind) else INT
        left, right = (o.as_kind(kind) for o in operands)
        if name in _CHECKED and kind == INT:
            function = _CHECKED[name]
            return Expr(INT, lambda data: function(left(data), right(data)))
        if name in _IEEE and kind == FLOAT:
            function = _IEEE[name]
            return Expr(FLOAT, lambda data: function(left(data), right(data)))
        if name == "%" and kind == INT:
            return Expr(INT, lambda data: _remainder(left(data), right(data)))
        if name in ("&", "|") and kind == INT:
            function = pc.bit_wise_and if name == "&" else pc.bit_wise_or
            return Expr(INT, lambda data: function(left(data), right(data)))
        raise NotCompiled(f"operator {name} on {kind}")

    def _column_name(self, node: exp.Column) -> str:
        name = node.name
        # DuckDB matches names case-insensitively and a where may name a select alias:
        # only an exact input column is taken here, anything else stays DuckDB's
        if name not in self.schema.names or node.args.get("db") or (node.table and node.table not in self.names):
            raise NotCompiled(f"column {node.sql()}")
        if self.schema.get_field_index(name) < 0:
            raise NotCompiled(f"column {name} is ambiguous")
        return name

    def _selected(self, name: str) -> Callable[[Data], Value]:
        if not _kept_exactly(self.schema.field(name).type):
            raise NotCompiled(f"column {name} of type {self.schema.field(name).type} is DuckDB's to convert")
        return self._column(name)

    @staticmethod
    def _column(name: str) -> Callable[[Data], Value]:
        return lambda data: data.column(name)


def _constant(node: exp.Expression) -> Expr:
    """A literal, typed as DuckDB types it: digits are an integer (up to BIGINT's range),
    a number with an exponent a DOUBLE; a DECIMAL (``1.5``) or a null is not compiled."""
    if isinstance(node, exp.Boolean):
        return _literal(BOOL, bool(node.this))
    if isinstance(node, exp.Literal) and node.is_string:
        return _literal(TEXT, node.this)
    text = node.this if isinstance(node, exp.Literal) else ""
    if _INTEGER_TEXT.fullmatch(text) and int(text) <= _INT64_MAX:
        return _literal(INT, int(text))
    if _DOUBLE_TEXT.fullmatch(text):
        return _literal(FLOAT, float(text))
    raise NotCompiled(f"the literal {node.sql()}")


def _literal(kind: str, value: Any) -> Expr:
    return Expr(kind, lambda data: pa.scalar(value, _ARROW[kind]), value)


def _compare(operator: type, left: Expr, right: Expr) -> Expr:
    function = _COMPARE.get(operator)
    if function is None or (left.is_literal and right.is_literal):
        raise NotCompiled(f"comparison {operator.__name__}")
    numeric = {left.kind, right.kind} <= {INT, FLOAT}
    if numeric:
        kind = FLOAT if FLOAT in (left.kind, right.kind) else INT
    elif left.kind == right.kind and left.kind in (TEXT, BOOL):
        kind = left.kind
        if kind == BOOL and function not in (pc.equal, pc.not_equal):
            raise NotCompiled("ordering booleans")
    else:
        raise NotCompiled(f"comparing {left.kind} with {right.kind}")
    first, second = left.as_kind(kind), right.as_kind(kind)

    def compare(data: Data) -> Value:
        a, b = first(data), second(data)
        if kind == FLOAT and (_has_nan(a) or _has_nan(b)):
            raise FallBack("NaN compared")  # DuckDB: NaN = NaN, and NaN > any number
        return function(a, b)

    return Expr(BOOL, compare)


def _cast(child: Expr, target: str | None) -> Expr:
    if child.is_literal and child.kind == TEXT and target == BOOL and child.literal in ("t", "f"):
        return _literal(BOOL, child.literal == "t")  # 't'::BOOLEAN, DuckDB's own spelling of true
    if child.is_literal:
        raise NotCompiled("a cast constant")
    if target == "DOUBLE" and child.kind in (INT, FLOAT):
        return Expr(FLOAT, child.as_kind(FLOAT))
    if target == child.kind:
        return child
    raise NotCompiled(f"cast of {child.kind} to {target}")


def _remainder(left: Value, right: Value) -> Value:
    """DuckDB's integer ``%``: the sign of the dividend (C's); a zero divisor is DuckDB's
    to answer (null)."""
    if _any_zero(right):
        raise FallBack("remainder by zero")
    quotient = pc.divide_checked(left, right)  # Arrow's integer division truncates, as C's
    return pc.subtract_checked(left, pc.multiply_checked(quotient, right))


def _any_zero(value: Value) -> bool:
    if isinstance(value, pa.Scalar):
        return value.as_py() == 0
    return bool(pc.any(pc.equal(value, 0)).as_py())


def _has_nan(value: Value) -> bool:
    if isinstance(value, pa.Scalar):
        return value.is_valid and value.as_py() != value.as_py()
    return bool(pc.any(pc.is_nan(value)).as_py())


def _fold(
    function: Callable[[Value, Value], Value], children: list[Callable[[Data], Value]]
) -> Callable[[Data], Value]:
    def evaluate(data: Data) -> Value:
        result = children[0](data)
        for child in children[1:]:
            result = function(result, child(data))
        return result

    return evaluate
