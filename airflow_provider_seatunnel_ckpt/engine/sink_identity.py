"""Which sink a checkpoint's commit infos belong to, whatever the order of the job's sinks.

A job's sinks are one sink to the engine (engine/composite.py): one commit info per subtask
epoch holds each sink's part by its place (``{"sinks": [a, b]}``; a sink of several tables
nests its tables' parts the same way; a job with one sink keeps the sink's own info). A
checkpoint names each place's sink by its identity, as Flink names operator state by the
operator's uid: the sink's plugin, its instance name among the job's sinks of its class
(``Sink.instance``) and the datasets it writes (``Sink.datasets()``). The instance is part
of it because sinks name their resources by it (the Jdbc sink's prepared transactions).

On restore each identity's parts go to the job's sink of the same identity, wherever it now
is; a sink that is new since the checkpoint gets none (it writes the rows read after the
checkpoint). A stored identity that no sink of the job has refuses the restore, in one line
naming that sink, before anything changes: its output would otherwise be dropped, or (when
matched by place) handed to another sink. ``--allow-non-restored-state`` drops it instead
(Flink's ``--allowNonRestoredState``). Checkpoints of earlier releases name no sinks: their
infos are taken by place, as those releases took them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..connectors.api import Dataset, JsonValue, Sink
from ..errors import ConfigError
from ..storage import CheckpointManifest
from .composite import Path, leaves

ALLOW_OPTION = "--allow-non-restored-state"


@dataclass(frozen=True)
class SinkIdentity:
    plugin: str
    instance: str | None
    datasets: tuple[Dataset, ...]

    @classmethod
    def of(cls, sink: Sink) -> SinkIdentity:
        return cls(type(sink).plugin_name, sink.instance, tuple(sink.datasets()))

    def describe(self) -> str:
        """``Jdbc 'sink[1]' (postgres://pg:5432/shop.public.t2)``"""
        name = f" {self.instance!r}" if self.instance is not None else ""
        where = f" ({', '.join(map(str, self.datasets))})" if self.datasets else ""
        return f"{self.plugin}{name}{where}"

    def same_target(self, other: SinkIdentity) -> bool:
        return (self.plugin, self.datasets) == (other.plugin, other.datasets)


def layout(sink: Sink) -> tuple[dict[str, Any], ...]:
    """The job's sink identities and places, as a checkpoint records them (``sinks``)."""
    return tuple(_to_json(path, SinkIdentity.of(leaf)) for path, leaf in leaves(sink))


def _to_json(path: Path, identity: SinkIdentity) -> dict[str, Any]:
    return {
        "plugin": identity.plugin,
        "instance": identity.instance,
        "datasets": [[d.namespace, d.name] for d in identity.datasets],
        "path": list(path),
    }


def _from_json(entry: Mapping[str, Any]) -> tuple[Path, SinkIdentity]:
    datasets = tuple(Dataset(str(namespace), str(name)) for namespace, name in entry.get("datasets") or ())
    identity = SinkIdentity(str(entry.get("plugin")), entry.get("instance"), datasets)
    return tuple(int(i) for i in entry.get("path") or ()), identity


def restored(
    manifest: CheckpointManifest,
    sink: Sink,
    allow_non_restored: bool = False,
    progress: Callable[[str], None] = lambda line: None,
) -> CheckpointManifest:
    """``manifest`` with its commit infos placed as ``sink`` (the job's sinks) expects them.

    Raises ``ConfigError`` on ``--restore`` when a sink of the checkpoint is not in the job,
    unless ``allow_non_restored``: then its output is dropped, and ``progress`` says so."""
    if not manifest.sinks:
        return manifest  # written before sinks had identities: by place, as then
    current = [(path, SinkIdentity.of(leaf)) for path, leaf in leaves(sink)]
    place = {identity: path for path, identity in current}
    stored = [_from_json(entry) for entry in manifest.sinks]
    moves = {old: place[identity] for old, identity in stored if identity in place}
    gone = [identity for _, identity in stored if identity not in place]
    what = f"{'savepoint' if manifest.kind.value == 'savepoint' else 'checkpoint'} {manifest.checkpoint_id}"
    if gone and not allow_non_restored:
        raise ConfigError("--restore", _refusal(what, gone, [identity for _, identity in current]))
    _tell(progress, what, gone, [identity for path, identity in current if path not in moves.values()])
    paths = [path for path, _ in current]
    infos = tuple(_moved_epochs(epochs, moves, paths) for epochs in manifest.commit_infos)
    return manifest.with_updates(commit_infos=infos, sinks=layout(sink))


def _tell(
    progress: Callable[[str], None], what: str, dropped: Sequence[SinkIdentity], new: Sequence[SinkIdentity]
) -> None:
    for identity in dropped:
        progress(
            f"{what} holds output of sink {identity.describe()} that this job no longer has: dropped as "
            f"{ALLOW_OPTION} asks (what it had not committed yet is lost)"
        )
    for identity in new:
        progress(f"sink {identity.describe()} is new since {what}: it writes the rows read after it")


def _refusal(what: str, gone: Sequence[SinkIdentity], current: Sequence[SinkIdentity]) -> str:
    first = gone[0]
    renamed = next((c for c in current if c.same_target(first)), None)
    why = ""
    if renamed is not None:  # the same sink at another place among its plugin's
        why = (
            f" (this job's sink {renamed.describe()} writes there too, but sinks of one plugin are told apart by their "
            "place in the job file, their tables' too: keep them in their order)"
        )
    more = f", nor {len(gone) - 1} more of its sinks" if len(gone) > 1 else ""
    return (
        f"{what} holds output of sink {first.describe()} that this job no longer has{why}{more}; run the job "
        f"with its sinks as they were to restore it, or pass {ALLOW_OPTION} to drop that output (what it had "
        "not committed yet is lost)"
    )


def _moved_epochs(epochs: Any, moves: Mapping[Path, Path], paths: Sequence[Path]) -> Any:
    """One subtask's ``[[epoch checkpoint id, info], ...]`` with each info's parts moved;
    an epoch left with nothing goes."""
    if not epochs:
        return epochs
    moved = []
    for entry in epochs:
        checkpoint_id, info = entry
        parts = {moves[old]: part for old in moves if (part := part_at(info, old)) is not None}
        new = nest(parts, paths)
        if new is not None:
            moved.append([checkpoint_id, new])
    return moved or None


def part_at(info: JsonValue, path: Path) -> JsonValue:
    """One sink's part of a commit info (None when it staged nothing)."""
    for index in path:
        parts = info.get("sinks") if isinstance(info, Mapping) else None
        if not isinstance(parts, list) or index >= len(parts):
            return None
        info = parts[index]
    return info


def nest(parts: Mapping[Path, JsonValue], paths: Sequence[Path], prefix: Path = ()) -> JsonValue:
    """The commit info holding ``parts`` at their places, shaped as the writers of the sinks
    at ``paths`` shape it (engine/composite.py: None when no sink staged anything)."""
    if prefix in paths:
        return parts.get(prefix)
    width = 1 + max(path[len(prefix)] for path in paths if path[: len(prefix)] == prefix)
    infos = [nest(parts, paths, (*prefix, index)) for index in range(width)]
    return {"sinks": infos} if any(info is not None for info in infos) else None
