"""``Jdbc`` sink: rows into a PostgreSQL table with COPY, exactly once by two-phase commit.

Options (SeaTunnel's names):

* ``url``, ``user``, ``password``, ``driver``; ``database`` (overrides the URL's)
* ``table``: ``schema.table`` or ``table``
* ``primary_keys``: key columns (for a table the sink creates, for upserts, and for change
  rows: see below)
* ``is_exactly_once`` (default true): two-phase commit, see below. Needs
  ``max_prepared_transactions`` > 0 on the server. With ``false`` and ``primary_keys``
  the sink upserts (``INSERT ... ON CONFLICT DO UPDATE``) and commits every flush: a
  replay writes the same rows again, so the result is effectively once. With ``false``
  and no keys it appends at least once.
* ``generate_sink_sql`` (default true; false, with a hand-written ``query``, is not supported)
* ``batch_size``: rows per COPY (default 10,000; bigger batches are sent as they come)
* ``schema_save_mode``: ``CREATE_SCHEMA_WHEN_NOT_EXIST`` (default: create the table from
  the first batch's Arrow schema) or ``ERROR_WHEN_SCHEMA_NOT_EXIST``
* ``data_save_mode``: ``APPEND_DATA`` (the only mode: a resumable job never drops data)
* ``xa_data_source_class_name``, ``max_retries``, ``connection_check_timeout_sec``: accepted
  for compatibility (the first two mean nothing without a JVM)

Change rows (a ``canal_json``/``debezium_json``/... Kafka source, SeaTunnel's RowKind) are
applied by ``primary_keys``, as SeaTunnel's Jdbc sink does: an INSERT or UPDATE_AFTER
upserts its row, an UPDATE_BEFORE or DELETE deletes its key, the last change of a key in
an epoch counting (:mod:`.staging`). Plain rows sent to the same sink (another source
wired into it) are inserts, applied the same way: the engine gives every batch of such
a sink its kinds. Exactly once, the writers never touch the keys: each copies its
change rows into a stage table inside its prepared transaction, and the driver applies
an epoch's staged rows in one transaction after ``COMMIT PREPARED``, so two subtasks or
two tables changing one key in one epoch never wait on each other's prepared locks.
Replaying epochs after a restore applies the same last change per key again, so the
table ends as it would have. A job whose change rows would reach a Jdbc sink without
``primary_keys`` is refused before it starts.

Plain rows (a sink no change rows reach) are appended with COPY inside the epoch's
transaction. A writer's session waits at most ``LOCK_WAIT_S`` for a row lock: two
writers of a job appending one key (a duplicate primary key) fail the subtask with a
message saying so instead of waiting for ever on a prepared transaction.

Exactly-once protocol (one transaction per subtask and epoch):

1. the epoch's first row opens a transaction (``BEGIN``) on a pooled connection;
   batches are cast to the table's column types and sent with binary COPY (change rows:
   into the stage);
2. ``prepare_commit(checkpoint)`` inserts the commit-log row and runs
   ``PREPARE TRANSACTION 'stckpt-{job}-r{run}-{subtask}-{attempt}-{checkpoint}'`` (the
   driver's run attempt keeps a taken-over driver's gids apart from its claimant's: see
   :mod:`.transactions`); the commit info is the gid. An epoch without rows prepares nothing;
3. after the checkpoint is durable the driver runs ``COMMIT PREPARED`` (a gid already
   committed is recognised in the commit log), then applies the staged change rows of
   each epoch (already applied ones are gone from the stage);
4. on restore: the restored checkpoint's gids are committed, this job's committed rows
   of newer epochs are deleted (by ``xmin``: the applying transactions' too, and their
   staged rows not yet applied), every other prepared transaction of the
   job is rolled back; a restarted subtask's stale transactions are rolled back at once
   (they hold locks on the keys it is about to write again): by the driver when the
   subtask registers again, and by the subtask itself before it writes (see
   ``JdbcSink.release_stale``, which closes the race between the two).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa
import tenacity

from ...errors import ConfigError, ConnectorError
from ..api import Dataset, JsonValue, Sink, SinkCommitter, SinkWriter, has_kinds, kinds_of, strip_kinds, without_kinds
from ..datasets import postgres_dataset
from ..options import Options
from . import client, staging, transactions
from .client import qualified, quote_ident
from .target import DEFAULT_CONNECT_TIMEOUT_S, PgTarget, parse_target
from .types import pg_type, read_plan

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 10_000
#: how long the driver's committer keeps reconnecting to a server that went away
COMMIT_RETRY_S = 60.0
#: how long a writer's statement waits for a row lock (its session's lock_timeout). No
#: writer of a job waits on another's change rows (they are staged), so only an append of
#: a key another transaction holds waits: a duplicate key if that one commits, and for
#: ever if it is a prepared transaction of this job's epoch; this bounds it
LOCK_WAIT_S = 10.0
#: how long the driver's apply of an epoch's staged changes waits for a row lock (another
#: session's transaction on the same keys); then the commit fails, and is retried on restore
APPLY_LOCK_WAIT_S = 60.0
#: how long dropping a finished job's stage waits for a transaction that still holds it
STAGE_DROP_WAIT_S = 2.0
SCHEMA_SAVE_MODES = ("create_schema_when_not_exist", "error_when_schema_not_exist")


class JdbcSink(Sink):
    plugin_name = "Jdbc"
    change_rows = "keep"  # applied by primary_keys (see above)
    # the sinks of several source tables may write one table (SeaTunnel's Kafka table_list
    # jobs do): each commits its own named transactions
    tables_may_share_target = True

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = Options(
            self.plugin_name,
            options,
            known={
                "url", "driver", "user", "password", "database", "table", "primary_keys", "is_exactly_once",
                "generate_sink_sql", "batch_size", "schema_save_mode", "data_save_mode", "xa_data_source_class_name",
                "max_retries", "connection_check_timeout_sec", "query",
            },
        )
        timeout = opts.int("connection_check_timeout_sec", DEFAULT_CONNECT_TIMEOUT_S, minimum=1)
        target = parse_target(options, timeout)
        if opts.has("database"):
            target = target.with_database(opts.str("database"))
        self.target: PgTarget = target
        schema, self.table_name = client.split_table_name(opts.str("table"))
        self.schema = schema or target.current_schema
        self.table = qualified(self.schema, self.table_name)
        self.primary_keys: list[str] = opts.str_list("primary_keys") if opts.has("primary_keys") else []
        self.exactly_once = opts.bool("is_exactly_once", True)
        if not opts.bool("generate_sink_sql", True) or opts.has("query"):
            raise ConfigError("generate_sink_sql", "only generate_sink_sql: true is supported (the sink writes its own COPY); "
                                                   "remove query")
        self.batch_size: int = opts.int("batch_size", DEFAULT_BATCH_SIZE, minimum=1)
        self.schema_save_mode: str = opts.str("schema_save_mode", "create_schema_when_not_exist", choices=SCHEMA_SAVE_MODES)
        data_mode = opts.str("data_save_mode", "append_data", choices=("append_data",))
        assert data_mode == "append_data"
        self.upsert = not self.exactly_once and bool(self.primary_keys)
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
        state.update(_pool=[], _lock=None, _columns=None, _closed=False, _prepare_lock=None, _released_stale=set(),
                     _stages={})
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
            if not exists and self.schema_save_mode == "error_when_schema_not_exist":
                raise ConfigError("table", f"{self.describe()} does not exist (schema_save_mode: ERROR_WHEN_SCHEMA_NOT_EXIST)")
            if exists:
                columns = self._read_columns(connection)
                missing = [k for k in self.primary_keys if k not in columns]
                if missing:
                    raise ConfigError("primary_keys", f"{', '.join(missing)} not in {self.describe()}; columns: {', '.join(columns)}")
                self._keys_unique = bool(self.primary_keys) and self._has_unique_index(connection)
                if self.upsert and not self._keys_unique:
                    raise self._no_unique_index("upserts")
            if not self.exactly_once and not self.primary_keys:
                log.warning("sink[0]: is_exactly_once is false and no primary_keys: rows replayed after a failure are "
                            "written again (at least once)")
            if self.exactly_once:
                transactions.ensure_commit_log(connection, self.schema)
        except ConfigError:
            raise
        except Exception as err:
            raise ConnectorError(f"Jdbc sink: checking {self.describe()} failed: {client.reason(err, self.target)}") from None
        finally:
            client.close_quietly(connection)

    def accepts(self, schema: pa.Schema) -> None:
        """Change rows (and the plain rows sent with them, inserts) are applied by key: the
        keys must be set, be columns of the rows, and (after preflight) have a unique index."""
        if not has_kinds(schema):
            return
        self.accepts_change_rows()
        missing = [k for k in self.primary_keys if k not in schema.names]
        if missing:
            raise ConfigError("primary_keys", f"{missing[0]!r} is not a column of the rows to apply by key "
                                              f"({', '.join(without_kinds(schema).names)})")
        if self._keys_unique is False:
            raise self._no_unique_index("applying change rows")

    def accepts_change_rows(self) -> None:
        if not self.primary_keys:
            raise ConfigError("primary_keys", "is required to apply change rows (updates and deletes) to "
                                              f"{self.describe()}: list the key columns")

    def _no_unique_index(self, need: str) -> ConfigError:
        return ConfigError("primary_keys", f"{self.describe()} has no primary key or unique index on "
                                           f"({', '.join(self.primary_keys)}), which {need} need")

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
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {self.table} LIMIT 0")
            schema = cursor.fetch_arrow_table().schema
        plan = read_plan(schema)
        return {f.name: f for f in plan.schema}

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
                    log.info("Jdbc sink: subtask %d rolled back %s: prepared by its previous registration for "
                             "checkpoint %d, after the restored checkpoint %d", subtask, xact.gid, xact.checkpoint_id,
                             after_checkpoint_id)
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
                    raise ConnectorError(f"Jdbc sink: creating the stage {name} for {self.describe()} failed: "
                                         f"{client.reason(err)}") from None
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
                raise ConnectorError(f"Jdbc sink: column {field.name!r} has Arrow type {field.type}, which has no "
                                     f"PostgreSQL column type; cast it in a transform")
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


class JdbcSinkWriter(SinkWriter):
    """One epoch of one subtask. Exactly once: one transaction, opened by the first row and
    prepared at the barrier; plain rows are appended to the table (COPY), change rows are
    copied into the stage and applied by the driver (:mod:`.staging`). Upsert mode: each
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
        arrays, fields = [], []
        for name, column in zip(batch.schema.names, batch.columns):
            target = self._columns.get(name)
            if target is None:
                raise ConnectorError(f"Jdbc sink: column {name!r} of the data is not in {self.sink.describe()}; "
                                     f"its columns: {', '.join(self._columns)}")
            if not column.type.equals(target.type):
                try:
                    column = column.cast(target.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                    raise ConnectorError(f"Jdbc sink: column {name!r} ({column.type}) cannot be written to "
                                         f"{self.sink.describe()} ({target.type}): {err}") from None
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
        keyed = self.sink.upsert or any(has_kinds(b.schema) for b in batches)
        try:
            if not self.sink.exactly_once:
                client.execute(self._connection, "BEGIN")
            if keyed:
                self._write_changes(batches)
            else:
                self._append(batches)
            if not self.sink.exactly_once:
                self._commit_flush(keyed)
        except Exception as err:
            if client.sqlstate(err) != client.LOCK_NOT_AVAILABLE:
                raise
            raise ConnectorError(
                f"Jdbc sink: subtask {self.subtask} waited {LOCK_WAIT_S:g} s for a row lock on {self.sink.describe()}: "
                "another transaction holds rows with the same keys (an append writes each key once, so two "
                "writers of this job appending one key fail here instead of waiting for ever; or a long "
                f"transaction of another session): {client.reason(err)}") from None

    def _append(self, batches: list[pa.RecordBatch]) -> None:
        for run in _same_schema_runs([self._cast(b) for b in batches]):
            with self._connection.cursor() as cursor:
                cursor.adbc_ingest(self.sink.table_name, run, mode="append", db_schema_name=self.sink.schema)
            self.appended += run.num_rows
            self.rows += run.num_rows

    def _write_changes(self, batches: list[pa.RecordBatch]) -> None:
        """Change rows (plain rows as inserts) into the stage, each with its place and kind."""
        if self.sink.exactly_once:
            self._stage, columns = self.sink.stage(self.tag)
        else:
            columns = staging.data_columns(self._connection, staging.TEMP_STAGE)
        rows = []
        for batch in batches:
            data = self._cast(strip_kinds(batch))
            self._check_keys(data.schema)
            rows.append(staging.staged(data, kinds_of(batch), self._seq, columns))
            self._seq += batch.num_rows
        for run in _same_schema_runs(rows):
            with self._connection.cursor() as cursor:
                if self.sink.exactly_once:
                    cursor.adbc_ingest(self._stage, run, mode="append", db_schema_name=self.sink.schema)
                else:
                    cursor.adbc_ingest(staging.TEMP_STAGE, run, mode="append", temporary=True)
            self.rows += run.num_rows

    def _check_keys(self, schema: pa.Schema) -> None:
        if not self.sink.primary_keys:  # accepts() refuses it before Spark starts when the schema is known
            raise ConnectorError(f"Jdbc sink: change rows reach {self.sink.describe()}, which applies them by key: "
                                 "set primary_keys")
        missing = [k for k in self.sink.primary_keys if k not in schema.names]
        if missing:
            raise ConnectorError(f"Jdbc sink: primary key column {missing[0]!r} is not in the rows; their columns: "
                                 f"{', '.join(schema.names)}")

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
        client.execute(self._connection, transactions.log_row_sql(
            self.sink.schema, gid, self.tag, self.sink.table, self.subtask, self.attempt, checkpoint_id, self.appended))
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
        raise ConnectorError(f"Jdbc sink: subtask {self.subtask} released its sink before {before}; its "
                             "transaction was rolled back (its rows are read again)")

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


class JdbcSinkCommitter(SinkCommitter):
    """Runs on the driver: commits, rolls back and repairs this job's transactions."""

    def __init__(self, sink: JdbcSink, tag: str):
        self.sink = sink
        self.tag = tag

    def _connect(self) -> Any:
        return client.connect(self.sink.target)

    def _with_connection(self, work: Any) -> Any:
        """Run ``work(connection)``, reconnecting and starting over while the server is
        unreachable (a restart, a failover) for up to ``COMMIT_RETRY_S``: every step is
        idempotent (a commit already done is found in the commit log)."""
        for attempt in tenacity.Retrying(
            retry=tenacity.retry_if_exception(client.is_connection_error),
            stop=tenacity.stop_after_delay(COMMIT_RETRY_S),
            wait=tenacity.wait_exponential(multiplier=0.2, max=5),
            reraise=True,
            before_sleep=lambda state: log.warning("Jdbc sink: %s; retrying", state.outcome.exception()),
        ):
            with attempt:
                connection = self._connect()
                try:
                    return work(connection)
                finally:
                    client.close_quietly(connection)

    def _gids(self, infos: Iterable[JsonValue]) -> list[str]:
        gids = []
        for info in infos:
            if info is None:
                continue
            gid = info.get("gid") if isinstance(info, Mapping) else None
            if not isinstance(gid, str) or transactions.parse_gid(gid) is None:
                raise ValueError(f"Jdbc sink: malformed commit info {info!r}")
            gids.append(gid)
        return gids

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        infos = list(commit_infos)
        gids = self._gids(infos)
        if not gids or not self.sink.exactly_once:
            return
        staged = [(info["gid"], info["stage"]) for info in infos if isinstance(info, Mapping) and info.get("stage")]

        def commit_all(connection: Any) -> None:
            for gid in gids:
                transactions.commit(connection, gid, self.sink.schema, self.sink.describe())
            if staged:
                self._apply(connection, staged)

        self._with_connection(commit_all)

    def _apply(self, connection: Any, staged: list[tuple[str, str]]) -> None:
        """Apply the committed staged changes (:mod:`.staging`), one transaction per epoch
        and stage, oldest epoch first; a replay finds nothing left to apply."""
        xids = transactions.xids_of(connection, self.sink.schema, [gid for gid, _ in staged])
        epochs: dict[tuple[int, str], list[tuple[int, int, int]]] = {}
        for gid, stage in staged:
            parsed = transactions.parse_gid(gid)
            assert parsed is not None  # checked by _gids
            epochs.setdefault((parsed.checkpoint_id, stage), []).append((parsed.subtask, parsed.attempt, xids[gid]))
        for (checkpoint_id, stage), writers in sorted(epochs.items()):
            self._apply_epoch(connection, checkpoint_id, qualified(self.sink.schema, stage),
                              [xid for _, _, xid in sorted(writers)])

    def _apply_epoch(self, connection: Any, checkpoint_id: int, stage: str, writers: list[int]) -> None:
        sink = self.sink
        client.execute(connection, "BEGIN")
        try:
            client.execute(connection, f"SET LOCAL lock_timeout = {int(APPLY_LOCK_WAIT_S * 1000)}")
            upserted = staging.apply(connection, stage, sink.table, sink.primary_keys, writers)
            if upserted is not None:
                staging.forget(connection, stage, writers)
                client.execute(connection, transactions.applied_log_sql(sink.schema, self.tag, sink.table,
                                                                        checkpoint_id, upserted))
            client.execute(connection, "COMMIT")
        except Exception as err:
            try:
                client.execute(connection, "ROLLBACK")
            except Exception:  # a broken session rolls back when it goes
                pass
            if client.is_connection_error(err):
                raise  # _with_connection reconnects and starts over
            raise ConnectorError(f"Jdbc sink: applying the change rows of checkpoint {checkpoint_id} to "
                                 f"{sink.describe()} failed: {client.reason(err)}") from None

    def cleanup(self, keep: Iterable[JsonValue], subtask: int | None = None) -> None:
        """Roll back this job's prepared transactions that ``keep`` does not name (of this
        run and every older one; never of a newer run)."""
        self.discard_orphans(subtask, None, keep)

    def discard_orphans(self, subtask: int | None, up_to_checkpoint_id: int | None, keep: Iterable[JsonValue]) -> None:
        """Roll back the prepared transactions ``keep`` does not name: this run's for
        checkpoints up to ``up_to_checkpoint_id``, and an older run's whatever their
        checkpoint (nothing of it will be committed any more: see :mod:`.transactions`).
        A newer run's are never touched: this driver was taken over, they are the
        claimant's. The run is read at each call: the engine sets it after the claim."""
        if not self.sink.exactly_once:
            return
        kept = set(self._gids(keep))
        run = self.sink.run_attempt

        def roll_back(connection: Any) -> None:
            for xact in transactions.prepared(connection, self.tag):
                if xact.gid in kept or (subtask is not None and xact.subtask != subtask):
                    continue
                older = transactions.older_run(xact.run_attempt, run)
                if not older and xact.run_attempt != run:
                    continue  # a newer run's: this driver is a zombie
                if not older and up_to_checkpoint_id is not None and xact.checkpoint_id > up_to_checkpoint_id:
                    continue
                transactions.rollback(connection, xact.gid)
                why = "never completed" if not older else "of a run this one took over"
                log.info("Jdbc sink: rolled back %s (checkpoint %d %s)", xact.gid, xact.checkpoint_id, why)

        self._with_connection(roll_back)

    def rollback(self, after_checkpoint_id: int) -> None:
        """Delete the rows this job committed in epochs after ``after_checkpoint_id``."""
        if not self.sink.exactly_once:
            if after_checkpoint_id > 0:
                log.info("Jdbc sink: rows of epochs after checkpoint %d stay (upsert/at-least-once mode); the replay "
                         "writes them again", after_checkpoint_id)
            return
        connection = self._connect()
        try:
            newer = transactions.committed_after(connection, self.sink.schema, self.tag, after_checkpoint_id)
            if not newer:
                return
            client.execute(connection, "BEGIN")
            xids = [xid for _, xid, _ in newer]
            deleted = transactions.delete_rows_of(connection, self.sink.table, xids)
            for stage in staging.stages_of(connection, self.sink.schema, self.tag):
                staging.forget(connection, stage, xids)  # committed, never applied: never will be
            transactions.forget(connection, self.sink.schema, self.tag, [gid for gid, _, _ in newer])
            client.execute(connection, "COMMIT")
            expected = sum(count for _, _, count in newer)
            log.warning("Jdbc sink: deleted %d row(s) of %d transaction(s) committed after checkpoint %d from %s "
                        "(they will be written again)%s", deleted, len(newer), after_checkpoint_id, self.sink.describe(),
                        "" if deleted == expected else f"; {expected - deleted} were changed or deleted since")
        finally:
            client.close_quietly(connection)

    def discard_job(self) -> None:
        """The job's checkpoints are being deleted: roll back its prepared transactions and
        drop its commit-log rows (committed data stays), of every run: an explicit
        ``delete`` or ``--discard-existing`` (the run attempt may be unknown here)."""
        if not self.sink.exactly_once:
            return
        connection = self._connect()
        try:
            for xact in transactions.prepared(connection, self.tag):
                transactions.rollback(connection, xact.gid)
            if client.query(connection, f"SELECT to_regclass({client.quote_literal(qualified(self.sink.schema, transactions.COMMIT_LOG))}) IS NOT NULL")[0][0]:
                transactions.forget(connection, self.sink.schema, self.tag)
            self._drop_stages(connection)
        finally:
            client.close_quietly(connection)

    def job_finished(self, restored_checkpoint_id: int | None) -> None:
        """Every epoch is committed and applied: the job's stages go (they stay, to be
        dropped by a later run or ``delete``, while a stale transaction still holds one)."""
        if not self.sink.exactly_once:
            return
        connection = self._connect()
        try:
            self._drop_stages(connection)
        finally:
            client.close_quietly(connection)

    def _drop_stages(self, connection: Any) -> None:
        client.execute(connection, f"SET lock_timeout = {int(STAGE_DROP_WAIT_S * 1000)}")
        for stage in staging.stages_of(connection, self.sink.schema, self.tag):
            try:
                client.execute(connection, f"DROP TABLE IF EXISTS {stage}")
            except Exception as err:
                if client.sqlstate(err) != client.LOCK_NOT_AVAILABLE:
                    raise
                log.info("Jdbc sink: %s is still in use (a prepared transaction); it stays", stage)

    def pending(self) -> list[dict[str, Any]]:
        """This job's prepared transactions (for ``seatunnel-ckpt inspect``)."""
        connection = self._connect()
        try:
            return [x.as_dict() for x in transactions.prepared(connection, self.tag)]
        finally:
            client.close_quietly(connection)
