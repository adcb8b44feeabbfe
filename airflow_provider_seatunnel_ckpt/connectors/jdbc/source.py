"""``Jdbc`` source: a PostgreSQL table or query, read in key ranges, resumable mid-split.

Splits are ranges of ``partition_column`` (integer, date and timestamp keys) or buckets
of an md5 hash of the key (text keys), planned once on the driver and kept in the
checkpoint. Inside a split, rows are read in key order, one page per query (keyset
pagination: ``WHERE key > last ORDER BY key LIMIT fetch_size``), each page in its own
short transaction. A split's position is the last key emitted, so a restore resumes
right after it without reading again what the checkpoint covers.

SeaTunnel only divides by ``partition_column``: it may repeat (a category, a date). Then
rows are read in the order of the key and a tie-breaker, a unique column found on the
driver (the table's primary key, or the first unique column of a query's output), and
the position is the pair.

Options: docs/options.md ("Jdbc source"); splits and what a read sees while the table
changes: docs/jdbc.md, "Source `Jdbc`".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConfigError
from ..api import Dataset, JsonValue, ReaderContext, Source, SourceReader, Split
from ..datasets import postgres_dataset
from ..options import Option, OptionTable, option_key
from . import client
from .client import qualified, quote_ident, quote_literal
from .target import TARGET_OPTIONS, PgTarget, parse_target
from .types import ReadPlan, read_plan

DEFAULT_FETCH_SIZE = 100_000
#: columns of a query's output tried as a tie-breaker, in one scan
_TIEBREAK_CANDIDATES = 8
_ALIAS = "_st_rel"
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_TZ = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class KeyColumn:
    name: str
    #: int | date | timestamp | timestamptz | text
    kind: str

    def literal(self, value: JsonValue) -> str:
        if self.kind == "int":
            return str(int(value))
        cast = {"date": "date", "timestamp": "timestamp", "timestamptz": "timestamptz", "text": "text"}[self.kind]
        return f"{quote_literal(str(value))}::{cast}"


def _key_kind(arrow_type: pa.DataType) -> str | None:
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_date(arrow_type):
        return "date"
    if pa.types.is_timestamp(arrow_type):
        return "timestamptz" if arrow_type.tz else "timestamp"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    return None


def _to_json(value: Any) -> JsonValue:
    """A key value as it is kept in positions and split bounds."""
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return value


class JdbcSource(Source):
    plugin_name = "Jdbc"
    OPTIONS = OptionTable(
        *TARGET_OPTIONS,
        Option("table", "str", "the table read, schema.table"),
        Option("table_path", "str", "SeaTunnel's name for table (table wins)"),
        Option("query", "str", "a SELECT read instead of a table"),
        Option("where", "str", "a condition on the table's rows"),
        Option("where_condition", "str", "SeaTunnel's name for where (where wins)"),
        Option("partition_column", "str", "the numeric or date column splits divide"),
        Option("partition_num", "int", "splits of partition_column's range", minimum=1),
        Option("partition_lower_bound", "value", "the least partition_column value (default: read)"),
        Option("partition_upper_bound", "value", "the greatest partition_column value (default: read)"),
        Option("fetch_size", "int", "rows per fetch from the server cursor", DEFAULT_FETCH_SIZE, minimum=1),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.target: PgTarget = parse_target(options, opts["connection_check_timeout_sec"])
        table_key = "table" if opts.given("table") else "table_path"
        table: str | None = opts[table_key]
        query: str | None = opts["query"]
        if (table is None) == (query is None):  # rule: a table or a query
            raise ConfigError("query", "give either query or table (schema.table), not both and not neither")
        self.relation_key = table_key if table is not None else "query"
        self.table = client.split_table_name(table, table_key) if table is not None else None
        self.query = query.rstrip().rstrip(";") if query is not None else None
        self.where_key = "where" if opts.given("where") else "where_condition"
        self.where: str | None = opts[self.where_key]
        if self.where is not None and self.where.lower().startswith("where "):
            self.where = self.where[6:].strip()  # SeaTunnel writes "where id > 10"
        self.partition_column: str | None = opts["partition_column"]
        self.partition_num: int | None = opts["partition_num"]
        self.lower_bound = opts["partition_lower_bound"]
        self.upper_bound = opts["partition_upper_bound"]
        self.fetch_size: int = opts["fetch_size"]
        if not self.fetch_size:
            self.fetch_size = DEFAULT_FETCH_SIZE  # SeaTunnel's 0 = "driver default"
        self._key: KeyColumn | None = None
        #: orders rows of one key when the key repeats (None: it does not, or not checked)
        self._tiebreak: KeyColumn | None = None
        self._plan: ReadPlan | None = None

    def datasets(self) -> list[Dataset]:
        """The table, or the tables the query reads (by OpenLineage's SQL parser when it is
        installed: the OpenLineage provider brings it; without it a query names none)."""
        if self.table is not None:
            return [self._table_dataset(*self.table)]
        try:
            from openlineage_sql import parse
        except ImportError:
            return []
        parsed = parse([str(self.query)], dialect="postgres")
        if parsed is None:
            return []
        return [self._table_dataset(t.schema, t.name, t.database) for t in parsed.in_tables]

    def _table_dataset(self, schema: str | None, table: str, database: str | None = None) -> Dataset:
        target = self.target
        return postgres_dataset(
            target.host, target.port, database or target.database, schema or target.current_schema, table
        )

    # ---- SQL --------------------------------------------------------------------------------
    def relation(self) -> str:
        """``FROM`` clause body: the table or the query, aliased."""
        base = qualified(*self.table) if self.table is not None else f"({self.query})"
        return f"{base} AS {_ALIAS}"

    def conditions(self) -> list[str]:
        return [f"({self.where})"] if self.where else []

    def _select(self, columns: str, extra: list[str] | None = None, tail: str = "") -> str:
        conds = self.conditions() + (extra or [])
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        return f"SELECT {columns} FROM {self.relation()}{where}{tail}"

    def describe(self) -> str:
        what = f"table {'.'.join(p for p in self.table if p)}" if self.table else "the query"
        return f"{what} at {self.target.describe()}"

    # ---- driver side --------------------------------------------------------------------------
    def preflight(self) -> None:
        """Connect and check the relation, its column types and the partition key."""
        connection = client.connect(self.target)
        try:
            self._inspect(connection, check_key=True)
        finally:
            client.close_quietly(connection)

    def produced_schema(self) -> pa.Schema | None:
        return self._plan.schema if self._plan is not None else None

    def _inspect(self, connection: Any, check_key: bool) -> KeyColumn:
        if self._key is not None and not check_key:
            return self._key
        schema = self._schema(connection)
        plan = read_plan(schema)
        if plan.problems:
            raise ConfigError(self.relation_key, f"{plan.problems[0]} ({self.describe()})")
        self._plan = plan
        key = self._resolve_key(connection, plan.schema)
        if check_key:
            self._check_key(connection, key)
        self._key = key
        return key

    def _schema(self, connection: Any) -> pa.Schema:
        base = f"SELECT * FROM {self.relation()} LIMIT 0"
        try:
            with connection.cursor() as cursor:
                cursor.execute(base)
                schema = cursor.fetch_arrow_table().schema
        except Exception as err:
            raise ConfigError(
                self.relation_key, f"{client.reason(err, self.target)} ({self.target.describe()})"
            ) from None
        if self.where:
            try:
                client.query(connection, self._select("1", tail=" LIMIT 0"))
            except Exception as err:
                raise ConfigError(self.where_key, f"{client.reason(err, self.target)} ({self.describe()})") from None
        return schema

    def _resolve_key(self, connection: Any, schema: pa.Schema) -> KeyColumn:
        names = schema.names
        if self.partition_column is None:
            primary = self._primary_key(connection)
            if primary is None:
                # as SeaTunnel reads such a query (one split), but resumable: by a unique column
                found = self._unique_column(connection, None)
                if found is None:
                    raise ConfigError(
                        "partition_column",
                        f"is required: {self.describe()} has no single-column primary key and no unique column to "
                        "read it by; name a unique, NOT NULL column (a restore resumes after the last key read)",
                    )
                return found
            name = primary
        else:
            wanted = self.partition_column.strip('"')
            matches = [n for n in names if n == wanted] or [n for n in names if n.lower() == wanted.lower()]
            if not matches:
                raise ConfigError(
                    "partition_column",
                    f"{self.partition_column!r} is not a column of {self.describe()}; columns: {', '.join(names)}",
                )
            name = matches[0]
        kind = _key_kind(schema.field(name).type)
        if kind is None:
            raise ConfigError(
                "partition_column",
                f"{name!r} has type {schema.field(name).type}; use an integer, date, timestamp or text column",
            )
        return KeyColumn(name, kind)

    def _table_oid(self, connection: Any) -> int | None:
        if self.table is None:
            return None
        rows = client.query(connection, f"SELECT {quote_literal(qualified(*self.table))}::regclass::oid::bigint")
        return int(rows[0][0])

    def _primary_key(self, connection: Any) -> str | None:
        oid = self._table_oid(connection)
        if oid is None:
            return None
        rows = client.query(
            connection,
            "SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
            f"WHERE i.indrelid = {oid} AND i.indisprimary AND i.indnatts = 1",
        )
        return rows[0][0] if rows else None

    def _check_key(self, connection: Any, key: KeyColumn) -> None:
        """A key that repeats or is NULL cannot carry a position: refuse it up front."""
        column = quote_ident(key.name)
        unique_not_null = False
        oid = self._table_oid(connection)
        if oid is not None:
            rows = client.query(
                connection,
                "SELECT bool_or(i.indisunique AND i.indnatts = 1 AND i.indpred IS NULL), bool_and(a.attnotnull) "
                "FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indkey[0] = a.attnum "
                f"WHERE a.attrelid = {oid} AND a.attname = {quote_literal(key.name)}",
            )
            unique, not_null = rows[0] if rows else (False, False)
            unique_not_null = bool(unique) and bool(not_null)
            if (
                unique
                and not not_null
                and client.query(connection, self._select("1", [f"{column} IS NULL"], " LIMIT 1"))
            ):
                raise ConfigError(
                    "partition_column",
                    f"{key.name!r} is NULL in some rows of {self.describe()}; rows without a key cannot be read by key",
                )
        if unique_not_null:
            return
        duplicate = client.query(
            connection, self._select(f"{column}::text", None, f" GROUP BY {column} HAVING count(*) > 1 LIMIT 1")
        )
        if duplicate:
            self._tiebreak = self._unique_column(connection, key.name)
            if self._tiebreak is None:
                raise ConfigError(
                    "partition_column",
                    f"{key.name!r} is not unique in {self.describe()} (value {duplicate[0][0]!r} appears more than "
                    "once), and no other column is unique to order its rows by; a restore resumes after the last "
                    "row read, so the rows must have an order",
                )
        if client.query(connection, self._select("1", [f"{column} IS NULL"], " LIMIT 1")):
            raise ConfigError(
                "partition_column",
                f"{key.name!r} is NULL in some rows of {self.describe()}; rows without a key cannot be read by key",
            )

    def _unique_column(self, connection: Any, other_than: str | None) -> KeyColumn | None:
        """A unique, never NULL column (other than ``other_than``) to read rows in the order
        of: the table's primary key, else the first such column of the output (at most
        ``_TIEBREAK_CANDIDATES`` of the integer and text ones, counted in one scan)."""
        assert self._plan is not None  # _inspect read the schema first
        schema = self._plan.schema
        primary = self._primary_key(connection)
        orderable = primary is not None and primary != other_than and _key_kind(schema.field(primary).type) is not None
        names = [primary] if orderable else []
        candidates = [
            f.name for f in schema if f.name not in (other_than, primary) and _key_kind(f.type) in ("int", "text")
        ]
        names += candidates[:_TIEBREAK_CANDIDATES]
        if not names:
            return None
        counts = ", ".join(f"count(DISTINCT {quote_ident(n)}), count({quote_ident(n)})" for n in names)
        row = client.query(connection, self._select(f"count(*), {counts}"))[0]
        for i, name in enumerate(names):
            if row[1 + 2 * i] == row[2 + 2 * i] == row[0]:
                kind = _key_kind(schema.field(name).type)
                assert kind is not None
                return KeyColumn(name, kind)
        return None

    def splits(self, parallelism: int) -> list[Split]:
        connection = client.connect(self.target)
        try:
            key = self._inspect(connection, check_key=self._key is None)  # the tie-breaker comes with the check
            count = self.partition_num or parallelism
            then = {"then": {"column": self._tiebreak.name, "kind": self._tiebreak.kind}} if self._tiebreak else {}
            if key.kind == "text":
                return [
                    Split(
                        f"hash-{i:05d}", {"column": key.name, "kind": key.kind, "bucket": i, "buckets": count, **then}
                    )
                    for i in range(count)
                ]
            low, high = self._bounds(connection, key)
        finally:
            client.close_quietly(connection)
        if low is None or high is None:
            return [Split("range-00000", {"column": key.name, "kind": key.kind, "lower": None, "upper": None, **then})]
        low_n, high_n = _ordinal(low, key.kind), _ordinal(high, key.kind)
        if high_n < low_n:
            raise ConfigError("partition_lower_bound", f"is above partition_upper_bound ({low} > {high})")
        span = high_n - low_n + 1
        count = max(1, min(count, span))
        cuts = [_from_ordinal(low_n + span * i // count, key.kind) for i in range(1, count)]
        bounds = [None, *cuts, None]
        return [
            Split(
                f"range-{i:05d}",
                {"column": key.name, "kind": key.kind, "lower": bounds[i], "upper": bounds[i + 1], **then},
            )
            for i in range(count)
        ]

    def _bounds(self, connection: Any, key: KeyColumn) -> tuple[Any, Any]:
        low, high = self.lower_bound, self.upper_bound
        if low is None or high is None:
            column = quote_ident(key.name)
            rows = client.query(connection, self._select(f"min({column}), max({column})"))
            found_low, found_high = rows[0] if rows else (None, None)
            low = found_low if low is None else low
            high = found_high if high is None else high
        return _parse_bound(low, key, "partition_lower_bound"), _parse_bound(high, key, "partition_upper_bound")

    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        return JdbcReader(self, split, position, context)


def _parse_bound(value: Any, key: KeyColumn, option: str) -> Any:
    if value is None:
        return None
    try:
        if key.kind == "int":
            if isinstance(value, bool):
                raise ValueError
            return int(value)
        if key.kind == "date":
            return (
                value
                if isinstance(value, dt.date) and not isinstance(value, dt.datetime)
                else dt.date.fromisoformat(str(value))
            )
        if isinstance(value, dt.datetime):
            return value
        return dt.datetime.fromisoformat(str(value))
    except (TypeError, ValueError):
        raise ConfigError(option, f"{value!r} is not a value of {key.name!r} ({key.kind})") from None


def _ordinal(value: Any, kind: str) -> int:
    if kind == "int":
        return int(value)
    if kind == "date":
        return value.toordinal()
    epoch = _EPOCH_TZ if value.tzinfo else _EPOCH
    return (value - epoch) // dt.timedelta(microseconds=1)


def _from_ordinal(number: int, kind: str) -> JsonValue:
    if kind == "int":
        return number
    if kind == "date":
        return dt.date.fromordinal(number).isoformat()
    epoch = _EPOCH_TZ if kind == "timestamptz" else _EPOCH
    return (epoch + dt.timedelta(microseconds=number)).isoformat()


class JdbcReader(SourceReader):
    """Reads one split page by page; the position is the last key emitted (with a
    tie-breaker: the last pair)."""

    def __init__(self, source: JdbcSource, split: Split, position: JsonValue | None, context: ReaderContext):
        spec = split.spec
        self._source = source
        self._split = split
        self._key = KeyColumn(str(spec["column"]), str(spec["kind"]))
        then = spec.get("then")
        self._then = KeyColumn(str(then["column"]), str(then["kind"])) if then else None
        self._batch_rows = context.batch_size
        self._last: JsonValue | None = position
        self._connection: Any = None
        self._cursor: Any = None
        self._page: Any = None  # RecordBatchReader of the current page
        self._page_rows = 0
        self._pending: pa.RecordBatch | None = None  # rest of a driver batch bigger than batch_size
        self._done = False
        self._plan: ReadPlan | None = None
        self._key_index: int | None = None
        self._then_index: int | None = None
        column = quote_ident(self._key.name)
        conds = []
        if "bucket" in spec:
            # md5, not hashtext: stable across PostgreSQL versions, so a restore after a
            # server upgrade deals every key to the same split
            conds.append(
                f"((('x' || substr(md5({column}::text), 1, 8))::bit(32)::int & 2147483647) % {int(spec['buckets'])}"
                f" = {int(spec['bucket'])})"
            )
        else:
            if spec.get("lower") is not None:
                conds.append(f"{column} >= {self._key.literal(spec['lower'])}")
            if spec.get("upper") is not None:
                conds.append(f"{column} < {self._key.literal(spec['upper'])}")
        self._conditions = conds

    def _page_query(self) -> str:
        column = quote_ident(self._key.name)
        conds = list(self._conditions)
        if self._then is None:
            if self._last is not None:
                conds.append(f"{column} > {self._key.literal(self._last)}")
            order = column
        else:
            then = quote_ident(self._then.name)
            if self._last is not None:
                last_key, last_then = self._last  # type: ignore[misc]
                conds.append(f"({column}, {then}) > ({self._key.literal(last_key)}, {self._then.literal(last_then)})")
            order = f"{column}, {then}"
        return self._source._select("*", conds, f" ORDER BY {order} LIMIT {self._source.fetch_size}")

    def _open_page(self) -> None:
        if self._connection is None:
            self._connection = client.connect(self._source.target)
        self._close_cursor()
        self._cursor = self._connection.cursor()
        self._cursor.execute(self._page_query())
        self._page = self._cursor.fetch_record_batch()
        self._page_rows = 0
        if self._plan is None:
            self._plan = read_plan(self._page.schema)
            if self._plan.problems:
                raise ValueError(f"{option_key(self._source, self._source.relation_key)}: {self._plan.problems[0]}")
            self._key_index = self._plan.schema.get_field_index(self._key.name)
            if self._then is not None:
                self._then_index = self._plan.schema.get_field_index(self._then.name)

    def read_batch(self) -> pa.RecordBatch | None:
        while True:
            if self._pending is not None:
                batch, self._pending = self._pending, None
                return self._emit(batch)
            if self._done:
                return None
            if self._page is None:
                self._open_page()
            try:
                batch = self._page.read_next_batch()
            except StopIteration:
                full = self._page_rows >= self._source.fetch_size
                self._close_cursor()
                if not full:
                    self._done = True
                continue
            self._page_rows += batch.num_rows
            if batch.num_rows:
                self._pending = batch

    def _emit(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.num_rows > self._batch_rows:
            batch, self._pending = batch.slice(0, self._batch_rows), batch.slice(self._batch_rows)
        assert self._plan is not None and self._key_index is not None
        keys = batch.column(self._key_index)
        if self._then_index is None:
            self._check_keys(keys)
            self._last = _to_json(keys[len(keys) - 1].as_py())
        else:
            self._check_pairs(keys, batch.column(self._then_index))
            last = len(keys) - 1
            self._last = [_to_json(keys[last].as_py()), _to_json(batch.column(self._then_index)[last].as_py())]
        return self._plan.apply(batch)

    def _check_pairs(self, keys: pa.Array, then: pa.Array) -> None:
        """Rows arrive in (key, tie-breaker) order: a repeated pair shows up as neighbours."""
        assert self._then is not None
        if keys.null_count or then.null_count:
            raise ValueError(
                f"{option_key(self._source, 'partition_column')}: {self._key.name!r} or its tie-breaker "
                f"{self._then.name!r} is NULL in a row of {self._source.describe()}; such rows cannot be read in order"
            )
        repeated = None
        n = len(keys)
        if n > 1:
            same = pc.and_(pc.equal(keys.slice(1), keys.slice(0, n - 1)), pc.equal(then.slice(1), then.slice(0, n - 1)))
            if pc.any(same).as_py():
                index = pc.index(same, True).as_py() + 1
                repeated = (keys[index].as_py(), then[index].as_py())
        first = [_to_json(keys[0].as_py()), _to_json(then[0].as_py())]
        if repeated is None and self._last is not None and first == list(self._last):  # type: ignore[arg-type]
            repeated = tuple(first)
        if repeated is not None:
            raise ValueError(
                f"{option_key(self._source, 'partition_column')}: the tie-breaker {self._then.name!r} is not "
                f"unique in {self._source.describe()} ({repeated!r} appears more than once); it must stay unique"
            )

    def _check_keys(self, keys: pa.Array) -> None:
        """Rows arrive in key order, so a repeated key shows up as two neighbours."""
        repeated = None
        if keys.null_count:
            raise ValueError(
                f"{option_key(self._source, 'partition_column')}: {self._key.name!r} is NULL in a row of "
                f"{self._source.describe()}; rows without a key cannot be read by key"
            )
        if len(keys) > 1 and pc.any(pc.equal(keys.slice(1), keys.slice(0, len(keys) - 1))).as_py():
            index = pc.index(pc.equal(keys.slice(1), keys.slice(0, len(keys) - 1)), True).as_py()
            repeated = keys[index + 1].as_py()
        elif self._last is not None and _to_json(keys[0].as_py()) == self._last:
            repeated = keys[0].as_py()
        if repeated is not None:
            raise ValueError(
                f"{option_key(self._source, 'partition_column')}: {self._key.name!r} is not unique in "
                f"{self._source.describe()} (value {repeated!r} appears more than once); the key must be unique"
            )

    def position(self) -> JsonValue:
        return self._last

    def _close_cursor(self) -> None:
        cursor, self._cursor, self._page = self._cursor, None, None
        if cursor is not None:
            try:
                cursor.close()
            except Exception:  # closing a stream the server already ended
                pass

    def close(self) -> None:
        self._close_cursor()
        client.close_quietly(self._connection)
        self._connection = None
