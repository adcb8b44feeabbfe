"""Keep a Kerberos ticket cache fresh from a keytab.

SeaTunnel logs in once, so a job that outlives the ticket lifetime fails its next
checkpoint. :class:`KerberosTicketRenewer` renews as Hadoop's
``UserGroupInformation.checkTGTAndReloginFromKeytab`` does: before a request it looks at
the cached ticket and runs ``kinit -kt <keytab> <principal>`` when there is none, it is
someone else's, or it is close to expiry. It drives the MIT/Heimdal tools with argument
lists, never a shell (command names are parameters, for tests).

The renewal rules, ``klist`` parsing, the cache and ``krb5.conf``: docs/storage.md, "Kerberos".
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ..errors import CheckpointStorageError

log = logging.getLogger(__name__)

#: renew once this fraction of the ticket lifetime has passed (Hadoop's UGI uses 0.8)
RENEW_AT_LIFETIME_FRACTION = 0.8

_MIT_LINE = re.compile(
    r"^\s*(?P<start>\d{1,2}/\d{1,2}/\d{2,4}\s+\d{1,2}:\d{2}:\d{2})\s+"
    r"(?P<end>\d{1,2}/\d{1,2}/\d{2,4}\s+\d{1,2}:\d{2}:\d{2})\s+krbtgt/",
)
_HEIMDAL_LINE = re.compile(
    r"^\s*(?P<start>[A-Z][a-z]{2}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s+\d{4})\s+"
    r"(?P<end>[A-Z][a-z]{2}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s+\d{4})\s+krbtgt/",
)
_PRINCIPAL_LINE = re.compile(r"^\s*(?:Default principal|Principal):\s*(?P<p>\S+)\s*$")
_MIT_FORMATS = ("%m/%d/%Y %H:%M:%S", "%m/%d/%y %H:%M:%S")
_HEIMDAL_FORMATS = ("%b %d %H:%M:%S %Y",)


@dataclass(frozen=True)
class Ticket:
    """The ticket-granting ticket found in the cache (times in seconds since the epoch)."""

    principal: str | None
    start: float
    expires: float


def parse_klist(output: str) -> Ticket | None:
    """The TGT in ``klist`` output (MIT or Heimdal, C locale), or None if none is listed."""
    principal = None
    for line in output.splitlines():
        m = _PRINCIPAL_LINE.match(line)
        if m and principal is None:
            principal = m.group("p")
            continue
        for pattern, formats in ((_MIT_LINE, _MIT_FORMATS), (_HEIMDAL_LINE, _HEIMDAL_FORMATS)):
            m = pattern.match(line)
            if m:
                start = _parse_time(m.group("start"), formats)
                end = _parse_time(m.group("end"), formats)
                if start is not None and end is not None:
                    return Ticket(principal, start, end)
    return None


def _parse_time(text: str, formats: tuple[str, ...]) -> float | None:
    text = " ".join(text.split())
    for fmt in formats:
        try:
            return datetime.strptime(text, fmt).timestamp()  # klist prints local time
        except ValueError:
            continue
    return None


def _same_principal(found: str | None, wanted: str) -> bool:
    if found is None:
        return True  # the tool did not say; trust the cache
    if "@" in wanted:
        return found == wanted
    return found.split("@", 1)[0] == wanted


class KerberosTicketRenewer:
    """Runs ``kinit -kt`` whenever the cached ticket is missing or close to expiry.

    Thread-safe; cheap to call before every request: between checks (every
    ``check_interval_s``) it only compares the clock with the cached renewal time.
    """

    def __init__(
        self,
        principal: str,
        keytab: str,
        *,
        ccache: str | None = None,
        krb5_conf: str | None = None,
        kinit: str = "kinit",
        klist: str = "klist",
        margin_s: float = 300.0,
        check_interval_s: float = 60.0,
        fallback_refresh_s: float = 4 * 3600.0,
        command_timeout_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ):
        if not principal or not keytab:
            raise ValueError("principal and keytab are required")
        self.principal = principal
        self.keytab = keytab
        self.ccache = ccache
        self.krb5_conf = krb5_conf
        self.kinit = kinit
        self.klist = klist
        self.margin_s = margin_s
        self.check_interval_s = check_interval_s
        self.fallback_refresh_s = fallback_refresh_s
        self.command_timeout_s = command_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._renew_at: float | None = None  # when the current ticket must be renewed
        self._next_check: float = float("-inf")  # when to look at the cache again
        self._last_kinit: float | None = None  # clock() of our last kinit in this process
        self.kinit_count = 0  #: how many times kinit ran (for logs and tests)

    def __repr__(self) -> str:
        return f"KerberosTicketRenewer(principal={self.principal!r}, keytab={self.keytab!r})"

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_lock"]
        state["_renew_at"] = state["_last_kinit"] = None
        state["_next_check"] = float("-inf")
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ---- public -----------------------------------------------------------------
    def ensure_fresh(self) -> None:
        """Make sure a ticket for ``principal`` is valid for at least ``margin_s`` more (half
        its lifetime, for a ticket shorter than twice the margin)."""
        with self._lock:
            now = self._clock()
            if self._renew_at is not None and now < self._renew_at and now < self._next_check:
                return
            ticket, valid = self._inspect()
            renew_at = self._renewal_time(ticket, valid)
            if renew_at is None or now >= renew_at:
                self._run_kinit()
                self._last_kinit = now
                ticket, valid = self._inspect()
                renew_at = self._renewal_time(ticket, valid)
                if renew_at is None or now >= renew_at:
                    raise CheckpointStorageError(
                        f"hdfs: kinit for principal {self.principal} succeeded but "
                        "klist shows no valid ticket (check KRB5CCNAME and the keytab)"
                    )
            self._renew_at = renew_at
            self._next_check = now + self.check_interval_s

    # ---- internals --------------------------------------------------------------
    def _renewal_time(self, ticket: Ticket | None, valid: bool) -> float | None:
        if ticket is not None:
            if not _same_principal(ticket.principal, self.principal):
                return None
            lifetime = max(0.0, ticket.expires - ticket.start)
            # at most half the lifetime: a ticket no longer than the margin (a KDC's
            # ticket_lifetime of minutes) must not be due the moment it is issued
            margin = min(self.margin_s, lifetime / 2)
            return min(ticket.start + RENEW_AT_LIFETIME_FRACTION * lifetime, ticket.expires - margin)
        if valid and self._last_kinit is not None:
            return self._last_kinit + self.fallback_refresh_s  # dates unreadable: renew on a timer
        return None  # no ticket, or one of unknown age we did not get ourselves: kinit now

    def _inspect(self) -> tuple[Ticket | None, bool]:
        """(parsed ticket or None, whether ``klist -s`` says a valid ticket exists)."""
        out = self._run([self.klist, *self._cache_args()], check=False)
        if out is None:
            return None, False
        ticket = parse_klist(out)
        if ticket is not None:
            return ticket, ticket.expires > self._clock()
        return None, self._run([self.klist, "-s", *self._cache_args()], check=False) is not None

    def _run_kinit(self) -> None:
        log.info("kinit for principal %s from keytab %s", self.principal, self.keytab)
        self._run([self.kinit, "-kt", self.keytab, *self._cache_args(), self.principal], check=True)
        self.kinit_count += 1

    def _cache_args(self) -> list[str]:
        return ["-c", self.ccache] if self.ccache else []

    def _run(self, argv: list[str], *, check: bool) -> str | None:
        env = dict(os.environ, LC_ALL="C", LANG="C")
        if self.krb5_conf:
            env["KRB5_CONFIG"] = self.krb5_conf
        try:
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=self.command_timeout_s,
                env=env,
                check=False,
            )
        except FileNotFoundError:
            raise CheckpointStorageError(
                f"hdfs: Kerberos is configured but {argv[0]!r} was not found on PATH; "
                "install the Kerberos client tools (krb5-user / krb5-workstation)"
            ) from None
        except subprocess.TimeoutExpired:
            raise CheckpointStorageError(
                f"hdfs: {os.path.basename(argv[0])} did not finish within "
                f"{self.command_timeout_s:g} s (principal {self.principal})"
            ) from None
        if proc.returncode != 0:
            if check:
                detail = (proc.stderr or proc.stdout or "").strip().splitlines()
                raise CheckpointStorageError(
                    f"hdfs: kinit for principal {self.principal} with keytab {self.keytab} "
                    f"failed (exit {proc.returncode})" + (f": {detail[-1]}" if detail else "")
                )
            return None
        return proc.stdout
