"""Hosts on one machine: Linux network namespaces joined by a bridge.

Each host is a network namespace with one interface (``eth0``, a veth pair) and a private
address on 10.213.0.0/24. The bridge lives in a namespace of its own (the "switch"), so
no address of this machine's own namespace is on the segment and nothing leaks to or
from the real network. A process started with :meth:`Hosts.popen` sees only its host's
interfaces: its loopback is its own, and every other host is reached by address.

Faults a real cluster has:

* :meth:`Hosts.kill_host`: every process in the host's namespace SIGKILLed at once;
* :meth:`Hosts.cut` / :meth:`Hosts.reconnect`: the host's switch port down / up (its
  connections stall, as with a pulled cable, and resume if they outlive the cut; as on a
  real segment, a peer may see "no route to host" for a few seconds after the reconnect,
  until its address resolution that failed during the cut is retried).

``stop()`` kills whatever is still running in the namespaces and deletes them; it runs
even when a test fails. Needs root and the ``ip`` tool (iproute2).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUBNET = "10.213.0"
_instances = itertools.count()
PREFIX_LENGTH = 24


def missing_requirements() -> str | None:
    """Why this machine cannot build hosts, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "the ip tool (iproute2) is not installed"
    probe = f"stckpt-probe-{os.getpid()}"
    result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if result.returncode != 0:
        return f"ip netns add failed: {result.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def remove_stale_namespaces() -> None:
    """Delete the namespaces of earlier test processes that died without cleaning up
    (a SIGKILLed pytest), with whatever still runs in them."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for name in (line.split()[0] for line in listed.splitlines() if line.strip()):
        owner = name.removeprefix("stckpt-probe-").removeprefix("stckpt").split("x", 1)[0]
        if not name.startswith("stckpt") or not owner.isdigit() or Path(f"/proc/{owner}").exists():
            continue
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


@dataclass(frozen=True)
class Host:
    name: str
    namespace: str
    address: str
    port_name: str  #: its veth end on the switch


def _ip(*args: str, namespace: str | None = None) -> None:
    command = ["ip", *(["-n", namespace] if namespace else []), *args]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()}")


class Hosts:
    """A switch and the named hosts on it (addresses .10, .11, ... in order)."""

    def __init__(self, names: Sequence[str]):
        tag = f"stckpt{os.getpid()}x{next(_instances)}"
        self.switch = f"{tag}-switch"
        self.hosts = {
            name: Host(name, f"{tag}-{name}", f"{SUBNET}.{10 + index}", f"p{index}-{tag.removeprefix('stckpt')}"[:15])
            for index, name in enumerate(names)
        }
        self._created: list[str] = []

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def start(self) -> Hosts:
        remove_stale_namespaces()
        try:
            self._add_namespace(self.switch)
            _ip("link", "add", "br0", "type", "bridge", namespace=self.switch)
            _ip("link", "set", "br0", "up", namespace=self.switch)
            for host in self.hosts.values():
                self._add_namespace(host.namespace)
                _ip("link", "set", "lo", "up", namespace=host.namespace)
                _ip(
                    "link",
                    "add",
                    host.port_name,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth0",
                    "netns",
                    host.namespace,
                    namespace=self.switch,
                )
                _ip("link", "set", host.port_name, "master", "br0", "up", namespace=self.switch)
                _ip("addr", "add", f"{host.address}/{PREFIX_LENGTH}", "dev", "eth0", namespace=host.namespace)
                _ip("link", "set", "eth0", "up", namespace=host.namespace)
        except BaseException:
            self.stop()
            raise
        return self

    def _add_namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self._created.append(name)

    # ---- processes -----------------------------------------------------------------------
    def command(self, host: str, args: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.hosts[host].namespace, *args]

    def popen(
        self, host: str, args: Sequence[str], env: Mapping[str, str], log: Path, cwd: Path | None = None, **kwargs: Any
    ) -> subprocess.Popen:
        """Start ``args`` on ``host``, output to ``log``."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            return subprocess.Popen(
                self.command(host, args),
                env=dict(env),
                cwd=str(cwd or log.parent),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **kwargs,
            )

    def run(
        self, host: str, args: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command(host, args), env=dict(env or os.environ), capture_output=True, text=True, timeout=timeout
        )

    def pids(self, host: str) -> list[int]:
        result = subprocess.run(["ip", "netns", "pids", self.hosts[host].namespace], capture_output=True, text=True)
        return [int(p) for p in result.stdout.split()]

    # ---- faults --------------------------------------------------------------------------
    def kill_host(self, host: str) -> int:
        """SIGKILL every process on ``host`` (repeated until none is left); returns how
        many were killed."""
        killed: set[int] = set()
        deadline = time.monotonic() + 10
        while (pids := self.pids(host)) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            time.sleep(0.05)
        return len(killed)

    def cut(self, host: str) -> None:
        _ip("link", "set", self.hosts[host].port_name, "down", namespace=self.switch)

    def reconnect(self, host: str, timeout: float = 10) -> None:
        """The host's switch port up again; returns once the host's own end has its
        carrier back (the kernel applies a carrier change later, by its link watch, and
        later still on a loaded machine)."""
        _ip("link", "set", self.hosts[host].port_name, "up", namespace=self.switch)
        deadline = time.monotonic() + timeout
        while not self._has_carrier(host):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{host}: eth0 has no carrier {timeout:.0f} s after its switch port came up")
            time.sleep(0.05)

    def _has_carrier(self, host: str) -> bool:
        shown = subprocess.run(
            ["ip", "-n", self.hosts[host].namespace, "-o", "link", "show", "eth0"], capture_output=True, text=True
        ).stdout
        return "LOWER_UP" in shown and "NO-CARRIER" not in shown

    def stop(self) -> None:
        for host in self.hosts.values():
            if host.namespace in self._created:
                self.kill_host(host.name)
        for name in reversed(self._created):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        self._created.clear()

    def __enter__(self) -> Hosts:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
