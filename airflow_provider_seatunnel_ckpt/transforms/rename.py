"""``Rename`` transform: rename columns with ``mapping: {old: new}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..connectors.api import Transform
from ..connectors.options import REQUIRED, Option, OptionTable, option_key
from ..errors import ConfigError


class RenameTransform(Transform):
    plugin_name = "Rename"
    OPTIONS = OptionTable(Option("mapping", "renames", "old column name -> new name", REQUIRED))

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.mapping: dict[str, str] = self.parse_options()["mapping"]
        targets = list(self.mapping.values())
        if len(set(targets)) != len(targets):
            raise ConfigError("mapping", f"gives two columns the same new name: {self.mapping!r}")

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        return pa.schema(
            [field.with_name(name) for field, name in zip(input_schema, self._renamed(input_schema.names))]
        )

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        return batch.rename_columns(self._renamed(batch.schema.names))

    def _renamed(self, names: list[str]) -> list[str]:
        missing = [old for old in self.mapping if old not in names]
        if missing:
            raise ConfigError(option_key(self, "mapping"), f"no column {missing[0]!r} in the batch (columns: {names})")
        renamed = [self.mapping.get(name, name) for name in names]
        if len(set(renamed)) != len(renamed):
            raise ConfigError(option_key(self, "mapping"), f"renaming {names} gives duplicate column names {renamed}")
        return renamed
