"""``Jdbc`` sink: rows into a PostgreSQL table with COPY, exactly once by two-phase commit.

Each subtask's writer (``JdbcSinkWriter``) opens one transaction per epoch, casts its
batches to the table's column types and sends them with binary COPY (change rows, and
plain rows upserted by ``primary_keys``, into a stage table: :mod:`.staging`), and at the
barrier inserts its commit-log row and runs ``PREPARE TRANSACTION`` (gids:
:mod:`.transactions`); the commit info is the gid. The driver's committer
(:mod:`.committer`) commits the prepared transactions once the checkpoint is durable and
applies the staged rows. Without ``is_exactly_once`` the sink upserts (with keys) or
appends, committing every flush.

Options (SeaTunnel's names), the protocol, change rows, upserts and appends:
docs/jdbc.md, "Sink ``Jdbc``".
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConfigError, ConnectorError
from ..api import Dataset, JsonValue, Sink, SinkWriter, has_kinds, kinds_of, strip_kinds, without_kinds
from ..datasets import postgres_dataset
from ..options import SAVE_MODE_OPTIONS, Option, OptionTable, Parsed
from . import client, query, staging, transactions
from .client import qualified, quote_ident
from .committer import JdbcSinkCommitter
from .target import TARGET_OPTIONS, PgTarget, parse_target
from .types import pg_type, read_plan

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 10_000
#: how long a writer's statement waits for a row lock (its session's lock_timeout). No
#: writer of a job waits on another's change rows (they are staged), so only an append of
#: a key another transaction holds waits: a duplicate key if that one commits, and for
#: ever if it is a prepared transaction of this job's epoch; this bounds it
LOCK_WAIT_S = 10.0


def _rule_query_or_generated_sql(opts: Parsed) -> None:
    """Rule: ``query`` (a hand-written INSERT) goes without ``generate_sink_sql = true``,
    and ``generate_sink_sql = false`` needs ``query``."""
    generate = opts["generate_sink_sql"]
    if opts.given("query") and generate:
        raise ConfigError("generate_sink_sql", "true writes generated SQL to table: remove it, or remove query")
    if not opts.given("query") and generate is False:
        raise ConfigError("generate_sink_sql", "false needs query (the INSERT to write each row with)")


class JdbcSink(Sink):
    plugin_name = "Jdbc"
    change_rows = "keep"  # applied by primary_keys (docs/jdbc.md, "Change rows")
    # the sinks of several source tables may write one table (SeaTunnel's Kafka table_list
    # jobs do): each commits its own named transactions
    tables_may_share_target = True
    OPTIONS = OptionTable(
        *TARGET_OPTIONS,
        Option("database", "str", "the database, in place of the URL's"),
        Option("generate_sink_sql", "bool", "write generated SQL to table (default: true without query)"),
        Option("query", "str", "a hand-written INSERT with ? placeholders, in place of generated SQL"),
        Option("table", "str", "the table written, schema.table"),
        Option("primary_keys", "columns", "the key columns: upserts and change rows by key"),
        Option("is_exactly_once", "bool", "two-phase commit with prepared transactions", True),
        Option("max_commit_attempts", "int", "tries of a commit (default: retried for a while)", minimum=1),
        Option("use_copy_statement", "bool", "SeaTunnel's; rows are appended with COPY either way", False),
        Option("transaction_timeout_sec", "int", "SeaTunnel's; prepared transactions do not time out", -1, minimum=-1),
        Option("batch_size", "int", "rows per write", DEFAULT_BATCH_SIZE, minimum=1),
        *SAVE_MODE_OPTIONS,
        Option("enable_upsert", "bool", "with primary_keys: write by key (false: append)", True),
        Option("xa_data_source_class_name", "value", "SeaTunnel's XA class; ignored (PostgreSQL's own 2PC is used)"),
        Option("max_retries", "value", "SeaTunnel's; ignored"),
    )

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        target = parse_target(options, opts["connection_check_timeout_sec"])
        if opts.given("database"):
            target = target.with_database(opts["database"])
        self.target: PgTarget = target
        #: SeaTunnel's hand-written INSERT (generate_sink_sql: false), as libpq runs it: :mod:`.query`
        self.query: str | None = None
        self.written_query = ""  #: as the job file has it (``?`` placeholders)
        self.query_parameters = 0
        self._parameter_types: list[str] | None = None  #: the query's, as PostgreSQL infers them
        #: the columns a plain ``INSERT ... VALUES (?, ...)`` lists, when COPY may append its
        #: rows instead (:meth:`copyable`: asked by preflight, or by the first writer of a
        #: sink that a worker loaded from the job)
        self.copy_columns: list[str] | None = None
        self._copy_checked = False
        #: which fields are strings -> the typed query for them (query.typed), made once
        self._typed: dict[tuple[bool, ...], tuple[str, list[int]]] = {}
        _rule_query_or_generated_sql(opts)
        if opts.given("query"):
            self.written_query = opts["query"]
            self.query, self.query_parameters = query.numbered(opts["query"])
            table_text = opts["table"] if opts.given("table") else query.insert_target(self.query)
            schema, self.table_name = client.split_table_name(table_text, "table" if opts.given("table") else "query")
        else:
            schema, self.table_name = client.split_table_name(opts.require("table"))
        self.schema = schema or target.current_schema
        self.table = qualified(self.schema, self.table_name)
        self.primary_keys: list[str] = opts["primary_keys"] or []
        if self.query is not None and self.primary_keys:  # rule: keys apply to generated SQL
            raise ConfigError("primary_keys", "applies to generated SQL; a hand-written query writes rows as it says")
        self.exactly_once: bool = opts["is_exactly_once"]
        #: SeaTunnel's max_commit_attempts: how many times the driver tries a commit (None:
        #: for up to COMMIT_RETRY_S while the server is unreachable)
        self.max_commit_attempts: int | None = opts["max_commit_attempts"]
        # COPY is how rows are appended whatever use_copy_statement says: the same rows either way
        if opts["transaction_timeout_sec"] != -1:
            log.warning(
                "%s: transaction_timeout_sec is not used: PostgreSQL's prepared transactions do not time out, "
                "an epoch's transaction waits for the driver's commit however long a checkpoint takes",
                getattr(self, "config_key", "sink"),
            )
        self.batch_size: int = opts["batch_size"]
        self.schema_save_mode: str = opts["schema_save_mode"]
        assert opts["data_save_mode"] == "append_data"
        self.upsert = not self.exactly_once and bool(self.primary_keys)
        # SeaTunnel's enable_upsert: with keys, rows are written by key unless it is false
        # (then appended: faster, for data without duplicate keys). Upsert mode upserts
        # whatever it says: an append replayed after a failure would be a duplicate key.
        self.enable_upsert: bool = opts["enable_upsert"]
        #: exactly once, plain rows go through the stage as inserts (docs/jdbc.md, "Plain rows")
        self.plain_by_key = self.exactly_once and bool(self.primary_keys) and self.enable_upsert
        self._pool: list[Any] = []
        self._lock = threading.Lock()
        self._columns: dict[str, pa.Field] | None = None  # the table's columns, read at the first write
        #: set by close(); taken with _prepare_lock, which every PREPARE TRANSACTION holds
        self._closed = False
        self._prepare_lock = threading.Lock()
        #: (job tag, subtask) whose stale prepared transactions this instance released
        self._released_stale: set[tuple[str, int]] = set()
        #: job tag -> (the stage its change rows go to, the stage's columns of the table)
        self._stages: dict[str, tuple[str, list[str]]] = {}
        #: whether the table has a unique index on primary_keys (None: not looked at yet)
        self._keys_unique: bool | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(
            _pool=[], _lock=None, _columns=None, _closed=False, _prepare_lock=None, _released_stale=set(), _stages={}
        )
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._prepare_lock = threading.Lock()

    def describe(self) -> str:
        return f"table {self.schema + '.' if self.schema else ''}{self.table_name} at {self.target.describe()}"

    def datasets(self) -> list[Dataset]:
        target = self.target
        return [postgres_dataset(target.host, target.port, target.database, self.schema, self.table_name)]

    # ---- driver side ------------------------------------------------------------------------
    def preflight(self) -> None:
        connection = client.connect(self.target)
        try:
            if self.exactly_once:
                limit = int(client.query(connection, "SELECT current_setting('max_prepared_transactions')::int")[0][0])
                if limit == 0:
                    raise ConfigError(
                        "is_exactly_once",
                        f"{self.target.describe()} has max_prepared_transactions = 0, so it cannot prepare transactions "
                        "for the exactly-once sink: set max_prepared_transactions (at least the parallelism times "
                        "checkpoint max-concurrent + 1) and restart PostgreSQL, or use is_exactly_once: false with "
                        "primary_keys (idempotent upsert, effectively once on replay)",
                    )
            exists = self._table_exists(connection)
            if self.query is not None:
                self._check_query(connection, exists)
            elif not exists and self.schema_save_mode == "error_when_schema_not_exist":
                raise ConfigError(
                    "table", f"{self.describe()} does not exist (schema_save_mode: ERROR_WHEN_SCHEMA_NOT_EXIST)"
                )
            if exists and self.query is None:
                columns = self._read_columns(connection)
                missing = [k for k in self.primary_keys if k not in columns]
                if missing:
                    raise ConfigError(
                        "primary_keys", f"{', '.join(missing)} not in {self.describe()}; columns: {', '.join(columns)}"
                    )
                self._keys_unique = bool(self.primary_keys) and self._has_unique_index(connection)
                if self.upsert and not self._keys_unique:
                    raise self._no_unique_index("upserts")
                if self.plain_by_key and not self._keys_unique:
                    raise self._no_unique_index(
                        "upserts by key (enable_upsert, true by default; false appends the rows instead)"
                    )
            if not self.exactly_once and not self.primary_keys:
                log.warning(
                    "sink[0]: is_exactly_once is false and no primary_keys: rows replayed after a failure are "
                    "written again (at least once)"
                )
            if self.upsert and not self.enable_upsert:
                log.warning(
                    "sink[0]: enable_upsert: false is not used with is_exactly_once: false: rows are upserted "
                    "by primary_keys, so that a replay after a failure writes the same keys again instead of "
                    "failing on them"
                )
            if self.exactly_once:
                transactions.ensure_commit_log(connection, self.schema)
        except ConfigError:
            raise
        except Exception as err:
            raise ConnectorError(
                f"Jdbc sink: checking {self.describe()} failed: {client.reason(err, self.target)}"
            ) from None
        finally:
            client.close_quietly(connection)

    def _check_query(self, connection: Any, table_exists: bool) -> None:
        """The hand-written INSERT, prepared (parsed and planned against the table, never
        run): a mistake in it is one line before Spark starts, not a failed epoch."""
        if not table_exists:
            raise ConfigError("query", f"{self.describe()} does not exist: the query inserts into an existing table")
        try:
            client.execute(connection, f"PREPARE seatunnel_ckpt_query_check AS {self.query}")
        except Exception as err:
            if client.is_connection_error(err):
                raise
            raise ConfigError("query", f"PostgreSQL refuses it: {client.reason(err, self.target)}") from None
        client.execute(connection, "DEALLOCATE seatunnel_ckpt_query_check")
        self.copyable(connection)

    def copyable(self, connection: Any) -> list[str] | None:
        """:meth:`_copyable_columns`, asked once per sink instance."""
        with self._lock:
            if self._copy_checked:
                return self.copy_columns
        columns = self._copyable_columns(connection)
        with self._lock:
            self.copy_columns, self._copy_checked = columns, True
        return columns

    def _copyable_columns(self, connection: Any) -> list[str] | None:
        """The columns of a query that only appends each row's fields to the columns it
        lists (query.plain_insert_columns), when COPY into them does exactly what the
        INSERT would: into a table (not a view), with no rule (COPY applies none) and no
        statement-level INSERT trigger (COPY fires one per batch, the INSERT one per row).
        Row triggers, defaults, constraints and the transaction are the same either way.
        Why: the INSERT runs once per row, a server round trip each; COPY sends a batch in
        one (docs/jdbc.md, "A hand-written query")."""
        columns = query.plain_insert_columns(self.written_query)
        if columns is None:
            return None
        [(relkind, rules, statement_triggers)] = client.query(
            connection,
            "SELECT c.relkind::text,"
            " EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.ev_class = c.oid AND r.rulename <> '_RETURN'),"
            " EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal"
            " AND (t.tgtype & 1) = 0 AND (t.tgtype & 4) <> 0)"
            f" FROM pg_class c WHERE c.oid = {client.quote_literal(self.table)}::regclass",
        )
        return columns if relkind in ("r", "p") and not rules and not statement_triggers else None

    def typed_query(self, connection: Any, schema: pa.Schema) -> tuple[str, list[int]]:
        """The hand-written query as rows of ``schema`` are bound to it (query.typed):
        the parameter types PostgreSQL infers for it, asked once per sink."""
        with self._lock:
            types = self._parameter_types
        if types is None:
            client.execute(connection, f"PREPARE seatunnel_ckpt_query_types AS {self.query}")
            try:
                rows = client.query(
                    connection,
                    "SELECT parameter_types::text[] FROM pg_prepared_statements WHERE name = 'seatunnel_ckpt_query_types'",
                )
            finally:
                client.execute(connection, "DEALLOCATE seatunnel_ckpt_query_types")
            types = list(rows[0][0])
            with self._lock:
                self._parameter_types = types
        text = tuple(pa.types.is_string(f.type) or pa.types.is_large_string(f.type) for f in schema)
        if text not in self._typed:
            self._typed[text] = query.typed(self.written_query, types, list(text))
        return self._typed[text]

    def accepts(self, schema: pa.Schema) -> None:
        """Change rows (and the plain rows sent with them, inserts) are applied by key: the
        keys must be set, be columns of the rows, and (after preflight) have a unique index.
        So are plain rows upserted by key (``plain_by_key``). A hand-written query takes
        each row's fields, in order, for its placeholders: as many as the rows have."""
        if self.query is not None:
            if has_kinds(schema):
                self.accepts_change_rows()
            if len(schema) != self.query_parameters:
                raise ConfigError(
                    "query",
                    f"has {self.query_parameters} ? placeholder(s) but the rows have {len(schema)} field(s) "
                    f"({', '.join(schema.names)}), which fill them in order",
                )
            return
        if not has_kinds(schema):
            missing = [k for k in self.primary_keys if k not in schema.names] if self.plain_by_key else []
            if missing:
                raise ConfigError(
                    "primary_keys",
                    f"{missing[0]!r} is not a column of the rows to upsert by key "
                    f"({', '.join(schema.names)}); or set enable_upsert: false to "
                    "append them",
                )
            return
        self.accepts_change_rows()
        missing = [k for k in self.primary_keys if k not in schema.names]
        if missing:
            raise ConfigError(
                "primary_keys",
                f"{missing[0]!r} is not a column of the rows to apply by key "
                f"({', '.join(without_kinds(schema).names)})",
            )
        if self._keys_unique is False:
            raise self._no_unique_index("applying change rows")

    def accepts_change_rows(self) -> None:
        if self.query is not None:
            raise ConfigError(
                "query",
                "writes each row with a hand-written INSERT, which cannot apply change rows (updates and deletes): "
                f"set table and primary_keys instead to apply them to {self.describe()}",
            )
        if not self.primary_keys:
            raise ConfigError(
                "primary_keys",
                f"is required to apply change rows (updates and deletes) to {self.describe()}: list the key columns",
            )

    def _no_unique_index(self, need: str) -> ConfigError:
        return ConfigError(
            "primary_keys",
            f"{self.describe()} has no primary key or unique index on "
            f"({', '.join(self.primary_keys)}), which {need} need",
        )

    def _table_exists(self, connection: Any) -> bool:
        rows = client.query(connection, f"SELECT to_regclass({client.quote_literal(self.table)}) IS NOT NULL")
        return bool(rows[0][0])

    def _has_unique_index(self, connection: Any) -> bool:
        rows = client.query(
            connection,
            "SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_index i "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            f"WHERE i.indrelid = {client.quote_literal(self.table)}::regclass AND i.indisunique AND i.indpred IS NULL "
            "GROUP BY i.indexrelid",
        )
        wanted = sorted(self.primary_keys)
        return any(sorted(r[0] or []) == wanted for r in rows)

    def _read_columns(self, connection: Any) -> dict[str, pa.Field]:
        """The table's columns in the Arrow types the rows are cast to; a ``jsonb`` column
        as binary: binary COPY sends its values as jsonb's own binary form (``as_sent``)."""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {self.table} LIMIT 0")
            schema = cursor.fetch_arrow_table().schema
        plan = read_plan(schema)
        pg_types = {f.name: (f.metadata or {}).get(b"POSTGRESQL:type", b"") for f in schema}
        return {
            f.name: pa.field(f.name, _SENT_AS[kind][0], f.nullable, metadata={_SENT_KEY: kind})
            if (kind := pg_types[f.name]) in _SENT_AS
            else f
            for f in plan.schema
        }

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> JdbcSinkWriter:
        return JdbcSinkWriter(self, transactions.sink_tag(job_id, self.instance), subtask, attempt)

    def create_committer(self, job_id: str) -> JdbcSinkCommitter:
        return JdbcSinkCommitter(self, transactions.sink_tag(job_id, self.instance))

    # ---- executor side: pooled connections (a prepared transaction frees its session) ---------
    def acquire(self) -> Any:
        if self._closed:
            raise ConnectorError(f"Jdbc sink: the subtask released its sink for {self.describe()}; it writes no more")
        with self._lock:
            if self._pool:
                return self._pool.pop()
        connection = client.connect(self.target)
        try:  # see LOCK_WAIT_S: a writer never waits for ever
            client.execute(connection, f"SET lock_timeout = {int(LOCK_WAIT_S * 1000)}")
        except BaseException:
            client.close_quietly(connection)
            raise
        return connection

    def release(self, connection: Any) -> None:
        with self._lock:
            if not self._closed:
                self._pool.append(connection)
                return
        client.close_quietly(connection)  # after close(): nobody would ever take it again

    def close(self) -> None:
        """The subtask attempt (or its registration) is over: no writer of this instance
        may PREPARE from now on (see ``JdbcSinkWriter.prepare_commit``). Waits for a
        PREPARE in progress on another thread, so once this returns, every transaction
        this instance will ever have prepared is visible in ``pg_prepared_xacts``."""
        with self._prepare_lock:
            self._closed = True
        with self._lock:
            pool, self._pool = self._pool, []
        for connection in pool:
            client.close_quietly(connection)

    def release_stale(self, tag: str, subtask: int, attempt: int, after_checkpoint_id: int) -> None:
        """Roll back what ``subtask`` prepared in this run, at this attempt or an earlier
        one, for checkpoints after ``after_checkpoint_id`` (the checkpoint it restores):
        none of that will ever be committed, and it holds locks on the keys the subtask is
        about to write again. Runs once per subtask and sink instance, before its first
        writer writes.

        Why here, and not only on the driver: when a subtask's control channel comes back
        (or Spark retries it), the driver rolls back the subtask's stale transactions as
        soon as it registers again (``discard_orphans``). But the old registration's async
        thread may still be inside ``prepare_commit``, and its PREPARE can land *after*
        the driver looked: that transaction would hold its keys until the end of the run,
        and the restarted subtask's COPY of the same keys would wait for it for ever
        (there is no lock timeout). The subtask closes the old registration's sink
        instance before it creates this one (``_release_connectors``, then ``load_sink``),
        and ``close()`` waits for a PREPARE in progress and makes any later one roll back
        instead (``prepare_commit``). So when this runs, every transaction the old
        registration will ever prepare is already visible, and this removes it: the race
        cannot happen. Only this run's, this subtask's, never a newer attempt's, never a
        checkpoint at or before the restored one (those the driver commits)."""
        with self._lock:
            if not self.exactly_once or (tag, subtask) in self._released_stale:
                return
            self._released_stale.add((tag, subtask))
        run = self.run_attempt
        connection = self.acquire()
        try:
            for xact in transactions.prepared(connection, tag, run, subtask):
                if xact.run_attempt == run and xact.attempt <= attempt and xact.checkpoint_id > after_checkpoint_id:
                    transactions.rollback(connection, xact.gid)
                    log.info(
                        "Jdbc sink: subtask %d rolled back %s: prepared by its previous registration for "
                        "checkpoint %d, after the restored checkpoint %d",
                        subtask,
                        xact.gid,
                        xact.checkpoint_id,
                        after_checkpoint_id,
                    )
        except BaseException:
            client.close_quietly(connection)
            raise
        self.release(connection)

    def stage(self, tag: str) -> tuple[str, list[str]]:
        """The stage (:mod:`.staging`) of the sink of job ``tag``, made when missing, and
        its columns of the table. On a connection of its own, before the epoch's
        transaction ever names it: a CREATE inside a transaction that is then prepared
        would hold the name until the driver commits, and another subtask's CREATE
        would wait on it for ever."""
        with self._lock:
            if tag in self._stages:
                return self._stages[tag]
        connection = self.acquire()
        try:
            name = staging.stage_name(tag, client.query(connection, staging.layout_sql(self.table))[0][0])
            stage = qualified(self.schema, name)
            try:
                client.execute(connection, staging.create_sql(stage, self.table))
            except Exception as err:
                if client.sqlstate(err) not in client.DUPLICATE_OBJECT:  # another subtask made it first
                    raise ConnectorError(
                        f"Jdbc sink: creating the stage {name} for {self.describe()} failed: {client.reason(err)}"
                    ) from None
            found = (name, staging.data_columns(connection, stage))
        except BaseException:
            client.close_quietly(connection)
            raise
        self.release(connection)
        with self._lock:
            self._stages[tag] = found
        return found

    def columns(self, connection: Any, first: pa.Schema) -> dict[str, pa.Field]:
        """The table's columns; creates the table from ``first`` when allowed and missing."""
        with self._lock:
            if self._columns is not None:
                return self._columns
        if not self._table_exists(connection):
            if self.schema_save_mode == "error_when_schema_not_exist":
                raise ConnectorError(f"Jdbc sink: {self.describe()} does not exist")
            self._create_table(connection, first)
        columns = self._read_columns(connection)
        with self._lock:
            self._columns = columns
        return columns

    def _create_table(self, connection: Any, schema: pa.Schema) -> None:
        parts = []
        for field in schema:
            kind = pg_type(field.type)
            if kind is None:
                raise ConnectorError(
                    f"Jdbc sink: column {field.name!r} has Arrow type {field.type}, which has no "
                    f"PostgreSQL column type; cast it in a transform"
                )
            not_null = " NOT NULL" if field.name in self.primary_keys else ""
            parts.append(f"{quote_ident(field.name)} {kind}{not_null}")
        if self.primary_keys:
            parts.append(f"PRIMARY KEY ({', '.join(quote_ident(k) for k in self.primary_keys)})")
        try:
            client.execute(connection, f"CREATE TABLE IF NOT EXISTS {self.table} ({', '.join(parts)})")
            log.info("Jdbc sink: created %s", self.describe())
        except Exception as err:
            if client.sqlstate(err) not in client.DUPLICATE_OBJECT:  # another subtask created it first
                raise ConnectorError(f"Jdbc sink: creating {self.describe()} failed: {client.reason(err)}") from None


#: jsonb's binary form: a version byte, then the text
_JSONB_VERSION = pa.scalar(b"\x01", pa.binary())


def _plain(column: pa.Array) -> pa.Array:
    """An extension column (Arrow's json, uuid...) as its storage; any other as it is."""
    return column.storage if isinstance(column, pa.ExtensionArray) else column


def as_jsonb(column: pa.Array) -> pa.Array:
    """JSON text as jsonb's binary form, for binary COPY into a jsonb column (the server
    refuses the bare text there: ``unsupported jsonb version number``)."""
    text = _plain(column).cast(pa.string()).cast(pa.binary())
    return pc.binary_join_element_wise(_JSONB_VERSION, text, pa.scalar(b"", pa.binary()))


def _as_text(column: pa.Array, name: str) -> pa.Array:
    """A column bound as text for a hand-written query's parameter (its text form)."""
    column = _plain(column)
    try:
        return column.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise ConnectorError(
            f"Jdbc sink: column {name!r} ({column.type}) has no text form for the query: {err}"
        ) from None


def as_uuid(column: pa.Array) -> pa.Array:
    """uuids (text, as this source and SeaTunnel's read them, or 16 bytes) as uuid's binary
    form, for binary COPY into a uuid column."""
    column = _plain(column)
    if pa.types.is_fixed_size_binary(column.type) and column.type.byte_width == 16:
        return column
    try:
        values = [None if v is None else uuid.UUID(str(v)).bytes for v in column.to_pylist()]
    except ValueError as err:
        raise pa.ArrowInvalid(f"not a uuid: {err}") from None
    return pa.array(values, pa.binary(16))


#: PostgreSQL types whose columns binary COPY needs in their own binary form, which the
#: rows rarely carry: the Arrow type sent and the conversion (the column's _SENT_KEY)
_SENT_AS: dict[bytes, tuple[pa.DataType, Callable[[pa.Array], pa.Array]]] = {
    b"jsonb": (pa.binary(), as_jsonb),
    b"uuid": (pa.binary(16), as_uuid),
}
_SENT_KEY = b"seatunnel_ckpt:sent_as"


class JdbcSinkWriter(SinkWriter):
    """One epoch of one subtask. Exactly once: one transaction, opened by the first row and
    prepared at the barrier; change rows, and plain rows upserted by key
    (``plain_by_key``), are copied into the stage and applied by the driver
    (:mod:`.staging`), other plain rows are appended to the table (COPY). Upsert mode: each
    flush is its own transaction (a flush's rows applied by key from the session's
    temporary stage), so no lock is held between flushes."""

    def __init__(self, sink: JdbcSink, tag: str, subtask: int, attempt: int):
        self.sink = sink
        self.tag = tag
        self.subtask = subtask
        self.attempt = attempt
        #: the driver's run attempt, part of every gid (set on the sink by the engine)
        self.run_attempt = sink.run_attempt
        self._connection: Any = None
        #: the table's columns (COPY's conversions), read at the first batch COPY appends
        self._columns: dict[str, pa.Field] | None = None
        self._buffer: list[pa.RecordBatch] = []
        self._buffered = 0
        self.rows = 0
        #: rows appended to the table, and the stage this epoch's change rows went to
        self.appended = 0
        self._stage: str | None = None
        self._seq = 0  # the next staged row's place in the epoch

    def open(self, after_checkpoint_id: int) -> None:
        # The first writer of a sink instance is the one of the restored epoch: release
        # what this subtask's previous registration left prepared (JdbcSink.release_stale)
        self.sink.release_stale(self.tag, self.subtask, self.attempt, after_checkpoint_id)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self._connection is None:
            self._begin(batch.schema)
        self._buffer.append(batch)
        self._buffered += batch.num_rows
        if self._buffered >= self.sink.batch_size:
            self._flush()

    def _begin(self, schema: pa.Schema) -> None:
        connection = self.sink.acquire()
        try:
            if self.sink.query is None:  # a hand-written query names its own columns
                self._columns = self.sink.columns(connection, without_kinds(schema))
            if self.sink.upsert:
                client.execute(connection, staging.create_sql(staging.TEMP_STAGE, self.sink.table, temporary=True))
            if self.sink.exactly_once:
                client.execute(connection, "BEGIN")
        except BaseException:
            client.close_quietly(connection)
            raise
        self._connection = connection

    def _cast(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` (without kinds) in the table's column types, its own columns in its order."""
        assert self._columns is not None  # read by _begin, or by _as_copy for a hand-written query
        arrays, fields = [], []
        for name, column in zip(batch.schema.names, batch.columns):
            target = self._columns.get(name)
            if target is None:
                raise ConnectorError(
                    f"Jdbc sink: column {name!r} of the data is not in {self.sink.describe()}; "
                    f"its columns: {', '.join(self._columns)}"
                )
            kind = (target.metadata or {}).get(_SENT_KEY)
            sent = _SENT_AS[kind] if kind is not None else None
            if sent is not None or not column.type.equals(target.type):
                try:
                    column = sent[1](column) if sent is not None else column.cast(target.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                    raise ConnectorError(
                        f"Jdbc sink: column {name!r} ({column.type}) cannot be written to "
                        f"{self.sink.describe()} ({target.type}): {err}"
                    ) from None
            arrays.append(column)
            fields.append(pa.field(name, target.type))
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def _flush(self) -> None:
        """Write the buffered batches, each as it is (sources of one sink may differ in
        column order, integer widths, columns present, and whether rows carry kinds): a
        flush with change rows goes to the stage, plain rows among them as inserts."""
        batches, self._buffer, self._buffered = self._buffer, [], 0
        if not batches:
            return
        keyed = self.sink.upsert or self.sink.plain_by_key or any(has_kinds(b.schema) for b in batches)
        try:
            if not self.sink.exactly_once:  # each flush commits: durably, the checkpoint counts it written
                client.begin_durable(self._connection)
            if self.sink.query is not None:
                self._insert(batches)
            elif keyed:
                self._write_changes(batches)
            else:
                self._append(batches)
            if not self.sink.exactly_once:
                self._commit_flush(keyed)
        except Exception as err:
            state = client.sqlstate(err)
            if state == client.UNIQUE_VIOLATION and not keyed:
                raise ConnectorError(
                    f"Jdbc sink: subtask {self.subtask} appended a key {self.sink.describe()} already holds "
                    f"({client.detail(err) or client.reason(err)}): {self._appends_why()}"
                ) from None
            if state != client.LOCK_NOT_AVAILABLE:
                raise
            # appended, the keys may be held by another writer of this job; upserted (upsert
            # mode), only by another session: no writer of the job holds a key past a flush
            holder = (
                "two writers of this job appending one key fail here instead of waiting for ever; or a long "
                f"transaction of another session); {self._appends_why()}"
                if not keyed
                else "a long transaction of another session)"
            )
            raise ConnectorError(
                f"Jdbc sink: subtask {self.subtask} waited {LOCK_WAIT_S:g} s for a row lock on {self.sink.describe()}: "
                f"another transaction holds rows with the same keys ({holder}: {client.reason(err)}"
            ) from None

    def _appends_why(self) -> str:
        """Why this sink appends plain rows, and what writes them by key instead."""
        if self.sink.primary_keys:
            return (
                "with enable_upsert: false rows are appended, each key once; remove it to upsert them by primary_keys"
            )
        return "without primary_keys rows are appended, each key once; set primary_keys to upsert them by key"

    def _append(self, batches: list[pa.RecordBatch]) -> None:
        for run in _same_schema_runs([self._cast(b) for b in batches]):
            with self._connection.cursor() as cursor:
                cursor.adbc_ingest(self.sink.table_name, run, mode="append", db_schema_name=self.sink.schema)
            self.appended += run.num_rows
            self.rows += run.num_rows

    def _insert(self, batches: list[pa.RecordBatch]) -> None:
        """The hand-written query, once per row, each row's fields bound to its placeholders
        (the batch is sent as the statement's parameters, each row executed in turn), or,
        for a plain INSERT that COPY can stand in for, the batch appended with COPY."""
        for batch in batches:
            if has_kinds(batch.schema):
                self.sink.accepts_change_rows()  # raises: checked before Spark starts when the schema is known
            copied = self._as_copy(batch)
            if copied is not None:
                self._append([copied])
                continue
            sql, as_text = self.sink.typed_query(self._connection, batch.schema)
            if as_text:
                columns = list(batch.columns)
                for i in as_text:
                    columns[i] = _as_text(columns[i], batch.schema.names[i])
                batch = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
            with self._connection.cursor() as cursor:
                cursor.executemany(sql, batch)
            self.appended += batch.num_rows
            self.rows += batch.num_rows

    def _as_copy(self, batch: pa.RecordBatch) -> pa.RecordBatch | None:
        """``batch`` with the plain INSERT's column names, its fields in order, if COPY can
        append it as the INSERT would (:meth:`JdbcSink._copyable_columns`). Not a batch
        with a text field for a column of another type: the INSERT has PostgreSQL parse the
        text, which COPY's conversion in Arrow does not match in every case."""
        names = self.sink.copyable(self._connection)
        if names is None or batch.num_columns != len(names):
            return None
        renamed = batch.rename_columns(names)
        if self._columns is None:
            self._columns = self.sink.columns(self._connection, renamed.schema)
        for field in renamed.schema:
            target = self._columns.get(field.name)
            if target is None:
                return None
            text = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
            if text and not pa.types.is_string(target.type) and (target.metadata or {}).get(_SENT_KEY) is None:
                return None
        return renamed

    def _write_changes(self, batches: list[pa.RecordBatch]) -> None:
        """Change rows (plain rows as inserts) into the stage, each with its place and kind."""
        if self.sink.exactly_once:
            self._stage, columns = self.sink.stage(self.tag)
        else:
            columns = staging.data_columns(self._connection, staging.TEMP_STAGE)
        rows = []
        for batch in batches:
            data = self._cast(strip_kinds(batch))
            self._check_keys(data, plain=not has_kinds(batch.schema))
            rows.append(staging.staged(data, kinds_of(batch), self._seq, columns))
            self._seq += batch.num_rows
        for run in _same_schema_runs(rows):
            with self._connection.cursor() as cursor:
                if self.sink.exactly_once:
                    cursor.adbc_ingest(self._stage, run, mode="append", db_schema_name=self.sink.schema)
                else:
                    cursor.adbc_ingest(staging.TEMP_STAGE, run, mode="append", temporary=True)
            self.rows += run.num_rows

    def _check_keys(self, data: pa.RecordBatch, plain: bool) -> None:
        """The rows can be applied by key. A null key is refused here, in the writer, not
        by the driver's apply after ``COMMIT PREPARED``: there it would fail the commit of
        an epoch already committed, again at every restore, and the job could never go on."""
        schema = data.schema
        if not self.sink.primary_keys:  # accepts() refuses it before Spark starts when the schema is known
            raise ConnectorError(
                f"Jdbc sink: change rows reach {self.sink.describe()}, which applies them by key: set primary_keys"
            )
        missing = [k for k in self.sink.primary_keys if k not in schema.names]
        if missing:
            hint = "; or set enable_upsert: false to append them" if plain and self.sink.plain_by_key else ""
            raise ConnectorError(
                f"Jdbc sink: primary key column {missing[0]!r} is not in the rows; their columns: "
                f"{', '.join(schema.names)}{hint}"
            )
        for key in self.sink.primary_keys:
            nulls = data.column(key).null_count
            if nulls:
                raise ConnectorError(
                    f"Jdbc sink: subtask {self.subtask}: primary key column {key!r} is null in "
                    f"{nulls} of {data.num_rows} row(s) for {self.sink.describe()}, which writes "
                    "rows by key: a null key names no row; filter such rows out before the sink"
                )

    def _commit_flush(self, keyed: bool) -> None:
        """Upsert mode: apply the flush's changes and commit, unless the sink was released."""
        if keyed:
            staging.apply(self._connection, staging.TEMP_STAGE, self.sink.table, self.sink.primary_keys, None)
        with self.sink._prepare_lock:  # as in prepare_commit: a released sink commits nothing more
            if self.sink._closed:
                self._abandon("its rows were committed")
            client.execute(self._connection, "COMMIT")

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        if self._connection is None:
            return None
        self._flush()
        if not self.sink.exactly_once:
            self._release()  # every flush committed itself
            return None
        gid = transactions.gid_for(self.tag, self.subtask, self.attempt, checkpoint_id, self.run_attempt)
        # the log counts the rows this transaction puts in the table (a restore to an older
        # checkpoint deletes them by its xid); staged rows are counted when applied
        client.execute(
            self._connection,
            transactions.log_row_sql(
                self.sink.schema,
                gid,
                self.tag,
                self.sink.table,
                self.subtask,
                self.attempt,
                checkpoint_id,
                self.appended,
            ),
        )
        # Under the sink's prepare lock, against close(): once the subtask has released
        # this sink instance (a re-registration restarts it from the restored checkpoint,
        # or the attempt ends), nobody will ever commit this epoch, and a prepared
        # transaction would outlive the session and hold its keys. So it is rolled back
        # instead; a PREPARE that got in first is finished before close() returns, and
        # the next sink instance's release_stale() finds it.
        with self.sink._prepare_lock:
            if self.sink._closed:
                self._abandon(f"checkpoint {checkpoint_id} was prepared")
            client.execute(self._connection, f"PREPARE TRANSACTION {client.quote_literal(gid)}")
        self._release()
        info: dict[str, Any] = {"gid": gid, "rows": self.rows}
        if self._stage is not None:
            info["stage"] = self._stage  # the driver applies its rows after the commit
        return info

    def _abandon(self, before: str) -> None:
        """Roll back the epoch of a released sink and say so (never return as if staged)."""
        connection, self._connection = self._connection, None
        try:
            client.execute(connection, "ROLLBACK")  # the keys are free when this returns
        except Exception:  # a broken session: the server rolls back when it goes
            pass
        client.close_quietly(connection)
        raise ConnectorError(
            f"Jdbc sink: subtask {self.subtask} released its sink before {before}; its "
            "transaction was rolled back (its rows are read again)"
        )

    def _release(self) -> None:
        connection, self._connection = self._connection, None
        self.sink.release(connection)

    def close(self) -> None:
        """Abort: roll back an open (unprepared) transaction."""
        connection, self._connection = self._connection, None
        self._buffer = []
        if connection is None:
            return
        try:
            client.execute(connection, "ROLLBACK")
        except Exception:  # a broken session: drop it, the server rolls back on disconnect
            client.close_quietly(connection)
            return
        self.sink.release(connection)


def _same_schema_runs(batches: list[pa.RecordBatch]) -> Iterator[pa.Table]:
    """Consecutive batches of one schema as one table each (one COPY each), in order."""
    start = 0
    for end in range(1, len(batches) + 1):
        if end == len(batches) or not batches[end].schema.equals(batches[start].schema):
            yield pa.Table.from_batches(batches[start:end])
            start = end
