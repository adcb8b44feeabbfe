"""What one attempt at running a job holds: the request, the job's storage and fence log,
and what the claim, the restore and the launch learn on the way. The attempt's duties
(engine/claim.py, engine/restore.py, engine/liveness.py, engine/launch.py) share it, and
engine/runner.py's ``JobRun`` puts them together."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import CheckpointConfig
from ..errors import ConfigError
from ..history import HistoryRecorder
from ..jobfile.spec import JobSpec
from ..storage import create_storage
from .completed_store import CompletedCheckpointStore
from .driver import DriverLoop
from .fencing import FenceLog
from .heartbeat import HeartbeatWriter

if TYPE_CHECKING:
    from ..connectors.api import Split
    from .coordinator import CheckpointCoordinator
    from .driver import Outcome

PIPELINE_ID = 1
JOB_DOCUMENT = "job.json"
#: in job.json while --discard-existing deletes the checkpoints, until the sink dropped its bookkeeping
DISCARDING = "discarding"


@dataclass
class RunRequest:
    job: JobSpec
    config: CheckpointConfig
    job_id: str
    restore: str = "latest"  #: latest | none | a checkpoint id
    discard_existing: bool = False
    #: restore a checkpoint even when it holds output of a sink the job no longer has,
    #: dropping that output (--allow-non-restored-state: engine/sink_identity.py)
    allow_non_restored_state: bool = False
    master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)


def parse_restore(value: str) -> str:
    value = str(value).strip().lower()
    if value in ("latest", "none") or value.isdigit():
        return value
    raise ConfigError("--restore", f"expected latest, none or a checkpoint id, got {value!r}")


class RunState:
    """The state of one attempt, from its creation to its recorded outcome."""

    def __init__(self, request: RunRequest, progress: Callable[[str], None] | None = None):
        self.request = request
        self.progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
        self.storage = create_storage(request.config.storage)
        self.store = CompletedCheckpointStore(self.storage, request.job_id, PIPELINE_ID)
        # delete-on-finish may delete the job under a driver that was taken over: it must
        # know its claim gone for a takeover (engine/fencing.py)
        self.fence = FenceLog(self.storage, request.job_id, deletable=request.config.deletes_on_finish)
        self.attempt_number = 0
        self.restored_id: int | None = None
        self.spark: Any = None
        self._loop: DriverLoop | None = None
        self._released = False
        self._job_group = f"seatunnel-ckpt-{request.job_id}-{secrets.token_hex(4)}"
        #: --discard-existing deleted the job's checkpoints in this run
        self.discarded = False
        #: the run's heartbeat in storage (heartbeat.py), from the claim to the recorded outcome
        self._heartbeat: HeartbeatWriter | None = None
        self._application_id: str | None = None
        #: the attempt's checkpoint history recorder (history/), from the claim to the end
        self._history: HistoryRecorder | None = None
        #: the job's sink identities, recorded in every checkpoint (set by the claim)
        self.sink_layout: tuple[Any, ...] = ()

    if TYPE_CHECKING:  # what one duty calls of another; JobRun (engine/runner.py) has them all
        # engine/claim.py
        def _record_attempt(self, fields: dict[str, Any]) -> None: ...

        # engine/liveness.py
        def _heartbeat_conf(self, configured: str | None) -> None: ...
        def _end_heartbeat(self, state: str, error: str | None, last: int | None) -> None: ...
        def _leave_no_records(self) -> None: ...

        # engine/restore.py
        def plan_splits(self, source: Any, manifest: Any) -> tuple[tuple[Split, ...], dict[str, Any]]: ...

        # engine/runner.py
        def coordinator(self, manifest: Any, highest_id: int) -> CheckpointCoordinator: ...
        def end(self, outcome: Outcome, committer: Any, token: str) -> None: ...
