"""The project's exception tree.

Every message names what the user needs to find the problem: the config key path,
the backend and path, or the checkpoint id. Messages never contain secrets.
"""

from __future__ import annotations

import enum


class CheckpointError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(CheckpointError, ValueError):
    """Invalid user input: a config document, a job file or a CLI argument.

    ``key`` is the dotted path of the offending key (or a file path) and ``problem``
    says what is wrong with it; ``str(error)`` is the one line the CLI prints.
    """

    def __init__(self, key: str, problem: str):
        # One line, always: user-supplied keys and values may contain newlines.
        self.key = _one_line(str(key))
        self.problem = _one_line(str(problem))
        key, problem = self.key, self.problem
        super().__init__(f"{key}: {problem}" if key else problem)


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


class CheckpointStorageError(CheckpointError):
    """A storage operation failed for good (after retries, or not retryable)."""


class BackendMissing(CheckpointStorageError, ImportError):
    """The client library a storage backend needs is not installed."""


class ConnectorError(CheckpointError):
    """A system a connector reads or writes (a database, a broker) failed or refused.

    Unlike ``ConfigError`` this may be transient (a server restarting): the run fails
    and a retry may succeed. The message names the system without its credentials.
    """


class DataError(CheckpointError):
    """The job's data broke a rule the job itself states (an ``Assert`` sink's rule).

    Raised on an executor; the job fails at once with this message instead of retrying
    the subtask, since the same rows would break the same rule again.
    """


class ProtocolError(CheckpointError):
    """A control-channel message broke the protocol (bad token, size, order)."""


class FailureReason(enum.Enum):
    """Why a checkpoint failed, and whether it counts against tolerable-failure.

    Follows Flink's CheckpointFailureManager: timeouts, declines and IO errors count;
    a subsumed checkpoint, a failing task or the coordinator shutting down do not,
    because they say nothing about the health of checkpointing itself.
    """

    EXPIRED = ("checkpoint expired before all subtasks acknowledged", True)
    DECLINED = ("a subtask declined the checkpoint", True)
    IO_ERROR = ("writing the checkpoint to storage failed", True)
    ASYNC_ERROR = ("a subtask's asynchronous state upload failed", True)
    FINALIZE_ERROR = ("completing the checkpoint failed", True)
    SUBSUMED = ("a newer checkpoint completed first", False)
    TASK_FAILURE = ("a subtask failed", False)
    COORDINATOR_SHUTDOWN = ("the checkpoint coordinator shut down", False)
    TOO_MANY_CONCURRENT = ("too many checkpoints in progress", False)
    MIN_PAUSE = ("minimum pause between checkpoints not elapsed", False)
    NOT_ALL_SUBTASKS_RUNNING = ("not all subtasks are running", False)

    def __init__(self, message: str, counts: bool):
        self.message = message
        self.counts_as_failure = counts


class CheckpointFailed(CheckpointError):
    """A checkpoint could not complete; carries the reason and checkpoint id."""

    def __init__(self, reason: FailureReason, checkpoint_id: int | None = None, detail: str = ""):
        self.reason = reason
        self.checkpoint_id = checkpoint_id
        where = f"checkpoint {checkpoint_id}: " if checkpoint_id is not None else ""
        tail = f" ({detail})" if detail else ""
        super().__init__(f"{where}{reason.message}{tail}")


class TolerableFailureExceeded(CheckpointError):
    """More consecutive checkpoint failures than tolerable-failure allows."""
