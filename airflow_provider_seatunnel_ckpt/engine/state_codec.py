"""A subtask's checkpoint state, as bytes: versioned JSON, never pickle.

State is scoped to splits (see ``connectors/api.py``): for every split the subtask
owns, where its reader stands, whether it is finished, and each stateful transform's
state for it. Because nothing is tied to the subtask index, a restore with another
parallelism merges all subtasks' states and deals the splits again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..storage import CorruptCheckpointError

FORMAT = "seatunnel-ckpt/subtask-state"
VERSION = 1


@dataclass
class SplitState:
    position: Any = None  #: reader position (JSON); None = not started
    finished: bool = False
    #: transform index (as str) -> that transform's JSON state for this split
    operators: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "finished": self.finished, "operators": self.operators}

    @classmethod
    def from_json(cls, raw: Any, where: str) -> "SplitState":
        if not isinstance(raw, Mapping) or not isinstance(raw.get("finished", False), bool):
            raise CorruptCheckpointError(f"{where}: malformed split state")
        operators = raw.get("operators") or {}
        if not isinstance(operators, Mapping):
            raise CorruptCheckpointError(f"{where}: malformed operator states")
        return cls(position=raw.get("position"), finished=raw.get("finished", False), operators=dict(operators))


def encode_subtask_state(subtask: int, splits: Mapping[str, SplitState]) -> bytes:
    body = {
        "format": FORMAT,
        "version": VERSION,
        "subtask": subtask,
        "splits": {split_id: s.to_json() for split_id, s in splits.items()},
    }
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")


def decode_subtask_state(data: bytes, where: str) -> dict[str, SplitState]:
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CorruptCheckpointError(f"{where}: subtask state is not valid JSON") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise CorruptCheckpointError(f"{where}: not a subtask state")
    version = body.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CorruptCheckpointError(f"{where}: subtask state version {version!r} is not supported by this release")
    splits = body.get("splits")
    if not isinstance(splits, dict):
        raise CorruptCheckpointError(f"{where}: subtask state has no splits")
    return {str(k): SplitState.from_json(v, f"{where}: split {k}") for k, v in splits.items()}


def merge_split_states(parts: Iterable[Mapping[str, SplitState]]) -> dict[str, SplitState]:
    """Union of several subtasks' states (restore with another parallelism)."""
    merged: dict[str, SplitState] = {}
    for part in parts:
        for split_id, split_state in part.items():
            if split_id in merged:
                raise CorruptCheckpointError(f"split {split_id!r} appears in more than one subtask's state")
            merged[split_id] = split_state
    return merged
