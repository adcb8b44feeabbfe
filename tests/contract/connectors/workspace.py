"""One contract case's directory: checkpoint configuration, job files and driver runs.

A run is the real ``seatunnel-ckpt run`` in a process of its own (``driver.py``, forked by
``processes.py``), so a case can SIGKILL it, or freeze it at a chosen point, exactly as a
crash or a stalled driver would behave.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from airflow_provider_seatunnel_ckpt.engine.completed_store import commit_infos_of
from tests.support.workspace import RunResult, checkpoint_config

from .driver import FAULTS_ENV
from .processes import ForkedDriver

JOB_ID = "contract"
#: a checkpoint interval no run reaches: the run takes no periodic checkpoint. Ten minutes,
#: not more: the Kafka sink's transactions must outlive an interval plus a checkpoint's
#: timeout (60 s) within their 15-minute transaction.timeout.ms, or the run is refused
NEVER_MS = 600_000


@dataclass
class ContractWorkspace:
    root: Path
    env: dict[str, str]
    runs: int = field(default=0)

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    def config(
        self,
        *,
        interval: int = 250,
        timeout: int = 60_000,
        max_retained: int = 20,
        retention: str = "retain-on-finish",
        name: str = "seatunnel.yaml",
    ) -> Path:
        plugin = {"storage.type": "hdfs", "fs.defaultFS": "file:///", "namespace": f"{self.checkpoints}/"}
        document = checkpoint_config(
            plugin,
            interval=interval,
            timeout=timeout,
            tolerable_failure=0,
            max_retained=max_retained,
            **{"externalized-retention": retention},
        )
        path = self.root / name
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path

    def job(
        self,
        sources: Sequence[Mapping[str, Any]],
        sinks: Sequence[Mapping[str, Any]],
        transforms: Sequence[Mapping[str, Any]] = (),
        *,
        parallelism: int = 2,
        name: str = "job",
        env: Mapping[str, Any] | None = None,
    ) -> Path:
        document: dict[str, Any] = {
            "env": {"job.name": "contract", "parallelism": parallelism, "batch_size": 100, **(env or {})},
            "source": [dict(s) for s in sources],
        }
        if transforms:
            document["transform"] = [dict(t) for t in transforms]
        document["sink"] = [dict(s) for s in sinks]
        path = self.root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path

    def start(self, job: Path, config: Path, *args: str, faults: Mapping[str, Any] | None = None) -> ForkedDriver:
        self.runs += 1
        env = {**self.env, FAULTS_ENV: json.dumps(dict(faults or {}))}
        argv = ["run", str(job), "--config", str(config), "--job-id", JOB_ID, *args]
        return ForkedDriver(argv, env, self.root / "logs", f"run{self.runs:02d}")

    def run(
        self, job: Path, config: Path, *args: str, faults: Mapping[str, Any] | None = None, timeout: float = 120
    ) -> RunResult:
        return self.start(job, config, *args, faults=faults).wait(timeout)

    def killed_run(
        self, job: Path, config: Path, *args: str, faults: Mapping[str, Any], timeout: float = 120
    ) -> RunResult:
        """A run that must end by one of its kill points (SIGKILL: exit -9)."""
        result = self.run(job, config, *args, faults=faults, timeout=timeout)
        assert result.returncode == -9, f"the run was to die at {dict(faults)}\n{result.explain()}"
        return result

    def freeze_dir(self) -> Path:
        folder = self.root / f"freeze{self.runs + 1:02d}"
        folder.mkdir()
        return folder

    # ---- checkpoint storage -----------------------------------------------------------------
    def storage(self, config: Path) -> Any:
        from airflow_provider_seatunnel_ckpt.config import load_config
        from airflow_provider_seatunnel_ckpt.storage import create_storage

        return create_storage(load_config(str(config)).storage)

    def completed_commit_infos(self, config: Path) -> list[tuple[int, list[Any]]]:
        """Every retained completed checkpoint's commit infos, oldest first."""
        storage = self.storage(config)
        found = []
        for entry in storage.list_checkpoint_entries(JOB_ID, 1):
            if entry.completed and not entry.savepoint:
                manifest = storage.read_manifest(JOB_ID, 1, entry.checkpoint_id)
                found.append((entry.checkpoint_id, commit_infos_of(manifest.commit_infos)))
        return sorted(found, key=lambda item: item[0])

    def leftovers_in_storage(self) -> list[str]:
        job_dir = self.checkpoints / JOB_ID
        if not job_dir.exists():
            return []
        return sorted(str(p.relative_to(self.checkpoints)) for p in job_dir.rglob("*") if p.is_file())


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
