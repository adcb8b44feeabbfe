"""What the Iceberg and Delta connectors share: save modes, storage options and their
translation for pyiceberg and delta-rs, table locations, commit infos."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from ...errors import ConfigError
from ...storage.filesystem import FileSystem
from ...storage.urls import filesystem_for_url, is_storage_option
from ..api import JsonValue
from ..options import Parsed
from .datafiles import DataFile

log = logging.getLogger(__name__)


#: the size of a data file before the next one starts
MAX_FILE_BYTES_DOC = "bytes of a data file before the writer starts the next (0: no limit)"


def parse_modes(opts: Parsed) -> tuple[bool, str]:
    """``(create the table when missing, data save mode)`` from SeaTunnel's two options."""
    return opts["schema_save_mode"] == "create_schema_when_not_exist", opts["data_save_mode"]


def storage_of(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if is_storage_option(k)}


def _endpoint(options: Mapping[str, Any]) -> str | None:
    endpoint = options.get("fs.s3a.endpoint")
    if not endpoint:
        return None
    endpoint = str(endpoint)
    if "://" not in endpoint:
        ssl = str(options.get("fs.s3a.connection.ssl.enabled", "true")).lower() != "false"
        endpoint = ("https://" if ssl else "http://") + endpoint
    return endpoint.rstrip("/")


def s3_properties(options: Mapping[str, Any]) -> dict[str, str]:
    """pyiceberg FileIO properties (``s3.*``) for the same S3 the storage options name."""
    props = {}
    for ours, theirs in (
        ("fs.s3a.access.key", "s3.access-key-id"),
        ("fs.s3a.secret.key", "s3.secret-access-key"),
        ("fs.s3a.session.token", "s3.session-token"),
        ("fs.s3a.endpoint.region", "s3.region"),
    ):
        if options.get(ours):
            props[theirs] = str(options[ours])
    endpoint = _endpoint(options)
    if endpoint:
        props["s3.endpoint"] = endpoint
        props.setdefault("s3.region", "us-east-1")
    if str(options.get("fs.s3a.path.style.access", "")).lower() == "true":
        props["s3.force-virtual-addressing"] = "false"
    return props


def object_store_options(options: Mapping[str, Any]) -> dict[str, str]:
    """delta-rs (object_store) storage options for the same S3 the storage options name."""
    props = {}
    for ours, theirs in (
        ("fs.s3a.access.key", "AWS_ACCESS_KEY_ID"),
        ("fs.s3a.secret.key", "AWS_SECRET_ACCESS_KEY"),
        ("fs.s3a.session.token", "AWS_SESSION_TOKEN"),
        ("fs.s3a.endpoint.region", "AWS_REGION"),
    ):
        if options.get(ours):
            props[theirs] = str(options[ours])
    endpoint = _endpoint(options)
    if endpoint:
        props["AWS_ENDPOINT_URL"] = endpoint
        props.setdefault("AWS_REGION", "us-east-1")
        if endpoint.startswith("http://"):
            props["AWS_ALLOW_HTTP"] = "true"
    if str(options.get("fs.s3a.path.style.access", "")).lower() == "true":
        props["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    return props


@dataclass
class TableLocation:
    """A table's root URL and the same place in our storage layer (``fs`` + ``root``),
    converting between data-file URLs (what table metadata holds) and ``fs`` paths."""

    url: str
    fs: FileSystem
    root: str

    @classmethod
    def of(cls, url: str, storage_options: Mapping[str, Any], key: str = "path") -> TableLocation:
        fs, root = filesystem_for_url(url, storage_options, key=key)
        return cls(url.rstrip("/"), fs, root.rstrip("/") or "/")

    def to_url(self, path: str) -> str:
        if not path.startswith(self.root + "/"):
            raise ValueError(f"{path!r} is not inside the table at {self.url}")
        return self.url + path[len(self.root) :]

    def to_path(self, url: str) -> str | None:
        """The ``fs`` path of a data file URL under this table (None if elsewhere)."""
        text = url if "://" in url else "file://" + url
        base = self.url if "://" in self.url else "file://" + self.url
        mine, theirs = urlsplit(base), urlsplit(text)
        same_store = (mine.scheme.replace("s3a", "s3"), mine.netloc) == (
            theirs.scheme.replace("s3a", "s3"),
            theirs.netloc,
        )
        if not same_store or not (theirs.path + "/").startswith(mine.path.rstrip("/") + "/"):
            return None
        return self.root + theirs.path[len(mine.path.rstrip("/")) :]


def data_file_infos(checkpoint_id: int, files: list[DataFile], location: TableLocation) -> JsonValue:
    """A writer's commit info: the checkpoint and its data files (None when it wrote none)."""
    if not files:
        return None
    return {"checkpoint": checkpoint_id, "files": [f.to_json() | {"url": location.to_url(f.path)} for f in files]}


@dataclass(frozen=True)
class CommitFile:
    """A data file named by a commit info, with the checkpoint whose epoch wrote it."""

    checkpoint: int
    file: DataFile
    url: str


def collect(commit_infos: Iterable[JsonValue], plugin: str) -> list[CommitFile]:
    """Every data file the commit infos name, with its checkpoint."""
    files: list[CommitFile] = []
    for info in commit_infos:
        if info is None:
            continue
        if not isinstance(info, Mapping) or not isinstance(info.get("checkpoint"), int):
            raise ValueError(f"{plugin} sink: malformed commit info {info!r}")
        for doc in info.get("files") or ():
            files.append(CommitFile(info["checkpoint"], DataFile.from_json(doc), str(doc.get("url") or "")))
    return files


def not_yet_committed(files: list[CommitFile], done: int | None) -> tuple[int, list[CommitFile]]:
    """The files of checkpoints after ``done`` (the newest checkpoint the table holds) and
    the newest of those checkpoints (0 when none is left).

    The infos of one commit may span several checkpoints: a subtask re-sends what it
    prepared until it hears that the commit happened, so a checkpoint's infos can repeat
    epochs an earlier commit already put in the table. Those are skipped file by file:
    everything a subtask prepared up to a committed checkpoint was in that commit."""
    left = [f for f in files if done is None or f.checkpoint > done]
    return max((f.checkpoint for f in left), default=0), left


#: attempts of a table commit that the table refused because another writer committed first
COMMIT_ATTEMPTS = 10


def commit_attempts(refused: type[BaseException]) -> Retrying:
    """The committers' own retries of a table commit refused with ``refused`` (another
    writer committed first). Each attempt reads the table and applies the replay rule
    (``not_yet_committed``) again before it commits, so what another driver of the same
    job committed meanwhile (a fenced driver's commit in flight, the claimant's replay) is
    found and skipped, never added twice; the commit itself asserts the table state the
    rule read. A library's own retry must not rebuild the commit past that check."""
    return Retrying(
        stop=stop_after_attempt(COMMIT_ATTEMPTS),
        reraise=True,
        wait=wait_exponential(multiplier=0.05, max=2),
        retry=retry_if_exception_type(refused),
    )


def check_mapping(options: Mapping[str, Any], key: str, example: str) -> dict[str, str]:
    value = options.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"expected a mapping, e.g. {example}; got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def delete_quietly(fs: FileSystem, path: str, plugin: str) -> None:
    """Delete a data file; a failure is logged (``cleanup`` finds the file again later)."""
    try:
        fs.delete(path)
    except Exception as err:
        log.warning("%s sink: could not delete %s: %s", plugin, fs.describe(path), err)


def reason(err: BaseException) -> str:
    """One line for a library's exception: its type and first line."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return f"{type(err).__name__}: {text}"[:300]
