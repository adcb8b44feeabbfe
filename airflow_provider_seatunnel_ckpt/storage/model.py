"""Checkpoint data model: what a completed checkpoint is made of.

``CheckpointManifest`` is the content of ``_metadata``, the file whose presence marks a
checkpoint as completed. It is versioned JSON with its own sha256, and it references
state files by a ``StateHandle`` that carries their size and sha256, so any truncation
or bit flip is detected before state is handed to a restoring task. Nothing here is
ever pickled.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import CheckpointStorageError

FORMAT_NAME = "seatunnel-ckpt/checkpoint"
FORMAT_VERSION = 1

#: states up to this size are inlined into ``_metadata`` instead of a file of their own
INLINE_STATE_LIMIT = 4096


class CheckpointKind(str, enum.Enum):
    CHECKPOINT = "checkpoint"
    SAVEPOINT = "savepoint"
    FINAL = "final"  #: the checkpoint taken when input ended; the job's last


class CorruptCheckpointError(CheckpointStorageError):
    """A checkpoint file failed its checksum, size or format check."""


class CheckpointNotFoundError(CheckpointStorageError, LookupError):
    """No completed checkpoint matches the request."""


class CheckpointIdTaken(CheckpointStorageError):
    """A ``_metadata`` was already there: the id was completed, or fenced because the
    writer lost its claim on the job to another driver."""


def sha256_hex(data: bytes | bytearray | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class StateHandle:
    """Where a piece of state lives: a file in the checkpoint directory, or inline."""

    size: int
    sha256: str
    file: str | None = None  #: name relative to the checkpoint directory
    inline: bytes | None = None

    @classmethod
    def for_bytes(cls, data: bytes, file: str | None = None) -> StateHandle:
        if file is None:
            return cls(size=len(data), sha256=sha256_hex(data), inline=bytes(data))
        return cls(size=len(data), sha256=sha256_hex(data), file=file)

    def verify(self, data: bytes, where: str) -> bytes:
        if len(data) != self.size:
            raise CorruptCheckpointError(f"{where}: size {len(data)} bytes, expected {self.size} (truncated?)")
        if sha256_hex(data) != self.sha256:
            raise CorruptCheckpointError(f"{where}: sha256 mismatch (corrupted)")
        return data

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"size": self.size, "sha256": self.sha256}
        if self.file is not None:
            out["file"] = self.file
        if self.inline is not None:
            out["inline"] = base64.b64encode(self.inline).decode("ascii")
        return out

    @classmethod
    def from_json(cls, data: Any, where: str) -> StateHandle:
        if not isinstance(data, Mapping):
            raise CorruptCheckpointError(f"{where}: state handle is not an object")
        size, digest, file, inline = data.get("size"), data.get("sha256"), data.get("file"), data.get("inline")
        if not isinstance(size, int) or size < 0 or not isinstance(digest, str) or len(digest) != 64:
            raise CorruptCheckpointError(f"{where}: state handle has no valid size/sha256")
        if (file is None) == (inline is None):
            raise CorruptCheckpointError(f"{where}: state handle needs exactly one of file/inline")
        if file is not None and (not isinstance(file, str) or not is_plain_name(file)):
            raise CorruptCheckpointError(f"{where}: state file name {file!r} is not a plain file name")
        raw = None
        if inline is not None:
            try:
                raw = base64.b64decode(inline, validate=True)
            except (ValueError, TypeError):
                raise CorruptCheckpointError(f"{where}: inline state is not valid base64") from None
        return cls(size=size, sha256=digest, file=file, inline=raw)


def is_plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..") and "\x00" not in name


@dataclass(frozen=True)
class CheckpointManifest:
    """Everything needed to restore a pipeline from one completed checkpoint."""

    job_id: str
    pipeline_id: int
    checkpoint_id: int
    kind: CheckpointKind = CheckpointKind.CHECKPOINT
    trigger_ms: int = 0
    complete_ms: int = 0
    #: SeaTunnel's ``PipelineState.states``: the coordinator's own state (split assignment...)
    coordinator_state: StateHandle | None = None
    #: subtask index -> its state (reader positions, operator state, prepared sink output)
    subtask_states: Mapping[int, StateHandle] = field(default_factory=dict)
    #: what sinks must commit when this checkpoint completes (JSON-safe, connector defined)
    commit_infos: tuple[Any, ...] = ()
    #: the identity of each sink whose output ``commit_infos`` hold, and where in them
    #: (JSON objects, engine/sink_identity.py); () in checkpoints of earlier releases
    sinks: tuple[Any, ...] = ()
    #: Flink-style statistics: durations, sizes, per-subtask ack latencies (JSON-safe)
    statistics: Mapping[str, Any] = field(default_factory=dict)
    #: free-form JSON-safe properties (parallelism, job name, fencing token...)
    properties: Mapping[str, Any] = field(default_factory=dict)

    def state_files(self) -> dict[str, StateHandle]:
        handles = list(self.subtask_states.values())
        if self.coordinator_state is not None:
            handles.append(self.coordinator_state)
        return {h.file: h for h in handles if h.file is not None}

    @property
    def state_size(self) -> int:
        size = sum(h.size for h in self.subtask_states.values())
        return size + (self.coordinator_state.size if self.coordinator_state else 0)

    def with_updates(self, **changes: Any) -> CheckpointManifest:
        return replace(self, **changes)

    # ---- JSON ------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        body = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "job_id": self.job_id,
            "pipeline_id": self.pipeline_id,
            "checkpoint_id": self.checkpoint_id,
            "kind": self.kind.value,
            "trigger_ms": self.trigger_ms,
            "complete_ms": self.complete_ms,
            "coordinator_state": self.coordinator_state.to_json() if self.coordinator_state else None,
            "subtask_states": {str(k): v.to_json() for k, v in sorted(self.subtask_states.items())},
            "commit_infos": list(self.commit_infos),
            # absent when no sinks are named (the storage API's own checkpoints): such a
            # manifest is written as earlier releases wrote it, and they read this one
            **({"sinks": list(self.sinks)} if self.sinks else {}),
            "statistics": dict(self.statistics),
            "properties": dict(self.properties),
        }
        body["sha256"] = sha256_hex(_canonical(body))
        return json.dumps(body, sort_keys=True, indent=1).encode("utf-8")

    @classmethod
    def from_bytes(cls, raw: bytes, where: str) -> CheckpointManifest:
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CorruptCheckpointError(f"{where}: not valid JSON ({err.__class__.__name__})") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT_NAME:
            raise CorruptCheckpointError(f"{where}: not a {FORMAT_NAME} manifest")
        version = body.get("version")
        if not isinstance(version, int) or version < 1:
            raise CorruptCheckpointError(f"{where}: missing format version")
        if version > FORMAT_VERSION:
            raise CorruptCheckpointError(
                f"{where}: format version {version} is newer than this release reads ({FORMAT_VERSION}); upgrade"
            )
        claimed = body.pop("sha256", None)
        if claimed != sha256_hex(_canonical(body)):
            raise CorruptCheckpointError(f"{where}: manifest checksum mismatch (corrupted)")
        try:
            subtasks = {
                int(k): StateHandle.from_json(v, f"{where}: subtask {k}") for k, v in body["subtask_states"].items()
            }
            coordinator = body.get("coordinator_state")
            return cls(
                job_id=_typed(body, "job_id", str, where),
                pipeline_id=_typed(body, "pipeline_id", int, where),
                checkpoint_id=_typed(body, "checkpoint_id", int, where),
                kind=CheckpointKind(body["kind"]),
                trigger_ms=_typed(body, "trigger_ms", int, where),
                complete_ms=_typed(body, "complete_ms", int, where),
                coordinator_state=StateHandle.from_json(coordinator, f"{where}: coordinator") if coordinator else None,
                subtask_states=subtasks,
                commit_infos=tuple(body.get("commit_infos") or ()),
                sinks=tuple(body.get("sinks") or ()),
                statistics=body.get("statistics") or {},
                properties=body.get("properties") or {},
            )
        except (KeyError, ValueError, AttributeError, TypeError) as err:
            raise CorruptCheckpointError(f"{where}: malformed manifest ({err})") from None


def _typed(body: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = body.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CorruptCheckpointError(f"{where}: field {key!r} missing or not {kind.__name__}")
    return value


def _canonical(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True)
class PipelineState:
    """SeaTunnel's ``PipelineState``: one pipeline's state at one checkpoint.

    ``states`` round-trips byte for byte through ``store_checkpoint``. Checkpoints read
    back from storage also carry their ``manifest`` (per-subtask state handles,
    commit infos, statistics) and ``location``.
    """

    job_id: str
    pipeline_id: int
    checkpoint_id: int
    states: bytes = b""
    kind: CheckpointKind = CheckpointKind.CHECKPOINT
    manifest: CheckpointManifest | None = field(default=None, compare=False, repr=False)
    location: str | None = field(default=None, compare=False)
