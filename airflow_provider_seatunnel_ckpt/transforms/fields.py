"""SeaTunnel's column transforms under their names and options: ``FieldMapper`` (keep,
order and rename columns), ``Copy`` (append copies of columns), ``Replace`` (replace text
in a string column) and ``Split`` (cut a field's text into new fields). Stateless, one
Arrow batch at a time, no Python per row. Their options, and where they differ from
SeaTunnel's (regular expressions are RE2's, Arrow's), are in docs/seatunnel.md
("Connectors and transforms").
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..connectors.api import Transform
from ..connectors.java_text import java_decimal_text, java_float_text
from ..connectors.options import REQUIRED, Option, OptionTable, given, option_key
from ..errors import ConfigError


def _re2(option: str, pattern: str) -> None:
    """Refuse here, not on a batch, what Arrow's RE2 cannot run (backreferences, lookaround)."""
    try:
        pc.replace_substring_regex(pa.array([""]), pattern=pattern, replacement="")
    except pa.ArrowInvalid as err:
        raise ConfigError(option, f"not a regular expression Arrow's RE2 can run: {err}") from None


def _missing(transform: Transform, option: str, wanted: list[str], names: list[str]) -> None:
    missing = [name for name in wanted if name not in names]
    if missing:
        raise ConfigError(option_key(transform, option), f"no column {missing[0]!r} in the rows (columns: {names})")


class FieldMapperTransform(Transform):
    plugin_name = "FieldMapper"
    OPTIONS = OptionTable(
        Option("field_mapper", "renames", "column -> output name; the columns kept, in this order", REQUIRED)
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.mapping: dict[str, str] = self.parse_options()["field_mapper"]
        if len(set(self.mapping.values())) != len(self.mapping):
            raise ConfigError("field_mapper", "maps two columns to one output name")

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        _missing(self, "field_mapper", list(self.mapping), input_schema.names)
        return pa.schema([input_schema.field(old).with_name(new) for old, new in self.mapping.items()])

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        _missing(self, "field_mapper", list(self.mapping), batch.schema.names)
        return batch.select(list(self.mapping)).rename_columns(list(self.mapping.values()))


def _rule_fields_or_src_dest(options: Mapping[str, Any]) -> None:
    """Rule: ``fields``, or ``src_field`` and ``dest_field``, not both."""
    if given(options, "fields") and (given(options, "src_field") or given(options, "dest_field")):
        raise ConfigError("fields", "give fields, or src_field and dest_field, not both")


class CopyTransform(Transform):
    plugin_name = "Copy"
    OPTIONS = OptionTable(
        Option("fields", "renames", "new column -> the column it copies"),
        Option("src_field", "str", "the column copied (without fields)"),
        Option("dest_field", "str", "the copy's name (without fields)"),
        rules=(_rule_fields_or_src_dest,),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        if opts.given("fields"):
            self.copies: dict[str, str] = opts["fields"]  # new name -> source column
        else:
            self.copies = {opts.require("dest_field"): opts.require("src_field")}

    def _check(self, names: list[str]) -> None:
        _missing(self, "fields", list(self.copies.values()), names)
        taken = [new for new in self.copies if new in names]
        if taken:
            raise ConfigError(option_key(self, "fields"), f"column {taken[0]!r} exists already")

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        self._check(input_schema.names)
        for new, source in self.copies.items():
            input_schema = input_schema.append(input_schema.field(source).with_name(new))
        return input_schema

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        self._check(batch.schema.names)
        for new, source in self.copies.items():
            batch = batch.append_column(batch.schema.field(source).with_name(new), batch.column(source))
        return batch


def _replace_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(name, f"is required for Replace (a string), got {value!r}")
    return value


class ReplaceTransform(Transform):
    plugin_name = "Replace"
    OPTIONS = OptionTable(
        Option("replace_field", "str", "the string column whose values are rewritten", REQUIRED),
        Option(
            "pattern",
            "text",
            "the text (or RE2 expression) replaced",
            REQUIRED,
            convert=partial(_replace_text, "pattern"),
        ),
        Option("replacement", "text", "what replaces it", REQUIRED, convert=partial(_replace_text, "replacement")),
        Option("is_regex", "bool", "pattern is an RE2 regular expression", False),
        Option("replace_first", "bool", "replace the first match only", False),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.field: str = opts["replace_field"]
        self.pattern: str = opts["pattern"]
        self.replacement: str = opts["replacement"]
        if self.pattern == "":
            raise ConfigError("pattern", "must not be empty")
        self.is_regex: bool = opts["is_regex"]
        self.replace_first: bool = opts["replace_first"]
        if self.is_regex:
            _re2("pattern", self.pattern)

    def _column(self, schema: pa.Schema) -> int:
        index = schema.get_field_index(self.field)
        if index < 0:
            raise ConfigError(
                option_key(self, "replace_field"), f"no column {self.field!r} in the rows (columns: {schema.names})"
            )
        if not pa.types.is_string(schema.field(index).type) and not pa.types.is_large_string(schema.field(index).type):
            raise ConfigError(
                option_key(self, "replace_field"), f"{self.field} is {schema.field(index).type}, not a string"
            )
        return index

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is not None:
            self._column(input_schema)
        return input_schema

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        index = self._column(batch.schema)
        limit = 1 if self.is_regex and self.replace_first else None
        replace = pc.replace_substring_regex if self.is_regex else pc.replace_substring
        replaced = replace(
            batch.column(index), pattern=self.pattern, replacement=self.replacement, max_replacements=limit
        )
        return batch.set_column(index, batch.schema.field(index), replaced)


def _java_texts(column: pa.Array) -> pa.Array:
    """Java's ``toString`` of each value, for the types whose text Arrow's cast does not
    give as Java would (floating point, decimals); the rest cast as Java prints them."""
    kind = column.type
    if pa.types.is_floating(kind):
        single = pa.types.is_float32(kind) or pa.types.is_float16(kind)
        return pa.array([None if v is None else java_float_text(v, single) for v in column.to_pylist()], pa.string())
    if pa.types.is_decimal(kind):
        return pa.array([None if v is None else java_decimal_text(v) for v in column.to_pylist()], pa.string())
    return pc.cast(column, pa.string())


#: the value types whose text is the same here and in Java: Split refuses the others
#: (a timestamp's, a row's or a list's text follows Java's classes, not a rule we keep)
def _splittable(kind: pa.DataType) -> bool:
    return (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_decimal(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_date32(kind)
    )


def _separator(value: Any) -> str:
    if not isinstance(value, str) or value == "":
        raise ConfigError("separator", f"is required for Split (a non-empty string), got {value!r}")
    _re2("separator", value)
    return value


class SplitTransform(Transform):
    plugin_name = "Split"
    OPTIONS = OptionTable(
        Option("split_field", "str", "the string column split", REQUIRED),
        Option("separator", "text", "an RE2 expression between the parts", REQUIRED, convert=_separator),
        Option("output_fields", "columns", "the appended columns, one per part", REQUIRED),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.field: str = opts["split_field"]
        self.separator: str = opts["separator"]
        self.outputs: list[str] = opts["output_fields"]

    def _check(self, schema: pa.Schema) -> None:
        _missing(self, "split_field", [self.field], schema.names)
        kind = schema.field(self.field).type
        if not _splittable(kind):
            raise ConfigError(
                option_key(self, "split_field"),
                f"{self.field} is {kind}: Split takes strings, numbers, booleans and dates",
            )

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        self._check(input_schema)
        for name in self.outputs:
            index = input_schema.get_field_index(name)
            field = pa.field(name, pa.string())
            input_schema = input_schema.append(field) if index < 0 else input_schema.set(index, field)
        return input_schema

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        self._check(batch.schema)
        texts = _java_texts(batch.column(self.field))
        count = len(self.outputs)
        # a null value has no pieces: split "" and null every piece of those rows after
        pieces = pc.split_pattern_regex(pc.fill_null(texts, ""), pattern=self.separator, max_splits=count - 1)
        padded = pc.list_slice(pieces, 0, count, return_fixed_size_list=True)  # short rows padded with nulls
        flat = padded.flatten() if isinstance(padded, pa.Array) else padded.combine_chunks().flatten()
        is_null = pc.is_null(texts)
        for position, name in enumerate(self.outputs):
            piece = pc.take(flat, pa.array(range(position, count * len(batch), count), pa.int64()))
            piece = pc.if_else(is_null, pa.scalar(None, pa.string()), piece)
            field = pa.field(name, pa.string())
            index = batch.schema.get_field_index(name)
            batch = batch.append_column(field, piece) if index < 0 else batch.set_column(index, field, piece)
        return batch
