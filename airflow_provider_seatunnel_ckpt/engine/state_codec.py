"""A subtask's checkpoint state, as bytes: versioned JSON plus raw blobs, never pickle.

State is scoped to splits (``connectors/api.py``), so a restore with another parallelism
merges all subtasks' states and deals the splits again. Two steps, like Flink's state
backends: ``snapshot_split_states`` (synchronous, at the barrier: a structural copy,
containers copied, leaf values shared; values that can never be encoded are reported
here with their path) and ``frame_snapshot`` (asynchronous: the pieces a storage writes
as they come; ``encode_snapshot`` joins them). Format versions 1 (one JSON document), 2
(magic, header, raw blobs) and 3 (either, plus finished splits as runs of plan indices)
are all read; only JSON and raw bytes are ever read back.

The formats: docs/architecture.md, "A subtask's state, as bytes".
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..storage import CorruptCheckpointError
from ..storage.filesystem import Bytes, join_pieces

FORMAT = "seatunnel-ckpt/subtask-state"
VERSION = 3
#: the version of each framing without finished-split runs
_PLAIN, _FRAMED = 1, 2
#: first bytes of a version-2 state; a version-1 state is JSON, so starts with ``{``
MAGIC = b"\x89STCKPT\n"
_LENGTH = struct.Struct(">Q")
_PREFIX = len(MAGIC) + _LENGTH.size
#: strings this long or longer go out of band as UTF-8 blobs instead of into the JSON header
BLOB_STR_MIN = 64 * 1024
#: blobs are copied into the output in slices of this size (lets other threads run between them)
_COPY_CHUNK = 4 << 20

_BYTES_TYPES = (bytes, bytearray, memoryview)
_SCALARS = frozenset({int, float, bool, type(None)})


@dataclass
class SplitState:
    position: Any = None  #: reader position (JSON); None = not started
    finished: bool = False
    #: transform index (as str) -> that transform's state for this split (JSON-safe or bytes)
    operators: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "finished": self.finished, "operators": self.operators}

    @classmethod
    def from_json(cls, raw: Any, where: str) -> SplitState:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("finished", False), bool):
            raise CorruptCheckpointError(f"{where}: malformed split state")
        operators = raw.get("operators") or {}
        if not isinstance(operators, Mapping):
            raise CorruptCheckpointError(f"{where}: malformed operator states")
        return cls(position=raw.get("position"), finished=raw.get("finished", False), operators=dict(operators))


@dataclass
class StateSnapshot:
    """What the processing thread hands to the async thread at a barrier: private
    containers (nobody else mutates them), immutable or contract-bound leaves."""

    subtask: int
    #: split id -> {"position", "finished", "operators"}, blobs replaced by None
    tree: dict[str, Any]
    #: (path from ``tree``, value): the values that go out of band, in output order
    blobs: list[tuple[tuple[Any, ...], Any]]
    #: runs of plan indices of finished splits without state (split_book.FinishedRuns)
    finished: list[list[int]] = field(default_factory=list)


@dataclass
class SubtaskState:
    """A decoded subtask state (or several subtasks' merged): the split entries, and the
    finished splits' runs as stored (checked against the plan by split_book)."""

    splits: dict[str, SplitState]
    finished: list[Any] = field(default_factory=list)


# ---- synchronous part: structural copy --------------------------------------------------


def snapshot_split_states(
    subtask: int,
    splits: Mapping[str, SplitState],
    finished: Iterable[Iterable[int]] = (),
    keep_unstarted: bool = False,
) -> StateSnapshot:
    """The barrier's synchronous snapshot: copies containers, shares leaves (see module doc);
    ``finished``: runs of finished splits' plan indices (copied); ``keep_unstarted``: splits
    not started yet are named too (dealt ones: no other record says whose they are).

    Raises ``TypeError`` naming the path of a value that is neither JSON-safe nor bytes."""
    blobs: list[tuple[tuple[Any, ...], Any]] = []
    tree: dict[str, Any] = {}
    for split_id, state in splits.items():
        if state.position is None and not state.finished and not state.operators and not keep_unstarted:
            continue  # not started: a restore reads a split it finds no state for from its beginning
        split_id = str(split_id)
        tree[split_id] = {
            "position": _copy(state.position, (split_id, "position"), blobs),
            "finished": bool(state.finished),
            "operators": _copy(state.operators, (split_id, "operators"), blobs),
        }
    return StateSnapshot(subtask, tree, blobs, [list(run) for run in finished])


def _copy(value: Any, path: tuple[Any, ...], blobs: list[tuple[tuple[Any, ...], Any]]) -> Any:
    kind = type(value)
    if kind is str:
        if len(value) >= BLOB_STR_MIN:
            blobs.append((path, value))
            return None
        return value
    if kind in _SCALARS:
        return value
    if kind is dict:
        out = value.copy()  # C speed; then only what is not a small immutable leaf is looked at
        for key, item in out.items():
            t = type(item)
            if t in _SCALARS or (t is str and len(item) < BLOB_STR_MIN):
                continue
            out[key] = _copy(item, path + (_json_key(key, path),), blobs)
        return out
    if kind is list or kind is tuple:
        out_list = list(value)
        for index, item in enumerate(out_list):
            t = type(item)
            if t in _SCALARS or (t is str and len(item) < BLOB_STR_MIN):
                continue
            out_list[index] = _copy(item, path + (index,), blobs)
        return out_list
    if kind is bytes:
        blobs.append((path, value))
        return None
    if kind is bytearray:
        # mutable and usually appended to: copied here (the only full copy taken on the
        # processing thread); use bytes for big state
        blobs.append((path, bytes(value)))
        return None
    if kind is memoryview:
        # shared: the buffer it views must not change after the barrier (api.py contract)
        blobs.append((path, value if value.ndim == 1 and value.format == "B" else value.cast("B")))
        return None
    # subclasses of the JSON types (IntEnum, a str subclass...) as json would take them
    if isinstance(value, (str, int, float)):
        if isinstance(value, str) and len(value) >= BLOB_STR_MIN:
            blobs.append((path, str(value)))
            return None
        return value
    if isinstance(value, Mapping):
        return _copy(dict(value), path, blobs)
    if isinstance(value, _BYTES_TYPES):
        return _copy(bytes(value), path, blobs)
    raise TypeError(
        f"operator state value at {_show(path)} is a {kind.__module__}.{kind.__qualname__}: "
        "state must be JSON-safe (dict, list, str, int, float, bool, None) or bytes"
    )


def _json_key(key: Any, path: tuple[Any, ...]) -> str:
    """The key as it is in the JSON document (json.dumps turns these keys into strings)."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return float.__repr__(key)
    raise TypeError(f"operator state key {key!r} at {_show(path)} is not a str, int, float, bool or None")


def _show(path: Iterable[Any]) -> str:
    parts = list(path)
    if not parts:
        return "(root)"
    head, rest = parts[0], parts[1:]
    return f"split {head!r} " + "".join(f"[{p!r}]" for p in rest)


# ---- asynchronous part: encode ------------------------------------------------------------


@dataclass(frozen=True)
class EncodedState:
    """An encoded snapshot before it is put together: ``size`` bytes that ``pieces()``
    yields in order (the framing and header, then every blob in slices of
    ``_COPY_CHUNK``). A storage can write the pieces as they come instead of first
    copying a state of gigabytes into one buffer, which costs a fresh page of memory per
    4 KiB of state on every checkpoint."""

    size: int
    head: bytes
    #: (size in bytes, payload): an ASCII ``str`` or a 1-D byte ``memoryview``
    blobs: tuple[tuple[int, Any], ...] = ()

    def pieces(self) -> Iterator[Bytes]:
        yield self.head
        for size, payload in self.blobs:
            if isinstance(payload, str):  # ASCII: encoded slice by slice, never the whole string at once
                for start in range(0, size, _COPY_CHUNK):
                    yield payload[start : start + _COPY_CHUNK].encode("ascii")
            else:
                for start in range(0, size, _COPY_CHUNK):
                    yield payload[start : min(size, start + _COPY_CHUNK)]

    def to_bytes(self) -> Bytes:
        return join_pieces(self.size, self.pieces())


def frame_snapshot(snapshot: StateSnapshot) -> EncodedState:
    """The encoding of a snapshot, as pieces: framed when it has blobs (each copied once,
    as its pieces are taken), plain JSON otherwise; version 3 when it has finished-split
    runs, else 2 or 1 (see module doc). Every encoding error is raised here, none while
    the pieces are taken. The caller owns ``snapshot`` and it is consumed (its tree may
    be changed)."""
    entries: list[dict[str, Any]] = []
    payloads: list[Any] = []
    for path, value in snapshot.blobs:
        if isinstance(value, str):
            if value.isascii():  # O(1) in CPython: UTF-8 is the characters themselves
                entries.append({"path": list(path), "type": "str", "size": len(value)})
                payloads.append(value)
                continue
            try:
                encoded = value.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: JSON can escape them, UTF-8 cannot
                _put(snapshot.tree, path, value)
                continue
            entries.append({"path": list(path), "type": "str", "size": len(encoded)})
            payloads.append(memoryview(encoded))
        else:
            view = memoryview(value)
            if view.ndim != 1 or view.itemsize != 1:
                view = view.cast("B")
            entries.append({"path": list(path), "type": "bytes", "size": view.nbytes})
            payloads.append(view)
    body = {
        "format": FORMAT,
        "version": VERSION if snapshot.finished else _FRAMED if entries else _PLAIN,
        "subtask": snapshot.subtask,
        "splits": snapshot.tree,
    }
    if snapshot.finished:
        body["finished_splits"] = snapshot.finished
    if not entries:
        head = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
        return EncodedState(size=len(head), head=head)
    body["blobs"] = entries
    header = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("ascii")
    head = MAGIC + _LENGTH.pack(len(header)) + header
    blobs = tuple((entry["size"], payload) for entry, payload in zip(entries, payloads))
    return EncodedState(size=len(head) + sum(size for size, _ in blobs), head=head, blobs=blobs)


def encode_snapshot(snapshot: StateSnapshot) -> Bytes:
    """The bytes of a snapshot (``frame_snapshot`` put together in one buffer)."""
    return frame_snapshot(snapshot).to_bytes()


def encode_subtask_state(subtask: int, splits: Mapping[str, SplitState]) -> Bytes:
    """Snapshot and encode in one call (both parts on the calling thread)."""
    return encode_snapshot(snapshot_split_states(subtask, splits))


def _put(tree: Any, path: tuple[Any, ...], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


# ---- decode ---------------------------------------------------------------------------------


def decode_subtask_state(data: bytes | bytearray | memoryview, where: str) -> SubtaskState:
    """A subtask state from the bytes of any format version; ``CorruptCheckpointError``
    for anything else (truncated, damaged, or not a subtask state)."""
    view = memoryview(data)
    if view[: len(MAGIC)] == MAGIC:
        body = _decode_framed(view, where)
    else:
        body = _load_json(view, where, "subtask state")
        _check_body(body, where, allowed={_PLAIN, VERSION})
    splits = body.get("splits")
    if not isinstance(splits, dict):
        raise CorruptCheckpointError(f"{where}: subtask state has no splits")
    finished = body.get("finished_splits", [])
    if finished and body["version"] != VERSION:
        raise CorruptCheckpointError(f"{where}: subtask state version {body['version']} cannot have finished splits")
    if not isinstance(finished, list):
        raise CorruptCheckpointError(f"{where}: finished splits are not a list of runs")
    return SubtaskState({str(k): SplitState.from_json(v, f"{where}: split {k}") for k, v in splits.items()}, finished)


def _decode_framed(view: memoryview, where: str) -> dict[str, Any]:
    if len(view) < _PREFIX:
        raise CorruptCheckpointError(f"{where}: subtask state is truncated ({len(view)} bytes, no header)")
    (header_size,) = _LENGTH.unpack(view[len(MAGIC) : _PREFIX])
    if header_size > len(view) - _PREFIX:
        raise CorruptCheckpointError(
            f"{where}: subtask state is truncated: header of {header_size} bytes, {len(view) - _PREFIX} present"
        )
    body = _load_json(view[_PREFIX : _PREFIX + header_size], where, "subtask state header")
    _check_body(body, where, allowed={_FRAMED, VERSION})
    entries = body.get("blobs")
    if not isinstance(entries, list):
        raise CorruptCheckpointError(f"{where}: subtask state header has no blob table")
    pos = _PREFIX + header_size
    end = len(view)
    for i, entry in enumerate(entries):
        what = f"{where}: blob {i}"
        if not isinstance(entry, dict):
            raise CorruptCheckpointError(f"{what}: malformed blob entry")
        size, kind, path = entry.get("size"), entry.get("type"), entry.get("path")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or kind not in ("bytes", "str"):
            raise CorruptCheckpointError(f"{what}: malformed blob entry")
        if not isinstance(path, list) or not path:
            raise CorruptCheckpointError(f"{what}: malformed blob path")
        if size > end - pos:
            raise CorruptCheckpointError(f"{what} is truncated: {size} bytes expected, {end - pos} present")
        raw = view[pos : pos + size]
        if kind == "str":
            try:
                value: Any = str(raw, "utf-8")
            except UnicodeDecodeError:
                raise CorruptCheckpointError(f"{what}: string blob is not valid UTF-8") from None
        else:
            value = raw.tobytes()
        _place(body["splits"], path, value, what)
        pos += size
    if pos != end:
        raise CorruptCheckpointError(f"{where}: subtask state has {end - pos} unexpected bytes after its blobs")
    return body


def _place(tree: Any, path: list[Any], value: Any, what: str) -> None:
    node = tree
    for depth, key in enumerate(path):
        in_dict = isinstance(node, dict) and isinstance(key, str) and key in node
        in_list = isinstance(node, list) and isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(node)
        if not (in_dict or in_list):
            break
        if depth == len(path) - 1:
            if node[key] is not None:
                break
            node[key] = value
            return
        node = node[key]
    raise CorruptCheckpointError(f"{what}: its path {path!r} does not lead to a placeholder")


def _load_json(raw: memoryview, where: str, what: str) -> Any:
    try:
        return json.loads(str(raw, "utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CorruptCheckpointError(f"{where}: {what} is not valid JSON") from None


def _check_body(body: Any, where: str, allowed: set[int]) -> None:
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise CorruptCheckpointError(f"{where}: not a subtask state")
    version = body.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > VERSION:
        raise CorruptCheckpointError(f"{where}: subtask state version {version!r} is not supported by this release")
    if version not in allowed:
        raise CorruptCheckpointError(f"{where}: subtask state version {version} does not match its framing")


def merge_split_states(parts: Iterable[SubtaskState]) -> SubtaskState:
    """Union of several subtasks' states (restore with another parallelism). A split
    finished by two subtasks is found when the runs are expanded (split_book)."""
    merged = SubtaskState({})
    for part in parts:
        for split_id, split_state in part.splits.items():
            if split_id in merged.splits:
                raise CorruptCheckpointError(f"split {split_id!r} appears in more than one subtask's state")
            merged.splits[split_id] = split_state
        merged.finished.extend(part.finished)
    return merged
