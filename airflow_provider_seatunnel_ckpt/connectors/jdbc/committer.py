"""The ``Jdbc`` sink's committer, on the driver: ``COMMIT PREPARED`` of each epoch's
transactions (a gid already committed is found in the commit log), then the epoch's
staged rows applied by key (:mod:`.staging`); on restore, this job's rows of newer epochs
deleted and its other prepared transactions rolled back; the job's stages dropped when
it finishes or is discarded. The protocol: docs/jdbc.md, "Exactly once"."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import tenacity

from ...errors import ConnectorError
from ..api import JsonValue, SinkCommitter
from . import client, staging, transactions
from .client import qualified

log = logging.getLogger(__name__)

#: how long the driver's committer keeps reconnecting to a server that went away
COMMIT_RETRY_S = 60.0
#: how long the driver's apply of an epoch's staged changes waits for a row lock (another
#: session's transaction on the same keys); then the commit fails, and is retried on restore
APPLY_LOCK_WAIT_S = 60.0
#: how long dropping a finished job's stage waits for a transaction that still holds it
STAGE_DROP_WAIT_S = 2.0


class JdbcSinkCommitter(SinkCommitter):
    """Runs on the driver: commits, rolls back and repairs this job's transactions.
    ``sink`` is the ``JdbcSink`` that made it (sink.py; not imported here: it imports this)."""

    def __init__(self, sink: Any, tag: str):
        self.sink = sink
        self.tag = tag

    def _connect(self) -> Any:
        return client.connect(self.sink.target)

    def _with_connection(self, work: Any, attempts: int | None = None) -> Any:
        """Run ``work(connection)``, reconnecting and starting over while the server is
        unreachable (a restart, a failover) for up to ``COMMIT_RETRY_S``, or ``attempts``
        times: every step is idempotent (a commit already done is found in the commit log)."""
        stop = tenacity.stop_after_attempt(attempts) if attempts else tenacity.stop_after_delay(COMMIT_RETRY_S)
        for attempt in tenacity.Retrying(
            retry=tenacity.retry_if_exception(client.is_connection_error),
            stop=stop,
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

        self._with_connection(commit_all, self.sink.max_commit_attempts)  # SeaTunnel's max_commit_attempts

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
            self._apply_epoch(
                connection, checkpoint_id, qualified(self.sink.schema, stage), [xid for _, _, xid in sorted(writers)]
            )

    def _apply_epoch(self, connection: Any, checkpoint_id: int, stage: str, writers: list[int]) -> None:
        sink = self.sink
        client.begin_durable(connection)
        try:
            client.execute(connection, f"SET LOCAL lock_timeout = {int(APPLY_LOCK_WAIT_S * 1000)}")
            upserted = staging.apply(connection, stage, sink.table, sink.primary_keys, writers)
            if upserted is not None:
                staging.forget(connection, stage, writers)
                client.execute(
                    connection, transactions.applied_log_sql(sink.schema, self.tag, sink.table, checkpoint_id, upserted)
                )
            client.execute(connection, "COMMIT")
        except Exception as err:
            try:
                client.execute(connection, "ROLLBACK")
            except Exception:  # a broken session rolls back when it goes
                pass
            if client.is_connection_error(err):
                raise  # _with_connection reconnects and starts over
            raise ConnectorError(
                f"Jdbc sink: applying the staged rows of checkpoint {checkpoint_id} to "
                f"{sink.describe()} failed: {client.reason(err)}"
            ) from None

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
                log.info(
                    "Jdbc sink: rows of epochs after checkpoint %d stay (upsert/at-least-once mode); the replay "
                    "writes them again",
                    after_checkpoint_id,
                )
            return
        connection = self._connect()
        try:
            newer = transactions.committed_after(connection, self.sink.schema, self.tag, after_checkpoint_id)
            if not newer:
                return
            client.begin_durable(connection)
            xids = [xid for _, xid, _ in newer]
            deleted = transactions.delete_rows_of(connection, self.sink.table, xids)
            for stage in staging.stages_of(connection, self.sink.schema, self.tag):
                staging.forget(connection, stage, xids)  # committed, never applied: never will be
            transactions.forget(connection, self.sink.schema, self.tag, [gid for gid, _, _ in newer])
            client.execute(connection, "COMMIT")
            expected = sum(count for _, _, count in newer)
            log.warning(
                "Jdbc sink: deleted %d row(s) of %d transaction(s) committed after checkpoint %d from %s "
                "(they will be written again)%s",
                deleted,
                len(newer),
                after_checkpoint_id,
                self.sink.describe(),
                "" if deleted == expected else f"; {expected - deleted} were changed or deleted since",
            )
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
            if client.query(
                connection,
                f"SELECT to_regclass({client.quote_literal(qualified(self.sink.schema, transactions.COMMIT_LOG))}) IS NOT NULL",
            )[0][0]:
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
