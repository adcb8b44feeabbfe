"""No JVM test server outlives its Python side: not after a clean stop, not when the
Python process dies (its stdin pipe closes and the launcher ends the JVM)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.servers.jvm import ROOT
from tests.servers.kafka_broker import KafkaBroker


def _gone(pids: list[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids):
            return True
        time.sleep(0.2)
    return False


def _java_children_of(workdir: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if "java" in (process.info["name"] or "") and workdir in cmdline:
            found.append(process)
    return found


def test_context_exit_leaves_no_jvm() -> None:
    with KafkaBroker(nodes=1) as kafka:
        pids = kafka.pids()
        workdir = str(kafka.workdir)
        assert pids and all(psutil.pid_exists(p) for p in pids)
    assert _gone(pids, 5)
    assert _java_children_of(workdir) == []


_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from tests.servers.{module} import {cls}
server = {cls}({args}, workdir=sys.argv[2]).start()
print(json.dumps(server.pids()), flush=True)
time.sleep(600)
"""


def _kill_python_side(module: str, cls: str, args: str, workdir: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(module=module, cls=cls, args=args), str(ROOT), str(workdir)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        pids = json.loads(child.stdout.readline())
        assert pids and all(psutil.pid_exists(p) for p in pids)
        os.kill(child.pid, signal.SIGKILL)  # no cleanup runs: only the closed pipe tells the JVM
        child.wait(10)
        assert _gone(pids, 45), f"JVMs {pids} outlived their Python side"
    finally:
        if child.poll() is None:
            child.kill()


def test_killing_the_python_side_ends_the_kafka_jvm(tmp_path: Path) -> None:
    _kill_python_side("kafka_broker", "KafkaBroker", "nodes=1", tmp_path)


def test_killing_the_python_side_ends_the_mini_cluster_jvm(tmp_path: Path) -> None:
    _kill_python_side("hadoop", "HadoopCluster", "'hdfs'", tmp_path)
