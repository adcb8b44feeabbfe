"""SeaTunnel's ``JsonPath`` transform under its name and options (SeaTunnel 2.3.x,
``transform-v2/jsonpath.md``): ``columns`` (``src_field``, ``path``, ``dest_field``,
``dest_type``, ``column_error_handle_way``) and ``row_error_handle_way``.

Each column reads ``path`` from the JSON in ``src_field`` and writes the result, converted
to ``dest_type``, to ``dest_field``: a new column at the end, or the input column of that
name replaced in place. Per row, in column order, as SeaTunnel does; the rules, the
error handling and where it differs from SeaTunnel are in docs/seatunnel.md ("JsonPath").

Work is columnar where it can be: the source column is dictionary-encoded and each
distinct text is parsed and read once; results and the per-row decisions are taken back
to the rows with Arrow/numpy (``pc.take``), so a column of repeated documents costs one
parse per distinct value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...connectors.api import Transform
from ...connectors.options import Option, OptionTable, option_key
from ...connectors.seatunnel_types import seatunnel_type, type_name
from ...errors import ConfigError, DataError
from .convert import Converters, result_node
from .failures import HardError, PathError
from .path_compiler import Unsupported, compile_path
from .path_reader import read_path
from .permissive_json import parse_json
from .source_json import check_source, source_json

_COLUMN_KEYS = ("src_field", "path", "dest_field", "dest_type", "column_error_handle_way")
_WAYS = ("FAIL", "SKIP", "SKIP_ROW")


class _Column:
    """One entry of ``columns``, checked and its path compiled when the job is checked."""

    def __init__(self, index: int, entry: Any, key: str):
        where = f"{key}[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(
                where, f"expected {{src_field, path, dest_field[, dest_type, column_error_handle_way]}}, got {entry!r}"
            )
        for name in entry:
            if name not in _COLUMN_KEYS:
                raise ConfigError(
                    f"{where}.{name}", f"unknown option for a JsonPath column; known options: {', '.join(_COLUMN_KEYS)}"
                )
        values = {}
        for name in ("path", "src_field", "dest_field"):  # SeaTunnel checks them in this order
            value = entry.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}.{name}", f"is required (a non-empty string), got {value!r}")
            values[name] = value
        self.path_text, self.src, self.dest = values["path"], values["src_field"], values["dest_field"]
        self.where = where
        dest_type = entry.get("dest_type", "string")
        self.kind = seatunnel_type(dest_type, f"{where}.dest_type")
        way = entry.get("column_error_handle_way")
        if way is not None and way not in _WAYS:
            raise ConfigError(
                f"{where}.column_error_handle_way",
                f"{way!r} is not one of {', '.join(_WAYS)} (SeaTunnel reads it in capitals)",
            )
        self.way: str | None = way
        try:
            self.path = compile_path(self.path_text)
        except Unsupported as err:
            raise ConfigError(f"{where}.path", f"{self.path_text!r}: {err}") from None
        except ValueError as err:
            raise ConfigError(f"{where}.path", f"{self.path_text!r} is not a JsonPath: {err}") from None
        self.convert = Converters(where).build(self.kind)


def _columns(columns: Any) -> list[_Column]:
    if not isinstance(columns, list) or not columns:
        raise ConfigError("columns", "is required for JsonPath: a non-empty list of {src_field, path, dest_field}")
    return [_Column(i, entry, "columns") for i, entry in enumerate(columns)]


class JsonPathTransform(Transform):
    plugin_name = "JsonPath"
    OPTIONS = OptionTable(
        Option("row_error_handle_way", "str", "FAIL or SKIP (the row) when a column fails, any case", "FAIL"),
        Option("columns", "value", "a non-empty list of {src_field, path, dest_field[, dest_type...]}"),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        way = opts["row_error_handle_way"]
        if way.upper() not in ("FAIL", "SKIP"):
            raise ConfigError("row_error_handle_way", f"{way!r} is not one of FAIL, SKIP")
        self.row_way = way.upper()
        self.columns = _columns(opts["columns"])
        dests = [c.dest for c in self.columns]
        for index, dest in enumerate(dests):
            if dest in dests[:index]:
                raise ConfigError(f"columns[{index}].dest_field", f"{dest!r} is written by an earlier column too")

    def _bind(self, schema: pa.Schema) -> None:
        for index, column in enumerate(self.columns):
            key = option_key(self, f"columns[{index}].src_field")
            position = schema.get_field_index(column.src)
            if position < 0:
                raise ConfigError(key, f"no column {column.src!r} in the rows (columns: {schema.names})")
            check_source(schema.field(position).type, key, column.src)

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        self._bind(input_schema)
        return self._out_schema(input_schema)

    def _out_schema(self, schema: pa.Schema) -> pa.Schema:
        for column in self.columns:
            field = pa.field(column.dest, column.kind, nullable=True)
            index = schema.get_field_index(column.dest)
            schema = schema.set(index, field) if index >= 0 else schema.append(field)
        return schema

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        self._bind(batch.schema)
        rows = batch.num_rows
        sources: dict[str, tuple[pa.Array, list[str], list[Any]]] = {}
        decision = np.zeros(rows, dtype=np.int8)  # 0 keep, 1 drop, 2 fail
        decided_by = np.full(rows, -1, dtype=np.int64)  # the column that dropped or failed the row
        outputs: list[pa.Array] = []
        messages: list[list[str | None]] = []
        for number, column in enumerate(self.columns):
            if column.src not in sources:
                sources[column.src] = _distinct_documents(batch.column(column.src))
            indices, _, documents = sources[column.src]
            values: list[Any] = []
            status = np.zeros(len(documents), dtype=np.int8)  # 0 ok, 1 path error, 2 hard error
            errors: list[str | None] = []
            for position, document in enumerate(documents):
                value, error = None, None
                try:
                    if isinstance(document, Exception):
                        raise document
                    value = column.convert(result_node(read_path(column.path, document)))
                except PathError as err:
                    status[position], error = 1, str(err)
                except HardError as err:
                    status[position], error = 2, str(err)
                values.append(value)
                errors.append(error)
            messages.append(errors)
            try:
                distinct = pa.array(values, type=column.kind)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as err:
                raise DataError(
                    f"{option_key(self, column.where)}: a {type_name(column.kind)} value does not fit: {err}"
                ) from None
            outputs.append(pc.take(distinct, indices))
            positions = np.asarray(indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
            valid = positions >= 0
            row_status = np.zeros(rows, dtype=np.int8)
            row_status[valid] = status[positions[valid]]
            path_outcome = {"SKIP": 0, "SKIP_ROW": 1, "FAIL": 2, None: 1 if self.row_way == "SKIP" else 2}[column.way]
            outcome = np.where(row_status == 1, path_outcome, np.where(row_status == 2, 2, 0)).astype(np.int8)
            stops = (decision == 0) & (outcome != 0)
            decision[stops] = outcome[stops]
            decided_by[stops] = number
        failed = np.flatnonzero(decision == 2)
        if len(failed):
            row = int(failed[0])
            number = int(decided_by[row])
            column = self.columns[number]
            indices, texts, _ = sources[column.src]
            position = indices[row].as_py()
            raise DataError(
                f"{option_key(self, column.where)}: JsonPath {column.path_text!r} on {column.src} "
                f"{_preview(texts[position])}: {messages[number][position]}"
            )
        result = batch
        for column, values in zip(self.columns, outputs):
            field = pa.field(column.dest, column.kind, nullable=True)
            index = result.schema.get_field_index(column.dest)
            result = result.set_column(index, field, values) if index >= 0 else result.append_column(field, values)
        if decision.any():
            result = result.filter(pa.array(decision == 0))
        return result


def _preview(text: str) -> str:
    return f"= {text[:200]!r}" + ("..." if len(text) > 200 else "")


def _distinct_documents(column: pa.Array) -> tuple[pa.Array, list[str], list[Any]]:
    """The column as indices into its distinct JSON texts, those texts, and each parsed
    (or the PathError/HardError its parsing raised)."""
    kind = column.type
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(kind):
        column = column.cast(kind.value_type)
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        encoded = column.dictionary_encode()
        texts = encoded.dictionary.to_pylist()
    elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        encoded = column.dictionary_encode()
        texts = [value.decode("utf-8", "replace") for value in encoded.dictionary.to_pylist()]
    else:
        rows = [None if value is None else source_json(value, kind) for value in column.to_pylist()]
        encoded = pa.array(rows, pa.string()).dictionary_encode()
        texts = encoded.dictionary.to_pylist()
    documents: list[Any] = []
    for text in texts:
        try:
            documents.append(parse_json(text))
        except (PathError, HardError) as err:
            documents.append(err)
    return encoded.indices, texts, documents
