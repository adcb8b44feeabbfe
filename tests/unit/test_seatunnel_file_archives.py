"""SeaTunnel's file sources read archives (``archive_compress_codec`` = zip, tar, tar_gz)
and lzop files (``compress_codec = lzo``), its sinks write lzop files: SeaTunnel's own
job files for them (tests/fixtures/seatunnel/connector-file-local-e2e, unchanged) run
in-process with their Assert rules holding, a restored reader resumes at the exact row
inside an archive, and the combinations that are not supported are one line each.

The job files read absolute paths (``/seatunnel/read/zip/txt/single``...) that SeaTunnel's
``LocalFileIT.java`` fills in its container. Here the inputs are built as it builds them
(archives of ``text/e2e.txt`` or ``json/e2e.json``: one copy for a single archive, two for
a multi one, entries named ``<random int><name>_<millis>.<suffix>``; lzo files through
LzopCodec's layout) under a tmp directory, and the test loads each unchanged file and
rebases only its source's ``path`` (a sink's ``path`` for the sink job) onto that
directory before running it with ``tests/seatunnel_jobs.run_in_process``."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.connectors.file.codecs import LzopReader, LzopWriter
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from tests import seatunnel_jobs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seatunnel" / "connector-file-local-e2e"
E2E_TXT = (FIXTURES / "text" / "e2e.txt").read_bytes()
E2E_JSON = (FIXTURES / "json" / "e2e.json").read_bytes()
HAS_LZO = importlib.util.find_spec("lzallright") is not None
needs_lzo = pytest.mark.skipif(not HAS_LZO, reason="the lzo extra is not installed")


def _entries(content: bytes, copies: int, suffix: str) -> list[tuple[str, bytes]]:
    """LocalFileIT's entry names: Random.nextInt() + name + "_" + currentTimeMillis + suffix."""
    randoms = [1804289383, -846930886]
    return [(f"{randoms[i]}e2e_{1732800000000 + i}.{suffix}", content) for i in range(copies)]


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return out.getvalue()


def _tar(entries: list[tuple[str, bytes]], gz: bool = False) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz" if gz else "w") as archive:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _lzo(data: bytes) -> bytes:
    class Out(io.BytesIO):
        def close(self) -> None:  # keep the bytes
            pass

    out = Out()
    writer = LzopWriter(out)
    writer.write(data)
    writer.close()
    return out.getvalue()


#: LocalFileIT's inputs for the archive and lzo jobs: path in its container -> bytes
LAYOUT: dict[str, Callable[[], bytes]] = {
    "/seatunnel/read/zip/txt/single/e2e-txt.zip": lambda: _zip(_entries(E2E_TXT, 1, "txt")),
    "/seatunnel/read/zip/txt/multifile/multiZip.zip": lambda: _zip(_entries(E2E_TXT, 2, "txt")),
    "/seatunnel/read/tar/txt/single/e2e-txt.tar": lambda: _tar(_entries(E2E_TXT, 1, "txt")),
    "/seatunnel/read/tar/txt/multifile/multiTar.tar": lambda: _tar(_entries(E2E_TXT, 2, "txt")),
    "/seatunnel/read/tar_gz/txt/single/e2e-txt.tar.gz": lambda: _tar(_entries(E2E_TXT, 1, "txt"), gz=True),
    "/seatunnel/read/tar_gz/txt/multifile/multiTarGz.tar.gz": lambda: _tar(_entries(E2E_TXT, 2, "txt"), gz=True),
    "/seatunnel/read/zip/json/single/e2e-json.zip": lambda: _zip(_entries(E2E_JSON, 1, "json")),
    "/seatunnel/read/zip/json/multifile/multiJson.zip": lambda: _zip(_entries(E2E_JSON, 2, "json")),
    "/seatunnel/read/lzo_text/e2e.txt": lambda: _lzo(E2E_TXT),
    "/seatunnel/read/lzo_json/e2e.json": lambda: _lzo(E2E_JSON),
}

#: job file -> rows its sink gets (its Assert rules check the same and every value)
JOBS = {
    "text/local_file_zip_text_to_assert.conf": 5,
    "text/local_file_multi_zip_text_to_assert.conf": 10,
    "text/local_file_tar_text_to_assert.conf": 5,
    "text/local_file_multi_tar_text_to_assert.conf": 10,
    "text/local_file_tar_gz_text_to_assert.conf": 5,
    "text/local_file_multi_tar_gz_text_to_assert.conf": 10,
    "json/local_file_json_zip_to_assert.conf": 5,
    "json/local_file_json_multi_zip_to_assert.conf": 10,
    "text/local_file_text_lzo_to_assert.conf": 1,  # its Sql transform keeps one row
    "json/local_file_json_lzo_to_console.conf": 1,  # an Assert sink despite its name; one row kept
}


def _lay_out(root: Path) -> None:
    for where, build in LAYOUT.items():
        if "lzo" in where and not HAS_LZO:
            continue
        path = root / where.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(build())


def _run_rebased(job_file: Path, root: Path, monkeypatch: pytest.MonkeyPatch, side: str = "source") -> int:
    """``run_in_process`` on the unchanged file, with only ``side``'s ``path`` under ``root``."""
    job = load_job(job_file)
    entry = getattr(job, side)
    rebased = dataclasses.replace(job, **{side: {**entry, "path": str(root / entry["path"].lstrip("/"))}})
    monkeypatch.setattr(seatunnel_jobs, "load_job", lambda path, *args: rebased)
    return seatunnel_jobs.run_in_process(job_file)


def test_every_job_file_of_the_fixture_directory_runs_here() -> None:
    # the excel/ jobs are test_seatunnel_excel.py's, the encoding, save mode, xml and binary ones
    # test_seatunnel_file_formats.py's, the plain file sources test_seatunnel_file_sources.py's
    from tests.support.seatunnel_files import FORMATS_FILES, SOURCE_JOBS

    assert sorted(
        str(p.relative_to(FIXTURES))
        for p in FIXTURES.rglob("*.conf")
        if p.parent.name != "excel" and str(p.relative_to(FIXTURES)) not in [*FORMATS_FILES, *SOURCE_JOBS]
    ) == sorted([*JOBS, "text/fake_to_local_file_text.conf"])


@pytest.mark.parametrize("name", sorted(JOBS))
def test_seatunnels_archive_and_lzo_jobs_run_unchanged_and_their_assert_rules_hold(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "lzo" in name and not HAS_LZO:
        pytest.skip("the lzo extra is not installed")
    _lay_out(tmp_path)
    assert _run_rebased(FIXTURES / name, tmp_path, monkeypatch) == JOBS[name]


def test_a_broken_rule_fails_an_archive_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules really run on the archive's rows: three copies in the multi zip break MAX_ROW 10."""
    from airflow_provider_seatunnel_ckpt.errors import DataError

    path = tmp_path / "seatunnel/read/zip/txt/multifile/multiZip.zip"
    path.parent.mkdir(parents=True)
    path.write_bytes(_zip(_entries(E2E_TXT, 2, "txt") + [("third_e2e.txt", E2E_TXT)]))
    with pytest.raises(DataError, match=r"MAX_ROW 10"):
        _run_rebased(FIXTURES / "text/local_file_multi_zip_text_to_assert.conf", tmp_path, monkeypatch)


@needs_lzo
def test_seatunnels_lzo_sink_job_writes_lzop_files_named_as_seatunnel_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fake_to_local_file_text.conf (FakeSource -> LocalFile text, compress_codec = lzo):
    its files end with ``.lzo.txt``, are lzop files our source reads back, and the lzop tool
    reads them when it is installed."""
    rows = _run_rebased(FIXTURES / "text/fake_to_local_file_text.conf", tmp_path, monkeypatch, side="sink")
    files = sorted(p for p in (tmp_path / "tmp/seatunnel/text").rglob("*") if p.is_file())
    assert files and all(p.name.endswith(".lzo.txt") for p in files), files
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path / "tmp/seatunnel/text"),
            "file_format_type": "text",
            "compress_codec": "lzo",
        }
    )
    lines = [
        line
        for split in source.splits(1)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
        for line in batch.column("content").to_pylist()
    ]
    assert len(lines) == rows > 0
    plain = b"".join(LzopReader(io.BytesIO(p.read_bytes()), str(p)).read() for p in files)
    if shutil.which("lzop"):
        by_tool = b"".join(
            subprocess.run(["lzop", "-dc", str(p)], capture_output=True, check=True).stdout for p in files
        )
        assert by_tool == plain
    assert plain.decode().split("\n") == lines


@needs_lzo
def test_a_json_lzo_sink_round_trips_many_blocks_and_a_discarded_file_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(out),
            "file_format_type": "json",
            "compress_codec": "lzo",
            "batch_size": 60_000,
        }
    )
    rows = pa.record_batch(
        {"id": pa.array(range(100_000), pa.int64()), "name": pa.array([f"name-{i % 977}" for i in range(100_000)])}
    )
    writer = sink.create_writer("lzo-json", 0, 0)
    writer.open(0)
    writer.write(rows)
    info = writer.prepare_commit(1)
    committer = sink.create_committer("lzo-json")
    committer.commit([info])
    committer.job_finished(None)
    files = sorted(p for p in out.iterdir() if p.is_file())
    assert [p.name[-len("_0.lzo.json") :] for p in files] == ["_0.lzo.json", "_1.lzo.json"]  # batch_size cut
    plain = LzopReader(io.BytesIO(files[0].read_bytes()), str(files[0])).read()
    assert len(plain) > 4 * (256 << 10) > files[0].stat().st_size  # several blocks, compressed
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(out),
            "file_format_type": "json",
            "compress_codec": "lzo",
            "schema": {"fields": {"id": "bigint", "name": "string"}},
        }
    )
    read = [
        batch
        for split in source.splits(1)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
    ]
    assert pa.Table.from_batches(read).column("id").to_pylist() == list(range(100_000))
    # restored inside the second file's lzop stream: exactly the rows after the position
    second = source.splits(1)[1]
    tail = [
        v
        for batch in iter_batches(source.create_reader(second, 39_990, ReaderContext(0, 1)))
        for v in batch.column("id").to_pylist()
    ]
    assert tail == list(range(99_990, 100_000))

    # a writer closed before its checkpoint discards its open lzop file, and nothing is left staged
    writer = sink.create_writer("lzo-json", 0, 1)
    writer.open(1)
    writer.write(rows.slice(0, 10))
    writer.close()
    assert not [p for p in (out / "_staging").rglob("*") if p.is_file()]
    text_sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path / "text"),
            "file_format_type": "text",
            "compress_codec": "lzo",
        }
    )
    writer = text_sink.create_writer("lzo-text", 0, 0)
    writer.open(0)
    writer.write(rows.slice(0, 10))
    writer.close()  # the text encoder is abandoned like the others
    assert not [p for p in (tmp_path / "text").rglob("*") if p.is_file()]


# ---------------------------------------------------------------------------------------
# positions: a restored reader resumes at the exact row, across entries


def _text_source(path: Path, codec: str, **options: Any) -> Any:
    return load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(path),
            "file_format_type": "text",
            "archive_compress_codec": codec,
            **options,
        }
    )


def _read(source: Any, split: Any, position: int | None, batch_size: int = 2) -> tuple[list[str], list[int]]:
    """The rows (first column) a reader opened at ``position`` emits, and its position after each batch."""
    reader = source.create_reader(split, position, ReaderContext(0, 1, batch_size=batch_size))
    rows, positions = [], []
    for batch in iter_batches(reader):
        rows += [str(v) for v in batch.column(0).to_pylist()]
        positions.append(reader.position())
    reader.close()
    return rows, positions


ARCHIVES = {"zip": _zip, "tar": _tar, "tar_gz": lambda entries: _tar(entries, gz=True)}


@pytest.mark.parametrize("codec", sorted(ARCHIVES))
def test_a_restored_reader_resumes_at_the_exact_row_across_entries(codec: str, tmp_path: Path) -> None:
    """Three entries (7, 0 and 5 rows, each with a header line skipped per entry, plus a
    directory and an entry of another suffix, both skipped): every position a reader
    reports, and every row offset, reopens to exactly the rows after it."""
    entries = [
        ("a.txt", b"header a\n" + b"".join(b"a%d\n" % i for i in range(7))),
        ("empty.txt", b""),
        ("notes.md", b"not read\n"),
        ("b.txt", b"header b\n" + b"".join(b"b%d\n" % i for i in range(5))),
    ]
    build = ARCHIVES[codec]
    data = build(entries)
    if codec == "zip":  # a directory entry as zip tools write one
        out = io.BytesIO(data)
        with zipfile.ZipFile(out, "a") as archive:
            archive.writestr("sub/", b"")
        data = out.getvalue()
    (tmp_path / f"in.{codec}").write_bytes(data)
    source = _text_source(tmp_path, codec, skip_header_row_number=1)
    [split] = source.splits(1)
    everything, positions = _read(source, split, None)
    assert everything == [f"a{i}" for i in range(7)] + [f"b{i}" for i in range(5)]
    assert positions == sorted(set(positions)) and positions[-1] == 12 and 7 in positions, positions
    for offset in range(0, 13):
        assert _read(source, split, offset, batch_size=3)[0] == everything[offset:], offset
    for position in positions:  # what a checkpoint would have recorded
        assert _read(source, split, position)[0] == everything[position:]
    with pytest.raises(ValueError, match=r"position 13 is past the end \(12 rows\)"):
        _read(source, split, 13)


def test_a_json_archive_resumes_at_the_exact_row(tmp_path: Path) -> None:
    entries = [
        (f"{n}.json", b"".join(b'{"id": %d, "name": "%s%d"}\n' % (i, n.encode(), i) for i in range(4)))
        for n in ("x", "y")
    ]
    (tmp_path / "in.zip").write_bytes(_zip(entries))
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "json",
            "archive_compress_codec": "zip",
            "schema": {"fields": {"id": "int", "name": "string"}},
        }
    )
    [split] = source.splits(1)
    reader = source.create_reader(split, 3, ReaderContext(0, 1))
    names = [v for batch in iter_batches(reader) for v in batch.column("name").to_pylist()]
    assert names == ["x3", "y0", "y1", "y2", "y3"]


def test_csv_files_in_a_tar_gz_archive_are_read_with_their_schema(tmp_path: Path) -> None:
    entries = [("one.csv", b'id,name\n1,a\n2,"b,c"\n'), ("two.csv", b"id,name\n3,d\n")]
    (tmp_path / "in.tar.gz").write_bytes(_tar(entries, gz=True))
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "csv",
            "archive_compress_codec": "tar_gz",
            "skip_header_row_number": 1,
            "schema": {"fields": {"id": "int", "name": "string"}},
        }
    )
    [split] = source.splits(1)
    batches = list(iter_batches(source.create_reader(split, None, ReaderContext(0, 1))))
    assert pa.Table.from_batches(batches).to_pylist() == [
        {"id": 1, "name": "a"},
        {"id": 2, "name": "b,c"},
        {"id": 3, "name": "d"},
    ]


def test_a_broken_archive_is_one_line_naming_it(tmp_path: Path) -> None:
    data = _tar(_entries(E2E_TXT * 50, 2, "txt"), gz=True)
    (tmp_path / "in.tar.gz").write_bytes(data[: len(data) // 2])
    source = _text_source(tmp_path, "tar_gz")
    [split] = source.splits(1)
    with pytest.raises(ValueError) as err:
        _read(source, split, None)
    message = str(err.value)
    where = f"LocalFile source file://{tmp_path / 'in.tar.gz'}"
    assert message.startswith(f"{where}: not a valid tar.gz archive: "), message
    assert "\n" not in message, message
    (tmp_path / "in.tar.gz").write_bytes(b"PK\x03\x04 not really")
    source = _text_source(tmp_path, "zip")
    with pytest.raises(ValueError, match=r"in\.tar\.gz: not a valid zip archive: File is not a zip file$"):
        _read(source, source.splits(1)[0], None)


@needs_lzo
def test_a_truncated_lzo_file_is_one_line_naming_it(tmp_path: Path) -> None:
    blob = _lzo(E2E_TXT * 200)
    (tmp_path / "e2e.txt").write_bytes(blob[:-100])
    source = load_source(
        {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "text", "compress_codec": "lzo"}
    )
    with pytest.raises(ValueError) as err:
        _read(source, source.splits(1)[0], None)
    assert str(err.value) == (
        f"LocalFile source file://{tmp_path / 'e2e.txt'}: not a valid lzop file: it ends inside the block (truncated)"
    )


# ---------------------------------------------------------------------------------------
# what is refused: one line naming the key


@pytest.mark.parametrize(
    "kind, options, message",
    [
        (
            "source",
            {"file_format_type": "parquet", "archive_compress_codec": "zip"},
            r"^source\[0\]\.archive_compress_codec: zip archives of parquet files are not supported",
        ),
        (
            "source",
            {"file_format_type": "orc", "archive_compress_codec": "tar"},
            r"^source\[0\]\.archive_compress_codec: tar archives of orc files",
        ),
        (
            "source",
            {"file_format_type": "text", "archive_compress_codec": "rar"},
            r"^source\[0\]\.archive_compress_codec: 'rar' is not one of none, zip, tar, tar_gz$",
        ),
        (
            "source",
            {"file_format_type": "text", "archive_compress_codec": "zip", "compress_codec": "gzip"},
            r"^source\[0\]\.compress_codec: gzip cannot be combined with archive_compress_codec = zip",
        ),
        (
            "source",
            {
                "file_format_type": "json",
                "archive_compress_codec": "tar_gz",
                "compress_codec": "lzo",
                "schema": {"fields": {"a": "int"}},
            },
            r"^source\[0\]\.compress_codec: lzo cannot be combined with archive_compress_codec = tar_gz",
        ),
        (
            "source",
            {"file_format_type": "orc", "archive_compress_codec": "zip"},
            r"^source\[0\]\.archive_compress_codec: zip archives of orc files are not supported",
        ),
        (
            "sink",
            {"file_format_type": "text", "archive_compress_codec": "zip"},
            r"^sink\[0\]\.archive_compress_codec: zip archives are read, not written",
        ),
        (
            "sink",
            {"file_format_type": "parquet", "compress_codec": "lzo"},
            r"^sink\[0\]\.compress_codec: lzo is not supported for parquet files \(pyarrow writes no lzo\)",
        ),
        (
            "sink",
            {"file_format_type": "csv", "compress_codec": "gzip"},
            r"^sink\[0\]\.compress_codec: 'gzip': csv files are written uncompressed or with lzo",
        ),
    ],
)
def test_a_refused_combination_is_one_line_naming_its_key(
    tmp_path: Path, kind: str, options: dict, message: str
) -> None:
    entry = {"plugin_name": "LocalFile", "path": str(tmp_path), **options}
    with pytest.raises(ConfigError) as err:
        (load_source if kind == "source" else load_sink)(entry)
    assert "\n" not in str(err.value), str(err.value)
    assert re.match(message, str(err.value)), str(err.value)


@pytest.mark.parametrize("kind, fmt", [("source", "text"), ("source", "json"), ("sink", "csv")])
def test_lzo_without_the_lzo_extra_names_the_pip_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, fmt: str
) -> None:
    monkeypatch.setitem(sys.modules, "lzallright", None)  # how an absent install looks to find_spec
    entry = {
        "plugin_name": "LocalFile",
        "path": str(tmp_path),
        "file_format_type": fmt,
        "compress_codec": "lzo",
        "schema": {"fields": {"a": "int"}},
    }
    if kind == "sink":
        del entry["schema"]
    with pytest.raises(ConfigError) as err:
        (load_source if kind == "source" else load_sink)(entry)
    assert str(err.value) == (
        f"{kind}[0].compress_codec: lzo needs the 'lzo' extra: pip install 'airflow-provider-seatunnel-ckpt[lzo]'"
    )
