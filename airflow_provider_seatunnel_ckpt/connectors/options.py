"""Declared connector options: each connector and transform holds an :class:`OptionTable`
of :class:`Option` records at class level (``OPTIONS``), which :meth:`OptionTable.parse`
turns into typed values once, in ``__init__``; docs/options.md is generated from them.

Errors are ``ConfigError`` one-liners with the option's own name as the key (``"rows"``);
the registry (:mod:`.__init__`) puts the job-file prefix in front (``"source[0].rows"``).
Numbers may also arrive as strings (Airflow renders templated fields to text), so
``"1000"`` is accepted where an integer is expected; booleans never count as numbers.
Rules across options (``a`` requires ``b``) stay beside the table, as named functions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: the default of an option that must be given
REQUIRED: Any = _Required()


def option_key(connector: Any, name: str) -> str:
    """The key to name in an error raised after construction (on an executor).

    ``load_source`` and friends set ``config_key`` (``"source[0]"``) on what they build.
    """
    prefix = getattr(connector, "config_key", "")
    return f"{prefix}.{name}" if prefix else name


def _int(name: str, value: Any, minimum: float | None) -> int:
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        try:
            number = int(value.strip().replace("_", ""))
        except ValueError:
            number = None
    if number is None:
        raise ConfigError(name, f"expected an integer, got {value!r}")
    if minimum is not None and number < minimum:
        raise ConfigError(name, f"must be >= {minimum}, got {number}")
    return number


def _float(name: str, value: Any, minimum: float | None) -> float:
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        raise ConfigError(name, f"expected a number, got {value!r}")
    if minimum is not None and number < minimum:
        raise ConfigError(name, f"must be >= {minimum:g}, got {number:g}")
    return number


def _str(name: str, value: Any, choices: tuple[str, ...] | None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(name, f"expected a non-empty string, got {value!r}")
    value = value.strip()
    if choices is not None:
        if value.lower() not in choices:
            raise ConfigError(name, f"{value!r} is not one of {', '.join(choices)}")
        return value.lower()
    return value


def _text(name: str, value: Any) -> str:
    """A string as written (no stripping: a tab or a space is a delimiter)."""
    if not isinstance(value, str) or value == "":
        raise ConfigError(name, f"expected a non-empty string, got {value!r}")
    return value


def _bool(name: str, value: Any) -> bool:
    """``true``/``false``, also as strings (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(name, f"expected true or false, got {value!r}")


def _columns(name: str, value: Any) -> list[str]:
    """A non-empty list of distinct column names."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(name, f"expected a non-empty list of column names, got {value!r}")
    if not all(isinstance(v, str) and v for v in value):
        raise ConfigError(name, f"every entry must be a non-empty string, got {value!r}")
    if len(set(value)) != len(value):
        raise ConfigError(name, f"lists a column more than once: {value!r}")
    return list(value)


def _names(name: str, value: Any) -> list[str]:
    """A list of column names, distinct in any case (SeaTunnel's file options), maybe empty."""
    if (
        isinstance(value, str)
        or not isinstance(value, (list, tuple))
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise ConfigError(name, f"expected a list of column names, got {value!r}")
    if len({v.lower() for v in value}) != len(value):
        raise ConfigError(name, f"lists a column more than once: {value!r}")
    return list(value)


def _renames(name: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(name, f"expected a non-empty mapping of old name to new name, got {value!r}")
    for k, v in value.items():
        if not isinstance(k, str) or not k or not isinstance(v, str) or not v:
            raise ConfigError(name, f"names must be non-empty strings, got {k!r}: {v!r}")
    return dict(value)


#: kind -> (its name in docs/options.md, converter of a given value)
KINDS: dict[str, tuple[str, Callable[[Option, Any], Any]]] = {
    "int": ("integer", lambda o, v: _int(o.name, v, o.minimum)),
    "float": ("number", lambda o, v: _float(o.name, v, o.minimum)),
    "str": ("string", lambda o, v: _str(o.name, v, o.choices)),
    "text": ("string (as written)", lambda o, v: _text(o.name, v)),
    "bool": ("boolean", lambda o, v: _bool(o.name, v)),
    "columns": ("list of columns", lambda o, v: _columns(o.name, v)),
    "names": ("list of columns", lambda o, v: _names(o.name, v)),
    "renames": ("mapping of names", lambda o, v: _renames(o.name, v)),
    "value": ("see description", lambda o, v: v),
}


@dataclass(frozen=True)
class Option:
    """One option: its name, kind (a key of :data:`KINDS`), a one-line description, its
    default (:data:`REQUIRED`: it must be given; None: absent means unset), the least
    number it takes (``int``, ``float``) and the values it takes (``str``, any case).
    ``convert``, when set, makes the value from what the job file wrote (None: not given)
    in place of the kind's checks, for an option with its own messages; None from it
    gives the default."""

    name: str
    kind: str
    doc: str
    default: Any = None
    minimum: float | None = None
    choices: tuple[str, ...] | None = None
    convert: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: unknown kind {self.kind!r}")
        if "\n" in self.doc or not self.doc.strip():
            raise ValueError(f"option {self.name}: the description is one line")

    def parse(self, plugin: str, values: Mapping[str, Any]) -> Any:
        value = values.get(self.name)
        if self.convert is not None:
            converted = self.convert(value)
            return self.default if converted is None and self.default is not REQUIRED else converted
        if value is None:
            if self.default is REQUIRED:
                raise ConfigError(self.name, f"is required for {plugin}")
            return self.default
        return KINDS[self.kind][1](self, value)


def _shown(default: Any) -> str:
    if default is REQUIRED:
        return "required"
    if default is None:
        return ""
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    return f"`{json.dumps(default)}`"


class OptionTable:
    """A connector's options, in the order they are checked.

    ``extra`` accepts further keys by predicate (undeclared, left to the connector: the
    storage options of file connectors); ``extra_hint`` says which in the unknown-key error.
    ``rules`` are checks across options that read only what was written (``a`` or ``b``,
    not both): they run on the raw options after the unknown keys, before the values.
    """

    def __init__(
        self,
        *options: Option,
        extra: Callable[[str], bool] | None = None,
        extra_hint: str = "",
        rules: Iterable[Callable[[Mapping[str, Any]], None]] = (),
    ):
        self.options = {option.name: option for option in options}
        if len(self.options) != len(options):
            raise ValueError("an option is declared twice")
        self.extra = extra
        self.extra_hint = extra_hint
        self.rules = tuple(rules)

    def __iter__(self) -> Iterator[Option]:
        return iter(self.options.values())

    def __add__(self, other: Iterable[Option]) -> OptionTable:
        """This table and ``other``'s options after its own (an option of both: this one's)."""
        merged = dict(self.options)
        for option in other:
            merged.setdefault(option.name, option)
        return OptionTable(*merged.values(), extra=self.extra, extra_hint=self.extra_hint, rules=self.rules)

    def markdown(self) -> str:
        """The table as docs/options.md shows it: one row per option."""
        rows = ["| option | type | default | description |", "|---|---|---|---|"]
        for option in self:
            kind = KINDS[option.kind][0]
            if option.choices:
                kind += ": " + ", ".join(option.choices)
            if option.minimum is not None:
                kind += f", >= {option.minimum:g}"
            cells = (f"`{option.name}`", kind, _shown(option.default), option.doc)
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        if self.extra_hint:
            rows.append(f"\nAlso {self.extra_hint}.")
        return "\n".join(rows)

    def parse(self, plugin: str, options: Mapping[str, Any]) -> Parsed:
        """Unknown keys fail first, then each option in the table's order."""
        known = sorted(self.options)
        for key in options:
            if not isinstance(key, str):
                raise ConfigError(str(key), f"option names must be strings, got {type(key).__name__}")
            if key in self.options or (self.extra is not None and self.extra(key)):
                continue
            hint = f" (or {self.extra_hint})" if self.extra_hint else ""
            raise ConfigError(key, f"unknown option for {plugin}; known options: {', '.join(known)}{hint}")
        for rule in self.rules:
            rule(options)
        return Parsed(plugin, options, {option.name: option.parse(plugin, options) for option in self})


class Parsed(Mapping[str, Any]):
    """A connector's typed option values: ``parsed["rows"]`` (the default when not given);
    ``given(name)`` says whether the job file set it, ``raw`` holds what it wrote."""

    def __init__(self, plugin: str, raw: Mapping[str, Any], values: dict[str, Any]):
        self.plugin = plugin
        self.raw = dict(raw)
        self._values = values

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def given(self, name: str) -> bool:
        return given(self.raw, name)

    def require(self, name: str) -> Any:
        """The value of an option required only in some cases (a rule beside the table)."""
        if not self.given(name):
            raise ConfigError(name, f"is required for {self.plugin}")
        return self[name]


def given(options: Mapping[str, Any], name: str) -> bool:
    """For rules: whether the job file set ``name`` (None counts as not set)."""
    return options.get(name) is not None


#: SeaTunnel's save modes as the table sinks (Jdbc, Iceberg, Delta) take them
SAVE_MODE_OPTIONS = (
    Option(
        "schema_save_mode",
        "str",
        "create the table when missing, or fail",
        "create_schema_when_not_exist",
        choices=("create_schema_when_not_exist", "error_when_schema_not_exist"),
    ),
    Option("data_save_mode", "str", "append_data only", "append_data", choices=("append_data",)),
)
