"""What SeaTunnel calls a source's catalog table beyond its column types: the table's
identifier, its primary key, its constraint keys and each column's length, default and
comment, as a ``schema`` block declares them::

    schema {
      table = "test.fakeTable"
      columns = [ {name = id, type = bigint, nullable = false, comment = "key"}, ... ]
      primaryKey { name = "pk", columnNames = [id] }
      constraintKeys = [ {constraintName = "u", constraintType = UNIQUE_KEY,
                          constraintColumns = [ {columnName = id, sortType = ASC} ]} ]
    }

It travels as JSON in the Arrow schema's metadata (:func:`attach`, :func:`read`), from the
source's ``produced_schema`` to the sinks' ``accepts`` at check time, where SeaTunnel's
Assert ``catalog_table_rule`` compares it. Batches do not carry it: nothing here changes
a row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import ConfigError

_KEY = b"seatunnel.table"
CONSTRAINT_TYPES = ("INDEX_KEY", "UNIQUE_KEY", "FOREIGN_KEY", "VECTOR_INDEX_KEY")
SORT_TYPES = ("ASC", "DESC")


@dataclass(frozen=True)
class ColumnAttributes:
    """A column's attributes beyond its type and nullability, as SeaTunnel's columns form
    gives them (length 0 and None when not given, SeaTunnel's defaults)."""

    length: int = 0
    default: Any = None
    comment: str | None = None


@dataclass
class TableMetadata:
    #: (catalog name, table path text): the source's plugin name and ``schema.table``
    catalog: str | None = None
    table: str | None = None
    primary_key: dict[str, Any] | None = None  # {"name": str, "columns": [str]}
    constraint_keys: list[dict[str, Any]] = field(default_factory=list)  # {"name", "type", "columns": [[name, sort]]}
    columns: dict[str, ColumnAttributes] = field(default_factory=dict)

    def declares_anything(self) -> bool:
        """Whether the schema block said more than column types: only then is it attached,
        so a job that declares none sees the schema it always saw."""
        return bool(
            self.table
            or self.primary_key
            or self.constraint_keys
            or any(attrs != ColumnAttributes() for attrs in self.columns.values())
        )

    def to_json(self) -> str:
        data = asdict(self)
        data["columns"] = {name: asdict(attrs) for name, attrs in self.columns.items()}
        return json.dumps(data, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str | bytes) -> TableMetadata:
        data = json.loads(text)
        data["columns"] = {name: ColumnAttributes(**attrs) for name, attrs in data.get("columns", {}).items()}
        return cls(**data)


def parse_table_metadata(block: Mapping[str, Any], catalog: str, key: str = "schema") -> TableMetadata:
    """The table part of a ``schema`` block (its columns' types are :mod:`.seatunnel_types`')."""
    meta = TableMetadata(catalog=catalog)
    if block.get("table") is not None:
        meta.table = str(block["table"])
    for index, column in enumerate(block.get("columns") or []):
        if isinstance(column, Mapping) and "name" in column:
            try:
                length = int(column.get("columnLength", 0) or 0)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"{key}.columns[{index}].columnLength", f"expected a whole number, got {column['columnLength']!r}"
                ) from None
            comment = column.get("comment")
            meta.columns[str(column["name"])] = ColumnAttributes(
                length, column.get("defaultValue"), None if comment is None else str(comment)
            )
    names = _column_names(block)
    primary = block.get("primaryKey")
    if primary is not None:
        where = f"{key}.primaryKey"
        if not isinstance(primary, Mapping) or not isinstance(primary.get("columnNames"), list):
            raise ConfigError(where, "expected {name = ..., columnNames = [column, ...]}")
        columns = [str(c) for c in primary["columnNames"]]
        _known_columns(f"{where}.columnNames", columns, names)
        meta.primary_key = {"name": str(primary.get("name", "")), "columns": columns}
    for index, constraint in enumerate(block.get("constraintKeys") or []):
        where = f"{key}.constraintKeys[{index}]"
        if not isinstance(constraint, Mapping) or not isinstance(constraint.get("constraintColumns"), list):
            raise ConfigError(
                where, "expected {constraintName, constraintType, constraintColumns = [{columnName, sortType}]}"
            )
        meta.constraint_keys.append(
            _constraint(
                constraint,
                where,
                names,
                "constraintName",
                "constraintType",
                "constraintColumns",
                "columnName",
                "sortType",
            )
        )
    return meta


def constraint_rule(entry: Any, where: str) -> dict[str, Any]:
    """One of Assert's ``constraint_key_rule`` entries, in :class:`TableMetadata`'s form."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("constraint_key_columns"), list):
        raise ConfigError(where, "expected {constraint_key_name, constraint_key_type, constraint_key_columns = [...]}")
    return _constraint(
        entry,
        where,
        None,
        "constraint_key_name",
        "constraint_key_type",
        "constraint_key_columns",
        "constraint_key_column_name",
        "constraint_key_sort_type",
    )


def _constraint(
    entry: Mapping[str, Any],
    where: str,
    names: list[str] | None,
    name_key: str,
    type_key: str,
    columns_key: str,
    column_key: str,
    sort_key: str,
) -> dict[str, Any]:
    kind = str(entry.get(type_key, "")).upper()
    if kind not in CONSTRAINT_TYPES:
        raise ConfigError(f"{where}.{type_key}", f"{entry.get(type_key)!r} is not one of {', '.join(CONSTRAINT_TYPES)}")
    columns = []
    for index, column in enumerate(entry[columns_key]):
        at = f"{where}.{columns_key}[{index}]"
        if not isinstance(column, Mapping) or column_key not in column:
            raise ConfigError(at, f"expected {{{column_key} = ..., {sort_key} = ASC}}")
        sort = str(column.get(sort_key, "ASC")).upper()
        if sort not in SORT_TYPES:
            raise ConfigError(f"{at}.{sort_key}", f"{column.get(sort_key)!r} is not ASC or DESC")
        columns.append([str(column[column_key]), sort])
    if names is not None:
        _known_columns(f"{where}.{columns_key}", [c for c, _ in columns], names)
    return {"name": str(entry.get(name_key, "")), "type": kind, "columns": columns}


def _column_names(block: Mapping[str, Any]) -> list[str]:
    if isinstance(block.get("fields"), Mapping):
        return [str(name) for name in block["fields"]]
    return [str(c["name"]) for c in block.get("columns") or [] if isinstance(c, Mapping) and "name" in c]


def _known_columns(where: str, columns: list[str], names: list[str]) -> None:
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ConfigError(where, f"no column {unknown[0]!r} in the schema (columns: {names})")


def attach(schema: pa.Schema, meta: TableMetadata | None) -> pa.Schema:
    if meta is None or not meta.declares_anything():
        return schema
    return schema.with_metadata({**(schema.metadata or {}), _KEY: meta.to_json().encode()})


def read(schema: pa.Schema | None) -> TableMetadata | None:
    raw = (schema.metadata or {}).get(_KEY) if schema is not None else None
    return TableMetadata.from_json(raw) if raw else None


_RULE_KEYS = ("primary_key_rule", "constraint_key_rule", "column_rule", "table_identifier_rule")


@dataclass(frozen=True)
class CatalogTableRule:
    """Assert's ``rules.catalog_table_rule``: what the table reaching the sink must declare,
    compared as SeaTunnel's ``AssertCatalogTableRule`` compares it (lists as multisets)."""

    primary_key: dict[str, Any] | None
    constraint_keys: list[dict[str, Any]] | None
    #: (name, Arrow type, length, nullable, default, comment)
    columns: list[tuple[str, pa.DataType, int, bool, Any, str | None]] | None
    identifier: tuple[str, str] | None

    def check(self, schema: pa.Schema, where: str) -> None:
        meta = read(schema) or TableMetadata()
        if self.primary_key is not None:
            at = f"{where}.primary_key_rule"
            actual = meta.primary_key
            if actual is None:
                raise ConfigError(
                    at,
                    "the table has no primary key (declared in the source's schema.primaryKey; "
                    "a transform between passes on the columns only)",
                )
            if self.primary_key["name"] is not None and self.primary_key["name"] != actual["name"]:
                raise ConfigError(at, f"the primary key is named {actual['name']!r}, not {self.primary_key['name']!r}")
            if self.primary_key["columns"] and sorted(self.primary_key["columns"]) != sorted(actual["columns"]):
                raise ConfigError(
                    at, f"the primary key's columns are {actual['columns']}, not {self.primary_key['columns']}"
                )
        if self.constraint_keys is not None:
            at = f"{where}.constraint_key_rule"
            if not meta.constraint_keys:
                raise ConfigError(
                    at,
                    "the table has no constraint keys (declared in the source's schema.constraintKeys; "
                    "a transform between passes on the columns only)",
                )
            if self.constraint_keys and _multiset(self.constraint_keys) != _multiset(meta.constraint_keys):
                raise ConfigError(at, f"the constraint keys are {meta.constraint_keys}, not {self.constraint_keys}")
        if self.columns is not None:
            actual_columns = [_column(f, meta) for f in schema]
            if self.columns and sorted(map(repr, self.columns)) != sorted(map(repr, actual_columns)):
                missing = [c for c in self.columns if c not in actual_columns]
                extra = [c for c in actual_columns if c not in self.columns]
                raise ConfigError(
                    f"{where}.column_rule",
                    f"the table's columns differ: expected {_shown(missing)}, found {_shown(extra)}",
                )
        if self.identifier is not None:
            actual_id = (meta.catalog, meta.table)
            if actual_id != self.identifier:
                raise ConfigError(
                    f"{where}.table_identifier_rule",
                    f"the table is {_identifier(actual_id)}, not {_identifier(self.identifier)}",
                )


def parse_catalog_table_rule(block: Any, where: str) -> CatalogTableRule:
    from .seatunnel_types import seatunnel_type  # a cycle otherwise: seatunnel_types stays table-agnostic

    if not isinstance(block, Mapping):
        raise ConfigError(where, f"expected a mapping of {', '.join(_RULE_KEYS)}")
    unknown = sorted(set(block) - set(_RULE_KEYS))
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}", f"unknown rule; known: {', '.join(_RULE_KEYS)}")
    primary = None
    if "primary_key_rule" in block:
        rule = block["primary_key_rule"]
        if not isinstance(rule, Mapping):
            raise ConfigError(f"{where}.primary_key_rule", "expected {primary_key_name, primary_key_columns}")
        name = rule.get("primary_key_name")
        primary = {
            "name": None if name is None else str(name),
            "columns": [str(c) for c in rule.get("primary_key_columns") or []],
        }
    constraints = None
    if "constraint_key_rule" in block:
        entries = block["constraint_key_rule"]
        if not isinstance(entries, list):
            raise ConfigError(f"{where}.constraint_key_rule", "expected a list of constraint keys")
        constraints = [constraint_rule(e, f"{where}.constraint_key_rule[{i}]") for i, e in enumerate(entries)]
    columns = None
    if "column_rule" in block:
        entries = block["column_rule"]
        if not isinstance(entries, list):
            raise ConfigError(f"{where}.column_rule", "expected a list of {name, type, ...}")
        columns = []
        for index, entry in enumerate(entries):
            at = f"{where}.column_rule[{index}]"
            if not isinstance(entry, Mapping) or "name" not in entry or "type" not in entry:
                raise ConfigError(at, "expected {name, type, column_length, nullable, default_value, comment}")
            comment = entry.get("comment")
            columns.append(
                (
                    str(entry["name"]),
                    seatunnel_type(entry["type"], f"{at}.type"),
                    int(entry.get("column_length", 0) or 0),
                    entry.get("nullable", True) not in (False, "false"),
                    entry.get("default_value"),
                    None if comment is None else str(comment),
                )
            )
    identifier = None
    if "table_identifier_rule" in block:
        rule = block["table_identifier_rule"]
        if not isinstance(rule, Mapping) or "catalog_name" not in rule or "table" not in rule:
            raise ConfigError(f"{where}.table_identifier_rule", "expected {catalog_name, table}")
        identifier = (str(rule["catalog_name"]), str(rule["table"]))
    return CatalogTableRule(primary, constraints, columns, identifier)


def _column(field_: pa.Field, meta: TableMetadata) -> tuple[str, pa.DataType, int, bool, Any, str | None]:
    attrs = meta.columns.get(field_.name, ColumnAttributes())
    return (field_.name, field_.type, attrs.length, field_.nullable, attrs.default, attrs.comment)


def _multiset(keys: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(k, sort_keys=True) for k in keys)


def _shown(columns: list[tuple[Any, ...]]) -> str:
    return ", ".join(f"{c[0]} {c[1]}" + ("" if c[3] else " not null") for c in columns) or "nothing else"


def _identifier(identifier: tuple[str | None, str | None]) -> str:
    catalog, table = identifier
    return f"{catalog or '?'}.{table or '?'}"
