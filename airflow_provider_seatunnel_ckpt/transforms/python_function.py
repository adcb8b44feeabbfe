"""``Python`` transform: a user function ``fn(batch) -> batch | None`` on every batch.

Option ``function`` names it as ``"package.module:function"`` (the part after the colon
may be a dotted attribute path, ``"module:Class.method"``). The module is imported on
first use, on the executor, so it only needs to exist where the pipeline runs (ship it
with ``--py-files``). The function may return a ``RecordBatch``, a ``Table`` (combined
into one batch) or None to drop the batch. It must be stateless: anything it remembers
between batches is lost on failover.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from ..connectors.api import ReaderContext, Transform
from ..connectors.options import REQUIRED, Option, OptionTable, option_key
from ..errors import ConfigError

_FUNCTION = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


class PythonTransform(Transform):
    plugin_name = "Python"
    OPTIONS = OptionTable(
        Option("function", "str", "package.module:function, called with each batch", REQUIRED),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.function: str = self.parse_options()["function"]
        if not _FUNCTION.match(self.function):
            raise ConfigError("function", f"{self.function!r} is not of the form 'package.module:function'")
        self._fn: Callable[[pa.RecordBatch], Any] | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # the function is imported again where the copy runs
        state = self.__dict__.copy()
        state.pop("_lock")
        state["_fn"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def open(self, context: ReaderContext) -> None:
        self.resolve()

    def resolve(self) -> Callable[[pa.RecordBatch], Any]:
        """Import the function (once); ``ConfigError`` naming the option when that fails."""
        with self._lock:
            if self._fn is None:
                self._fn = _load(self.function, option_key(self, "function"))
            return self._fn

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        result = (self._fn or self.resolve())(batch)
        if result is None or isinstance(result, pa.RecordBatch):
            return result
        if isinstance(result, pa.Table):
            combined = result.combine_chunks()
            batches = combined.to_batches()
            return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=combined.schema)
        raise TypeError(
            f"{self.function} returned {type(result).__name__}; expected a pyarrow RecordBatch, Table or None"
        )


def _load(spec: str, key: str) -> Callable[[pa.RecordBatch], Any]:
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(key, f"cannot import module {module_name!r} for {spec!r}: {exc}") from exc
    except Exception as exc:  # the module itself is broken: still the option's fault
        raise ConfigError(
            key, f"importing module {module_name!r} for {spec!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(key, f"module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise ConfigError(key, f"{spec!r} is a {type(target).__name__}, not a function")
    return target
