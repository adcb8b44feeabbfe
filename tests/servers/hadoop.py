"""Real HDFS and YARN: Hadoop 3.5.0's own mini clusters in a JVM, on loopback.

``servers.MiniClusters`` (tests/servers/jvm) runs MiniDFSCluster / MiniYARNCluster /
MiniKdc from ``hadoop-client-minicluster`` and ``hadoop-minikdc``, the Hadoop of
pyspark's client jars, and prints their addresses once ready::

    with HadoopCluster("hdfs") as hdfs:           # 1 NameNode, 1 DataNode
        hdfs.webhdfs_url                           # "http://127.0.0.1:41234" (active NameNode)
        hdfs.fs_default                            # "hdfs://127.0.0.1:40001"
        hdfs.conf_dir                              # core-site.xml, hdfs-site.xml, yarn-site.xml
    with HadoopCluster("hdfs-ha") as ha:          # nameservice minidfs-ns: nn1 active, nn2 standby
        ha.failover()                              # nn1 standby, nn2 active
    with HadoopCluster("hdfs-kerberos") as sec:   # MiniKdc; SPNEGO on WebHDFS
        sec.kerberos["keytab"], sec.kerberos["principal"], sec.kerberos["krb5_conf"]
        sec.kinit(ccache)                          # a ticket cache for the client principal
    with HadoopCluster("yarn") as yarn:           # HDFS + ResourceManager + 1 NodeManager
        yarn.rm_webapp_url                         # "http://127.0.0.1:8xxx"

The HDFS root is world-writable. The JVM runs with a pipe as stdin: closing it (stop(),
or pytest dying) shuts the clusters down and ends the JVM.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.servers.jvm import JvmProcess, JvmServer, JvmServerError, run_main

HADOOP_VERSION = "3.5.0"  # tests/servers/jvm/pom.xml
MODES = ("hdfs", "hdfs-ha", "hdfs-kerberos", "yarn")


class HadoopCluster(JvmServer):
    def __init__(self, mode: str = "hdfs", workdir: Path | None = None, start_timeout: float = 180):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        super().__init__(workdir, f"hadoop-{mode}-")
        self.mode = mode
        self.start_timeout = start_timeout
        self.info: dict[str, Any] = {}
        self.process: JvmProcess | None = None
        self.start_seconds: float | None = None

    def start(self) -> HadoopCluster:
        started = time.monotonic()
        self.process = JvmProcess(
            "hadoop",
            "servers.MiniClusters",
            ["--mode", self.mode, "--dir", str(self.workdir / "cluster")],
            log_path=self.workdir / "server.log",
            cwd=self.workdir,
            heap="1g" if self.mode == "yarn" else "768m",
        )
        try:
            self.process.start()
            line = self.process.read_line(self.start_timeout)
            try:
                self.info = json.loads(line)
            except ValueError:
                raise JvmServerError(f"MiniClusters printed {line!r}\n{self.process.log_tail()}") from None
            if "error" in self.info:
                raise JvmServerError(f"{self.mode} did not start: {self.info['error']}\n{self.process.log_tail()}")
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        return self

    # --- addresses ------------------------------------------------------------------
    @property
    def namenodes(self) -> list[dict[str, Any]]:
        return self.info["namenodes"]

    @property
    def active_namenode(self) -> dict[str, Any]:
        return next(nn for nn in self.namenodes if nn["state"] == "active")

    @property
    def webhdfs_url(self) -> str:
        """The active NameNode's HTTP address (WebHDFS is under /webhdfs/v1)."""
        return f"http://127.0.0.1:{self.active_namenode['http_port']}"

    @property
    def webhdfs_urls(self) -> list[str]:
        """Every NameNode's HTTP address, nn1 first (for an HA client)."""
        return [f"http://127.0.0.1:{nn['http_port']}" for nn in self.namenodes]

    @property
    def fs_default(self) -> str:
        return self.info["fs_default"]

    @property
    def conf_dir(self) -> str:
        return self.info["conf_dir"]

    @property
    def kerberos(self) -> dict[str, Any]:
        return self.info["kerberos"]

    @property
    def yarn(self) -> dict[str, Any]:
        return self.info["yarn"]

    @property
    def rm_webapp_url(self) -> str:
        return f"http://{self.yarn['rm_webapp_address']}"

    # --- controls ---------------------------------------------------------------------
    def failover(self, timeout: float = 60) -> list[dict[str, Any]]:
        """hdfs-ha: make the active NameNode standby and the other one active."""
        self.process.send("failover")
        answer = json.loads(self.process.read_line(timeout))
        if "error" in answer:
            raise JvmServerError(answer["error"])
        self.info["namenodes"] = answer["namenodes"]
        return self.namenodes

    def kinit(self, ccache: Path) -> Path:
        """hdfs-kerberos: a ticket cache (``KRB5CCNAME=FILE:<ccache>``) for the client
        principal, from its keytab: MIT's ``kinit -kt`` where installed, else servers.Kinit."""
        krb = self.kerberos
        kinit = shutil.which("kinit")
        if kinit:
            subprocess.run(
                [kinit, "-kt", krb["keytab"], "-c", f"FILE:{ccache}", krb["principal"]],
                check=True,
                env={"KRB5_CONFIG": krb["krb5_conf"], "PATH": "/usr/bin:/bin"},
                timeout=60,
            )
        else:
            run_main("hadoop", "servers.Kinit", [krb["krb5_conf"], krb["keytab"], krb["principal"], str(ccache)])
        return Path(ccache)

    def processes_to_stop(self) -> list[JvmProcess]:
        return [self.process] if self.process is not None else []
