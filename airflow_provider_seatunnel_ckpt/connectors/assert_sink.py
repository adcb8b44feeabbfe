"""``Assert``: SeaTunnel's test sink, under its name and rules. It writes nothing; it fails
the job when the rows break a rule.

Field rules are checked on every row as it arrives (the first broken one fails the job
at once, with one line); ``row_rules`` when the job has finished, over every row the sink
received, counted once however many times the job was restored; ``catalog_table_rule``
before the job starts, against the source's ``schema`` block (:mod:`.table_metadata`).
``tables_configs`` and ``table-names`` give several tables their own rules.

The rules, an example and where it differs from SeaTunnel: docs/seatunnel.md, "Assert".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError, DataError
from .api import JsonValue, Sink, SinkCommitter, SinkWriter, table_of
from .options import REQUIRED, Option, OptionTable, option_key
from .seatunnel_types import convert_value, seatunnel_type, type_name
from .table_metadata import CatalogTableRule, parse_catalog_table_rule

log = logging.getLogger(__name__)

VALUE_RULES = ("NULL", "NOT_NULL", "MIN", "MAX", "MIN_LENGTH", "MAX_LENGTH")
ROW_RULES = ("MIN_ROW", "MAX_ROW")
_NEEDS_VALUE = ("MIN", "MAX", "MIN_LENGTH", "MAX_LENGTH", *ROW_RULES)
_RULE_KEYS = ("row_rules", "field_rules", "tables_configs", "table-names", "catalog_table_rule")


@dataclass(frozen=True)
class ValueRule:
    where: str  #: its key in the job file, for messages
    rule_type: str | None
    rule_value: float | None
    equals_to: Any

    def describe(self) -> str:
        parts = []
        if self.rule_type is not None:
            parts.append(self.rule_type if self.rule_value is None else f"{self.rule_type} {self.rule_value:g}")
        if self.equals_to is not None:
            parts.append(f"equals_to {self.equals_to!r}")
        return " and ".join(parts)


@dataclass(frozen=True)
class FieldRule:
    where: str
    field_name: str
    field_type: pa.DataType | None
    values: tuple[ValueRule, ...]


def _rule(entry: Any, where: str, allowed: tuple[str, ...]) -> tuple[str | None, float | None]:
    if not isinstance(entry, Mapping):
        raise ConfigError(where, "expected {rule_type = ..., rule_value = ...}")
    rule_type = entry.get("rule_type")
    if rule_type is not None:
        rule_type = str(rule_type).strip().upper()
        if rule_type not in allowed:
            raise ConfigError(f"{where}.rule_type", f"{entry['rule_type']!r} is not one of {', '.join(allowed)}")
    value = entry.get("rule_value")
    if value is not None:
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}.rule_value", f"expected a number, got {value!r}") from None
    if rule_type in _NEEDS_VALUE and value is None:
        raise ConfigError(f"{where}.rule_value", f"is required for {rule_type}")
    return rule_type, value


@dataclass(frozen=True)
class Rules:
    """What the ``rules`` block asks: rules for every row, per table, and the tables."""

    row_rules: list[tuple[str, float, str]]
    field_rules: list[FieldRule]
    tables: dict[str, tuple[list[tuple[str, float, str]], list[FieldRule]]]
    table_names: list[str] | None
    catalog_table: CatalogTableRule | None = None


def parse_all_rules(rules: Any) -> Rules:
    if not isinstance(rules, Mapping):
        raise ConfigError("rules", "expected {row_rules = [...], field_rules = [...]}")
    for key in rules:
        if key not in _RULE_KEYS:
            log.warning("rules.%s: not a rule SeaTunnel's Assert knows (%s); ignored", key, ", ".join(_RULE_KEYS))
    row_rules, field_rules = parse_rules(rules, "rules")
    tables = {}
    for index, entry in enumerate(_list(rules, "tables_configs")):
        where = f"rules.tables_configs[{index}]"
        path = entry.get("table_path") if isinstance(entry, Mapping) else None
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"{where}.table_path", "is required: the table these rules are for")
        tables[path.strip()] = parse_rules(entry, where)
    names = rules.get("table-names")
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
        raise ConfigError("rules.table-names", f"expected a list of table names, got {names!r}")
    catalog = (
        parse_catalog_table_rule(rules["catalog_table_rule"], "rules.catalog_table_rule")
        if "catalog_table_rule" in rules
        else None
    )
    if not row_rules and not field_rules and not tables and names is None and catalog is None:
        raise ConfigError(
            "rules", "no rule given (row_rules, field_rules, tables_configs, table-names, catalog_table_rule)"
        )
    return Rules(row_rules, field_rules, tables, [n.strip() for n in names] if names is not None else None, catalog)


def parse_rules(rules: Mapping[str, Any], prefix: str) -> tuple[list[tuple[str, float, str]], list[FieldRule]]:
    """The row_rules and field_rules of one block (``rules`` or one table's)."""
    row_rules = []
    for index, entry in enumerate(_list(rules, "row_rules", prefix)):
        where = f"{prefix}.row_rules[{index}]"
        rule_type, value = _rule(entry, where, ROW_RULES)
        if rule_type is None:
            raise ConfigError(f"{where}.rule_type", "is required (MIN_ROW or MAX_ROW)")
        row_rules.append((rule_type, value, where))
    field_rules = []
    for index, entry in enumerate(_list(rules, "field_rules", prefix)):
        where = f"{prefix}.field_rules[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("field_name"), str):
            raise ConfigError(where, "expected {field_name = ..., field_type = ..., field_value = [...]}")
        field_type = (
            None if entry.get("field_type") is None else seatunnel_type(entry["field_type"], f"{where}.field_type")
        )
        values = []
        for position, value_entry in enumerate(_list(entry, "field_value", where)):
            value_where = f"{where}.field_value[{position}]"
            rule_type, rule_value = _rule(value_entry, value_where, VALUE_RULES)
            equals_to = value_entry.get("equals_to")
            if rule_type is None and equals_to is None:
                raise ConfigError(value_where, "needs rule_type or equals_to")
            values.append(ValueRule(value_where, rule_type, rule_value, equals_to))
        field_rules.append(FieldRule(where, entry["field_name"], field_type, tuple(values)))
    return row_rules, field_rules


def _list(block: Mapping[str, Any], key: str, where: str = "rules") -> list[Any]:
    value = block.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}.{key}", f"expected a list, got {value!r}")
    return value


class AssertSink(Sink):
    plugin_name = "Assert"
    #: takes the batches of several tables (tables_configs), told apart by their table
    writes_tables = True
    #: rules are checked on the fields of every row, whatever its kind, and every row is
    #: counted, as SeaTunnel's AssertSinkWriter does
    change_rows = "ignore"
    OPTIONS = OptionTable(
        Option("rules", "value", "SeaTunnel's row_rules, field_rules, catalog_table_rule and tables_configs", REQUIRED),
        Option("multi_table_sink_replica", "value", "SeaTunnel's writers per table; ignored"),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.rules = parse_all_rules(self.parse_options()["rules"])
        self.row_rules, self.field_rules = self.rules.row_rules, self.rules.field_rules

    def accepts(self, schema: pa.Schema) -> None:
        for rule in self.field_rules:
            _check_field(rule, schema, self)
        if self.rules.catalog_table is not None:
            self.rules.catalog_table.check(schema, option_key(self, "rules.catalog_table_rule"))

    def field_rules_for(self, table: str | None) -> list[FieldRule]:
        own = self.rules.tables.get(table) if table is not None else None
        return self.field_rules + (own[1] if own else [])

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> AssertWriter:
        return AssertWriter(self, subtask)

    def create_committer(self, job_id: str) -> AssertCommitter:
        return AssertCommitter(self)


def _check_field(rule: FieldRule, schema: pa.Schema, sink: Sink) -> int:
    """The column's index; its type must be the rule's field_type."""
    index = schema.get_field_index(rule.field_name)
    if index < 0:
        raise ConfigError(
            option_key(sink, f"{rule.where}.field_name"),
            f"no column {rule.field_name!r}; the rows have {', '.join(schema.names)}",
        )
    actual = schema.field(index).type
    if rule.field_type is not None and not pa.types.is_null(rule.field_type) and actual != rule.field_type:
        raise ConfigError(
            option_key(sink, f"{rule.where}.field_type"),
            f"{rule.field_name} is {type_name(actual)}, not {type_name(rule.field_type)}",
        )
    return index


class AssertWriter(SinkWriter):
    def __init__(self, sink: AssertSink, subtask: int):
        self.sink = sink
        self.subtask = subtask
        self.rows = 0
        #: rows per table, for batches that name theirs
        self.tables: dict[str, int] = {}

    def write(self, batch: pa.RecordBatch) -> None:
        table = table_of(batch.schema)
        for rule in self.sink.field_rules_for(table):
            index = _check_field(rule, batch.schema, self.sink)
            column = batch.column(index)
            broken = _first_broken(rule, column)
            if broken is not None:
                row, value_rule = broken
                value = column[row].as_py()
                what = value_rule.describe() if value_rule is not None else f"field_type {type_name(rule.field_type)}"
                raise DataError(
                    f"{option_key(self.sink, value_rule.where if value_rule else rule.where)}: "
                    f"{rule.field_name} = {value!r} breaks {what} (row {batch.slice(row, 1).to_pylist()[0]})"
                )
        self.rows += batch.num_rows
        if table is not None:
            self.tables[table] = self.tables.get(table, 0) + batch.num_rows

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        rows, self.rows = self.rows, 0
        tables, self.tables = self.tables, {}
        return {
            "checkpoint": checkpoint_id,
            "subtask": self.subtask,
            "rows": rows,
            **({"tables": tables} if tables else {}),
        }


def _first_broken(rule: FieldRule, column: pa.Array) -> tuple[int, ValueRule | None] | None:
    """The first row (and the rule) the column breaks, or None."""
    first: tuple[int, ValueRule | None] | None = None
    expects_null = rule.field_type is not None and pa.types.is_null(rule.field_type)
    if rule.field_type is not None and not expects_null and column.null_count:
        first = (_first_true(column.is_null()), None)
    for value_rule in rule.values:
        failing = _failing(value_rule, column)
        if failing.true_count:
            row = _first_true(failing)
            if first is None or row < first[0]:
                first = (row, value_rule)
    return first


def _failing(rule: ValueRule, column: pa.Array) -> pa.BooleanArray:
    """Which rows break ``rule`` (true = broken)."""
    broken = pa.array([False] * len(column))
    kind = column.type
    if rule.rule_type == "NULL":
        broken = column.is_valid()
    elif rule.rule_type == "NOT_NULL":
        broken = column.is_null()
    elif rule.rule_type in ("MIN", "MAX"):
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)):
            return pa.array([True] * len(column))  # SeaTunnel: only numbers have a MIN/MAX
        numbers = column.cast(pa.float64())
        compare = pc.less if rule.rule_type == "MIN" else pc.greater
        broken = pc.fill_null(pc.or_(compare(numbers, rule.rule_value), column.is_null()), True)
    elif rule.rule_type in ("MIN_LENGTH", "MAX_LENGTH"):
        lengths = pa.array([len(_text(v)) for v in column.to_pylist()], type=pa.float64())
        compare = pc.less if rule.rule_type == "MIN_LENGTH" else pc.greater
        broken = compare(lengths, rule.rule_value)
    if rule.equals_to is not None:
        expected = convert_value(rule.equals_to, kind, rule.where)
        unequal = pa.array([v is not None and not _same(v, expected, kind) for v in column.to_pylist()])
        broken = pc.or_(broken, unequal)
    return broken


def _same(actual: Any, expected: Any, kind: pa.DataType) -> bool:
    """SeaTunnel's equality, field by field: a map's entries in any order, a float32 as a
    float32 (3.1 equals the float 3.1f), the rest by value."""
    if actual is None or expected is None:
        return actual is None and expected is None
    if pa.types.is_struct(kind):
        return all(_same(actual.get(f.name), expected.get(f.name), f.type) for f in kind)
    if pa.types.is_list(kind):
        return len(actual) == len(expected) and all(_same(a, e, kind.value_type) for a, e in zip(actual, expected))
    if pa.types.is_map(kind):
        actual_map, expected_map = dict(actual), dict(expected)
        return actual_map.keys() == expected_map.keys() and all(
            _same(actual_map[k], expected_map[k], kind.item_type) for k in expected_map
        )
    if pa.types.is_floating(kind):
        return pa.scalar(actual, kind) == pa.scalar(expected, kind)
    return actual == expected


def _text(value: Any) -> str:
    """A value's text, as SeaTunnel's String.valueOf gives it (null is "")."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _first_true(mask: pa.Array) -> int:
    return int(pc.index(mask, True).as_py())


class AssertCommitter(SinkCommitter):
    """Counts the rows of every committed epoch once (commits are replayed on restore)."""

    def __init__(self, sink: AssertSink):
        self.sink = sink
        self._counted: dict[tuple[int, int], int] = {}
        self._tables: dict[tuple[int, int], dict[str, int]] = {}

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        for info in commit_infos:
            if isinstance(info, Mapping):
                key = (int(info["checkpoint"]), int(info["subtask"]))
                self._counted[key] = int(info["rows"])
                self._tables[key] = {str(t): int(n) for t, n in (info.get("tables") or {}).items()}

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        pass

    def rollback(self, after_checkpoint_id: int) -> None:
        for key in [k for k in self._counted if k[0] > after_checkpoint_id]:
            del self._counted[key]
            self._tables.pop(key, None)

    def job_finished(self, restored_checkpoint_id: int | None) -> None:
        rules = self.sink.rules
        counted = [(None, rules.row_rules)] + [(table, own[0]) for table, own in rules.tables.items()]
        if not any(row_rules for _, row_rules in counted) and rules.table_names is None:
            return
        if restored_checkpoint_id is not None:
            listed = ", ".join(f"{rule} {value:g}" for _, row_rules in counted for rule, value, _ in row_rules)
            what = " and ".join(
                ([f"row_rules ({listed})"] if listed else [])
                + (["table-names"] if rules.table_names is not None else [])
            )
            log.warning(
                "Assert: %s not checked: this run restored checkpoint %d, and the rows committed before it "
                "are not counted here",
                what,
                restored_checkpoint_id,
            )
            return
        per_table: dict[str, int] = {}
        for tables in self._tables.values():
            for table, rows in tables.items():
                per_table[table] = per_table.get(table, 0) + rows
        for table, row_rules in counted:
            rows = sum(self._counted.values()) if table is None else per_table.get(table, 0)
            for rule, value, where in row_rules:
                if (rule == "MIN_ROW" and rows < value) or (rule == "MAX_ROW" and rows > value):
                    of = f" of table {table}" if table is not None else ""
                    raise DataError(f"{option_key(self.sink, where)}: {rows:,} rows{of} break {rule} {value:g}")
        if rules.table_names is not None and set(rules.table_names) != {t for t, n in per_table.items() if n}:
            raise DataError(
                f"{option_key(self.sink, 'rules.table-names')}: the rows came from tables "
                f"{sorted(t for t, n in per_table.items() if n)}, not {sorted(rules.table_names)}"
            )
