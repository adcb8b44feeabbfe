from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.connectors.console import ConsoleSink
from airflow_provider_seatunnel_ckpt.connectors.file.sink import FileSink
from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError, ConfigError
from tests.support.file_sink import all_files, batch, read_back, visible_files


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_write_prepare_commit_gives_exactly_the_rows(base_url, fmt):
    sink = FileSink({"path": base_url, "format": fmt})
    committer = sink.create_committer("job-1")
    writers = [sink.create_writer("job-1", subtask, 0) for subtask in range(2)]
    infos = []
    for checkpoint_id, (start, n) in enumerate([(0, 10), (10, 25), (35, 5)], start=1):
        writers[0].write(batch(start, n))
        writers[1].write(batch(1000 + start, n))
        infos.append([w.prepare_commit(checkpoint_id) for w in writers])
        assert len(visible_files(sink)) == 2 * (checkpoint_id - 1)  # prepared is not visible
        committer.commit(infos[-1])
    expected = sorted(list(range(40)) + list(range(1000, 1040)))
    assert read_back(sink) == expected
    assert visible_files(sink) == sorted(
        f"part-026ab639-{s:05d}-0-{c:010d}-0.{fmt}" for s in range(2) for c in (1, 2, 3)
    )
    assert infos[0][0] == {
        "staged": [infos[0][0]["staged"][0]],
        "final": [f"{sink.root}/part-026ab639-00000-0-0000000001-0.{fmt}"],
        "rows": 10,
    }
    assert "/_staging/job-1/0-0-" in infos[0][0]["staged"][0]


def test_nothing_is_visible_before_commit(base_url):
    sink = FileSink({"path": base_url})
    writer = sink.create_writer("j", 0, 0)
    writer.write(batch(0, 100))
    # being written: under _staging on local disk (hidden, named by no commit info), in memory elsewhere
    assert all(f.startswith("_staging/j/") for f in all_files(sink)) and visible_files(sink) == []
    info = writer.prepare_commit(7)
    staged = all_files(sink)
    assert len(staged) == 1 and staged[0].startswith("_staging/j/")
    assert visible_files(sink) == []
    sink.create_committer("j").commit([info])
    assert visible_files(sink) == ["part-189f4003-00000-0-0000000007-0.parquet"]


def test_pyarrow_dataset_sees_only_committed_output(tmp_path):
    sink = FileSink({"path": str(tmp_path / "out")})
    committer = sink.create_committer("j")
    writer = sink.create_writer("j", 3, 1)
    writer.write(batch(0, 50))
    committer.commit([writer.prepare_commit(1)])
    writer.write(batch(50, 50))
    writer.prepare_commit(2)  # staged, never committed
    writer.write(batch(100, 50))  # still in memory
    dataset = ds.dataset(str(tmp_path / "out"), format="parquet")
    assert sorted(dataset.to_table().column("id").to_pylist()) == list(range(50))
    assert [p.rsplit("/", 1)[1] for p in dataset.files] == ["part-189f4003-00003-1-0000000001-0.parquet"]


def test_nothing_written_means_no_commit_info(base_url):
    sink = FileSink({"path": base_url})
    writer = sink.create_writer("j", 0, 0)
    assert writer.prepare_commit(1) is None
    writer.write(batch(0, 0))
    assert writer.prepare_commit(2) is None
    assert all_files(sink) == []


def test_commit_twice_is_a_noop_and_replays_after_partial_commit(base_url):
    sink = FileSink({"path": base_url, "max_file_bytes": 1})  # every write is its own file
    writer = sink.create_writer("j", 0, 0)
    for start in (0, 10, 20):
        writer.write(batch(start, 10))
    info = writer.prepare_commit(4)
    assert len(info["staged"]) == 3 and info["rows"] == 30
    assert [f.rsplit("/", 1)[1] for f in info["final"]] == [
        f"part-189f4003-00000-0-0000000004-{i}.parquet" for i in range(3)
    ]
    committer = sink.create_committer("j")
    sink.fs.move(info["staged"][0], info["final"][0])  # a crash after the first move
    committer.commit([info])
    snapshot = {p: sink.fs.read(f"{sink.root}/{p}") for p in visible_files(sink)}
    committer.commit([info, None])
    committer.commit([info])
    assert {p: sink.fs.read(f"{sink.root}/{p}") for p in visible_files(sink)} == snapshot
    assert read_back(sink) == list(range(30))


def test_commit_of_lost_staged_output_fails_loudly(base_url):
    sink = FileSink({"path": base_url})
    writer = sink.create_writer("j", 0, 0)
    writer.write(batch(0, 3))
    info = writer.prepare_commit(1)
    sink.fs.delete(info["staged"][0])
    with pytest.raises(CheckpointStorageError, match="staged file .* is gone"):
        sink.create_committer("j").commit([info])


def test_cleanup_removes_uncommitted_staged_files(base_url):
    sink = FileSink({"path": base_url})
    committer = sink.create_committer("j")
    w0, w1 = sink.create_writer("j", 0, 0), sink.create_writer("j", 1, 0)
    w0.write(batch(0, 5))
    w1.write(batch(5, 5))
    kept = [w0.prepare_commit(1), w1.prepare_commit(1)]
    w0.write(batch(10, 5))
    w1.write(batch(15, 5))
    dropped = [w0.prepare_commit(2), w1.prepare_commit(2)]  # checkpoint 2 never completes
    committer.cleanup(kept)
    remaining = {f"{sink.root}/{p}" for p in all_files(sink)}
    assert remaining == {p for info in kept for p in info["staged"]}
    committer.commit(kept)
    assert read_back(sink) == list(range(10))
    with pytest.raises(CheckpointStorageError):
        committer.commit(dropped)
    committer.cleanup(kept)  # idempotent; staged files of kept were moved already
    assert [p for p in all_files(sink) if p.startswith("_staging")] == []


def test_cleanup_can_be_limited_to_one_subtask(base_url):
    sink = FileSink({"path": base_url})
    w0, w1 = sink.create_writer("j", 0, 0), sink.create_writer("j", 1, 0)
    w0.write(batch(0, 5))
    w1.write(batch(5, 5))
    w0.prepare_commit(1)
    i1 = w1.prepare_commit(1)
    sink.create_committer("j").cleanup([], subtask=0)
    assert {f"{sink.root}/{p}" for p in all_files(sink)} == set(i1["staged"])


def test_cleanup_leaves_other_jobs_alone(base_url):
    sink = FileSink({"path": base_url})
    for job in ("a", "b"):
        writer = sink.create_writer(job, 0, 0)
        writer.write(batch(0, 5))
        writer.prepare_commit(1)
    sink.create_committer("a").cleanup([])
    assert [p.split("/")[1] for p in all_files(sink)] == ["b"]


def test_rolled_files_are_staged_early_and_hidden(base_url):
    sink = FileSink({"path": base_url, "max_file_bytes": 2000})
    writer = sink.create_writer("j", 2, 5)
    for start in range(0, 1000, 100):
        writer.write(batch(start, 100))
    staged_early = all_files(sink)
    assert len(staged_early) >= 2 and visible_files(sink) == []
    info = writer.prepare_commit(3)
    assert len(info["staged"]) >= len(staged_early) and info["rows"] == 1000
    sink.create_committer("j").commit([info])
    assert read_back(sink) == list(range(1000))
    assert all(p.startswith("part-189f4003-00002-5-0000000003-") for p in visible_files(sink))


def test_a_schema_change_starts_a_new_file(base_url):
    sink = FileSink({"path": base_url})
    writer = sink.create_writer("j", 0, 0)
    writer.write(batch(0, 3))
    writer.write(pa.record_batch({"id": pa.array([3, 4], pa.int64()), "extra": [1.0, 2.0]}))
    info = writer.prepare_commit(1)
    assert len(info["final"]) == 2
    sink.create_committer("j").commit([info])
    schemas = [pq.read_schema(pa.BufferReader(sink.fs.read(p))).names for p in info["final"]]
    assert schemas == [["id", "name"], ["id", "extra"]]


def test_writer_close_discards_unprepared_output(base_url):
    sink = FileSink({"path": base_url, "max_file_bytes": 1})
    writer = sink.create_writer("j", 0, 0)
    writer.write(batch(0, 3))  # rolled: staged already
    writer.write(batch(3, 3))
    writer.close()
    assert all_files(sink) == []


class GatedFS:
    """Delegates to a real file system, but a new file's ``sync`` (the fsync, or the
    upload) blocks until ``gate`` is set (a slow store), then fails with ``fail`` when given."""

    def __init__(self, fs: Any):
        self._fs = fs
        self.gate = threading.Event()
        self.started = threading.Event()
        self.finished = threading.Event()
        self.fail: BaseException | None = None
        self.writers: list[str] = []  # name of the thread of each sync

    def open_new(self, path: str) -> Any:
        return _GatedNewFile(self._fs.open_new(path), self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)


class _GatedNewFile:
    def __init__(self, inner: Any, fs: GatedFS):
        self._inner = inner
        self._fs = fs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def sync(self) -> None:
        fs = self._fs
        fs.writers.append(threading.current_thread().name)
        fs.started.set()
        try:
            assert fs.gate.wait(30), "gate never opened"
            if fs.fail is not None:
                raise fs.fail
            self._inner.sync()
        finally:
            fs.finished.set()


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Event, dict]:
    done, box = threading.Event(), {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, daemon=True).start()
    return done, box


@pytest.fixture
def gated(base_url):
    sink = FileSink({"path": base_url, "max_file_bytes": 1})  # every write fills a file
    fs = GatedFS(sink.fs)
    sink.fs = fs
    yield sink, fs
    fs.gate.set()  # never leave a flush thread blocked


def test_a_full_file_is_staged_off_the_writing_thread(gated):
    sink, fs = gated
    writer = sink.create_writer("j", 0, 0)
    done, box = in_thread(lambda: writer.write(batch(0, 10)))
    assert done.wait(10) and "error" not in box  # the slow upload does not block write()
    assert fs.started.wait(10)
    assert fs.writers == ["file-sink-0-flush_0"]
    fs.gate.set()
    info = writer.prepare_commit(1)
    assert info["rows"] == 10 and len(info["staged"]) == 1
    sink.create_committer("j").commit([info])
    assert read_back(sink) == list(range(10))


def test_a_second_full_file_waits_for_the_first_upload(gated):
    sink, fs = gated
    writer = sink.create_writer("j", 0, 0)
    writer.write(batch(0, 10))  # file 0 in flight
    assert fs.started.wait(10)
    done, box = in_thread(lambda: writer.write(batch(10, 10)))  # file 1 full: backpressure
    assert not done.wait(0.5)  # memory stays bounded: at most one file in flight
    assert len(fs.writers) == 1
    fs.gate.set()
    assert done.wait(10) and "error" not in box
    info = writer.prepare_commit(2)
    assert info["rows"] == 20
    assert [p.rsplit("-", 1)[1] for p in info["staged"]] == ["000000.parquet", "000001.parquet"]
    sink.create_committer("j").commit([info])
    assert read_back(sink) == list(range(20))


def test_prepare_waits_for_and_includes_the_file_staged_in_the_background(gated):
    sink, fs = gated
    writer = sink.create_writer("j", 1, 0)
    writer.write(batch(0, 10))  # full: uploading in the background
    sink.max_file_bytes = 0
    writer.write(batch(10, 5))  # the current file, staged by prepare_commit
    assert fs.started.wait(10)
    done, box = in_thread(lambda: writer.prepare_commit(3))
    assert not done.wait(0.5)  # waits for the upload in flight
    fs.gate.set()
    assert done.wait(10) and "error" not in box
    info = box["result"]
    assert info["rows"] == 15 and len(info["staged"]) == 2 == len(set(info["staged"]))
    assert sorted(f"{sink.root}/{p}" for p in all_files(sink)) == sorted(info["staged"])
    assert writer.prepare_commit(4) is None  # nothing covered twice
    sink.create_committer("j").commit([info])
    assert read_back(sink) == list(range(15))


@pytest.mark.parametrize("surfaces_at", ["write", "prepare"])
def test_a_failed_background_upload_fails_the_next_write_or_prepare(gated, surfaces_at):
    sink, fs = gated
    fs.fail = OSError("disk full")
    fs.gate.set()
    writer = sink.create_writer("j", 0, 0)
    writer.write(batch(0, 10))  # the upload fails in the background
    assert fs.finished.wait(10)
    with pytest.raises(OSError, match="disk full"):
        if surfaces_at == "write":
            writer.write(batch(10, 10))
        else:
            writer.prepare_commit(1)
    fs.fail = None
    with pytest.raises(OSError, match="disk full"):  # sticky: never swallowed
        writer.prepare_commit(2)
    with pytest.raises(OSError, match="disk full"):
        writer.write(batch(20, 1))
    writer.close()
    assert all_files(sink) == []


def test_close_waits_for_the_upload_in_flight_and_deletes_its_file(gated):
    sink, fs = gated
    writer = sink.create_writer("j", 0, 0)
    fs.gate.set()
    writer.write(batch(0, 10))
    assert fs.finished.wait(10)  # file 0 staged
    fs.gate.clear()
    fs.started.clear()
    writer.write(batch(10, 10))  # file 1 in flight
    assert fs.started.wait(10)
    done, box = in_thread(writer.close)
    assert not done.wait(0.5)  # the abort waits for the upload...
    fs.gate.set()
    assert done.wait(10) and "error" not in box
    assert all_files(sink) == []  # ...and deletes its file: nothing staged shows up after it


def test_formats_are_readable_by_their_libraries(tmp_path):
    rows = batch(0, 4)
    for fmt in ("parquet", "csv", "jsonl"):
        sink = FileSink({"path": str(tmp_path / fmt), "format": fmt})
        writer = sink.create_writer("j", 0, 0)
        writer.write(rows)
        info = writer.prepare_commit(1)
        sink.create_committer("j").commit([info])
        path = info["final"][0]
        if fmt == "parquet":
            assert pq.read_table(path).to_pylist() == rows.to_pylist()
        elif fmt == "csv":
            assert pacsv.read_csv(path).to_pylist() == rows.to_pylist()
        else:
            with open(path) as f:
                assert [json.loads(line) for line in f] == rows.to_pylist()


def test_jsonl_encodes_binary_and_timestamps(tmp_path):
    import datetime

    sink = FileSink({"path": str(tmp_path), "format": "jsonl"})
    writer = sink.create_writer("j", 0, 0)
    writer.write(
        pa.record_batch(
            {
                "b": pa.array([b"\x00\xff"], pa.binary()),
                "t": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5)], pa.timestamp("s")),
            }
        )
    )
    info = writer.prepare_commit(1)
    assert json.loads(sink.fs.read(info["staged"][0])) == {"b": "AP8=", "t": "2024-01-02T03:04:05"}


def test_parquet_compression_option(tmp_path):
    sink = FileSink({"path": str(tmp_path), "compression": "zstd"})
    writer = sink.create_writer("j", 0, 0)
    writer.write(batch(0, 10))
    info = writer.prepare_commit(1)
    meta = pq.read_metadata(pa.BufferReader(sink.fs.read(info["staged"][0])))
    assert meta.row_group(0).column(0).compression == "ZSTD"


@pytest.mark.parametrize(
    "options, key",
    [
        ({}, "path"),
        ({"path": "/x", "format": "orc"}, "format"),
        ({"path": "/x", "format": "csv", "compression": "zstd"}, "compression"),
        ({"path": "/x", "compression": "lzma"}, "compression"),
        ({"path": "/x", "max_file_bytes": -1}, "max_file_bytes"),
        ({"path": "/x", "mode": "append"}, "mode"),
    ],
)
def test_option_validation(options, key):
    with pytest.raises(ConfigError) as err:
        FileSink(options)
    assert err.value.key == key


def test_bad_job_subtask_or_checkpoint_ids(base_url):
    sink = FileSink({"path": base_url})
    with pytest.raises(ConfigError):
        sink.create_writer("../escape", 0, 0)
    with pytest.raises(ValueError):
        sink.create_writer("j", -1, 0)
    writer = sink.create_writer("j", 0, 0)
    with pytest.raises(ConfigError):
        writer.prepare_commit(-3)


def test_committer_rejects_foreign_commit_infos(base_url):
    sink = FileSink({"path": base_url})
    committer = sink.create_committer("j")
    with pytest.raises(ValueError, match="not under"):
        committer.commit([{"staged": ["/etc/passwd"], "final": [f"{sink.root}/part-x.parquet"]}])
    with pytest.raises(ValueError, match="not a visible file"):
        committer.commit([{"staged": [f"{sink.root}/_staging/j/a"], "final": [f"{sink.root}/_hidden"]}])
    with pytest.raises(ValueError, match="malformed"):
        committer.commit([{"staged": ["a"], "final": []}])


def test_round_trip_sequence_to_file_sink_to_file_source(base_url):
    from airflow_provider_seatunnel_ckpt.connectors import load_source

    source = load_source({"plugin_name": "Sequence", "rows": 1000, "splits": 3, "payload_bytes": 8})
    sink = load_sink({"plugin_name": "File", "path": base_url + "/out"})
    committer = sink.create_committer("rt")
    infos = []
    for i, split in enumerate(source.splits(3)):
        writer = sink.create_writer("rt", i, 0)
        for b in iter_batches(source.create_reader(split, None, ReaderContext(i, 3, batch_size=128))):
            writer.write(b)
        infos.append(writer.prepare_commit(1))
    committer.commit(infos)
    committer.cleanup(infos)
    assert read_back(sink) == list(range(1000))


# ---- Console -----------------------------------------------------------------------------------
def test_console_writer_prints_nothing_and_keeps_the_epochs_first_rows(capsys):
    sink = load_sink({"plugin_name": "console", "limit": 3})
    writer = sink.create_writer("j", 1, 0)
    writer.write(batch(0, 2))
    writer.write(batch(2, 5))
    # Executor stdout ends up on the executor JVM's stderr: the writer must not print.
    assert capsys.readouterr() == ("", "")
    assert writer.prepare_commit(4) == {
        "subtask": 1,
        "checkpoint": 4,
        "rows": 7,
        "batches": 2,
        "sample": ["{'id': 0, 'name': 'n0'}", "{'id': 1, 'name': 'n1'}", "{'id': 2, 'name': 'n2'}"],
    }
    assert sink.create_writer("j", 0, 0).prepare_commit(4) is None  # an idle epoch prints nothing


def test_console_committer_prints_committed_epochs_on_stdout_once(capsys):
    sink = load_sink({"plugin_name": "console", "limit": 1})
    epochs = {}
    for checkpoint, (subtask, start, n) in [(3, (1, 0, 4)), (3, (0, 10, 1)), (5, (1, 4, 2))]:
        writer = sink.create_writer("j", subtask, 0)
        writer.write(batch(start, n))
        epochs[(checkpoint, subtask)] = writer.prepare_commit(checkpoint)
    committer = sink.create_committer("j")
    committer.commit([epochs[(3, 1)], None, epochs[(3, 0)]])
    # the next checkpoint's infos repeat an epoch its subtask had not seen committed yet
    committer.commit([epochs[(3, 1)], epochs[(5, 1)]])
    committer.cleanup([])
    committer.rollback(0)
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        "[Console subtask 0] checkpoint 3: 1 row in 1 batch (total 1)",
        "  {'id': 10, 'name': 'n10'}",
        "[Console subtask 1] checkpoint 3: 4 rows in 1 batch (total 4)",
        "  {'id': 0, 'name': 'n0'}",
        "[Console subtask 1] checkpoint 5: 2 rows in 1 batch (total 6)",
        "  {'id': 4, 'name': 'n4'}",
    ]


def test_console_sink_options():
    assert ConsoleSink({}).limit == 5
    with pytest.raises(ConfigError, match="limit"):
        ConsoleSink({"limit": -1})


def test_a_closed_writer_leaves_no_footer_to_write_into_its_discarded_file(tmp_path):
    """A job that fails closes its writers with files half written: those files are
    discarded, and garbage collection must not try to finish them (it printed a
    ``write to a closed file`` traceback on stderr, a CI failure)."""
    import gc
    import sys

    sink = FileSink({"path": f"file://{tmp_path}/", "format": "parquet"})
    writer = sink.create_writer("job", 0, 0)
    writer.open(0)
    writer.write(batch(0, 10))
    unraisable: list[Any] = []
    previous, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        writer.close()
        del writer
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert unraisable == []
    assert all_files(sink) == []


def test_small_batches_are_gathered_into_row_groups_of_at_least_64k_rows(base_url):
    """A source of many small files gives small batches: written one row group each, a file
    of 100,000 ten-row groups kept their footer metadata in memory and made readers slow."""
    from airflow_provider_seatunnel_ckpt.connectors.file.sink import MIN_ROW_GROUP_ROWS

    sink = FileSink({"path": base_url})
    writer = sink.create_writer("j", 0, 0)
    for start in range(0, 100_000, 10):
        writer.write(batch(start, 10))
    writer.write(batch(100_000, MIN_ROW_GROUP_ROWS))
    info = writer.prepare_commit(1)
    sink.create_committer("j").commit([info])
    [path] = info["final"]
    metadata = pq.read_metadata(pa.BufferReader(sink.fs.read(path)))
    groups = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    first = -(-MIN_ROW_GROUP_ROWS // 10) * 10  # the ten-row batches up to the first 64k
    # then the rest gathered, written before the large batch, which is a row group as it is
    assert groups == [first, 100_000 - first, MIN_ROW_GROUP_ROWS], groups
    assert read_back(sink) == list(range(100_000 + MIN_ROW_GROUP_ROWS))
    # a batch of a row group's size on its own is written as it comes
    writer = sink.create_writer("j", 0, 0)
    writer.write(batch(0, MIN_ROW_GROUP_ROWS))
    writer.write(batch(MIN_ROW_GROUP_ROWS, 5))
    info = writer.prepare_commit(2)
    sink.create_committer("j").commit([info])
    metadata = pq.read_metadata(pa.BufferReader(sink.fs.read(info["final"][0])))
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [MIN_ROW_GROUP_ROWS, 5]


def test_many_open_files_write_what_they_gathered_past_a_limit(tmp_path, monkeypatch):
    """partition_by over many values: each file gets a few rows per batch, and without a
    limit every one would hold everything since the checkpoint in memory."""
    from airflow_provider_seatunnel_ckpt.connectors.file import sink as file_sink

    monkeypatch.setattr(file_sink, "MAX_GATHERED_BYTES", 200_000)
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path / "out"),
            "file_format_type": "parquet",
            "partition_by": ["k"],
        }
    )
    writer = sink.create_writer("j", 0, 0)
    for n in range(40):
        ids = np.arange(n * 1000, (n + 1) * 1000, dtype=np.int64)
        writer.write(pa.record_batch({"id": ids, "k": ids % 100}))
        held = sum(f.gathered_bytes for f in writer._files.values())
        assert held <= 200_000 + 1000 * 16, (n, held)  # never more than the limit and one batch
    info = writer.prepare_commit(1)
    sink.create_committer("j").commit([info])
    table = ds.dataset(str(tmp_path / "out"), format="parquet", partitioning="hive").to_table()
    assert sorted(table.column("id").to_pylist()) == list(range(40_000))
