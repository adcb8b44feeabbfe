"""Change rows staged, then applied to the target by key in one transaction.

Applying a change takes the key's row lock, which a prepared transaction keeps until the
driver commits it; two writers changing one key in one epoch would wait on each other
for ever (issue 47). So each subtask copies its epoch's change rows into a **stage** (a
plain table without keys, ``seatunnel_ckpt_stage_<sink tag>_<layout>``) inside its
prepared transaction, and the driver, after ``COMMIT PREPARED``, applies the epoch's
staged rows to the target in one transaction of its own (:func:`apply`): the last
change of each key counts, as in SeaTunnel's buffer-reduced executor.

The stage's columns, the order of changes and upsert mode: docs/jdbc.md, "Change rows".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from . import client
from .client import in_list, qualified, quote_ident, quote_literal

#: the stage's own columns: the row's place in its writer's epoch, its kind, its columns
# The stage's own columns, before the target's (``CREATE TABLE ... AS SELECT ... WITH NO
# DATA``: their types, no constraints): each row's place in its writer's epoch, its kind,
# and which columns it has, a bit per column (a row without a column must leave it alone,
# which a NULL cannot say). ``<layout>`` in the stage's name hashes the target's columns,
# so a table altered between runs gets a new stage instead of DDL on one that prepared
# transactions lock.
SEQ, KIND, COLUMNS = "__seatunnel_ckpt_seq", "__seatunnel_ckpt_kind", "__seatunnel_ckpt_columns"
META = (SEQ, KIND, COLUMNS)
STAGE_PREFIX = "seatunnel_ckpt_stage_"
#: the session-private stage of upsert mode (no prepared transaction: a temporary table may be used)
TEMP_STAGE = "_st_changes"
#: SeaTunnel's kind codes whose last change removes the key
REMOVING = (1, 3)


def stage_name(tag: str, layout: str) -> str:
    """The stage of one sink of a job (``tag``) for the target's column ``layout``."""
    return f"{STAGE_PREFIX}{tag}_{hashlib.sha256(layout.encode('utf-8')).hexdigest()[:8]}"


def layout_sql(table: str) -> str:
    """The target's columns and their types, as text (what the stage is named by)."""
    return (
        "SELECT string_agg(quote_ident(attname) || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) "
        f"FROM pg_attribute WHERE attrelid = {quote_literal(table)}::regclass AND attnum > 0 AND NOT attisdropped"
    )


def create_sql(stage: str, table: str, temporary: bool = False) -> str:
    meta = f"NULL::bigint AS {SEQ}, NULL::smallint AS {KIND}, NULL::bytea AS {COLUMNS}"
    kind = "TEMP TABLE IF NOT EXISTS {} ON COMMIT DELETE ROWS" if temporary else "TABLE IF NOT EXISTS {}"
    return f"CREATE {kind.format(stage)} AS SELECT {meta}, t.* FROM {table} t WITH NO DATA"


def data_columns(connection: Any, stage: str) -> list[str]:
    """The stage's columns that are the target's, in order (what a row's bits refer to)."""
    rows = client.query(
        connection,
        "SELECT attname::text FROM pg_attribute "
        f"WHERE attrelid = {quote_literal(stage)}::regclass AND attnum > 0 "
        "AND NOT attisdropped ORDER BY attnum",
    )
    return [r[0] for r in rows if r[0] not in META]


def stages_of(connection: Any, schema: str | None, tag: str) -> list[str]:
    """The qualified stages of one sink of a job (one per target layout it wrote)."""
    where = f"n.nspname = {quote_literal(schema)}" if schema else "pg_table_is_visible(c.oid)"
    like = quote_literal(f"{STAGE_PREFIX}{tag}\\_%")
    rows = client.query(
        connection,
        "SELECT n.nspname::text, c.relname::text FROM pg_class c JOIN pg_namespace n "
        f"ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND c.relname LIKE {like} "
        f"AND {where} ORDER BY 2",
    )
    return [qualified(nsp if schema else None, name) for nsp, name in rows]


# ---- the writer's side: rows as staged --------------------------------------------------------
def mask(names: Sequence[str], columns: Sequence[str]) -> bytes:
    """The bits of ``names`` among the stage's ``columns``."""
    bits = bytearray((len(columns) + 7) // 8)
    for name in names:
        position = columns.index(name)
        bits[position // 8] |= 1 << (position % 8)
    return bytes(bits)


def staged(rows: pa.RecordBatch, kinds: pa.Array, first_seq: int, columns: Sequence[str]) -> pa.RecordBatch:
    """``rows`` (cast to the target's types, without kinds) as stage rows."""
    count = rows.num_rows
    meta = [
        pa.array(range(first_seq, first_seq + count), pa.int64()),
        kinds.cast(pa.int16()),
        pa.repeat(pa.scalar(mask(rows.schema.names, columns), pa.binary()), count),
    ]
    return pa.RecordBatch.from_arrays(meta + list(rows.columns), names=[*META, *rows.schema.names])


# ---- applying ---------------------------------------------------------------------------------
def _unmask(bits: bytes, columns: Sequence[str]) -> list[str]:
    return [name for i, name in enumerate(columns) if bits[i // 8] & (1 << (i % 8))]


def apply(connection: Any, stage: str, table: str, keys: Sequence[str], writers: Sequence[int] | None) -> int | None:
    """Apply staged rows to ``table`` in the caller's transaction; returns the rows upserted
    (None: nothing was staged, or it was applied before).

    ``writers``: the ``xmin``s of the staging transactions whose rows to apply, in the
    order their changes count (subtask order); None: every row (a temporary stage). A
    stage that is gone was dropped when its job finished, after everything was applied
    (a restore of an older checkpoint commits that checkpoint's epochs again)."""
    if client.query(connection, f"SELECT to_regclass({quote_literal(stage)})")[0][0] is None:
        return None
    if writers is None:
        source, order = stage, SEQ
    else:
        pairs = ", ".join(f"({quote_literal(str(xid))}::xid, {i})" for i, xid in enumerate(writers))
        source = f"(SELECT s.*, w.o AS __st_writer FROM {stage} s JOIN (VALUES {pairs}) AS w(x, o) ON s.xmin = w.x)"
        order = f"__st_writer DESC, {SEQ}"
    layouts = [
        bytes(r[0])
        for r in client.query(
            connection, f"SELECT DISTINCT {COLUMNS} FROM {source} AS s WHERE {KIND} NOT IN {REMOVING}"
        )
    ]
    if not layouts and not client.query(connection, f"SELECT 1 FROM {source} AS s LIMIT 1"):
        return None
    key_list = ", ".join(quote_ident(k) for k in keys)
    columns = data_columns(connection, stage)
    parts = [f"latest AS (SELECT DISTINCT ON ({key_list}) * FROM {source} AS s ORDER BY {key_list}, {order} DESC)"]
    match = " AND ".join(f"t.{quote_ident(k)} = l.{quote_ident(k)}" for k in keys)
    parts.append(f"gone AS (DELETE FROM {table} t USING latest l WHERE l.{KIND} IN {REMOVING} AND {match})")
    for index, bits in enumerate(layouts):
        names = _unmask(bits, columns)
        parts.append(f"up{index} AS ({_upsert(table, names, keys, bits)} RETURNING 1)")
    counts = " + ".join(f"(SELECT count(*) FROM up{i})" for i in range(len(layouts))) or "0"
    return int(client.query(connection, f"WITH {', '.join(parts)} SELECT {counts}")[0][0])


def _upsert(table: str, names: Sequence[str], keys: Sequence[str], bits: bytes) -> str:
    columns = ", ".join(quote_ident(n) for n in names)
    updates = ", ".join(f"{quote_ident(n)} = EXCLUDED.{quote_ident(n)}" for n in names if n not in keys)
    action = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
    key_list = ", ".join(quote_ident(k) for k in keys)
    # key order: two sessions upserting overlapping keys take their locks in one order
    return (
        f"INSERT INTO {table} ({columns}) SELECT {columns} FROM latest "
        f"WHERE {KIND} NOT IN {REMOVING} AND {COLUMNS} = '\\x{bits.hex()}'::bytea ORDER BY {key_list} "
        f"ON CONFLICT ({key_list}) {action}"
    )


def forget(connection: Any, stage: str, writers: Sequence[int]) -> None:
    """Delete the staged rows of these staging transactions (applied, or of discarded epochs)."""
    if writers:
        client.execute(
            connection, f"DELETE FROM {stage} WHERE xmin = ANY(ARRAY[{in_list(str(int(x)) for x in writers)}]::xid[])"
        )
