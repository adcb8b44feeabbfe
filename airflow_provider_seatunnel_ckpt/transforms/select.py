"""``Select`` transform: keep only ``fields`` (a list of column names), in that order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..connectors.api import Transform
from ..connectors.options import REQUIRED, Option, OptionTable, option_key
from ..errors import ConfigError


class SelectTransform(Transform):
    plugin_name = "Select"
    OPTIONS = OptionTable(Option("fields", "columns", "the columns kept, in this order", REQUIRED))

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.fields: list[str] = self.parse_options()["fields"]

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        self._check(input_schema.names)
        return pa.schema([input_schema.field(name) for name in self.fields])

    def _check(self, names: list[str]) -> None:
        missing = [f for f in self.fields if f not in names]
        if missing:
            raise ConfigError(option_key(self, "fields"), f"no column {missing[0]!r} in the batch (columns: {names})")

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        self._check(batch.schema.names)
        return batch.select(self.fields)
