"""The File family's contexts: this project's ``File`` connector and SeaTunnel's ``LocalFile``
and ``S3File``, on the local disk and on S3 (moto's server), parquet files.

A context is a *place* (a root URL and the storage options that reach it) and a *dialect*
(the job-file block of one connector for a directory there); sinks and sources share both.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_seatunnel_ckpt.storage.urls import filesystem_for_url
from tests.servers.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY

from ..contexts import SinkUnderTest, SourceUnderTest, unique

#: rows per file a source context writes: a dataset is several files, read over several checkpoints
ROWS_PER_FILE = 250


@dataclass(frozen=True)
class Place:
    root_url: str
    #: storage options (plugin-config keys) of the package's own file systems
    options: Mapping[str, Any] = field(default_factory=dict)
    #: what a SeaTunnel connector needs besides ``path`` to reach it (a bucket, keys)
    seatunnel_options: Mapping[str, Any] = field(default_factory=dict)

    def new_directory(self, prefix: str) -> str:
        return f"{self.root_url.rstrip('/')}/{unique(prefix)}/"

    def filesystem(self, url: str) -> tuple[Any, str]:
        return filesystem_for_url(url, dict(self.options))


#: the job-file block of a connector for a directory URL of a place
Dialect = Callable[[Place, str], dict[str, Any]]


def file_block(place: Place, url: str) -> dict[str, Any]:
    return {"plugin_name": "File", "path": url, "format": "parquet", **place.options}


def seatunnel_block(plugin: str) -> Dialect:
    def block(place: Place, url: str) -> dict[str, Any]:
        path = url.split("://", 1)[1]
        if plugin in ("S3File", "OssFile"):  # the bucket is an option of its own
            path = "/" + path.split("/", 1)[1]
        return {"plugin_name": plugin, "path": path, "file_format_type": "parquet", **place.seatunnel_options}

    return block


def _walk(fs: Any, root: str, hidden: bool) -> Iterator[Any]:
    """Files under ``root``: the visible ones (committed output), or the hidden ones and
    those inside hidden directories (staging)."""
    try:
        entries = list(fs.list_dir(root))
    except FileNotFoundError:
        return
    for entry in entries:
        is_hidden = entry.name.startswith(("_", "."))
        if entry.is_dir:
            if hidden and is_hidden:
                yield from _walk_all(fs, entry.path)
            elif not is_hidden:
                yield from _walk(fs, entry.path, hidden)
        elif is_hidden == hidden:
            yield entry


def _walk_all(fs: Any, root: str) -> Iterator[Any]:
    for entry in fs.list_dir(root):
        if entry.is_dir:
            yield from _walk_all(fs, entry.path)
        else:
            yield entry


def read_ids(url: str, options: Mapping[str, Any] | None = None) -> list[int]:
    """The ``id`` of every row of the visible (committed) parquet files under ``url``. A
    file gone between the listing and its read is skipped: a test polls while the job runs,
    and a restore to an older checkpoint deletes the newer epochs' files meanwhile (the
    poll counts again; the final count is taken after the job ended)."""
    fs, root = filesystem_for_url(url, dict(options or {}))
    ids: list[int] = []
    for entry in _walk(fs, root, hidden=False):
        try:
            data = fs.read(entry.path)
        except FileNotFoundError:
            continue
        ids.extend(pq.read_table(pa.BufferReader(data), columns=["id"]).column("id").to_pylist())
    return ids


def _parquet(ids: Sequence[int]) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), sink)
    return sink.getvalue().to_pybytes()


class FileSink(SinkUnderTest):
    """Targets are directories; committed output is their visible files, staging the hidden ones."""

    keeps_change_rows = True

    def __init__(self, name: str, place: Place, dialect: Dialect):
        self.name, self.place, self.dialect = name, place, dialect

    def new_target(self) -> str:
        return self.place.new_directory("out")

    def sink(self, target: str) -> dict[str, Any]:
        return self.dialect(self.place, target)

    def committed(self, target: str) -> list[int]:
        return read_ids(target, self.place.options)

    def leftovers(self, target: str) -> list[str]:
        fs, root = self.place.filesystem(target)
        return sorted(e.path for e in _walk(fs, root, hidden=True) if "/_staging/" in e.path)


class FileSource(SourceUnderTest):
    """A dataset is a directory of parquet files; each append adds files of ROWS_PER_FILE rows.
    Files are the splits, fixed when the job first plans them: files added later are not read."""

    def __init__(self, name: str, place: Place, dialect: Dialect):
        self.name, self.place, self.dialect = name, place, dialect

    def new_dataset(self) -> str:
        return self.place.new_directory("in")

    def append(self, dataset: str, ids: Sequence[int]) -> None:
        fs, root = self.place.filesystem(dataset)
        existing = len(list(_walk(fs, root, hidden=False)))
        for n, start in enumerate(range(0, len(ids), ROWS_PER_FILE)):
            fs.write_atomic(f"{root}/part-{existing + n:05d}.parquet", _parquet(ids[start : start + ROWS_PER_FILE]))

    def source(self, dataset: str) -> dict[str, Any]:
        return self.dialect(self.place, dataset)


# ---- places -----------------------------------------------------------------------------------
def _local(request: pytest.FixtureRequest) -> Place:
    return Place(f"file://{request.getfixturevalue('tmp_path')}/files/")


def _s3(request: pytest.FixtureRequest) -> Place:
    server = request.getfixturevalue("s3_server")
    bucket = server.create_bucket(f"contract-{uuid.uuid4().hex[:10]}")
    endpoint = {
        "fs.s3a.endpoint": server.endpoint_url,
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.path.style.access": "true",
    }
    return Place(
        f"s3a://{bucket}/",
        {**endpoint, "fs.s3a.access.key": ACCESS_KEY_ID, "fs.s3a.secret.key": SECRET_ACCESS_KEY},
        {**endpoint, "bucket": f"s3a://{bucket}", "access_key": ACCESS_KEY_ID, "secret_key": SECRET_ACCESS_KEY},
    )


# ---- factories --------------------------------------------------------------------------------
@contextlib.contextmanager
def local_file_sink(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield FileSink("File (local, parquet)", _local(request), file_block)


@contextlib.contextmanager
def seatunnel_local_file_sink(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield FileSink("LocalFile (parquet)", _local(request), seatunnel_block("LocalFile"))


@contextlib.contextmanager
def s3_file_sink(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield FileSink("File (S3, parquet)", _s3(request), file_block)


@contextlib.contextmanager
def seatunnel_s3_file_sink(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield FileSink("S3File (parquet)", _s3(request), seatunnel_block("S3File"))


@contextlib.contextmanager
def local_file_source(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield FileSource("File (local, parquet)", _local(request), file_block)


@contextlib.contextmanager
def seatunnel_local_file_source(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield FileSource("LocalFile (parquet)", _local(request), seatunnel_block("LocalFile"))


@contextlib.contextmanager
def seatunnel_s3_file_source(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield FileSource("S3File (parquet)", _s3(request), seatunnel_block("S3File"))
