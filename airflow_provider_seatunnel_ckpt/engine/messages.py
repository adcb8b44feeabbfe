"""Control-channel messages between subtasks and the checkpoint coordinator.

The set is deliberately small: every message changes what the coordinator or a subtask
may do next. Framing, the per-run token and size limits belong to the transport; this
module defines the messages (frozen dataclasses: ``SubtaskMessage`` from a subtask,
``CoordinatorMessage`` from the driver) and their JSON form, decoded strictly, so a
malformed or hostile message, or version skew between driver and executors, is rejected
here, before any decision is taken on it.

What each message means, and the JSON form: docs/architecture.md, "The protocol".
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn, TypeAlias, cast

from ..errors import ProtocolError

# Bumped when a message changes shape; the transport compares it at handshake.
PROTOCOL_VERSION = 3

JsonValue: TypeAlias = Any  # None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]

#: splits as the manifest keeps them: ``((split_id, spec), ...)``
SplitPlan: TypeAlias = tuple[tuple[str, dict[str, Any]], ...]

_MAX_JSON_DEPTH = 64
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class CheckpointKind(enum.Enum):
    """Why a barrier was injected; decides retention and what completion means."""

    CHECKPOINT = "checkpoint"  # periodic; may be subsumed by a newer one
    SAVEPOINT = "savepoint"  # requested by an operator; never subsumed or retained away
    FINAL = "final"  # all input consumed; its completion finishes the job


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"{where}: {problem}")


def _check_count(value: Any, where: str) -> int:
    # bool is an int subclass; True as a checkpoint id is a bug, not a 1.
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(where, f"expected a non-negative integer, got {type(value).__name__} {value!r}")
    if value < 0:
        _fail(where, f"expected a non-negative integer, got {value}")
    return value


def _check_str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        _fail(where, f"expected a string, got {type(value).__name__}")
    return value


def _check_json(value: Any, where: str, depth: int = 0) -> JsonValue:
    """Accept only values that survive a JSON round trip unchanged (hence no tuples)."""
    if depth > _MAX_JSON_DEPTH:
        _fail(where, f"nested deeper than {_MAX_JSON_DEPTH} levels")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            _fail(where, f"{value!r} is not valid JSON")
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]", depth + 1)
        return value
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                _fail(where, f"object key {key!r} is not a string")
            _check_json(item, f"{where}.{key}", depth + 1)
        return value
    _fail(where, f"{type(value).__name__} is not JSON-safe (use dict, list, str, int, float, bool, None)")


@dataclass(frozen=True, slots=True)
class StateHandle:
    """Where one piece of a subtask's state lives: a storage path, or the bytes inline.

    Small state travels inline so a checkpoint of a stateless pipeline costs no extra
    files; size and sha256 let the restoring side detect a truncated or corrupt file.
    """

    size: int
    sha256: str
    path: str | None = None
    inline: bytes | None = None

    def __post_init__(self) -> None:
        _check_handle(self.size, self.sha256, self.path, self.inline, "state handle")

    @classmethod
    def of_bytes(cls, data: bytes | bytearray | memoryview) -> StateHandle:
        return cls(size=len(data), sha256=hashlib.sha256(data).hexdigest(), inline=bytes(data))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"size": self.size, "sha256": self.sha256}
        if self.inline is None:  # exactly one of the two is set (__post_init__)
            out["path"] = self.path
        else:
            out["inline"] = base64.b64encode(self.inline).decode("ascii")
        return out

    @classmethod
    def from_json(cls, raw: Any, where: str) -> StateHandle:
        obj = _check_object(raw, where, required={"size", "sha256"}, optional={"path", "inline"})
        inline = obj.get("inline")
        if inline is not None:
            try:
                inline = base64.b64decode(_check_str(inline, f"{where}.inline"), validate=True)
            except (binascii.Error, ValueError):
                _fail(f"{where}.inline", "is not valid base64")
        # Checked here first so the error names the enclosing message, not just "state handle".
        _check_handle(obj["size"], obj["sha256"], obj.get("path"), inline, where)
        return cls(size=obj["size"], sha256=obj["sha256"], path=obj.get("path"), inline=inline)


def _check_handle(size: Any, sha256: Any, path: Any, inline: Any, where: str) -> None:
    _check_count(size, f"{where}.size")
    if not isinstance(sha256, str) or not _SHA256_HEX.fullmatch(sha256):
        _fail(f"{where}.sha256", f"expected 64 lowercase hex digits, got {sha256!r}")
    if (path is None) == (inline is None):
        _fail(where, "exactly one of 'path' and 'inline' must be set")
    if path is not None:
        if not _check_str(path, f"{where}.path"):
            _fail(f"{where}.path", "must not be empty")
        return
    if not isinstance(inline, bytes):
        _fail(f"{where}.inline", f"expected bytes, got {type(inline).__name__}")
    if len(inline) != size:
        _fail(f"{where}.inline", f"holds {len(inline)} bytes but size says {size}")
    if hashlib.sha256(inline).hexdigest() != sha256:
        _fail(f"{where}.inline", "sha256 does not match the bytes")


@dataclass(frozen=True, slots=True)
class AckStats:
    """Per-subtask cost of one checkpoint, kept in the manifest for tuning and sensors."""

    sync_ms: int = 0
    async_ms: int = 0
    state_bytes: int = 0
    rows_since_last: int = 0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _check_count(getattr(self, f.name), f"stats.{f.name}")

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, raw: Any, where: str) -> AckStats:
        names = {f.name for f in dataclasses.fields(cls)}
        obj = _check_object(raw, where, required=names, optional=set())
        return cls(**{name: _check_count(obj[name], f"{where}.{name}") for name in names})


def _check_object(raw: Any, where: str, required: set[str], optional: set[str]) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        _fail(where, f"expected a JSON object, got {type(raw).__name__}")
    missing = required - raw.keys()
    if missing:
        _fail(where, f"missing field(s) {sorted(missing)}")
    unknown = raw.keys() - required - optional
    if unknown:
        _fail(where, f"unknown field(s) {sorted(map(str, unknown))}")
    return raw


# --- field codecs: one per annotation used below, shared by validation and decoding --------


class _Codec:
    """Encode to JSON, decode from JSON, and check an in-memory value, for one field type."""

    def check(self, value: Any, where: str) -> None:
        self.decode(value, where)  # right for the types whose JSON form is the value itself

    def encode(self, value: Any) -> Any:
        return value

    def decode(self, raw: Any, where: str) -> Any:
        raise NotImplementedError


class _Count(_Codec):
    def decode(self, raw: Any, where: str) -> int:
        return _check_count(raw, where)


class _OptionalCount(_Codec):
    def decode(self, raw: Any, where: str) -> int | None:
        return None if raw is None else _check_count(raw, where)


class _Text(_Codec):
    def decode(self, raw: Any, where: str) -> str:
        return _check_str(raw, where)


class _Flag(_Codec):
    def decode(self, raw: Any, where: str) -> bool:
        if not isinstance(raw, bool):
            _fail(where, f"expected true or false, got {type(raw).__name__}")
        return raw


class _Json(_Codec):
    def decode(self, raw: Any, where: str) -> JsonValue:
        return _check_json(raw, where)


class _Kind(_Codec):
    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, CheckpointKind):
            _fail(where, f"expected a CheckpointKind, got {value!r}")

    def encode(self, value: CheckpointKind) -> str:
        return value.value

    def decode(self, raw: Any, where: str) -> CheckpointKind:
        try:
            return CheckpointKind(raw)
        except ValueError:
            allowed = ", ".join(k.value for k in CheckpointKind)
            _fail(where, f"expected one of {allowed}, got {raw!r}")


class _Handles(_Codec):
    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, tuple):
            _fail(where, f"expected a tuple of StateHandle, got {type(value).__name__}")
        for i, handle in enumerate(value):
            if not isinstance(handle, StateHandle):
                _fail(f"{where}[{i}]", f"expected a StateHandle, got {type(handle).__name__}")

    def encode(self, value: tuple[StateHandle, ...]) -> list[dict[str, Any]]:
        return [handle.to_json() for handle in value]

    def decode(self, raw: Any, where: str) -> tuple[StateHandle, ...]:
        if not isinstance(raw, list):
            _fail(where, f"expected a list, got {type(raw).__name__}")
        return tuple(StateHandle.from_json(item, f"{where}[{i}]") for i, item in enumerate(raw))


class _SplitPlan(_Codec):
    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, tuple):
            _fail(where, f"expected a tuple of (split_id, spec) pairs, got {type(value).__name__}")
        self.decode([list(item) if isinstance(item, tuple) else item for item in value], where)

    def encode(self, value: SplitPlan) -> list[list[Any]]:
        return [[split_id, spec] for split_id, spec in value]

    def decode(self, raw: Any, where: str) -> SplitPlan:
        if not isinstance(raw, list):
            _fail(where, f"expected a list, got {type(raw).__name__}")
        plan = []
        for i, item in enumerate(raw):
            if not (
                isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], dict)
            ):
                _fail(f"{where}[{i}]", "expected [split_id, spec object]")
            plan.append((item[0], _check_json(item[1], f"{where}[{i}]")))
        return tuple(plan)


class _Indices(_Codec):
    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, tuple):
            _fail(where, f"expected a tuple of plan indices, got {type(value).__name__}")
        self.decode(list(value), where)

    def encode(self, value: tuple[int, ...]) -> list[int]:
        return list(value)

    def decode(self, raw: Any, where: str) -> tuple[int, ...]:
        if not isinstance(raw, list):
            _fail(where, f"expected a list, got {type(raw).__name__}")
        return tuple(_check_count(item, f"{where}[{i}]") for i, item in enumerate(raw))


class _Stats(_Codec):
    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, AckStats):
            _fail(where, f"expected AckStats, got {type(value).__name__}")

    def encode(self, value: AckStats) -> dict[str, Any]:
        return value.to_json()

    def decode(self, raw: Any, where: str) -> AckStats:
        return AckStats.from_json(raw, where)


_CODECS: dict[str, _Codec] = {
    "int": _Count(),
    "int | None": _OptionalCount(),
    "str": _Text(),
    "bool": _Flag(),
    "JsonValue": _Json(),
    "CheckpointKind": _Kind(),
    "tuple[StateHandle, ...]": _Handles(),
    "AckStats": _Stats(),
    "SplitPlan": _SplitPlan(),
    "tuple[int, ...]": _Indices(),
}


def _annotation(f: dataclasses.Field[Any]) -> str:
    """A message field's annotation: its text, under ``from __future__ import annotations``
    (typeshed types ``Field.type`` as the evaluated type)."""
    return cast(str, f.type)


class _Message:
    """Mixin: validate on construction, so no invalid message exists in memory."""

    __slots__ = ()
    TYPE: ClassVar[str]
    # set by @dataclass on each message class: what makes one a dataclass to type checkers
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _CODECS[_annotation(f)].check(getattr(self, f.name), f"{self.TYPE} message, field {f.name}")


# --- subtask -> coordinator -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Register(_Message):
    TYPE: ClassVar[str] = "register"
    subtask: int
    attempt: int


@dataclass(frozen=True, slots=True)
class Ack(_Message):
    TYPE: ClassVar[str] = "ack"
    checkpoint_id: int
    subtask: int
    attempt: int
    state_handles: tuple[StateHandle, ...] = ()
    sink_commit_info: JsonValue = None
    stats: AckStats = AckStats()


@dataclass(frozen=True, slots=True)
class Decline(_Message):
    TYPE: ClassVar[str] = "decline"
    checkpoint_id: int
    subtask: int
    attempt: int
    reason: str


@dataclass(frozen=True, slots=True)
class EndOfInput(_Message):
    TYPE: ClassVar[str] = "end_of_input"
    subtask: int
    attempt: int


@dataclass(frozen=True, slots=True)
class TaskFailed(_Message):
    TYPE: ClassVar[str] = "task_failed"
    subtask: int
    attempt: int
    error: str
    #: the failure cannot be retried away (errors.DataError): the job fails at once
    fatal: bool = False


@dataclass(frozen=True, slots=True)
class RequestSplit(_Message):
    """A subtask of a source whose splits are dealt on request asks for its next split
    (engine/split_enumerator.py): answered by ``AssignSplits``."""

    TYPE: ClassVar[str] = "request_split"
    subtask: int
    attempt: int


# --- coordinator -> subtask -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RestoreState(_Message):
    TYPE: ClassVar[str] = "restore_state"
    checkpoint_id: int | None
    state_handles: tuple[StateHandle, ...] = ()
    sink_commit_info: JsonValue = None
    #: savepoints live in their own directory, so the reader must know which it is
    kind: CheckpointKind = CheckpointKind.CHECKPOINT
    #: splits discovered while the job runs (filled in by the driver, not the coordinator)
    added_splits: SplitPlan = ()
    #: the handles are every subtask's (a restore with another parallelism): a subtask
    #: keeps the splits dealt to it by index; else they are its own and it keeps them all
    shared: bool = False


@dataclass(frozen=True, slots=True)
class TriggerBarrier(_Message):
    TYPE: ClassVar[str] = "trigger_barrier"
    checkpoint_id: int
    kind: CheckpointKind
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class NotifyComplete(_Message):
    TYPE: ClassVar[str] = "notify_complete"
    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class AbortCheckpoint(_Message):
    TYPE: ClassVar[str] = "abort_checkpoint"
    checkpoint_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class AddSplits(_Message):
    TYPE: ClassVar[str] = "add_splits"
    added_splits: SplitPlan


@dataclass(frozen=True, slots=True)
class AssignSplits(_Message):
    """The answer to ``RequestSplit``: plan indices to read next, and whether no split
    is left to deal (a bounded source's input ends there)."""

    TYPE: ClassVar[str] = "assign_splits"
    indices: tuple[int, ...]
    no_more: bool = False


@dataclass(frozen=True, slots=True)
class FinishJob(_Message):
    """The job's last checkpoint (final, or stop-with-savepoint) is durable and its
    output committed: close the subtask without producing anything more."""

    TYPE: ClassVar[str] = "finish_job"
    checkpoint_id: int


SubtaskMessage: TypeAlias = Register | Ack | Decline | EndOfInput | TaskFailed | RequestSplit
CoordinatorMessage: TypeAlias = (
    RestoreState | TriggerBarrier | NotifyComplete | AbortCheckpoint | FinishJob | AddSplits | AssignSplits
)
Message: TypeAlias = SubtaskMessage | CoordinatorMessage

MESSAGE_TYPES: Mapping[str, type[Message]] = {
    cls.TYPE: cls
    for cls in (
        Register,
        Ack,
        Decline,
        EndOfInput,
        TaskFailed,
        RestoreState,
        TriggerBarrier,
        NotifyComplete,
        AbortCheckpoint,
        FinishJob,
        AddSplits,
        RequestSplit,
        AssignSplits,
    )
}


def encode(message: Message) -> dict[str, Any]:
    """Turn a message into a JSON-safe dict (``json.dumps`` accepts it as is)."""
    out: dict[str, Any] = {"type": message.TYPE}
    for f in dataclasses.fields(message):
        out[f.name] = _CODECS[_annotation(f)].encode(getattr(message, f.name))
    return out


def decode(raw: Any) -> Message:
    """Validate and rebuild a message; any defect raises ProtocolError naming type and field."""
    if not isinstance(raw, Mapping):
        _fail("message", f"expected a JSON object, got {type(raw).__name__}")
    type_name = raw.get("type")
    cls = MESSAGE_TYPES.get(type_name) if isinstance(type_name, str) else None
    if cls is None:
        _fail("message", f"unknown type {type_name!r} (expected one of {sorted(MESSAGE_TYPES)})")
    where = f"{type_name} message"
    all_fields = dataclasses.fields(cls)
    required = {f.name for f in all_fields if f.default is dataclasses.MISSING}
    optional = {f.name for f in all_fields} - required
    obj = _check_object(raw, where, required=required | {"type"}, optional=optional)
    kwargs = {
        f.name: _CODECS[_annotation(f)].decode(obj[f.name], f"{where}, field {f.name}")
        for f in all_fields
        if f.name in obj
    }
    return cls(**kwargs)


def encode_json(message: Message) -> bytes:
    return json.dumps(encode(message), separators=(",", ":"), allow_nan=False).encode("utf-8")


def decode_json(data: bytes | str) -> Message:
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        _fail("message", f"not valid JSON ({exc})")
    return decode(raw)
