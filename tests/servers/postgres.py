"""A real PostgreSQL server for tests: Debian's server binaries, a throw-away cluster.

``initdb`` into a fresh directory, then ``pg_ctl start`` on a free loopback port with
``max_prepared_transactions`` set (the Jdbc sink's two-phase commit needs it). Durability
settings are relaxed (``fsync=off``): tests crash the *server* (``restart_immediate``),
never the machine, and WAL replay after a crash still runs. ``synchronous_commit=off`` is
relaxed too, and it does lose acknowledged commits in a server crash: deliberately, as a
user's tuned server would, for the Jdbc sink must not depend on it (its committing
transactions set it on themselves: tests/integration/jdbc/test_durable_commits.py).

PostgreSQL refuses to run as root, and CI runs as root: then the cluster belongs to the
``postgres`` system user (created by Debian's package) and lives outside pytest's
root-only temp directories. ``scripts/test`` installs the package when it is missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

SERVER_USER = "postgres"


def find_bin_dir() -> Path:
    configured = os.environ.get("SEATUNNEL_CKPT_PG_BIN")
    if configured:
        return Path(configured)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    if candidates:
        return Path(candidates[-1]).parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        found = Path(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip())
        if (found / "postgres").exists():
            return found
    raise RuntimeError("no PostgreSQL server binaries: install Debian's postgresql package (scripts/test does it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    host = "127.0.0.1"

    def __init__(self, max_prepared_transactions: int = 64, max_connections: int = 200):
        self.max_prepared_transactions = max_prepared_transactions
        self.max_connections = max_connections
        self.password = "pg-" + secrets.token_hex(12)
        self.port = _free_port()
        self.bin = find_bin_dir()
        self.root: Path | None = None
        self._started = False

    # ---- lifecycle ------------------------------------------------------------------------
    def _as_server_user(self) -> dict[str, Any]:
        if os.geteuid() != 0:
            return {}
        return {"user": SERVER_USER, "group": pwd.getpwnam(SERVER_USER).pw_gid}

    def _run(self, *args: str) -> None:
        result = subprocess.run(
            [str(self.bin / args[0]), *args[1:]], capture_output=True, text=True, timeout=120, **self._as_server_user()
        )
        if result.returncode != 0:
            log = self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({result.returncode}): {result.stderr.strip()[-2000:]}\n{log}")

    @property
    def data_dir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def log_path(self) -> Path:
        assert self.root is not None
        return self.root / "server.log"

    def start(self) -> PostgresServer:
        self.root = Path(tempfile.mkdtemp(prefix="seatunnel-ckpt-pg-"))
        password_file = self.root / "pw"
        password_file.write_text(self.password + "\n")
        if os.geteuid() == 0:
            entry = pwd.getpwnam(SERVER_USER)
            for path in (self.root, password_file):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data_dir),
            "-U",
            "postgres",
            "--auth=scram-sha-256",
            f"--pwfile={password_file}",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        password_file.unlink()
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.root}",
                f"-c max_prepared_transactions={self.max_prepared_transactions}",
                f"-c max_connections={self.max_connections}",
                "-c fsync=off",
                "-c full_page_writes=off",
                "-c synchronous_commit=off",
            ]
        )
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-o", options, "-l", str(self.log_path), "-w", "-t", "60", "start"
        )
        self._started = True
        return self

    def restart_immediate(self) -> None:
        """A crash (no checkpoint, no clean shutdown) and recovery on the same port."""
        # -l again: pg_ctl does not remember it, and a server started without one would
        # inherit (and hold open) the pipe this process reads pg_ctl's output from
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-l", str(self.log_path), "-w", "-t", "60", "restart"
        )

    def stop(self) -> None:
        if self.root is None:
            return
        if self._started:
            try:
                self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60", "stop")
            except Exception:
                self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
            self._started = False
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- clients --------------------------------------------------------------------------
    def uri(self, database: str = "postgres", user: str = "postgres", password: str | None = None) -> str:
        secret = quote(self.password if password is None else password, safe="")
        return f"postgresql://{quote(user, safe='')}:{secret}@{self.host}:{self.port}/{database}"

    def jdbc_url(self, database: str = "postgres") -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}"

    def execute(self, sql: str, params: Any = None, database: str = "postgres") -> list[tuple]:
        import psycopg

        with psycopg.connect(self.uri(database), autocommit=True) as connection:
            cursor = connection.execute(sql, params)
            return cursor.fetchall() if cursor.description is not None else []

    def create_database(self, name: str | None = None) -> str:
        name = name or f"t_{secrets.token_hex(6)}"
        self.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        # prepared transactions keep a database busy even WITH (FORCE): roll them back first
        for (gid,) in self.execute("SELECT gid FROM pg_prepared_xacts WHERE database = %s", (name,)):
            self.execute(f"ROLLBACK PREPARED '{gid}'", database=name)
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def create_user(self, name: str, password: str) -> None:
        from psycopg import sql

        self.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name), sql.Literal(password)).as_string()
        )
