"""Option checking shared by the built-in connectors.

A connector validates its options in ``__init__`` through :class:`Options` and raises
``ConfigError`` with the option's own name as the key (``"rows"``); the registry
(:mod:`.__init__`) puts the job-file prefix in front (``"source[0].rows"``).

Numbers may also arrive as strings (Airflow renders templated fields to text), so
``"1000"`` is accepted where an integer is expected; booleans never count as numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import ConfigError

_MISSING: Any = object()


def option_key(connector: Any, name: str) -> str:
    """The key to name in an error raised after construction (on an executor).

    ``load_source`` and friends set ``config_key`` (``"source[0]"``) on what they build.
    """
    prefix = getattr(connector, "config_key", "")
    return f"{prefix}.{name}" if prefix else name


class Options:
    """Typed access to a connector's options; unknown keys fail at construction.

    ``extra`` accepts further keys by predicate (storage options of file connectors).
    """

    def __init__(
        self,
        plugin: str,
        options: Mapping[str, Any],
        known: Iterable[str],
        extra: Callable[[str], bool] | None = None,
        extra_hint: str = "",
    ):
        self.plugin = plugin
        self.values = dict(options)
        known = sorted(known)
        for key in self.values:
            if not isinstance(key, str):
                raise ConfigError(str(key), f"option names must be strings, got {type(key).__name__}")
            if key in known or (extra is not None and extra(key)):
                continue
            hint = f" (or {extra_hint})" if extra_hint else ""
            raise ConfigError(key, f"unknown option for {plugin}; known options: {', '.join(known)}{hint}")

    def has(self, name: str) -> bool:
        return self.values.get(name) is not None

    def int(self, name: str, default: Any = _MISSING, minimum: int | None = None) -> Any:
        if not self.has(name):
            return self._default(name, default)
        value = self.values[name]
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

    def float(self, name: str, default: Any = _MISSING, minimum: float | None = None) -> Any:
        if not self.has(name):
            return self._default(name, default)
        value = self.values[name]
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

    def str(self, name: str, default: Any = _MISSING, choices: Iterable[str] | None = None) -> Any:
        if not self.has(name):
            return self._default(name, default)
        value = self.values[name]
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(name, f"expected a non-empty string, got {value!r}")
        value = value.strip()
        if choices is not None:
            allowed = list(choices)
            if value.lower() not in allowed:
                raise ConfigError(name, f"{value!r} is not one of {', '.join(allowed)}")
            return value.lower()
        return value

    def bool(self, name: str, default: Any = _MISSING) -> Any:
        """``true``/``false``, also as strings (any case)."""
        if not self.has(name):
            return self._default(name, default)
        value = self.values[name]
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ConfigError(name, f"expected true or false, got {value!r}")

    def str_list(self, name: str) -> list[str]:
        value = self._default(name, _MISSING) if not self.has(name) else self.values[name]
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
            raise ConfigError(name, f"expected a non-empty list of column names, got {value!r}")
        if not all(isinstance(v, str) and v for v in value):
            raise ConfigError(name, f"every entry must be a non-empty string, got {value!r}")
        if len(set(value)) != len(value):
            raise ConfigError(name, f"lists a column more than once: {value!r}")
        return list(value)

    def str_mapping(self, name: str) -> dict[str, str]:
        value = self._default(name, _MISSING) if not self.has(name) else self.values[name]
        if not isinstance(value, Mapping) or not value:
            raise ConfigError(name, f"expected a non-empty mapping of old name to new name, got {value!r}")
        for k, v in value.items():
            if not isinstance(k, str) or not k or not isinstance(v, str) or not v:
                raise ConfigError(name, f"names must be non-empty strings, got {k!r}: {v!r}")
        return dict(value)

    def _default(self, name: str, default: Any) -> Any:
        if default is _MISSING:
            raise ConfigError(name, f"is required for {self.plugin}")
        return default
