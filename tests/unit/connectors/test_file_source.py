from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.connectors.file import source as file_source
from airflow_provider_seatunnel_ckpt.connectors.file.source import FileSource
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.storage.urls import filesystem_for_url

N_ROWS = 3000


def make_table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "name": [f"row-{i}" for i in ids], "value": ids * 0.5})


def encode(table: pa.Table, fmt: str, row_group_size: int = 250) -> bytes:
    sink = pa.BufferOutputStream()
    if fmt == "parquet":
        pq.write_table(table, sink, row_group_size=row_group_size)
    elif fmt == "csv":
        pacsv.write_csv(table, sink)
    else:
        return "".join(json.dumps(row) + "\n" for row in table.to_pylist()).encode()
    return sink.getvalue().to_pybytes()


def put(url: str, relative: str, data: bytes) -> None:
    fs, root = filesystem_for_url(url, {})
    fs.write_atomic(f"{root}/{relative}", data)


def rows_of(batches) -> list[dict]:
    return [row for b in batches for row in b.to_pylist()]


# ---- splits ----------------------------------------------------------------------------------
def test_splits_are_sorted_visible_files_with_relative_ids(base_url):
    table = make_table(10)
    for name in [
        "b.parquet",
        "a.csv",
        "sub/c.jsonl",
        "sub/deeper/d.parquet",
        "_SUCCESS",
        ".a.csv.crc",
        "_staging/job/0-0-x.parquet",
        ".hidden/e.parquet",
        "sub/_temporary/f.csv",
    ]:
        put(base_url, name, encode(table, file_source.format_from_name(name) or "csv"))
    source = FileSource({"path": base_url})
    splits = source.splits(2)
    assert [s.split_id for s in splits] == ["a.csv", "b.parquet", "sub/c.jsonl", "sub/deeper/d.parquet"]
    assert [s.spec["format"] for s in splits] == ["csv", "parquet", "jsonl", "parquet"]
    assert splits == source.splits(5)
    for split in splits:
        reader = source.create_reader(split, None, ReaderContext(0, 1))
        assert rows_of(iter_batches(reader)) == table.to_pylist()


def test_single_file_path(base_url):
    put(base_url, "only.parquet", encode(make_table(5), "parquet"))
    source = FileSource({"path": base_url + "/only.parquet"})
    [split] = source.splits(3)
    assert split.split_id == "only.parquet"
    assert rows_of(iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))) == make_table(5).to_pylist()


def test_explicit_format_overrides_extension(base_url):
    put(base_url, "data.txt", encode(make_table(4), "csv"))
    with pytest.raises(ConfigError, match="cannot tell the format of .*data.txt"):
        FileSource({"path": base_url}).splits(1)
    source = FileSource({"path": base_url, "format": "CSV"})
    [split] = source.splits(1)
    assert rows_of(iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))) == make_table(4).to_pylist()


def test_missing_path_is_a_config_error_naming_the_entry(base_url):
    source = load_source({"plugin_name": "File", "path": base_url + "/nope"}, "source[0]")
    with pytest.raises(ConfigError) as err:
        source.splits(1)
    assert err.value.key == "source[0].path" and "does not exist" in err.value.problem


def test_empty_directory_has_no_splits(base_url):
    put(base_url, "_SUCCESS", b"")
    assert FileSource({"path": base_url}).splits(2) == []


@pytest.mark.parametrize(
    "options, key",
    [
        ({}, "path"),
        ({"path": ""}, "path"),
        ({"path": "relative"}, "path"),
        ({"path": "/x", "format": "avro"}, "format"),
        ({"path": "/x", "batch_size": 0}, "batch_size"),
        ({"path": "/x", "compression": "gzip"}, "compression"),
    ],
)
def test_option_validation(options, key):
    with pytest.raises(ConfigError) as err:
        FileSource(options)
    assert err.value.key == key


def test_unknown_option_mentions_storage_options():
    with pytest.raises(ConfigError, match=r"known options: batch_size, format, path \(or storage options"):
        FileSource({"path": "/x", "colour": "red"})


def test_storage_options_are_accepted_and_passed_on():
    source = FileSource(
        {"path": "s3://my-bucket/in/", "fs.s3a.endpoint": "http://127.0.0.1:1", "fs.s3a.path.style.access": True}
    )
    assert (source.fs.bucket, source.fs.endpoint_url, source.root) == ("my-bucket", "http://127.0.0.1:1", "/in")


# ---- reading and resuming -------------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """One file per format with N_ROWS rows, small parquet row groups and csv/json blocks."""
    root = tmp_path_factory.mktemp("formats")
    table = make_table(N_ROWS)
    sources = {}
    for fmt in ("parquet", "csv", "jsonl"):
        (root / fmt).mkdir()
        (root / fmt / f"data.{fmt}").write_bytes(encode(table, fmt, row_group_size=128))
        source = FileSource({"path": f"file://{root}/{fmt}"})
        sources[fmt] = (source, source.splits(1)[0])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(file_source, "STREAM_BLOCK_SIZE", 8192)  # many csv/json blocks
        yield sources, table.to_pylist()


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offset=st.integers(0, N_ROWS))
def test_reader_at_any_offset_yields_exactly_the_rest(files, fmt, offset):
    sources, expected = files
    source, split = sources[fmt]
    reader = source.create_reader(split, offset, ReaderContext(0, 1, batch_size=1000))
    got = rows_of(iter_batches(reader))
    assert got == expected[offset:]
    assert reader.position() == N_ROWS
    reader.close()


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=st.lists(st.tuples(st.integers(1, 700), st.integers(0, 4)), max_size=6))
def test_reading_in_chunks_with_restarts_yields_exactly_the_file(files, fmt, segments):
    """Stop after a few batches, restart from position(); batch sizes vary per run."""
    sources, expected = files
    source, split = sources[fmt]
    got: list[dict] = []
    position = None
    for batch_size, n_batches in segments + [(997, 10**9)]:
        reader = source.create_reader(split, position, ReaderContext(0, 1, batch_size=batch_size))
        for _ in range(n_batches):
            batch = reader.read_batch()
            if batch is None:
                break
            assert 0 < batch.num_rows <= batch_size
            got.extend(batch.to_pylist())
        position = reader.position()
        assert position == len(got)
        reader.close()
    assert got == expected


def test_parquet_resume_skips_row_groups_with_range_reads(tmp_path):
    n = 200_000
    table = pa.table({"id": np.arange(n, dtype=np.int64), "v": np.random.default_rng(1).random(n)})
    pq.write_table(table, tmp_path / "big.parquet", row_group_size=20_000, compression="none")
    source = FileSource({"path": str(tmp_path)})
    [split] = source.splits(1)
    reader = source.create_reader(split, 185_000, ReaderContext(0, 1, batch_size=4096))
    ids = [i for b in iter_batches(reader) for i in b.column("id").to_pylist()]
    assert ids == list(range(185_000, n))
    size = reader.file.size
    # the footer (64 KiB) plus the last row group (~1/10 of the file), not the whole file
    assert reader.file.bytes_read < size * 0.25, (reader.file.bytes_read, size)
    assert reader.file.requests <= 3


def test_parquet_first_batch_does_not_fetch_the_whole_file(tmp_path):
    n = 200_000
    pq.write_table(
        pa.table({"id": np.arange(n, dtype=np.int64)}),
        tmp_path / "big.parquet",
        row_group_size=20_000,
        compression="none",
    )
    source = FileSource({"path": str(tmp_path)})
    reader = source.create_reader(source.splits(1)[0], None, ReaderContext(0, 1, batch_size=1000))
    assert reader.read_batch().num_rows == 1000
    assert reader.file.bytes_read < reader.file.size * 0.25


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_text_formats_stream_in_blocks(tmp_path, fmt, monkeypatch):
    """A text file is read a block at a time, with pyarrow's readahead (storage.py: about
    36 blocks) and no more, however long the reader waits. Blocks of 8 KiB here, so that
    the bound is well under half of the 2.5 MB file (with the real 1 MiB blocks the whole
    file fits in the readahead, and whether it had been read by the first batch depended
    on the machine's load)."""
    import time

    from airflow_provider_seatunnel_ckpt.connectors.file import source as source_module

    monkeypatch.setattr(source_module, "STREAM_BLOCK_SIZE", 8 << 10)
    (tmp_path / f"big.{fmt}").write_bytes(encode(make_table(100_000), fmt))
    source = FileSource({"path": str(tmp_path)})
    reader = source.create_reader(source.splits(1)[0], None, ReaderContext(0, 1, batch_size=500))
    assert 0 < reader.read_batch().num_rows <= 500
    time.sleep(0.5)  # the readahead fills while nothing is taken: it must still stop
    assert reader.file.bytes_read < reader.file.size / 2


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_position_past_the_end_fails(base_url, fmt):
    put(base_url, f"f.{fmt}", encode(make_table(10), fmt))
    source = FileSource({"path": base_url})
    [split] = source.splits(1)
    with pytest.raises(ValueError, match="past the end"):
        list(iter_batches(source.create_reader(split, 11, ReaderContext(0, 1))))
    assert source.create_reader(split, 10, ReaderContext(0, 1)).read_batch() is None


@pytest.mark.parametrize("position", [-1, "3", True, 1.0])
def test_bad_position_is_rejected(base_url, position):
    put(base_url, "f.csv", encode(make_table(3), "csv"))
    source = FileSource({"path": base_url})
    with pytest.raises(ValueError, match="not a row offset"):
        source.create_reader(source.splits(1)[0], position, ReaderContext(0, 1))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_empty_text_file_has_no_rows(base_url, fmt):
    put(base_url, f"empty.{fmt}", b"")
    source = FileSource({"path": base_url})
    reader = source.create_reader(source.splits(1)[0], None, ReaderContext(0, 1))
    assert reader.read_batch() is None and reader.position() == 0


def test_a_file_that_changed_since_planning_fails(base_url):
    put(base_url, "f.csv", encode(make_table(3), "csv"))
    source = FileSource({"path": base_url})
    [split] = source.splits(1)
    put(base_url, "f.csv", encode(make_table(30), "csv"))
    with pytest.raises(ValueError, match="changed while the job ran"):
        source.create_reader(split, 0, ReaderContext(0, 1))


def test_batch_size_option_overrides_the_context(base_url):
    put(base_url, "f.parquet", encode(make_table(100), "parquet"))
    source = FileSource({"path": base_url, "batch_size": 30})
    reader = source.create_reader(source.splits(1)[0], None, ReaderContext(0, 1, batch_size=1000))
    assert [b.num_rows for b in iter_batches(reader)] == [30, 30, 30, 10]
