"""Where everything lives under the namespace (documented in docs/storage.md).

::

    {namespace}{job_id}/
      job.json                              job metadata, status, fencing token
      attempts/{n:06d}.json                 the newest run attempt's record (history/attempts.py)
      attempts/earlier-{n:06d}.json         every earlier attempt's record, folded at attempt n's claim
      history/{n:06d}-{s:06d}.json          checkpoint history, segment s of attempt n (history/)
      requests/{name}.json                  external requests (e.g. stop-with-savepoint)
      pipeline-{p}/chk-{id:020d}/           a checkpoint; zero padding = listing order
          task-{subtask}-{attempt}-r{run}.state  written by the subtask itself (run: the
                                            driver's claim, so a zombie's never collide)
          coordinator.state                 the coordinator's state, when not inlined
          _metadata                         written last, atomically: presence = completed
      pipeline-{p}/savepoint-{id:020d}/     same format; never removed by retention

Every id that becomes part of a path is validated here, so nothing a user or a
remote message supplies can escape the namespace.
"""

from __future__ import annotations

import posixpath
import re

from ..errors import ConfigError

#: where checkpoints live when ``plugin-config.namespace`` names no place (SeaTunnel's default)
DEFAULT_NAMESPACE = "/seatunnel/checkpoint/"
METADATA = "_metadata"
JOB_FILE = "job.json"
ATTEMPTS_DIR = "attempts"
REQUESTS_DIR = "requests"

_JOB_ID_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.=@-]{0,199}")
_CHECKPOINT_DIR_RE = re.compile(r"(chk|savepoint)-(\d{1,20})")
_STATE_FILE_RE = re.compile(r"task-\d+-\d+-r(\d+)\.state")
_PIPELINE_DIR_RE = re.compile(r"pipeline-(\d{1,9})")


def validate_job_id(job_id: str) -> str:
    """Job ids become directory names: letters, digits and ``_ . = @ -`` only."""
    if not isinstance(job_id, str) or not _JOB_ID_RE.fullmatch(job_id) or job_id in (".", ".."):
        raise ConfigError(
            "job_id",
            f"{job_id!r} is not a valid job id: use 1-200 letters, digits or '_.=@-', not starting with '.' or '-'",
        )
    return job_id


def validate_pipeline_id(pipeline_id: int) -> int:
    if not isinstance(pipeline_id, int) or isinstance(pipeline_id, bool) or pipeline_id < 0:
        raise ConfigError("pipeline_id", f"{pipeline_id!r} is not a non-negative integer")
    return pipeline_id


def validate_checkpoint_id(checkpoint_id: int) -> int:
    if not isinstance(checkpoint_id, int) or isinstance(checkpoint_id, bool) or not 0 <= checkpoint_id < 10**20:
        raise ConfigError("checkpoint_id", f"{checkpoint_id!r} is not a non-negative integer")
    return checkpoint_id


def normalise_namespace(namespace: str) -> str:
    """An absolute, normalised directory path ending in ``/``; no ``..`` or NUL."""
    if not isinstance(namespace, str) or not namespace:
        raise ConfigError("plugin-config.namespace", "must be a non-empty path")
    if "\x00" in namespace:
        raise ConfigError("plugin-config.namespace", "contains a NUL character")
    if namespace.startswith("file://"):
        namespace = namespace[len("file://") :]
    if not namespace.startswith("/"):
        raise ConfigError("plugin-config.namespace", f"{namespace!r} must be an absolute path starting with '/'")
    if ".." in namespace.split("/"):
        raise ConfigError("plugin-config.namespace", f"{namespace!r} must not contain '..'")
    return posixpath.normpath(namespace).rstrip("/") + "/"


class Layout:
    """Path arithmetic for one namespace."""

    def __init__(self, namespace: str):
        self.namespace = normalise_namespace(namespace)

    def job_dir(self, job_id: str) -> str:
        return f"{self.namespace}{validate_job_id(job_id)}"

    def job_file(self, job_id: str) -> str:
        return f"{self.job_dir(job_id)}/{JOB_FILE}"

    def attempts_dir(self, job_id: str) -> str:
        return f"{self.job_dir(job_id)}/{ATTEMPTS_DIR}"

    def attempt_file(self, job_id: str, number: int) -> str:
        return f"{self.attempts_dir(job_id)}/{number:06d}.json"

    def requests_dir(self, job_id: str) -> str:
        return f"{self.job_dir(job_id)}/{REQUESTS_DIR}"

    def pipeline_dir(self, job_id: str, pipeline_id: int) -> str:
        return f"{self.job_dir(job_id)}/pipeline-{validate_pipeline_id(pipeline_id)}"

    def checkpoint_dir(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False) -> str:
        prefix = "savepoint" if savepoint else "chk"
        return f"{self.pipeline_dir(job_id, pipeline_id)}/{prefix}-{validate_checkpoint_id(checkpoint_id):020d}"

    @staticmethod
    def task_state_name(subtask: int, attempt: int, run: int) -> str:
        """A subtask attempt's state file. ``run`` is the run attempt (the driver's claim
        on the job): Spark numbers task attempts from 0 in every application, so without
        it a taken-over driver's subtasks (a zombie) would overwrite the claimant's files
        of the same checkpoint id."""
        return f"task-{int(subtask)}-{int(attempt)}-r{int(run)}.state"

    @staticmethod
    def state_file_run(name: str) -> int | None:
        """The run attempt in a state file's name; None for any other name."""
        match = _STATE_FILE_RE.fullmatch(name)
        return int(match.group(1)) if match else None

    @staticmethod
    def parse_checkpoint_dir(name: str) -> tuple[int, bool] | None:
        """``chk-00..07`` -> (7, False); ``savepoint-..`` -> (id, True); else None."""
        match = _CHECKPOINT_DIR_RE.fullmatch(name)
        if not match:
            return None
        return int(match.group(2)), match.group(1) == "savepoint"

    @staticmethod
    def parse_pipeline_dir(name: str) -> int | None:
        match = _PIPELINE_DIR_RE.fullmatch(name)
        return int(match.group(1)) if match else None
