"""``FakeSource``: SeaTunnel's test-data source, under its name and options.

Generates rows of a ``schema`` (every SeaTunnel type), ``row.num`` per reader, or emits
the explicit ``rows`` of the job file, as SeaTunnel does. Where it differs, on purpose:
values are random but repeatable (seeded by the split and the row's position), so a run
restored from a checkpoint emits exactly the rows the failed run would have.

Options, change rows (``kind``), ``tables_configs`` and every other difference:
docs/seatunnel.md, "FakeSource".
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import math
import time
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import ConfigError
from .api import INSERT, KIND_FIELD, KINDS, ROW_KIND, JsonValue, ReaderContext, Source, SourceReader, Split, kind_code
from .options import REQUIRED, Option, OptionTable, Parsed
from .seatunnel_types import Column, convert_value, parse_columns
from .table_metadata import attach, parse_table_metadata

log = logging.getLogger(__name__)

#: rows generated together from one seed; a reader's batches never cross a block
BLOCK_ROWS = 4096
_LETTERS = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
#: SeaTunnel's default (and largest allowed) range of each numeric type
_RANGES: dict[str, tuple[float, float]] = {
    "tinyint": (0, 127),
    "smallint": (0, 32767),
    "int": (0, 2**31 - 1),
    "bigint": (0, 2**63 - 1),
    "float": (0, 3.4028234663852886e38),
    "double": (0, 1.7976931348623157e308),
}
_ARROW_KIND = {
    pa.int8(): "tinyint",
    pa.int16(): "smallint",
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.float32(): "float",
    pa.float64(): "double",
}
_SIZES = ("string.length", "bytes.length", "array.size", "map.size")
_DATE_PARTS = ("date.year", "date.month", "date.day", "time.hour", "time.minute", "time.second")


#: options SeaTunnel's job files set that its FakeSource does not read (typos included):
#: accepted, as SeaTunnel accepts them, with a warning
IGNORED_OPTIONS = ("split.row", "smalling.fake.mode", "table-names")


def _ignored_option(key: str) -> bool:
    if key in IGNORED_OPTIONS:
        log.warning("FakeSource: option %s is not read by SeaTunnel's FakeSource either; ignored", key)
        return True
    return False


def _schema(value: Any) -> list[Column]:
    if value is None:
        raise ConfigError("schema", "is required for FakeSource (its fields or columns)")
    columns = parse_columns(value, "schema")
    if any(c.name == ROW_KIND for c in columns):
        raise ConfigError("schema", f"column name {ROW_KIND!r} is reserved for the rows' kinds")
    return columns


def _template(key: str, cast: type, value: Any) -> list[Any] | None:
    return None if value is None else _list_of(value, key, cast)


def _value_options(kind: str, cast: type) -> list[Option]:
    """The options of the values of one kind: its range (numbers), mode and template."""
    low, high = _RANGES.get(kind, (None, None))
    bounds = [
        Option(f"{kind}.min", "float", f"the least {kind} made (range mode)", low),
        Option(f"{kind}.max", "float", f"the greatest {kind} made (range mode)", high),
    ]
    return [
        *(bounds if kind in _RANGES else []),
        Option(f"{kind}.fake.mode", "str", "range or template", "range", choices=("range", "template")),
        Option(
            f"{kind}.template",
            "value",
            f"the {kind} values to pick from",
            convert=partial(_template, f"{kind}.template", cast),
        ),
    ]


_OPTIONS = OptionTable(
    Option("schema", "value", "SeaTunnel's schema: fields (or columns) and their types", REQUIRED, convert=_schema),
    Option("row.num", "int", "rows made per reader", 5, minimum=0),
    Option("split.num", "int", "splits per reader", 1, minimum=1),
    Option(
        "split.read-interval",
        "int",
        "milliseconds from one split's read to the next one's, per reader (the first at once)",
        1,
        minimum=0,
    ),
    Option("parallelism", "int", "readers (default: env.parallelism)", minimum=1),
    *(Option(name, "int", f"the {name.replace('.', ' ')} of made values", 5, minimum=0) for name in _SIZES),
    *(o for kind in _RANGES for o in _value_options(kind, float if kind in ("float", "double") else int)),
    *_value_options("string", str),
    *(
        Option(
            f"{part}.template",
            "value",
            f"the {part} values to pick from",
            convert=partial(_template, f"{part}.template", int),
        )
        for part in _DATE_PARTS
    ),
    Option("rows", "value", "explicit rows: a list of {kind, fields}, in place of made ones"),
    extra=_ignored_option,
)


def _rule_within_bounds(opts: Parsed) -> None:
    """Rule: each kind's min and max lie within the kind's range, as SeaTunnel checks them."""
    for kind, (low, high) in _RANGES.items():
        for name in (f"{kind}.min", f"{kind}.max"):
            if not low <= opts[name] <= high:
                raise ConfigError(name, f"should >= {low:g} and <= {high:g}, got {opts[name]:g} (as in SeaTunnel)")


def _rule_template_mode(opts: Parsed) -> None:
    """Rule: a kind in template mode has a template."""
    for kind in (*_RANGES, "string"):
        if opts[f"{kind}.fake.mode"] == "template" and opts[f"{kind}.template"] is None:
            raise ConfigError(f"{kind}.template", f"is required when {kind}.fake.mode is template")


class FakeSource(Source):
    plugin_name = "FakeSource"
    #: ``tables_configs``: one FakeSource per table (connectors/union.py, via the registry)
    reads_tables_configs = True
    #: its ``parallelism`` is its number of readers, each making ``row.num`` rows
    reads_parallelism_option = True
    OPTIONS = _OPTIONS

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        if "tables_configs" in options:  # rule: before the table, which does not know it
            raise ConfigError(
                "tables_configs", "one FakeSource is one table; load_source makes one per table of tables_configs"
            )
        opts = self.parse_options()
        self.columns: list[Column] = opts["schema"]
        self.schema = pa.schema([pa.field(c.name, c.type, nullable=c.nullable) for c in self.columns])
        self.table_metadata = parse_table_metadata(options["schema"], self.plugin_name)
        self.row_num: int = opts["row.num"]
        self.split_num: int = opts["split.num"]
        self.read_interval_ms: int = opts["split.read-interval"]
        #: time.monotonic() when each reader (by index) last began a split, in this process
        self._split_began: dict[int, float] = {}
        self.parallelism: int | None = opts["parallelism"]
        self.sizes = {name: opts[name] for name in _SIZES}
        _rule_within_bounds(opts)
        _rule_template_mode(opts)
        self.ranges = {kind: (opts[f"{kind}.min"], opts[f"{kind}.max"]) for kind in _RANGES}
        self.templates: dict[str, list[Any]] = {
            name: opts[f"{name}.template"]
            for name in (*_RANGES, "string", *_DATE_PARTS)
            if opts[f"{name}.template"] is not None
        }
        self.rows: list[list[Any]] | None = None
        self.row_kinds: list[int] = []
        if "rows" in options:
            self.rows, self.row_kinds = _explicit_rows(options["rows"], self.columns)
        self.change_rows = tuple(KINDS[code] for code in sorted(set(self.row_kinds) - {INSERT}))
        if self.change_rows:
            self.schema = self.schema.append(KIND_FIELD)

    def produced_schema(self) -> pa.Schema:
        return attach(self.schema, self.table_metadata)  # the batches need not carry it

    def splits(self, parallelism: int) -> list[Split]:
        readers = self.parallelism or parallelism
        per_split = math.ceil(self.row_num / self.split_num) if self.row_num else 0
        chunks = (
            [min(per_split, self.row_num - start) for start in range(0, self.row_num, per_split or 1)]
            if per_split
            else []
        )
        year = dt.date.today().year
        # reader-major within a chunk, so that dealing by position gives reader r's splits to subtask r
        return [
            Split(
                f"fake-{reader:05d}-{chunk:05d}",
                {
                    "reader": reader,
                    "chunk": chunk,
                    "rows": len(self.rows) if self.rows is not None else count,
                    "year": year,
                },
            )
            for chunk, count in enumerate(chunks)
            for reader in range(readers)
        ]

    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        total = int(split.spec["rows"])
        position = 0 if position is None else position
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position <= total:
            raise ValueError(f"FakeSource split {split.split_id}: position {position!r} is not a row in [0, {total}]")
        return FakeReader(self, split, position, total, context)

    def wait_for_split_turn(self, reader: int, context: ReaderContext) -> bool:
        """``split.read-interval`` as SeaTunnel's reader keeps it: a split is read at least
        the interval after the reader's last one began, and the first split a reader reads
        in this process (at the job's start, or resumed after a restore) at once. False
        when a barrier cut the wait short (``ReaderContext.pause``): the turn has not come."""
        began = self._split_began.get(reader)
        if began is not None:
            wait = began + self.read_interval_ms / 1000 - time.monotonic()
            if not context.pause(wait):
                return False
        self._split_began[reader] = time.monotonic()
        return True

    # ---- values --------------------------------------------------------------------------
    def block(self, split: Split, block: int) -> pa.RecordBatch:
        """Rows ``block * BLOCK_ROWS ...`` of a split: the same every time they are asked for."""
        total = int(split.spec["rows"])
        start = block * BLOCK_ROWS
        count = min(BLOCK_ROWS, total - start)
        if self.rows is not None:
            picked = [(start + i) % len(self.rows) for i in range(count)]
            rows = [self.rows[i] for i in picked]
            arrays = [pa.array([row[i] for row in rows], type=c.type) for i, c in enumerate(self.columns)]
            if self.change_rows:
                arrays.append(pa.array([self.row_kinds[i] for i in picked], type=KIND_FIELD.type))
            return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        rng = np.random.default_rng([int(split.spec["reader"]), int(split.spec["chunk"]), block])
        year = int(split.spec["year"])
        arrays = [self._column(c, count, rng, year) for c in self.columns]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _column(self, column: Column, n: int, rng: np.random.Generator, year: int) -> pa.Array:
        if column.default is not None and not pa.types.is_nested(column.type):
            value = convert_value(column.default, column.type, column.name)
            return pa.array([value] * n, type=column.type)
        length = column.length if column.length is not None else self.sizes["string.length"]
        return self._values(column.type, n, rng, year, length, column.scale)

    def _values(
        self,
        kind: pa.DataType,
        n: int,
        rng: np.random.Generator,
        year: int,
        string_length: int,
        scale: int | None = None,
    ) -> pa.Array:
        if pa.types.is_string(kind):
            if "string" in self.templates:
                return pa.array(rng.choice(np.array(self.templates["string"], dtype=object), n), type=pa.string())
            return _letters(rng, n, string_length, pa.string())
        if pa.types.is_binary(kind):
            return _letters(rng, n, self.sizes["bytes.length"], pa.binary())
        if pa.types.is_boolean(kind):
            return pa.array(rng.integers(0, 2, n).astype(bool))
        if kind in _ARROW_KIND:
            return self._number(_ARROW_KIND[kind], kind, n, rng, scale)
        if pa.types.is_decimal(kind):
            digits = rng.integers(0, 10, (n, kind.precision))
            unscaled = [int("".join(map(str, row))) for row in digits]
            return pa.array([decimal.Decimal(u).scaleb(-kind.scale) for u in unscaled], type=kind)
        if pa.types.is_null(kind):
            return pa.nulls(n)
        if pa.types.is_date(kind) or pa.types.is_time(kind) or pa.types.is_timestamp(kind):
            return self._temporal(kind, n, rng, year)
        if pa.types.is_list(kind):
            size = self.sizes["array.size"]
            child = self._values(kind.value_type, n * size, rng, year, string_length)
            return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * size), child, type=kind)
        if pa.types.is_map(kind):
            size = self.sizes["map.size"]
            keys = self._values(kind.key_type, n * size, rng, year, string_length).to_pylist()
            items = self._values(kind.item_type, n * size, rng, year, string_length).to_pylist()
            # a repeated key overwrites the earlier one, as in SeaTunnel's HashMap
            maps = [
                list(dict(zip(keys[i * size : (i + 1) * size], items[i * size : (i + 1) * size])).items())
                for i in range(n)
            ]
            return pa.array(maps, type=kind)
        if pa.types.is_struct(kind):
            children = [self._values(f.type, n, rng, year, string_length) for f in kind]
            return pa.StructArray.from_arrays(children, fields=list(kind))
        raise ConfigError("schema", f"FakeSource cannot generate values of type {kind}")

    def _number(self, name: str, kind: pa.DataType, n: int, rng: np.random.Generator, scale: int | None) -> pa.Array:
        if name in self.templates:
            return pa.array(rng.choice(np.array(self.templates[name]), n)).cast(kind)
        low, high = self.ranges[name]
        if name in ("float", "double"):
            values = low + (high - low) * rng.random(n)
            if scale is not None:
                values = np.round(values, scale)
            return pa.array(values.astype(np.float32 if name == "float" else np.float64))
        low, high = int(low), int(high)
        if high <= low:
            return pa.array(np.full(n, low), type=kind)
        return pa.array(rng.integers(low, high, n, dtype=np.int64)).cast(kind)

    def _temporal(self, kind: pa.DataType, n: int, rng: np.random.Generator, year: int) -> pa.Array:
        def part(name: str, low: int, high: int) -> np.ndarray:
            template = self.templates.get(name)
            if template:
                return rng.choice(np.array(template), n)
            return rng.integers(low, high + 1, n)

        years, months, days = part("date.year", year, year), part("date.month", 1, 12), part("date.day", 1, 28)
        hours, minutes, seconds = part("time.hour", 0, 23), part("time.minute", 0, 59), part("time.second", 0, 59)
        if pa.types.is_time(kind):
            micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000
            return pa.array(micros.astype(np.int64), type=pa.int64()).cast(kind)
        try:
            dates = [dt.date(int(y), int(m), int(d)) for y, m, d in zip(years, months, days)]
        except ValueError as err:
            raise ConfigError("date.day.template", f"makes an invalid date: {err}") from None
        if pa.types.is_date(kind):
            return pa.array(dates, type=kind)
        stamps = [
            dt.datetime(d.year, d.month, d.day, int(h), int(mi), int(s))
            for d, h, mi, s in zip(dates, hours, minutes, seconds)
        ]
        return pa.array(stamps, type=kind)


class FakeReader(SourceReader):
    def __init__(self, source: FakeSource, split: Split, position: int, total: int, context: ReaderContext):
        self._source = source
        self._split = split
        self._next = position
        self._total = total
        self._context = context  #: its row limit is read at every batch (batches sized by time)
        #: the split waits for its turn (split.read-interval) before its first batch
        self._paced = True
        #: the block the last batch came from: batches smaller than a block slice it again
        self._block: tuple[int, pa.RecordBatch] | None = None

    def read_batch(self) -> pa.RecordBatch | None:
        if self._next >= self._total:
            return None
        if self._paced:
            if not self._source.wait_for_split_turn(int(self._split.spec["reader"]), self._context):
                return pa.RecordBatch.from_pylist([], schema=self._source.schema)  # asked again after the barrier
            self._paced = False
        block, offset = divmod(self._next, BLOCK_ROWS)
        if self._block is None or self._block[0] != block:
            self._block = (block, self._source.block(self._split, block))
        rows = self._block[1]
        count = min(self._context.rows_for_next_batch(), rows.num_rows - offset)
        self._next += count
        return rows.slice(offset, count)

    def position(self) -> JsonValue:
        return self._next


def _letters(rng: np.random.Generator, n: int, length: int, kind: pa.DataType) -> pa.Array:
    """``n`` random ASCII-letter strings of ``length``, built from buffers."""
    data = _LETTERS[rng.integers(0, len(_LETTERS), n * length)]
    offsets = np.arange(n + 1, dtype=np.int32) * length
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())])


def _list_of(value: Any, key: str, cast: type) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise ConfigError(key, f"expected a non-empty list, got {value!r}")
    try:
        return [cast(v) for v in value]
    except (TypeError, ValueError):
        raise ConfigError(key, f"expected a list of {cast.__name__} values, got {value!r}") from None


def _explicit_rows(value: Any, columns: Sequence[Column]) -> tuple[list[list[Any]], list[int]]:
    """The rows' values, and each row's kind (SeaTunnel's byte value)."""
    if not isinstance(value, list):
        raise ConfigError("rows", "expected a list of {kind = INSERT, fields = [...]}")
    rows, kinds = [], []
    for index, row in enumerate(value):
        key = f"rows[{index}]"
        if not isinstance(row, Mapping) or "fields" not in row:
            raise ConfigError(key, "expected {kind = INSERT, fields = [...] or {column = value}}")
        kinds.append(kind_code(row.get("kind", "INSERT"), f"{key}.kind", any_case=False))
        fields = row["fields"]
        if isinstance(fields, Mapping):
            values = [fields.get(c.name) for c in columns]
        elif isinstance(fields, list):
            values = list(fields[: len(columns)]) + [None] * (len(columns) - len(fields))
        else:
            raise ConfigError(f"{key}.fields", "expected a list (by position) or a mapping (by column name)")
        rows.append([convert_value(v, c.type, f"{key}.fields.{c.name}") for v, c in zip(values, columns)])
    return rows, kinds
