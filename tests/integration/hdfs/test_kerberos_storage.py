"""The HDFS checkpoint storage with Kerberos, on Hadoop's own secured cluster: a
MiniDFSCluster behind a MiniKdc (Kerberos RPC, SPNEGO on WebHDFS as ``HTTP/localhost``,
block tokens; tests/servers/hadoop.py), configured with the ``seatunnel.yaml`` keys of
docs/storage.md, "Kerberos" (``kerberosPrincipal``, ``kerberosKeytab``, ``krb5Path``),
driven by MIT's ``kinit``/``klist`` and the ``[kerberos]`` extra's SPNEGO client:

* ``test_seatunnel_yaml_kerberos_storage_round_trips_checkpoints``: the storage logs in
  from the keytab into the process's ticket cache, stores and reads back checkpoints
  (retention included), and the NameNode itself (plain WebHDFS with a SPNEGO token of the
  test's own login) says the files belong to the ticket's principal, ``client``; a second
  process (``seatunnel-ckpt list``) logs in on its own and lists the same checkpoints.
* ``test_a_wrong_or_missing_keytab_fails_in_one_line``: the service keytab given for the
  client principal, a keytab of garbage and a keytab path that does not exist each end
  ``seatunnel-ckpt list`` with exit 1 and one ``error:`` line naming the principal, the
  keytab path and ``kinit``'s reason: no traceback, none of the file's bytes.
* ``test_an_expired_ticket_is_renewed_by_relogin_from_the_keytab``: ``krb5Path`` is a
  copy of the cluster's ``krb5.conf`` with ``ticket_lifetime = 12s`` (the MiniKdc issues
  what is asked for). The storage's ticket really expires while the job is idle (the same
  cache, copied, is refused by GSSAPI: "Ticket expired"); the next checkpoint, written by a
  new thread that must authenticate afresh, logs in again from the keytab (a second
  ``kinit``, a ticket starting after the first one's end). Then checkpoints every second
  across two more lifetimes, each from a new thread, all succeed, the ticket renewed
  before its end each time (at half its life: the renewal margin, 5 min, is capped at half
  the lifetime of a short ticket; without the cap every call failed).

Skipped where MIT's ``kinit``/``klist`` or the ``[kerberos]`` extra (requests-kerberos,
gssapi: built from source, needs libkrb5-dev) are missing: scripts/bootstrap installs
neither today.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import requests
import yaml

from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.storage import PipelineState, create_storage
from tests.servers import spnego

pytestmark = [
    pytest.mark.skipif(
        shutil.which("kinit") is None or shutil.which("klist") is None,
        reason="no MIT kinit/klist on PATH (Debian/Ubuntu: apt-get install krb5-user)",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("requests_kerberos") is None,
        reason="the [kerberos] extra is not installed (pip install 'airflow-provider-seatunnel-ckpt[kerberos]')",
    ),
    pytest.mark.skipif(not spnego.available(), reason="no MIT GSSAPI library (libgssapi_krb5.so.2) on this machine"),
]

JOB = "kerberos-job"
#: the short ticket lifetime of the expiry test (the MiniKdc's default is a day)
SHORT_LIFETIME_S = 12


# ---- helpers ---------------------------------------------------------------------------------
@pytest.fixture
def ccache(tmp_path: Path) -> Iterator[Path]:
    """This process's ticket cache (``KRB5CCNAME``) for the test, and no ``KRB5_CONFIG``,
    so ``krb5Path`` is what the storage uses; both restored afterwards."""
    saved = {name: os.environ.get(name) for name in ("KRB5CCNAME", "KRB5_CONFIG")}
    path = tmp_path / "process.ccache"
    os.environ["KRB5CCNAME"] = f"FILE:{path}"
    os.environ.pop("KRB5_CONFIG", None)
    try:
        yield path
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _krb5_conf(cluster: Any, tmp_path: Path, ticket_lifetime: str | None = None) -> Path:
    """A copy of the cluster's krb5.conf, as a user's ``krb5Path``, optionally asking for
    a ``ticket_lifetime`` (a path of its own also gives the storage a renewer of its own)."""
    text = Path(cluster.kerberos["krb5_conf"]).read_text()
    if ticket_lifetime is not None:
        text, found = re.subn(r"(?m)^\[libdefaults\]$", f"[libdefaults]\n    ticket_lifetime = {ticket_lifetime}", text)
        assert found == 1, text
    path = tmp_path / "krb5.conf"
    path.write_text(text)
    return path


def _seatunnel_yaml(cluster: Any, tmp_path: Path, *, keytab: str, krb5_conf: Path) -> Path:
    """seatunnel.yaml as docs/storage.md, "Kerberos", writes it, with the cluster's
    addresses; WebHDFS by the SPNEGO principal's host name, localhost."""
    namenode = cluster.active_namenode
    plugin_config = {
        "storage.type": "hdfs",
        "fs.defaultFS": f"hdfs://localhost:{namenode['rpc_port']}",
        "seatunnel.hadoop.dfs.namenode.http-address": f"localhost:{namenode['http_port']}",
        "kerberosPrincipal": cluster.kerberos["principal"],
        "kerberosKeytab": keytab,
        "krb5Path": str(krb5_conf),
        "namespace": f"/kerberos-{uuid.uuid4().hex[:8]}/checkpoint/",
    }
    storage = {"type": "hdfs", "max-retained": 3, "plugin-config": plugin_config}
    doc = {"seatunnel": {"engine": {"checkpoint": {"interval": 10000, "timeout": 60000, "storage": storage}}}}
    path = tmp_path / "seatunnel.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _storage(config: Path) -> Any:
    return create_storage(load_config(config).storage)


def _state(checkpoint_id: int, size: int = 64) -> PipelineState:
    payload = (f"checkpoint {checkpoint_id};".encode() * (size // 8 + 1))[:size]
    return PipelineState(job_id=JOB, pipeline_id=1, checkpoint_id=checkpoint_id, states=payload)


class Tgt(NamedTuple):
    principal: str
    start: float
    expires: float


def _tgt(cache: Path, krb5_conf: Path) -> Tgt:
    """The ticket-granting ticket in ``cache``, as MIT's klist lists it (local times)."""
    out = subprocess.run(
        ["klist", "-c", f"FILE:{cache}"],
        env={**os.environ, "KRB5_CONFIG": str(krb5_conf), "LC_ALL": "C"},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    principal = re.search(r"(?m)^Default principal: (\S+)$", out)
    times = re.search(r"(?m)^(\S+ \S+)\s+(\S+ \S+)\s+krbtgt/", out)
    assert principal and times, out

    def parse(text: str) -> float:
        return datetime.strptime(text, "%m/%d/%y %H:%M:%S").timestamp()

    return Tgt(principal.group(1), parse(times.group(1)), parse(times.group(2)))


def _namenode(cluster: Any, path: str, op: str, ticket: Path) -> dict[str, Any]:
    """The NameNode's own answer to a plain WebHDFS GET, with a SPNEGO token of ``ticket``."""
    token = spnego.negotiate_token("localhost", ccache=ticket, krb5_conf=cluster.kerberos["krb5_conf"])
    answer = requests.get(
        f"http://localhost:{cluster.active_namenode['http_port']}/webhdfs/v1{path}",
        params={"op": op},
        headers={"Authorization": f"Negotiate {token}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def _in_new_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a thread of its own: the storage's WebHDFS clients are per thread, so
    its first request authenticates afresh (SPNEGO) instead of riding a session cookie."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the storage call hung"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_seatunnel_ckpt", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _other_process_env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KRB5CCNAME", "KRB5_CONFIG")}
    env["KRB5CCNAME"] = f"FILE:{cache}"
    return env


# ---- the tests -------------------------------------------------------------------------------
def test_seatunnel_yaml_kerberos_storage_round_trips_checkpoints(
    hdfs_kerberos_cluster: Any, ccache: Path, tmp_path: Path
) -> None:
    cluster = hdfs_kerberos_cluster
    krb = cluster.kerberos
    config = _seatunnel_yaml(cluster, tmp_path, keytab=krb["keytab"], krb5_conf=_krb5_conf(cluster, tmp_path))
    storage = _storage(config)
    assert not ccache.exists()  # no ticket yet: the storage logs in itself

    states = {
        checkpoint_id: _state(checkpoint_id, size) for checkpoint_id, size in ((1, 0), (2, 1), (3, 70_000), (4, 4097))
    }
    for state in states.values():
        storage.store_checkpoint(state)
    latest = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1)
    assert (latest.checkpoint_id, latest.states) == (4, states[4].states)
    assert storage.get_checkpoint(JOB, 1, 3).states == states[3].states
    assert [s.checkpoint_id for s in storage.get_checkpoints_by_job_id_and_pipeline_id(JOB, 1)] == [2, 3, 4]
    assert storage.list_jobs() == [JOB]
    # the login is the keytab's principal, in this process's ticket cache
    assert _tgt(ccache, Path(krb["krb5_conf"])).principal == krb["principal"]

    # The NameNode's own answer, through a login of the test's own: the files are the
    # ticket's principal's (mapped to its short name), not the OS user's.
    checker = cluster.kinit(tmp_path / "checker.ccache")
    job_dir = storage.layout.job_dir(JOB)
    assert _namenode(cluster, job_dir, "GETFILESTATUS", checker)["FileStatus"]["owner"] == "client"
    listing = _namenode(cluster, storage.layout.checkpoint_dir(JOB, 1, 4), "LISTSTATUS", checker)
    files = listing["FileStatuses"]["FileStatus"]
    assert "_metadata" in {f["pathSuffix"] for f in files}
    assert {(f["pathSuffix"], f["owner"]) for f in files} == {(f["pathSuffix"], "client") for f in files}
    children = _namenode(cluster, storage.layout.pipeline_dir(JOB, 1), "LISTSTATUS", checker)
    assert sorted(f["pathSuffix"] for f in children["FileStatuses"]["FileStatus"]) == [
        f"chk-{i:020d}" for i in (2, 3, 4)
    ]

    # another process (a worker, an executor) logs in from the keytab into its own cache
    other_cache = tmp_path / "other-process.ccache"
    listed = _cli("list", "--config", str(config), "--job-id", JOB, "--json", env=_other_process_env(other_cache))
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["checkpoint"], r["completed"]) for r in rows] == [(2, True), (3, True), (4, True)]
    assert _tgt(other_cache, Path(krb["krb5_conf"])).principal == krb["principal"]


@pytest.mark.parametrize("case", ["service keytab", "garbage", "missing"])
def test_a_wrong_or_missing_keytab_fails_in_one_line(hdfs_kerberos_cluster: Any, tmp_path: Path, case: str) -> None:
    cluster = hdfs_kerberos_cluster
    krb = cluster.kerberos
    principal = krb["principal"]
    garbage = b"GARBAGE-NOT-A-KEYTAB-" + uuid.uuid4().hex.encode()
    if case == "service keytab":  # hdfs/localhost's and HTTP/localhost's keys, none of client's
        keytab = krb["service_keytab"]
        reason = f"Keytab contains no suitable keys for {principal}"
    elif case == "garbage":
        keytab = str(tmp_path / "garbage.keytab")
        Path(keytab).write_bytes(garbage)
        reason = "Unsupported key table format version number"
    else:
        keytab = str(tmp_path / "no-such.keytab")
        reason = f"Key table file '{keytab}' not found"
    config = _seatunnel_yaml(cluster, tmp_path, keytab=keytab, krb5_conf=_krb5_conf(cluster, tmp_path))

    done = _cli("list", "--config", str(config), env=_other_process_env(tmp_path / "ccache"))

    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert errors == [lines[-1]], done.stderr
    assert errors[0] == (
        f"error: hdfs: kinit for principal {principal} with keytab {keytab} failed (exit 1): "
        f"kinit: {reason} while getting initial credentials"
    )
    assert all(line.startswith(("info:", "warning:", "error:")) for line in lines), done.stderr  # no traceback
    assert "Traceback" not in done.stderr and garbage.decode() not in done.stderr + done.stdout
    assert done.stdout == ""
    assert not (tmp_path / "ccache").exists()  # no ticket came of it


def test_an_expired_ticket_is_renewed_by_relogin_from_the_keytab(
    hdfs_kerberos_cluster: Any, ccache: Path, tmp_path: Path
) -> None:
    cluster = hdfs_kerberos_cluster
    krb = cluster.kerberos
    krb5_conf = _krb5_conf(cluster, tmp_path, ticket_lifetime=f"{SHORT_LIFETIME_S}s")
    storage = _storage(_seatunnel_yaml(cluster, tmp_path, keytab=krb["keytab"], krb5_conf=krb5_conf))
    renewer = storage.fs._renewer()

    storage.store_checkpoint(_state(1))
    first = _tgt(ccache, krb5_conf)
    assert renewer.kinit_count == 1
    assert first.principal == krb["principal"]
    assert 0 < first.expires - first.start <= SHORT_LIFETIME_S, (
        f"the KDC issued a {first.expires - first.start} s ticket"
    )
    expired_copy = tmp_path / "expired.ccache"
    shutil.copyfile(ccache, expired_copy)

    # The job is idle past the ticket's end; the ticket has really expired for GSSAPI.
    time.sleep(max(0.0, first.expires + 1.5 - time.time()))
    with pytest.raises(spnego.GssError, match="Ticket expired"):
        spnego.negotiate_token("localhost", ccache=expired_copy, krb5_conf=krb5_conf)

    # The next checkpoint, from a thread whose client must authenticate afresh: the
    # storage logs in again from the keytab.
    _in_new_thread(lambda: storage.store_checkpoint(_state(2)))
    second = _tgt(ccache, krb5_conf)
    assert renewer.kinit_count == 2
    assert second.start >= first.expires and second.principal == krb["principal"]

    # A job checkpointing every second across two more lifetimes, each checkpoint from a
    # new thread: the ticket is renewed before its end, every time.
    tickets = {second}
    checkpoint_id = 2
    deadline = second.start + 2 * SHORT_LIFETIME_S + 1
    while time.time() < deadline:
        checkpoint_id += 1
        _in_new_thread(lambda cid=checkpoint_id: storage.store_checkpoint(_state(cid)))
        ticket = _tgt(ccache, krb5_conf)
        assert ticket.expires > time.time(), f"checkpoint {checkpoint_id} was written with an expired ticket"
        tickets.add(ticket)
        time.sleep(1)
    assert renewer.kinit_count >= 4 and len(tickets) == renewer.kinit_count - 1
    assert all(b.start < a.expires for a, b in zip(sorted(tickets), sorted(tickets)[1:])), "renewed before the end"

    latest = _in_new_thread(lambda: storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1))
    assert (latest.checkpoint_id, latest.states) == (checkpoint_id, _state(checkpoint_id).states)
    assert [s.checkpoint_id for s in storage.get_checkpoints_by_job_id_and_pipeline_id(JOB, 1)] == list(
        range(checkpoint_id - 2, checkpoint_id + 1)
    )
