"""SeaTunnel's table placeholders in a sink's options: ``${table_name}``,
``${database_name}``, ``${schema_name}``, ``${schema_full_name}``, ``${table_full_name}``,
each also as ``${name:default}``.

SeaTunnel fills them from the table the sink writes (its ``TablePlaceholderProcessor``):
a sink fed by a source of several tables (``tables_configs``) becomes one sink per table,
each with its own options, so ``path = "/data/${table_name}"`` writes each table to its
own directory. A table's name is ``table``, ``database.table`` or
``database.schema.table`` (SeaTunnel's ``TablePath``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"\$\{(database_name|schema_name|table_name|schema_full_name|table_full_name)(:[^}]*)?\}")


def table_parts(full_name: str) -> dict[str, str | None]:
    """The placeholders' values for a table named ``full_name``; None where the name has
    no such part (then the placeholder's default, or "", is written, as in SeaTunnel)."""
    parts = full_name.split(".")
    database, schema, table = (
        (None, None, full_name)
        if len(parts) == 1
        else (parts[0], None, ".".join(parts[1:]))
        if len(parts) == 2
        else (parts[0], parts[1], ".".join(parts[2:]))
    )
    prefix = [p for p in (database, schema) if p]
    return {
        "database_name": database,
        "schema_name": schema,
        "table_name": table,
        "schema_full_name": ".".join(prefix) or None,
        "table_full_name": ".".join([*prefix, table]),
    }


#: SeaTunnel's ``TablePath.DEFAULT``: the table of a source that names none
DEFAULT_TABLE_PATH = "default.default.default"


def table_path_of(source_entry: Mapping[str, Any]) -> str:
    """The table a one-table source's rows belong to, as SeaTunnel names it: its
    ``schema.table``, else its output table name (``plugin_output``, or the older
    ``result_table_name``), else ``default.default.default``."""
    schema = source_entry.get("schema")
    tables = source_entry.get("tables_configs")
    if schema is None and isinstance(tables, list) and len(tables) == 1 and isinstance(tables[0], Mapping):
        schema = tables[0].get("schema")  # a multi-table source given one table names it there
    if isinstance(schema, Mapping) and isinstance(schema.get("table"), str) and schema["table"].strip():
        return schema["table"].strip()
    for key in ("plugin_output", "result_table_name"):
        value = source_entry.get(key)
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str) and value.strip():
            return value.strip()
    return DEFAULT_TABLE_PATH


def has_table_placeholder(options: Mapping[str, Any]) -> bool:
    return any(isinstance(v, str) and _PLACEHOLDER.search(v) for v in options.values())


def fill_table_placeholders(options: Mapping[str, Any], full_name: str) -> dict[str, Any]:
    """``options`` with every table placeholder in its text values filled for table
    ``full_name`` (nested blocks and lists are left as they are, as SeaTunnel does)."""
    values = table_parts(full_name)

    def fill(match: re.Match[str]) -> str:
        value = values[match.group(1)]
        if value:
            return value
        if match.group(1) == "schema_full_name":  # SeaTunnel leaves it when the name has no prefix
            return match.group(0)
        return match.group(2)[1:].strip() if match.group(2) else ""

    return {k: _PLACEHOLDER.sub(fill, v) if isinstance(v, str) else v for k, v in options.items()}
