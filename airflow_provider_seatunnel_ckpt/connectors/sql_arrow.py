"""Plain projections and filters run on Arrow's compute kernels instead of DuckDB.

Profiling the ``Sql`` transform showed that over a 65,536-row batch DuckDB spends about a
millisecond before it computes anything (setting up the Arrow scan, parsing, binding and
planning: per batch, since each batch is a new table) and its checked arithmetic costs
more than Arrow's kernels. Most transforms in pipelines are the simplest queries: columns,
arithmetic, comparisons and a ``where``. For those the query is compiled once, from
DuckDB's own parse tree (``json_serialize_sql``: no home-made SQL parser), into calls of
pyarrow.compute, with DuckDB's meaning kept exactly:

* only ``BIGINT``, ``DOUBLE``, ``BOOLEAN`` and ``VARCHAR`` values take part in
  expressions; a column is selected as it is only when DuckDB would hand its type back
  unchanged; batches with extension types or names equal but for case stay DuckDB's;
  integer literals take the other operand's type, as DuckDB's binder does; an operator
  on two literals is left to DuckDB;
* integer ``+ - *`` and negation are checked (DuckDB raises on overflow), ``/`` divides
  as doubles (DuckDB's default: ``7 / 2 = 3.5``, ``1 / 0 = inf``), ``%`` truncates;
* ``and``/``or`` use SQL's three-valued logic; a null ``where`` drops the row;
* the compiled plan's output types and names must equal what DuckDB gives for the same
  input schema, or the query runs on DuckDB.

Whenever a batch holds a value whose meaning differs between the two engines (a NaN in a
comparison: DuckDB orders NaN above every number; a zero divisor of ``%``: DuckDB gives
null) or a kernel raises (an overflow DuckDB may report, or may never reach because of
its short-circuit evaluation), that batch runs on DuckDB, which then decides: the result,
or the error the user sees, is always DuckDB's. ``tests/unit/engine/test_sql_arrow.py``
checks the two engines against each other on generated queries and data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

import pyarrow as pa
import pyarrow.compute as pc

Data = Union[pa.RecordBatch, pa.Table]
Value = Union[pa.Array, pa.ChunkedArray, pa.Scalar]

INT, FLOAT, BOOL, TEXT, OTHER = "BIGINT", "DOUBLE", "BOOLEAN", "VARCHAR", "other"
_KINDS = {pa.int64(): INT, pa.float64(): FLOAT, pa.bool_(): BOOL, pa.string(): TEXT}
_ARROW = {INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_(), TEXT: pa.string()}
_CHECKED = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}
_IEEE = {"+": pc.add, "-": pc.subtract, "*": pc.multiply, "/": pc.divide}
_COMPARE = {"COMPARE_EQUAL": pc.equal, "COMPARE_NOTEQUAL": pc.not_equal, "COMPARE_LESSTHAN": pc.less,
            "COMPARE_LESSTHANOREQUALTO": pc.less_equal, "COMPARE_GREATERTHAN": pc.greater,
            "COMPARE_GREATERTHANOREQUALTO": pc.greater_equal}
_UNCHANGED_BY_DUCKDB = (pa.float32(), pa.float64(), pa.bool_(), pa.string(), pa.large_string(), pa.binary(),
                        pa.large_binary(), pa.date32())
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

    def run(self, data: Data) -> Data:
        """The query's result over ``data``; ``FallBack`` when DuckDB must decide."""
        try:
            if self.condition is not None:
                data = data.filter(self.condition(data))
            columns = [item(data) for item in self.items]
            return type(data).from_arrays(columns, schema=self.schema)
        except _SPEED_ONLY as err:
            raise FallBack(str(err)) from None


def compile_select(node: dict[str, Any], table: str, schema: pa.Schema, expected: pa.Schema) -> ArrowPlan | None:
    """The plan for one parsed ``SELECT`` node over input ``schema`` (one that passes
    ``plain_schema``: the caller checks, before its plan cache), or None when the query
    must run on DuckDB. ``expected`` is DuckDB's result schema for the same input."""
    try:
        compiler = _Compiler(table, node.get("from_table") or {}, schema)
        compiler.check_shape(node)
        items: list[Callable[[Data], Value]] = []
        for item in node.get("select_list") or []:
            items.extend(compiler.select_item(item))
        condition = None
        if node.get("where_clause") is not None:
            where = compiler.expression(node["where_clause"])
            if where.kind != BOOL or where.is_literal:
                raise NotCompiled("where is not a boolean expression of the columns")
            condition = where.evaluate
    except (NotCompiled, KeyError, TypeError, ValueError):
        return None  # a parse tree shaped otherwise than expected only costs speed: DuckDB runs it
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
    result has one, the pass-through (sql_passthrough.py) took it from the batch too."""
    return (kind in _UNCHANGED_BY_DUCKDB or pa.types.is_integer(kind) or pa.types.is_fixed_size_binary(kind)
            or pa.types.is_decimal128(kind) or (pa.types.is_timestamp(kind) and kind.tz is None))


def plain_schema(schema: pa.Schema) -> bool:
    """Whether DuckDB sees this schema's columns as their Arrow types say: no extension
    types (DuckDB reads ``arrow.json`` as JSON, some opaque types as its own), and no two
    names equal but for case (DuckDB's names are case-insensitive: it renames one)."""
    lowered = {name.lower() for name in schema.names}
    return len(lowered) == len(schema.names) and not any(
        field.metadata and b"ARROW:extension:name" in field.metadata for field in schema)


class _Compiler:
    def __init__(self, table: str, source: dict[str, Any], schema: pa.Schema):
        self.schema = schema
        # an aliased table is known by its alias only; a bare "source.x" then names a column
        self.names = {source.get("alias")} if source.get("alias") else {table, source.get("table_name")} - {None, ""}

    def check_shape(self, node: dict[str, Any]) -> None:
        source = node.get("from_table") or {}
        if (node.get("type") != "SELECT_NODE" or source.get("type") != "BASE_TABLE" or source.get("sample")
                or source.get("column_name_alias")
                or node.get("modifiers") or node.get("group_expressions") or node.get("group_sets")
                or node.get("aggregate_handling") != "STANDARD_HANDLING" or node.get("having")
                or node.get("qualify") or node.get("sample") or (node.get("cte_map") or {}).get("map")):
            raise NotCompiled("not a plain select ... from .. where")

    def select_item(self, item: dict[str, Any]) -> list[Callable[[Data], Value]]:
        if item.get("class") == "STAR":
            if (item.get("exclude_list") or item.get("replace_list") or item.get("columns") or item.get("expr")
                    or item.get("qualified_exclude_list") or item.get("rename_list")
                    or item.get("relation_name") not in ("", None, *self.names)):
                raise NotCompiled("a star with modifiers")
            return [self._selected(name) for name in self.schema.names]
        if item.get("class") == "COLUMN_REF":
            return [self._selected(self._column_name(item))]
        expr = self.expression(item)
        if expr.is_literal:
            raise NotCompiled("a constant column")
        return [expr.evaluate]

    def expression(self, node: dict[str, Any]) -> Expr:
        kind = node.get("class")
        if kind == "COLUMN_REF":
            name = self._column_name(node)
            column_kind = _KINDS.get(self.schema.field(name).type)
            if column_kind is None:
                raise NotCompiled(f"column {name} of type {self.schema.field(name).type}")
            return Expr(column_kind, self._column(name))
        if kind == "CONSTANT":
            return _constant(node.get("value") or {})
        if kind == "FUNCTION" and node.get("is_operator") and not node.get("filter") and not node.get("distinct"):
            return self._operator(node.get("function_name"), [self.expression(c) for c in node["children"]])
        if kind == "COMPARISON":
            return _compare(node["type"], self.expression(node["left"]), self.expression(node["right"]))
        if kind == "CONJUNCTION":
            children = [self.expression(c) for c in node["children"]]
            if any(c.kind != BOOL for c in children) or all(c.is_literal for c in children):
                raise NotCompiled("and/or over non-boolean values")
            function = pc.and_kleene if node["type"] == "CONJUNCTION_AND" else pc.or_kleene
            return Expr(BOOL, _fold(function, [c.as_kind(BOOL) for c in children]))
        if kind == "OPERATOR":
            return self._unary_operator(node)
        if kind == "CAST" and not node.get("try_cast"):
            return _cast(self.expression(node["child"]), (node.get("cast_type") or {}).get("id"))
        raise NotCompiled(f"{kind} {node.get('type')}")

    def _unary_operator(self, node: dict[str, Any]) -> Expr:
        children = node.get("children") or []
        if len(children) != 1:
            raise NotCompiled(f"operator {node.get('type')} of {len(children)} operands")
        (child_node,) = children
        operator = node.get("type")
        if operator in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL"):
            child = (Expr(OTHER, self._column(self._column_name(child_node)))
                     if child_node.get("class") == "COLUMN_REF" else self.expression(child_node))
            if child.is_literal:
                raise NotCompiled("is null of a constant")
            test = pc.is_null if operator == "OPERATOR_IS_NULL" else pc.is_valid
            return Expr(BOOL, lambda data: test(child.evaluate(data)))
        child = self.expression(child_node)
        if operator == "OPERATOR_NOT" and child.kind == BOOL and not child.is_literal:
            return Expr(BOOL, lambda data: pc.invert(child.evaluate(data)))
        raise NotCompiled(f"operator {operator}")

    def _operator(self, name: str, operands: list[Expr]) -> Expr:
        if len(operands) == 1 and name == "-" and operands[0].is_literal and operands[0].kind in (INT, FLOAT):
            return _literal(operands[0].kind, -operands[0].literal)  # a negative number in the query text
        if len(operands) == 1 and name == "-" and operands[0].kind in (INT, FLOAT) and not operands[0].is_literal:
            (operand,) = operands
            negate = pc.negate_checked if operand.kind == INT else pc.negate
            return Expr(operand.kind, lambda data: negate(operand.evaluate(data)))
        if len(operands) != 2 or any(o.kind not in (INT, FLOAT) for o in operands) or all(
                o.is_literal for o in operands):
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

    def _column_name(self, node: dict[str, Any]) -> str:
        names = node.get("column_names") or []
        # DuckDB matches names case-insensitively and a where may name a select alias:
        # only an exact input column is taken here, anything else stays DuckDB's
        if not names or names[-1] not in self.schema.names or len(names) > 2 or (
                len(names) == 2 and names[0] not in self.names):
            raise NotCompiled(f"column {'.'.join(names)}")
        if self.schema.get_field_index(names[-1]) < 0:
            raise NotCompiled(f"column {names[-1]} is ambiguous")
        return names[-1]

    def _selected(self, name: str) -> Callable[[Data], Value]:
        if not _kept_exactly(self.schema.field(name).type):
            raise NotCompiled(f"column {name} of type {self.schema.field(name).type} is DuckDB's to convert")
        return self._column(name)

    @staticmethod
    def _column(name: str) -> Callable[[Data], Value]:
        return lambda data: data.column(name)


def _constant(value: dict[str, Any]) -> Expr:
    type_id = (value.get("type") or {}).get("id")
    if value.get("is_null"):
        raise NotCompiled("a null literal")
    literal = value.get("value")
    if type_id in ("INTEGER", "BIGINT") and isinstance(literal, int):
        return _literal(INT, literal)
    if type_id == "DOUBLE" and isinstance(literal, (int, float)):
        return _literal(FLOAT, float(literal))
    if type_id == "BOOLEAN" and isinstance(literal, bool):
        return _literal(BOOL, literal)
    if type_id == "VARCHAR" and isinstance(literal, str):
        return _literal(TEXT, literal)
    raise NotCompiled(f"a {type_id} literal")


def _literal(kind: str, value: Any) -> Expr:
    return Expr(kind, lambda data: pa.scalar(value, _ARROW[kind]), value)


def _compare(operator: str, left: Expr, right: Expr) -> Expr:
    function = _COMPARE.get(operator)
    if function is None or (left.is_literal and right.is_literal):
        raise NotCompiled(f"comparison {operator}")
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
        return _literal(BOOL, child.literal == "t")  # DuckDB's parse tree writes true as 't'::BOOLEAN
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


def _fold(function: Callable[[Value, Value], Value],
          children: list[Callable[[Data], Value]]) -> Callable[[Data], Value]:
    def evaluate(data: Data) -> Value:
        result = children[0](data)
        for child in children[1:]:
            result = function(result, child(data))
        return result

    return evaluate
