"""Documents as this project reads them: from a path or the text itself, YAML or JSON,
and for job files SeaTunnel's HOCON too.

seatunnel.yaml (config.py) and job files are read alike, and text pasted from
documentation is never misread silently: Markdown code fences are dropped with a warning
naming the line, duplicate keys are an error (YAML would keep the last one). Every problem
is a ``ConfigError`` of one line. Which keys the result may hold is its reader's business
(config.py, job.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from .hocon import parse_hocon
from .unrendered import unrendered_jinja


def load_document(source: str | os.PathLike | Mapping[str, Any]) -> tuple[Any, str, list[str]]:
    """Parse a YAML/JSON document from a path, text or mapping, the forgiving-but-loud
    way this module reads documents (fences dropped with a warning, duplicate keys refused).
    Returns (document, origin for messages, warnings)."""
    if isinstance(source, Mapping):
        return source, "<dict>", []
    warnings: list[str] = []
    text, origin = read_source(source)
    return _parse_yaml(text, origin, warnings), origin, warnings


def _looks_like_yaml_text(source: str) -> bool:
    return "\n" in source or ": " in source or source.rstrip().endswith(":") or source.lstrip().startswith("{")


def read_source(source: str | os.PathLike) -> tuple[str, str]:
    """The text of a document given as a path or as the text itself, and its origin."""
    if isinstance(source, str) and _looks_like_yaml_text(source):
        return source, "<text>"
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(path), "file does not exist") from None
    except IsADirectoryError:
        raise ConfigError(str(path), "is a directory, expected a YAML or JSON file") from None
    except PermissionError:
        raise ConfigError(str(path), "permission denied") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), "is not UTF-8 text") from None
    return text, str(path)


_FENCE_RE = re.compile(r"^\s*(```|~~~)")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of keeping the last one."""


class _KeyNotHashable(ConfigError):
    """A mapping or a list as a key: YAML's reading of an unrendered ``{{ x }}``."""

    def __init__(self, line: int):
        super().__init__(f"line {line}", "a mapping or a list cannot be a key")
        self.line = line


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise _KeyNotHashable(key_node.start_mark.line + 1) from None
        if key in seen:
            mark = key_node.start_mark
            raise ConfigError(f"line {mark.line + 1}", f"duplicate key {key!r}")
        seen[key] = loader.construct_object(value_node, deep=True)
    return seen


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(text: str, origin: str, warnings: list[str]) -> Any:
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if _FENCE_RE.match(line):
            warnings.append(f"{origin}: line {number}: ignored a Markdown code fence {line.strip()!r}")
            lines[number - 1] = ""
    cleaned = "\n".join(lines)
    if not cleaned.strip():
        raise ConfigError(origin, "is empty")
    try:
        doc = yaml.load(cleaned, Loader=_StrictLoader)  # SafeLoader subclass
    except _KeyNotHashable as err:
        raise unrendered_jinja(origin, cleaned, err.line) or ConfigError(origin, f"{err.key}: {err.problem}") from None
    except ConfigError as err:
        raise ConfigError(origin, f"{err.key}: {err.problem}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        # `{% ... %}` cannot start a YAML token
        if mark and (jinja := unrendered_jinja(origin, cleaned, mark.line + 1)):
            raise jinja from None
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = err.problem or err.context or "invalid YAML"
        raise ConfigError(origin, f"YAML syntax error at {where}{problem}") from None
    except yaml.YAMLError as err:
        raise ConfigError(origin, f"YAML syntax error: {err}") from None
    if doc is None:
        raise ConfigError(origin, "is empty (only comments)")
    return doc


#: file name endings of SeaTunnel's HOCON job files
HOCON_SUFFIXES = (".conf", ".hocon", ".template")
_HOCON_SECTION = re.compile(r"^\s*(env|source|transform|sink)\s*\{", re.MULTILINE)


def looks_like_hocon(text: str) -> bool:
    """Job text in SeaTunnel's HOCON form: a line opening an ``env``/``source``/... block."""
    return bool(_HOCON_SECTION.search(text))


def read_job_document(
    source: str | os.PathLike | Mapping[str, Any], variables: Mapping[str, str] | None = None
) -> tuple[Any, str, list[str]]:
    """A job file's document, whatever its format: HOCON (``.conf``, SeaTunnel's own; or
    text with ``env {`` / ``source {`` blocks), YAML or SeaTunnel's JSON form. Returns
    (document, origin for messages, warnings)."""
    if isinstance(source, Mapping):
        return load_document(source)
    text, origin = read_source(source)
    if origin.lower().endswith(HOCON_SUFFIXES) or (origin.startswith("<") and looks_like_hocon(text)):
        return parse_hocon(text, origin, variables), origin, []
    return load_document(source)
