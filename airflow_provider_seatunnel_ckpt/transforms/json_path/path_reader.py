"""Jayway JsonPath's evaluation of a compiled path on a parsed document (PathToken and its
subclasses, default configuration): a definite path gives the value or fails with
:class:`.failures.PathError`, an indefinite one gives the list of matches, possibly empty."""

from __future__ import annotations

import decimal
from typing import Any

from ...connectors.java_text import node_json
from .failures import PathError
from .path_compiler import CompiledPath, Token

_UNDEFINED = object()  # a missing property, told apart from one that holds null


def read_path(path: CompiledPath, document: Any) -> Any:
    """``JsonPath.read`` on a parsed document: the value (definite path) or the list of
    matches; PathError when a definite path matches nothing."""
    results: list[Any] = []
    _eval(path, path.root, "", document, results)
    if path.definite:
        if not results:
            raise PathError(f"No results for path: {path}")
        return results[-1]
    return results


def _eval(path: CompiledPath, token: Token, current: str, model: Any, out: list[Any]) -> None:
    kind = token.kind
    if kind == "root":
        if token.leaf:
            out.append(model)
        else:
            _eval(path, token.next, token.char, model, out)  # type: ignore[attr-defined,arg-type]
    elif kind == "prop":
        if not isinstance(model, dict):
            if not token.upstream_definite():
                return
            found = "null" if model is None else _java_class(model)
            raise PathError(
                f"Expected to find an object with property {token.fragment()} in path {current} "
                f"but found '{found}'. This is not a json object according to the JsonProvider: "
                "'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'."
            )
        names = token.names  # type: ignore[attr-defined]
        if len(names) == 1 or token.leaf:
            _object_property(path, token, current, model, names, out)
        else:
            for name in names:
                _object_property(path, token, current, model, [name], out)
    elif kind in ("index", "slice"):
        if model is None or not isinstance(model, list):
            if not token.upstream_definite():
                return
            if model is None:
                raise PathError(f"The path {current} is null")
            raise PathError(
                f"Filter: {token.fragment()} can only be applied to arrays. Current context is: {node_json(model)}"
            )
        if kind == "index":
            for index in token.indexes:  # type: ignore[attr-defined]
                _array_index(path, token, index, current, model, out)
        else:
            _slice(path, token, current, model, out)
    elif kind == "wild":
        if isinstance(model, dict):
            for name in list(model):
                _object_property(path, token, current, model, [name], out)
        elif isinstance(model, list):
            for index in range(len(model)):
                _array_index(path, token, index, current, model, out)
    elif kind == "scan":
        _walk(path, token.next, current, model, out)  # type: ignore[arg-type]


def _object_property(
    path: CompiledPath, token: Token, current: str, model: dict, names: list[str], out: list[Any]
) -> None:
    if len(names) == 1:
        name = names[0]
        here = f"{current}['{name}']"
        value = model.get(name, _UNDEFINED)
        if value is _UNDEFINED:
            if token.leaf:
                return
            if not (token.upstream_definite() and token.token_definite()):
                return
            raise PathError(f"Missing property in path {here}")
        if token.leaf:
            index = f"[{token.upstream_array_index}]"
            tail_prev = path.tail.prev
            if index == "[-1]" or (tail_prev is not None and tail_prev.fragment() == index):
                out.append(value)
        else:
            _eval(path, token.next, here, value, out)  # type: ignore[arg-type]
        return
    merged = {name: model[name] for name in names if name in model}
    out.append(merged)


def _array_index(path: CompiledPath, token: Token, index: int, current: str, model: list, out: list[Any]) -> None:
    effective = len(model) + index if index < 0 else index
    if not 0 <= effective < len(model):
        return  # Jayway swallows the IndexOutOfBoundsException
    hit = model[effective]
    if token.leaf:
        out.append(hit)
    else:
        _eval(path, token.next, f"{current}[{index}]", hit, out)  # type: ignore[arg-type]


def _slice(path: CompiledPath, token: Token, current: str, model: list, out: list[Any]) -> None:
    length = len(model)
    start, stop = token.start, token.stop  # type: ignore[attr-defined]
    if stop is None:  # [from:]
        start = max(0, length + start if start < 0 else start)
        indexes = range(start, length) if length and start < length else range(0)
    elif start is None:  # [:to]
        stop = min(length, length + stop if stop < 0 else stop)
        indexes = range(0, stop) if length else range(0)
    else:  # [from:to]: Jayway neither adjusts a negative from nor a negative to
        stop = min(length, stop)
        indexes = range(start, stop) if start < stop and length else range(0)
    for index in indexes:
        _array_index(path, token, index, current, model, out)


def _walk(path: CompiledPath, target: Token, current: str, model: Any, out: list[Any]) -> None:
    if isinstance(model, dict):
        if _scan_matches(target, model):
            _eval(path, target, current, model, out)
        for name, value in list(model.items()):
            _walk(path, target, f"{current}['{name}']", value, out)
    elif isinstance(model, list):
        if _scan_matches(target, model):
            if target.leaf:
                _eval(path, target, current, model, out)
            else:
                following = target.next
                for index, element in enumerate(model):
                    following.upstream_array_index = index  # type: ignore[union-attr]
                    _eval(path, following, f"{current}[{index}]", element, out)  # type: ignore[arg-type]
        for index, element in enumerate(model):
            _walk(path, target, f"{current}[{index}]", element, out)


def _scan_matches(target: Token, model: Any) -> bool:
    if target.kind == "prop":
        if not isinstance(model, dict):
            return False
        if not target.token_definite():
            return True
        return all(name in model for name in target.names)  # type: ignore[attr-defined]
    if target.kind in ("index", "slice"):
        return isinstance(model, list)
    return target.kind == "wild"


def _java_class(value: Any) -> str:
    if isinstance(value, bool):
        return "java.lang.Boolean"
    if isinstance(value, str):
        return "java.lang.String"
    if isinstance(value, int):
        return "java.lang.Integer" if -(2**31) <= value < 2**31 else "java.lang.Long"
    if isinstance(value, float):
        return "java.lang.Double"
    if isinstance(value, decimal.Decimal):
        return "java.math.BigDecimal"
    return "net.minidev.json.JSONArray"
