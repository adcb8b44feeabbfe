"""SeaTunnel's meanings that DuckDB spells the same but reads otherwise, rewritten in the
query's parse tree (a cast or a built-in function cannot be redefined in DuckDB):

* a cast of an integer column to ``timestamp`` reads it as milliseconds since the epoch
  (``cast(1687747869032 as timestamp)`` = ``2023-06-26T02:51:09.032``), to ``date`` as
  ``yyyyMMdd`` digits (``20230625``), to ``time`` as ``HHmmss`` digits (``235109``). DuckDB
  refuses these casts. Only a cast of a column is rewritten (its type is known from the
  input schema): a cast of another integer expression stays DuckDB's, which refuses it.
* a number written with a decimal point (``10.3``) is a ``double``, as SeaTunnel's parser
  reads it (DuckDB: ``decimal(3, 1)``); ``cast(... as decimal(p, s))`` still makes a decimal.
* ``extract(field FROM t)`` is an ``int`` (DuckDB: ``bigint``); its ``MILLISECOND`` is the
  milliseconds of the second (DuckDB counts the seconds in too) and its ``DAYOFWEEK`` is
  ISO's, 7 for Sunday (DuckDB: 0), as SeaTunnel's ``DateTimeFunction.extract``.
* ``year``, ``quarter``, ``month``, ``hour``, ``minute`` and ``second`` of a date-time are
  ``int`` (DuckDB: ``bigint``), and so are ``ceil``, ``ceiling``, ``floor`` and ``sign``
  (DuckDB: the argument's type), as SeaTunnel types them (``ZetaSQLType``).
* ``mod(a, b)`` with a ``double`` divisor (a column, or a literal like ``5.4``) is the
  remainder of the two numbers as their shortest decimal texts, as SeaTunnel computes it
  with ``BigDecimal.valueOf``: ``mod(13, 5.4)`` = ``2.2`` (the doubles' remainder is
  ``2.1999999999999993``).
* ``+``, ``-``, ``*`` and ``%`` over ``tinyint`` and ``smallint`` columns give an ``int``
  (SeaTunnel's rule for its small integer types; DuckDB keeps the narrow type).
* ``to_date(s, pattern)`` and ``parsedatetime(s, pattern)`` are a ``date`` when the pattern
  has a year (``yy``) and no minutes (``mm``), a ``time`` when it has minutes and no year,
  else a ``timestamp``, as SeaTunnel types them (``ZetaSQLType``).
* ``week(t)`` is ``WeekFields.ISO.weekOfYear() + 1`` (SeaTunnel's ``week``): weeks start on
  Monday, week 1 of the year is the first with 4 of its days, the days before it are week
  0, and one is added: 15 for 2021-04-08, where DuckDB's ISO week is 14.

The query is rewritten once per input schema (:class:`.batch_sql.BatchQuery`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from .sql_passthrough import parse_select

_OPERAND = "__seatunnel_operand__"
_SECOND = "__seatunnel_operand_2__"
_EXACT = "CAST(CAST(CAST({} AS DOUBLE) AS VARCHAR) AS DECIMAL(38, 12))"
_YEAR_START_DOW = f"isodow(date_trunc('year', {_OPERAND}))"
#: SeaTunnel's reading -> its DuckDB expression over the placeholder operand
_TEMPLATES = {
    "cast TIMESTAMP": f"epoch_ms(CAST({_OPERAND} AS BIGINT))",
    "cast DATE": f"CAST(strptime(CAST({_OPERAND} AS VARCHAR), '%Y%m%d') AS DATE)",
    "cast TIME": f"CAST(strptime(lpad(CAST({_OPERAND} AS VARCHAR), 6, '0'), '%H%M%S') AS TIME)",
    **{f"extract {unit}": f"CAST(date_part('{unit}', {_OPERAND}) AS INTEGER)"
       for unit in ("year", "month", "day", "hour", "minute", "second", "dayofyear")},
    **{f"part {part}": f"CAST(date_part('{part}', {_OPERAND}) AS INTEGER)"
       for part in ("year", "quarter", "month", "hour", "minute", "second")},
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
_ARITHMETIC = ("+", "-", "*", "%")
_INTEGER_FUNCTIONS = ("ceil", "ceiling", "floor", "sign")


def seatunnel_rewrites(connection: Any, query: str, schema: pa.Schema) -> str | None:
    """``query`` with SeaTunnel's readings for input ``schema``; None when it needs none."""
    tree = parse_select(connection, query)
    if tree is None:
        return None
    integers = {f.name.lower() for f in schema if pa.types.is_integer(f.type)}
    small = {f.name.lower() for f in schema if f.type in (pa.int8(), pa.int16(), pa.uint8())}
    floating = {f.name.lower() for f in schema if pa.types.is_floating(f.type)}
    templates: dict[str, Any] = {}

    def expression(name: str, *operands: Any) -> Any:
        if name not in templates:
            templates[name] = parse_select(connection, f"SELECT {_TEMPLATES[name]}")["statements"][0]["node"]["select_list"][0]
        fresh = json.loads(json.dumps(templates[name]))
        _put_operands(fresh, dict(zip((_OPERAND, _SECOND), operands)))
        return fresh

    columns = _Columns(integers, small, floating)
    if not _rewrite(tree["statements"][0]["node"], lambda node: _replacement(node, columns, expression)):
        return None
    return connection.execute("SELECT json_deserialize_sql($1::JSON)", [json.dumps(tree)]).fetchone()[0]


def _children(node: Any) -> list[tuple[Any, Any]]:
    if isinstance(node, dict):
        return list(node.items())
    return list(enumerate(node)) if isinstance(node, list) else []


def _rewrite(node: Any, replace: Callable[[Any], Any | None]) -> bool:
    """Replace, in place and bottom-up, every node ``replace`` has a replacement for."""
    changed = False
    for key, item in _children(node):
        changed |= _rewrite(item, replace)
        replacement = replace(item)
        if replacement is not None:
            node[key] = replacement
            changed = True
    return changed


@dataclass(frozen=True)
class _Columns:
    """The input's column names (lower case) by the types the rules ask about."""

    integers: set[str]
    small: set[str]
    floating: set[str]


def _replacement(node: Any, columns: _Columns, expression: Callable[..., Any]) -> Any | None:
    if not isinstance(node, dict):
        return None
    if node.get("class") == "FUNCTION" and node.get("is_operator") and node.get("function_name") in _ARITHMETIC:
        operands = node.get("children") or []
        widened = [expression("as INTEGER", c) if _column(c) in columns.small else c for c in operands]
        return {**node, "children": widened} if widened != operands else None
    name, *operands = _reading(node, columns)
    if name is None:
        return None
    replaced = expression(name, *operands)
    replaced["alias"] = node.get("alias", "")
    return replaced


def _reading(node: dict[str, Any], columns: _Columns) -> tuple[Any, ...]:
    """Which of SeaTunnel's readings ``node`` is, and its operand."""
    kind = node.get("class")
    if kind == "CONSTANT":
        # a decimal literal (10.3): SeaTunnel's parser reads a double (its text stays the
        # same, so the cast around it is what says so)
        return ("as DOUBLE", {**node, "alias": ""}) if _decimal_literal(node) else (None,)
    if kind == "CAST" and not node.get("try_cast"):
        target = (node.get("cast_type") or {}).get("id")
        child = node.get("child") or {}
        if f"cast {target}" in _TEMPLATES and _column(child) in columns.integers:
            return f"cast {target}", child
    elif kind == "FUNCTION" and not node.get("catalog"):
        children = node.get("children") or []
        function = node.get("function_name")
        # DuckDB's parser turns extract(field FROM t) into date_part in schema main; a
        # date_part the query calls by name has no schema, and stays DuckDB's
        if function == "date_part" and node.get("schema") == "main" and len(children) == 2:
            field = ((children[0].get("value") or {}).get("value") if children[0].get("class") == "CONSTANT" else None)
            if isinstance(field, str) and f"extract {field.lower()}" in _TEMPLATES:
                return f"extract {field.lower()}", children[1]
        if function in ("to_date", "parsedatetime") and len(children) == 2 and children[1].get("class") == "CONSTANT":
            pattern = str((children[1].get("value") or {}).get("value"))
            if ("yy" in pattern) != ("mm" in pattern):
                return ("as DATE" if "yy" in pattern else "as TIME"), {**node, "alias": ""}
        if function == "mod" and not node.get("schema") and len(children) == 2 and (
                _column(children[1]) in columns.floating or _double_literal(children[1])):
            return "decimal mod", children[0], children[1]
        if function in _INTEGER_FUNCTIONS and not node.get("schema") and len(children) == 1:
            return "as INTEGER", {**node, "alias": ""}
        if not node.get("schema") and len(children) == 1:
            if function == "week":
                return "week", children[0]
            if f"part {function}" in _TEMPLATES:
                return f"part {function}", children[0]
    return (None,)


def _double_literal(node: Any) -> bool:
    """A decimal literal, or one this module already made a double (children go first)."""
    if isinstance(node, dict) and node.get("class") == "CAST" and (node.get("cast_type") or {}).get("id") == "DOUBLE":
        node = node.get("child")
    return _decimal_literal(node)


def _decimal_literal(node: Any) -> bool:
    value = (node.get("value") or {}) if isinstance(node, dict) and node.get("class") == "CONSTANT" else {}
    return (value.get("type") or {}).get("id") == "DECIMAL" and not value.get("is_null")


def _column(node: Any) -> str | None:
    """The (lower-case) column ``node`` refers to, None when it is no column."""
    names = node.get("column_names") if isinstance(node, dict) and node.get("class") == "COLUMN_REF" else None
    return names[-1].lower() if names else None


def _put_operands(node: Any, operands: dict[str, Any]) -> None:
    """Put each operand wherever the template has its placeholder column."""
    for key, item in _children(node):
        name = _column(item)
        if name is not None and item["column_names"][-1] in operands:
            node[key] = operands[item["column_names"][-1]]
        else:
            _put_operands(item, operands)
