"""The Jdbc sink's prepared transactions: names, the commit log, commit and roll back.

One transaction per subtask and epoch is prepared (``PREPARE TRANSACTION gid``) at the
barrier and committed by the driver (``COMMIT PREPARED gid``) once the checkpoint is
durable. The gid (:func:`gid_for`) encodes the job (or sink) tag, the driver's run
attempt, the subtask, its attempt and the checkpoint, so a job's transactions are found
in ``pg_prepared_xacts`` by prefix; the run attempt keeps a zombie driver and the
claimant apart (rules at :func:`older_run`).

Each prepared transaction also inserts one row into the **commit log** inside itself, so
a replayed ``COMMIT PREPARED`` of a vanished gid is known done (or known lost), and the
log's transaction id (every committed row's ``xmin``) lets a restore to an older
checkpoint delete the rows of newer epochs. docs/jdbc.md, "Exactly once".
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...errors import ConnectorError
from . import client
from .client import in_list, qualified, quote_literal

log = logging.getLogger(__name__)

COMMIT_LOG = "seatunnel_ckpt_commit_log"
GID_PREFIX = "stckpt"
#: the run attempt is optional: gids of older releases have none
_GID = re.compile(rf"{GID_PREFIX}-([0-9a-f]{{12}})-(?:r(\d+)-)?(\d+)-(\d+)-(\d+)")
_XID_MODULUS = 2**32


def job_tag(job_id: str) -> str:
    return hashlib.sha256(job_id.encode("utf-8")).hexdigest()[:12]


def sink_tag(job_id: str, instance: str | None) -> str:
    """The tag of one Jdbc sink of a job: the job's own for its first (or only) one, as in
    releases that allowed one; the job's and the sink's place for each other one. Two
    sinks of a job must not share a tag: on one database the second one's PREPARE waited
    for ever on the first one's commit-log row (same gid)."""
    return job_tag(job_id if instance is None else f"{job_id}\x00{instance}")


def gid_for(tag: str, subtask: int, attempt: int, checkpoint_id: int, run_attempt: int | None = 0) -> str:
    """The gid of one subtask's epoch; ``run_attempt`` None gives an older release's form."""
    run = "" if run_attempt is None else f"r{int(run_attempt)}-"
    return f"{GID_PREFIX}-{tag}-{run}{subtask}-{attempt}-{checkpoint_id}"


class Gid(NamedTuple):
    tag: str
    subtask: int
    attempt: int
    checkpoint_id: int
    #: None: written by a release whose gids had no run attempt (older than every run)
    run_attempt: int | None


def parse_gid(gid: str) -> Gid | None:
    match = _GID.fullmatch(gid)
    if match is None:
        return None
    run = match.group(2)
    return Gid(
        match.group(1), int(match.group(3)), int(match.group(4)), int(match.group(5)), None if run is None else int(run)
    )


def older_run(gid_run: int | None, run_attempt: int) -> bool:
    """A gid of a run before ``run_attempt`` (an older release's gid is older than all).

    The run attempt is in the gid because checkpoint ids alone repeat across drivers: a
    driver that was taken over but still runs (a zombie, run N) keeps triggering the ids
    the claimant (run N + 1) also uses, and without the run both would prepare the same
    gid for the same subtask and checkpoint (the second waits for ever on the first's
    commit-log row, or is committed or rolled back in its place). The rules, for every
    committer operation:

    * a run never rolls back a transaction of a *newer* run (it is the zombie, the newer
      run owns it);
    * a run rolls back every uncommitted transaction of an *older* run that its restored
      checkpoint does not name, whatever its checkpoint id: the claimant committed what it
      restored before any subtask started, and an older run can complete no checkpoint
      after the claim (engine/fencing.py), so nothing else of it will ever be committed;
    * gids written by releases before the run was part of them (``stckpt-{tag}-{subtask}-
      {attempt}-{checkpoint}``) count as older than every run.
    """
    return gid_run is None or gid_run < run_attempt


@dataclass(frozen=True)
class PreparedTransaction:
    gid: str
    subtask: int
    attempt: int
    checkpoint_id: int
    prepared_at: str
    run_attempt: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "gid": self.gid,
            "run_attempt": self.run_attempt,
            "subtask": self.subtask,
            "attempt": self.attempt,
            "checkpoint_id": self.checkpoint_id,
            "prepared_at": self.prepared_at,
        }


def ensure_commit_log(connection: Any, schema: str | None) -> None:
    table = qualified(schema, COMMIT_LOG)
    try:
        client.execute(
            connection,
            f"CREATE TABLE IF NOT EXISTS {table} (gid text PRIMARY KEY, job_tag text NOT NULL, "
            "target text NOT NULL, subtask integer NOT NULL, attempt integer NOT NULL, checkpoint_id bigint NOT NULL, "
            "xid bigint NOT NULL, row_count bigint NOT NULL, prepared_at timestamptz NOT NULL DEFAULT now())",
        )
    except Exception as err:
        if client.sqlstate(err) not in client.DUPLICATE_OBJECT:  # two drivers creating it at once
            raise


def log_row_sql(
    schema: str | None, gid: str, tag: str, target: str, subtask: int, attempt: int, checkpoint_id: int, rows: int
) -> str:
    """The commit-log insert a prepared transaction runs inside itself."""
    return (
        f"INSERT INTO {qualified(schema, COMMIT_LOG)} (gid, job_tag, target, subtask, attempt, checkpoint_id, xid, row_count) "
        f"VALUES ({quote_literal(gid)}, {quote_literal(tag)}, {quote_literal(target)}, {subtask}, {attempt}, "
        f"{checkpoint_id}, txid_current(), {rows})"
    )


def applied_log_sql(schema: str | None, tag: str, target: str, checkpoint_id: int, rows: int) -> str:
    """The commit-log row of an epoch's staged changes, inserted by the driver's transaction
    that applies them (:mod:`.staging`): its ``xid`` is the ``xmin`` of the rows it wrote,
    which a restore to an older checkpoint deletes. No subtask: -1."""
    gid = f"{quote_literal(f'{GID_PREFIX}-{tag}-applied-{checkpoint_id}-')} || txid_current()"
    return (
        f"INSERT INTO {qualified(schema, COMMIT_LOG)} (gid, job_tag, target, subtask, attempt, checkpoint_id, xid, row_count) "
        f"VALUES ({gid}, {quote_literal(tag)}, {quote_literal(target)}, -1, -1, {checkpoint_id}, txid_current(), {rows})"
    )


def xids_of(connection: Any, schema: str | None, gids: Iterable[str]) -> dict[str, int]:
    """The 32-bit transaction id (the ``xmin`` of its rows) of each committed gid."""
    gids = list(gids)
    if not gids:
        return {}
    rows = client.query(
        connection, f"SELECT gid, xid FROM {qualified(schema, COMMIT_LOG)} WHERE gid IN ({in_list(gids)})"
    )
    return {gid: int(xid) % _XID_MODULUS for gid, xid in rows}


def prepared(
    connection: Any, tag: str, run_attempt: int | None = None, subtask: int | None = None
) -> list[PreparedTransaction]:
    """This job's prepared transactions in the connection's database, oldest first: of
    every run and subtask, or of one run's one subtask (``run_attempt`` and ``subtask``)."""
    prefix = f"{GID_PREFIX}-{tag}-"
    if run_attempt is not None and subtask is not None:
        prefix += f"r{int(run_attempt)}-{int(subtask)}-"
    rows = client.query(
        connection,
        "SELECT gid, prepared::text FROM pg_prepared_xacts WHERE database = current_database() "
        f"AND gid LIKE {quote_literal(prefix + '%')} ORDER BY prepared",
    )
    found = []
    for gid, prepared_at in rows:
        parsed = parse_gid(gid)
        if parsed is not None:
            found.append(
                PreparedTransaction(
                    gid, parsed.subtask, parsed.attempt, parsed.checkpoint_id, prepared_at, parsed.run_attempt
                )
            )
    return found


def commit(connection: Any, gid: str, schema: str | None, describe: str) -> bool:
    """``COMMIT PREPARED``; False when the log shows it was committed before."""
    try:
        client.execute(connection, f"COMMIT PREPARED {quote_literal(gid)}")
        return True
    except Exception as err:
        if client.is_connection_error(err):
            raise  # the caller reconnects and tries again
        if client.sqlstate(err) != client.UNDEFINED_OBJECT:
            raise ConnectorError(
                f"Jdbc sink: COMMIT PREPARED {gid} at {describe} failed: {client.reason(err)}"
            ) from None
    rows = client.query(connection, f"SELECT 1 FROM {qualified(schema, COMMIT_LOG)} WHERE gid = {quote_literal(gid)}")
    if rows:
        return False
    raise ConnectorError(
        f"Jdbc sink: prepared transaction {gid} at {describe} is gone and was never committed: the rows it held are "
        "lost (was it rolled back by hand?); restore an older checkpoint to write them again"
    )


def rollback(connection: Any, gid: str) -> None:
    try:
        client.execute(connection, f"ROLLBACK PREPARED {quote_literal(gid)}")
    except Exception as err:
        if client.sqlstate(err) != client.UNDEFINED_OBJECT:  # gone already: nothing to undo
            raise


def committed_after(connection: Any, schema: str | None, tag: str, checkpoint_id: int) -> list[tuple[str, int, int]]:
    """(gid, 32-bit xid, rows) of this job's committed transactions of epochs after ``checkpoint_id``."""
    rows = client.query(
        connection,
        f"SELECT gid, xid, row_count FROM {qualified(schema, COMMIT_LOG)} "
        f"WHERE job_tag = {quote_literal(tag)} AND checkpoint_id > {int(checkpoint_id)}",
    )
    return [(gid, int(xid) % _XID_MODULUS, int(count)) for gid, xid, count in rows]


def delete_rows_of(connection: Any, table: str, xids: Iterable[int]) -> int:
    """Delete the rows those transactions inserted (their ``xmin``); returns how many."""
    values = [str(int(x)) for x in xids]
    if not values:
        return 0
    rows = client.query(
        connection,
        f"WITH gone AS (DELETE FROM {table} WHERE xmin = ANY(ARRAY[{in_list(values)}]::xid[]) RETURNING 1) "
        "SELECT count(*) FROM gone",
    )
    return int(rows[0][0])


def forget(connection: Any, schema: str | None, tag: str, gids: Iterable[str] | None = None) -> None:
    """Delete commit-log rows of this job (all, or the ``gids``)."""
    sql = f"DELETE FROM {qualified(schema, COMMIT_LOG)} WHERE job_tag = {quote_literal(tag)}"
    gids = list(gids) if gids is not None else None
    if gids is not None:
        if not gids:
            return
        sql += f" AND gid IN ({in_list(gids)})"
    client.execute(connection, sql)
