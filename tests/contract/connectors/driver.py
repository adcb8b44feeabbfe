"""``python -m tests.contract.connectors.driver run JOB --config ... --job-id ...``

The real ``seatunnel-ckpt`` command line, with subtasks on threads (``thread_spark``) and
the fault points a contract case asks for, from the JSON in ``$CONTRACT_FAULTS``:

* ``kill_after_rows: K``: SIGKILL this process once the sink writers got K rows;
* ``kill_before_commit: N``: SIGKILL when the driver is about to commit checkpoint N or a
  later one (the checkpoint is durable, its output not yet committed);
* ``kill_after_commit: N``: SIGKILL once that commit returned;
* ``freeze_before_commit: N`` with ``freeze_dir``: at that point (after the driver's fence
  check, before the sink's commit) create ``freeze_dir/frozen`` and wait for
  ``freeze_dir/release``, then commit and go on: a driver taken over while it stood still
  (a zombie), whose commit lands late. With ``seam`` (``module:Class.method``, the
  committer's read of what is already committed), the freeze comes right after that read
  returns, inside the commit: the zombie then writes on what it read before the claimant's
  commits.

The faults wrap what the engine calls (a writer's ``write``, the committer's ``commit``);
they change no decision of the engine or of a connector.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

FAULTS_ENV = "CONTRACT_FAULTS"


def _die() -> None:
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class _CountingWriter:
    """A sink writer that counts the rows it is given (the kill-after-rows point)."""

    def __init__(self, inner: Any, on_rows: Any):
        self._inner, self._on_rows = inner, on_rows

    def write(self, batch: Any) -> None:
        self._inner.write(batch)
        self._on_rows(batch.num_rows)

    def write_to(self, sink: int, batch: Any) -> None:
        self._inner.write_to(sink, batch)
        self._on_rows(batch.num_rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


#: the checkpoint the driver loop is committing (None: not inside a commit)
_committing: int | None = None


def _freeze_once(faults: dict[str, Any], checkpoint_id: int, where: str) -> None:
    if faults.get("_froze"):
        return
    faults["_froze"] = True
    folder = Path(faults["freeze_dir"])
    print(f"contract: frozen {where} checkpoint {checkpoint_id}", file=sys.stderr, flush=True)
    (folder / "frozen").write_text(str(checkpoint_id))
    while not (folder / "release").exists():
        time.sleep(0.05)
    print(f"contract: released, committing checkpoint {checkpoint_id}", file=sys.stderr, flush=True)


class _FaultyCommitter:
    """The driver loop's committer while it commits one checkpoint."""

    def __init__(self, inner: Any, checkpoint_id: int, faults: dict[str, Any]):
        self._inner, self._checkpoint_id, self._faults = inner, checkpoint_id, faults

    def _reached(self, key: str) -> bool:
        return key in self._faults and self._checkpoint_id >= int(self._faults[key])

    def commit(self, infos: Any) -> None:
        global _committing
        if self._reached("kill_before_commit"):
            _die()
        if self._reached("freeze_before_commit") and "seam" not in self._faults:
            _freeze_once(self._faults, self._checkpoint_id, "before committing")
        _committing = self._checkpoint_id
        try:
            self._inner.commit(infos)
        finally:
            _committing = None
        if self._reached("kill_after_commit"):
            _die()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def install_faults(faults: dict[str, Any]) -> None:
    from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop
    from airflow_provider_seatunnel_ckpt.engine.subtask import SubtaskRuntime

    if "kill_after_rows" in faults:
        limit, written, lock = int(faults["kill_after_rows"]), [0], threading.Lock()

        def on_rows(rows: int) -> None:
            with lock:
                written[0] += rows
                if written[0] >= limit:
                    _die()

        new_writer = SubtaskRuntime._new_writer

        def counting_writer(self: Any, after_checkpoint_id: int) -> Any:
            return _CountingWriter(new_writer(self, after_checkpoint_id), on_rows)

        SubtaskRuntime._new_writer = counting_writer  # type: ignore[method-assign]

    if any(key.endswith("_commit") for key in faults):
        commit = DriverLoop._commit

        def faulty_commit(self: Any, checkpoint_id: int, manifest: Any) -> None:
            committer = self.committer
            self.committer = _FaultyCommitter(committer, checkpoint_id, faults)
            try:
                commit(self, checkpoint_id, manifest)
            finally:
                self.committer = committer

        DriverLoop._commit = faulty_commit  # type: ignore[method-assign]

    if "seam" in faults:
        _freeze_after_seam(faults)


def _freeze_after_seam(faults: dict[str, Any]) -> None:
    module_name, _, attribute = faults["seam"].partition(":")
    owner_name, _, method_name = attribute.rpartition(".")
    owner = importlib.import_module(module_name)
    for part in filter(None, owner_name.split(".")):
        owner = getattr(owner, part)
    read = getattr(owner, method_name)
    first = int(faults["freeze_before_commit"])

    def read_then_freeze(*args: Any, **kwargs: Any) -> Any:
        result = read(*args, **kwargs)
        if _committing is not None and _committing >= first:
            _freeze_once(faults, _committing, "after reading what is committed, before committing")
        return result

    setattr(owner, method_name, read_then_freeze)


def main(argv: list[str]) -> int:
    from airflow_provider_seatunnel_ckpt import cli
    from airflow_provider_seatunnel_ckpt.engine import spark_start

    from .mutations import in_place_from_environment
    from .thread_spark import ThreadSpark, install_task_context

    install_task_context()
    install_faults(json.loads(os.environ.get(FAULTS_ENV) or "{}"))
    spark_start.build_spark = lambda request: ThreadSpark()  # type: ignore[assignment]
    with in_place_from_environment():  # a defect put back on purpose (mutations.py), if asked
        return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
