"""SeaTunnel's casts of whole numbers to dates and times, which DuckDB reads otherwise.

SeaTunnel's Sql transform casts a ``bigint`` to ``timestamp`` as milliseconds since the
epoch (``cast(1687747869032 as timestamp)`` = ``2023-06-26T02:51:09.032``), an integer to
``date`` as ``yyyyMMdd`` digits (``20230625``) and to ``time`` as ``HHmmss`` digits
(``235109``). DuckDB has none of these casts (it refuses them), and a cast cannot be
redefined, so the query is rewritten for the input schema it runs on: a ``CAST`` of a
column whose type is an integer to one of the three types becomes the DuckDB expression
that reads it SeaTunnel's way. Only a cast of a column is rewritten; a cast of any other
integer expression stays DuckDB's (which refuses it with its message).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from .sql_passthrough import parse_select

_PLACEHOLDER = "__seatunnel_cast_operand__"
#: the cast's target -> SeaTunnel's reading of a whole number, over the placeholder column
_READINGS = {
    "TIMESTAMP": f"epoch_ms(CAST({_PLACEHOLDER} AS BIGINT))",
    "DATE": f"CAST(strptime(CAST({_PLACEHOLDER} AS VARCHAR), '%Y%m%d') AS DATE)",
    "TIME": f"CAST(strptime(lpad(CAST({_PLACEHOLDER} AS VARCHAR), 6, '0'), '%H%M%S') AS TIME)",
}


def seatunnel_casts(connection: Any, query: str, schema: pa.Schema) -> str | None:
    """``query`` with SeaTunnel's integer casts for input ``schema``; None when it has none."""
    integers = {f.name.lower() for f in schema if pa.types.is_integer(f.type)}
    if not integers or "cast" not in query.lower():
        return None
    tree = parse_select(connection, query)
    if tree is None:
        return None
    readings: dict[str, Any] = {}
    changed = _rewrite(tree["statements"][0]["node"], integers, lambda target: _reading(connection, target, readings))
    if not changed:
        return None
    return connection.execute("SELECT json_deserialize_sql($1::JSON)", [json.dumps(tree)]).fetchone()[0]


def _reading(connection: Any, target: str, cache: dict[str, Any]) -> Any:
    """The parse tree of SeaTunnel's reading for ``target`` (with the placeholder operand)."""
    if target not in cache:
        tree = parse_select(connection, f"SELECT {_READINGS[target]}")
        cache[target] = tree["statements"][0]["node"]["select_list"][0]
    return json.loads(json.dumps(cache[target]))  # a fresh copy per use


def _children(node: Any) -> list[tuple[Any, Any]]:
    if isinstance(node, dict):
        return list(node.items())
    return list(enumerate(node)) if isinstance(node, list) else []


def _rewrite(node: Any, integers: set[str], reading: Any) -> bool:
    """Replace, in place, every CAST of an integer column to a target of ``_READINGS``."""
    changed = False
    for key, item in _children(node):
        replacement = _replacement(item, integers, reading)
        if replacement is not None:
            node[key] = replacement
            changed = True
        else:
            changed |= _rewrite(item, integers, reading)
    return changed


def _replacement(node: Any, integers: set[str], reading: Any) -> Any | None:
    if not isinstance(node, dict) or node.get("class") != "CAST" or node.get("try_cast"):
        return None
    target = (node.get("cast_type") or {}).get("id")
    child = node.get("child") or {}
    names = child.get("column_names") or []
    if target not in _READINGS or child.get("class") != "COLUMN_REF" or not names or names[-1].lower() not in integers:
        return None
    expression = reading(target)
    _put_operand(expression, child)
    expression["alias"] = node.get("alias", "")
    return expression


def _put_operand(node: Any, operand: dict[str, Any]) -> None:
    """Put ``operand`` where the placeholder column is (once in every reading)."""
    for key, item in _children(node):
        if isinstance(item, dict) and item.get("class") == "COLUMN_REF" and item.get("column_names") == [_PLACEHOLDER]:
            node[key] = operand
        else:
            _put_operand(item, operand)
