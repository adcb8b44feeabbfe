"""A Spark standalone cluster across hosts (tests/cluster/netns.py):

=========  ==============  =====================================================
host       address         runs
=========  ==============  =====================================================
driver     10.213.0.10     ``seatunnel-ckpt run`` / spark-submit (client mode)
master     10.213.0.11     the Spark master (port 7077, web UI 8080)
worker-a   10.213.0.12     a Spark worker (4 cores) and its executors
worker-b   10.213.0.13     a Spark worker (4 cores) and its executors
storage    10.213.0.14     moto's S3 (port 9000) and the WebHDFS test server
=========  ==============  =====================================================

Every process binds to its host's address; nothing crosses loopback between hosts. Each
worker offers 4 cores although the machine has 2, so either worker alone can hold a
parallelism-4 job after the other is lost.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.workspace import (
    REPO,
    VENV_BIN,
    cmdline,
    is_daemon,
    kill_tree,
    master_is_idle,
    parent_pid,
    spark_environment,
)

from .netns import Hosts

HOST_NAMES = ("driver", "master", "worker-a", "worker-b", "storage")
WORKERS = ("worker-a", "worker-b")
MASTER_PORT = 7077
MASTER_UI_PORT = 8080
WORKER_UI_PORT = 8081
S3_PORT = 9000
WORKER_CORES = 4
#: moto accepts any keys; these are distinctive so a test can look for the secret
S3_ACCESS_KEY = "cluster-access-key"
S3_SECRET_KEY = "cluster-secret-7c1f0d"
PYTHON = str(VENV_BIN / "python")


class NetCluster:
    def __init__(self, root: Path):
        self.root = root
        self.hosts = Hosts(HOST_NAMES)
        self.base_env = spark_environment()
        for key in list(self.base_env):
            if key.startswith("AWS_"):
                self.base_env.pop(key)
        self.processes: dict[str, subprocess.Popen] = {}
        self.webhdfs_port = 0

    # ---- addresses -----------------------------------------------------------------------
    def address(self, host: str) -> str:
        return self.hosts[host].address

    @property
    def master_url(self) -> str:
        return f"spark://{self.address('master')}:{MASTER_PORT}"

    @property
    def s3_endpoint(self) -> str:
        return f"http://{self.address('storage')}:{S3_PORT}"

    def env(self, host: str, **extra: str) -> dict[str, str]:
        """The environment of a process on ``host``: Spark binds to the host's address."""
        return {**self.base_env, "SPARK_LOCAL_IP": self.address(host), **extra}

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self) -> NetCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        self.hosts.start()
        try:
            self._start_storage()
            self._start_master()
            for worker in WORKERS:
                self.start_worker(worker)
            self.wait_workers(len(WORKERS))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                kill_tree(proc.pid)
        self.hosts.stop()

    def __enter__(self) -> NetCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _start_storage(self) -> None:
        log = self.root / "storage.log"
        proc = self.hosts.popen(
            "storage",
            [PYTHON, "-m", "tests.cluster.storage_host", self.address("storage"), str(S3_PORT)],
            self.env("storage"),
            log,
            cwd=REPO,
        )
        self.processes["storage"] = proc
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for line in log.read_text(errors="replace").splitlines():
                if line.startswith("{"):
                    self.webhdfs_port = json.loads(line)["webhdfs"]
                    return
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"the storage host's servers did not start:\n{log.read_text(errors='replace')[-4000:]}")

    def _spark_class(self, host: str, args: Sequence[str], name: str) -> None:
        work = self.root / name
        work.mkdir(parents=True, exist_ok=True)
        env = self.env(host, SPARK_WORKER_DIR=str(work))
        self.processes[name] = self.hosts.popen(
            host, [str(VENV_BIN / "spark-class"), *args], env, self.root / f"{name}.log", cwd=work
        )

    def _start_master(self) -> None:
        self._spark_class(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                self.address("master"),
                "--port",
                str(MASTER_PORT),
                "--webui-port",
                str(MASTER_UI_PORT),
            ],
            "master",
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError):
                self.master_state()
                return
            if self.processes["master"].poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError(f"the Spark master did not start:\n{self.log('master')[-4000:]}")

    def start_worker(self, worker: str) -> None:
        """A Spark worker on ``worker`` (again, after a host loss)."""
        self._spark_class(
            worker,
            [
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                "--host",
                self.address(worker),
                "--webui-port",
                str(WORKER_UI_PORT),
                "--cores",
                str(WORKER_CORES),
                "--memory",
                "3g",
                "--work-dir",
                str(self.root / worker),
            ],
            worker,
        )

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # ---- checks run on a host ------------------------------------------------------------
    def probe(self, host: str, *args: str, timeout: float = 120) -> Any:
        result = self.hosts.run(
            host,
            [PYTHON, "-m", "tests.cluster.probe", *args],
            env={**self.env(host), "PYTHONPATH": str(REPO)},
            timeout=timeout,
        )
        if result.returncode != 0:
            raise RuntimeError(f"probe {' '.join(args)} on {host} failed:\n{result.stderr[-4000:]}")
        return json.loads(result.stdout.strip().splitlines()[-1])

    def master_state(self) -> dict[str, Any]:
        return self.probe("driver", "master-state", f"http://{self.address('master')}:{MASTER_UI_PORT}", timeout=30)

    def alive_workers(self) -> list[str]:
        return [w["host"] for w in self.master_state().get("workers", []) if w.get("state") == "ALIVE"]

    def wait_workers(self, count: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while len(self.alive_workers()) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{count} workers did not register:\n{self.log('worker-a')[-3000:]}\n{self.log('worker-b')[-3000:]}"
                )
            time.sleep(0.5)

    def wait_idle(self, timeout: float = 90) -> None:
        """Until no application holds a live worker's cores (a killed driver's app is gone)."""
        deadline = time.monotonic() + timeout
        while not master_is_idle(self.master_state()):
            if time.monotonic() > deadline:
                raise AssertionError(f"the cluster is still busy after {timeout} s: {self.master_state()}")
            time.sleep(1)

    def create_bucket(self, bucket: str) -> None:
        self.probe("driver", "create-bucket", self.s3_endpoint, bucket)

    def s3_options(self) -> dict[str, str]:
        """The fs.s3a.* keys of the storage host's S3, as a job's storage or sink has them."""
        return {
            "fs.s3a.endpoint": self.s3_endpoint,
            "fs.s3a.endpoint.region": "us-east-1",
            "fs.s3a.access.key": S3_ACCESS_KEY,
            "fs.s3a.secret.key": S3_SECRET_KEY,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        }

    def ready_for_a_job(self, bucket_prefix: str) -> str:
        """Both workers up, no application left from an earlier test, a fresh bucket."""
        self.wait_workers(len(WORKERS))
        self.wait_idle()
        bucket = f"{bucket_prefix}-{uuid.uuid4().hex[:10]}"
        self.create_bucket(bucket)
        return bucket

    def tally(self, url: str, rows: int, options: Mapping[str, str]) -> dict[str, Any]:
        return self.probe("driver", "tally", url, str(rows), json.dumps(dict(options)), timeout=300)

    def executor_hosts(self) -> dict[str, int]:
        """Running executors of the active application, per worker host."""
        found: dict[str, int] = {}
        for worker in WORKERS:
            for pid in self.hosts.pids(worker):
                with contextlib.suppress(OSError):
                    if "CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                        found[worker] = found.get(worker, 0) + 1
        return found

    def forked_python_workers(self, host: str) -> list[int]:
        """Python workers running tasks on ``host``: forked by an executor's daemon."""
        return [
            pid for pid in self.hosts.pids(host) if is_daemon(cmdline(pid)) and is_daemon(cmdline(parent_pid(pid) or 0))
        ]
