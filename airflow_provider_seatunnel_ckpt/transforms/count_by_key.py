"""``CountByKey`` transform: a running count per key within each split (stateful).

Options: ``key`` (required, a column name) and ``output`` (the appended int64 column,
default ``count``). Row ``r`` gets the number of rows of its split so far, itself
included, whose ``key`` equals its key. The state is this split's counts, JSON-safe::

    {"counts": {"<str(key)>": <int>, ...}, "nulls": <int>}   # "nulls" only once a null key was seen

Work per batch is vectorised: ``dictionary_encode`` finds the distinct keys, a stable
argsort gives each row's rank among equal keys, and only the dictionary (one entry per
distinct key in the batch) is walked in Python to read and update the state. The state
grows with the number of distinct keys in the split.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..connectors.api import Transform
from ..connectors.options import REQUIRED, Option, OptionTable, option_key
from ..errors import ConfigError


class CountByKeyTransform(Transform):
    plugin_name = "CountByKey"
    stateful = True
    OPTIONS = OptionTable(
        Option("key", "str", "the column whose values are counted", REQUIRED),
        Option("output", "str", "the appended int64 column of running counts", "count"),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.key: str = opts["key"]
        self.output: str = opts["output"]
        if self.output == self.key:
            raise ConfigError("output", f"must differ from key {self.key!r}")

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        self._check(input_schema.names)
        return input_schema.append(self._output_field())

    def _check(self, names: list[str]) -> None:
        if self.key not in names:
            raise ConfigError(option_key(self, "key"), f"column {self.key!r} is not in the batch (columns: {names})")
        if self.output in names:
            raise ConfigError(
                option_key(self, "output"), f"column {self.output!r} already exists in the batch; choose another name"
            )

    def _output_field(self) -> pa.Field:
        return pa.field(self.output, pa.int64(), nullable=False)

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        if split_state is None:
            raise ValueError("CountByKey is stateful: the runtime must pass the split's state")
        self._check(batch.schema.names)
        counts: dict[str, int] = split_state.setdefault("counts", {})
        running = self._running_counts(batch.column(self.key), counts, split_state)
        return batch.append_column(self._output_field(), pa.array(running))

    def _running_counts(self, column: pa.Array, counts: dict[str, int], state: dict[str, Any]) -> np.ndarray:
        n = len(column)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        try:
            encoded = pc.dictionary_encode(column, null_encoding="encode")
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise ConfigError(
                option_key(self, "key"), f"column {self.key!r} of type {column.type} cannot be a key: {exc}"
            ) from None
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        values = encoded.dictionary.to_pylist()
        base = np.fromiter(
            (state.get("nulls", 0) if v is None else counts.get(str(v), 0) for v in values),
            dtype=np.int64,
            count=len(values),
        )
        # rank of each row among the rows of the batch with the same key (1-based)
        order = np.argsort(indices, kind="stable")
        sorted_indices = indices[order]
        starts = np.flatnonzero(np.r_[True, sorted_indices[1:] != sorted_indices[:-1]])
        lengths = np.diff(np.r_[starts, n])
        rank = np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)
        occurrence = np.empty(n, dtype=np.int64)
        occurrence[order] = rank + 1
        totals = base + np.bincount(indices, minlength=len(values))
        for value, total in zip(values, totals.tolist()):
            if value is None:
                state["nulls"] = total
            else:
                counts[str(value)] = total
        return base[indices] + occurrence
