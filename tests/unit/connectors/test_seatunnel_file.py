"""SeaTunnel's file connectors (``LocalFile``, ``S3File``, ``OssFile``, ``HdfsFile``): what
the sinks write is read back by the sources, in every format, on real local files; the
sinks stay exactly once (the File sink's two-phase commit); the sources resume at the exact
row; SeaTunnel's text format byte for byte; bad options fail with one line naming the key."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import json
import logging
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.connectors.file.hdfs import HdfsFileSource
from airflow_provider_seatunnel_ckpt.connectors.file.local import LocalFileSink, LocalFileSource
from airflow_provider_seatunnel_ckpt.connectors.file.oss import OssFileSink
from airflow_provider_seatunnel_ckpt.connectors.file.s3 import S3FileSource
from airflow_provider_seatunnel_ckpt.connectors.file.sink import job_tag
from airflow_provider_seatunnel_ckpt.connectors.seatunnel_types import parse_schema
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from tests.seatunnel_jobs import run_in_process

SCHEMA = {
    "fields": {
        "id": "bigint",
        "name": "string",
        "ok": "boolean",
        "small": "tinyint",
        "price": "decimal(10, 2)",
        "ratio": "double",
        "day": "date",
        "at": "timestamp",
        "raw": "bytes",
        "tags": "array<int>",
        "attrs": "map<string, string>",
        "addr": {"city": "string", "zip": "int"},
    }
}
ARROW = pa.schema([pa.field(f.name, f.type) for f in parse_schema(SCHEMA)])
ROWS = [
    {
        "id": 1,
        "name": "ann",
        "ok": True,
        "small": -3,
        "price": decimal.Decimal("12.50"),
        "ratio": 0.1,
        "day": dt.date(2024, 2, 29),
        "at": dt.datetime(2024, 3, 1, 12, 30, 5),
        "raw": b"xyz",
        "tags": [1, 2, 3],
        "attrs": [("a", "1"), ("b", None)],
        "addr": {"city": "Oslo", "zip": 150},
    },
    {
        "id": 2,
        "name": None,
        "ok": False,
        "small": None,
        "price": None,
        "ratio": -2.5e300,
        "day": None,
        "at": None,
        "raw": None,
        "tags": None,
        "attrs": None,
        "addr": None,
    },
    {
        "id": 3,
        "name": "bo b",
        "ok": None,
        "small": 127,
        "price": decimal.Decimal("-0.01"),
        "ratio": None,
        "day": dt.date(1970, 1, 1),
        "at": dt.datetime(1999, 12, 31, 23, 59, 59),
        "raw": b"",
        "tags": [None, 7],
        "attrs": [],
        "addr": {"city": None, "zip": None},
    },
]
CTX = ReaderContext(0, 1)


def rows_batch(rows: list[dict] = ROWS, schema: pa.Schema = ARROW) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def write_epochs(sink: Any, epochs: list[list[pa.RecordBatch]], job: str = "job-1", subtask: int = 0) -> list:
    """Write each epoch's batches, prepare and commit it; return the commit infos."""
    writer = sink.create_writer(job, subtask, 0)
    committer = sink.create_committer(job)
    infos = []
    for checkpoint_id, batches in enumerate(epochs, start=1):
        for batch in batches:
            writer.write(batch)
        info = json.loads(json.dumps(writer.prepare_commit(checkpoint_id)))  # as a checkpoint stores it
        committer.commit([info])
        infos.append(info)
    writer.close()
    return infos


def read(source: Any, batch_size: int = 65_536) -> list[dict]:
    rows = []
    for split in source.splits(1):
        reader = source.create_reader(split, None, ReaderContext(0, 1, batch_size))
        for batch in iter_batches(reader):
            rows.extend(batch.to_pylist())
        reader.close()
    return rows


def visible(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)
    )


def expected_text_rows() -> list[dict]:
    """ROWS as SeaTunnel's text format gives them back: a blank field is null (b"" too)."""
    rows = [dict(r) for r in ROWS]
    rows[2]["raw"] = None
    rows[2]["attrs"] = None  # an empty map is an empty field
    return rows


# ---------------------------------------------------------------------------------------
# round trips: the sink writes, the source reads back the schema's types


@pytest.mark.parametrize("fmt", ["text", "csv", "json", "parquet", "orc"])
def test_a_sink_writes_what_the_source_reads_back_with_the_schema_types(tmp_path, fmt):
    sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path / "out"), "file_format_type": fmt})
    sink.accepts(ARROW)
    write_epochs(sink, [[rows_batch()], [rows_batch(ROWS[:1])]])
    source = load_source(
        {"plugin_name": "LocalFile", "path": str(tmp_path / "out"), "file_format_type": fmt, "schema": SCHEMA}
    )
    source.preflight()  # lists the files: their paths may hold partition columns
    assert source.produced_schema() == ARROW
    back = read(source)
    expected = expected_text_rows() if fmt in ("text", "csv") else [dict(r) for r in ROWS]
    if fmt == "json":
        expected[2]["attrs"] = []  # json keeps the empty map; a null value leaves its key out of the map
        expected[0]["attrs"] = [("a", "1")]
    assert sorted(back, key=lambda r: r["id"]) == sorted(expected + expected[:1], key=lambda r: r["id"])
    files = visible(tmp_path / "out")
    tag = job_tag("job-1")
    ext = {"text": "txt"}.get(fmt, fmt)
    assert files == [f"T_{tag}_0_0_{c:010d}_0.{ext}" for c in (1, 2)]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_parquet_and_orc_are_read_with_their_own_schema_without_one(tmp_path, fmt):
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": fmt,
            "compress_codec": {"parquet": "zstd", "orc": "zlib"}[fmt],
        }
    )
    write_epochs(sink, [[rows_batch()]])
    assert visible(tmp_path)[0].endswith({"parquet": ".zstd.parquet", "orc": ".zlib.orc"}[fmt])
    source = load_source(
        {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": fmt, "read_columns": ["at", "id"]}
    )
    assert source.produced_schema() is None  # the files tell
    assert read(source) == [{"at": r["at"], "id": r["id"]} for r in ROWS]


def test_a_schema_casts_parquet_columns_by_name(tmp_path):
    pq.write_table(
        pa.table(
            {"b": ["7", "8"], "a": pa.array([1, 2], pa.int16()), "t": pa.array([0, 1000], pa.timestamp("ms", tz="UTC"))}
        ),
        tmp_path / "x.parquet",
    )
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "parquet",
            "schema": {"fields": {"a": "bigint", "b": "int", "t": "timestamp"}},
        }
    )
    batch = next(iter_batches(source.create_reader(source.splits(1)[0], None, CTX)))
    assert batch.schema == pa.schema([("a", pa.int64()), ("b", pa.int32()), ("t", pa.timestamp("us"))])
    assert batch.to_pylist()[1] == {"a": 2, "b": 8, "t": dt.datetime(1970, 1, 1, 0, 0, 1)}


# ---------------------------------------------------------------------------------------
# SeaTunnel's text format, byte for byte


def test_text_files_are_seatunnel_text_byte_for_byte(tmp_path):
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "text",
            "field_delimiter": "|",
            "row_delimiter": "\n",
            "enable_header_write": True,
            "datetime_format": "yyyy/MM/dd HH:mm:ss",
            "date_format": "yyyy.MM.dd",
        }
    )
    write_epochs(sink, [[rows_batch(ROWS[:2]), rows_batch(ROWS[2:])]])
    (name,) = visible(tmp_path)
    assert (tmp_path / name).read_bytes().decode() == (
        "id|name|ok|small|price|ratio|day|at|raw|tags|attrs|addr\n"
        "1|ann|true|-3|12.50|0.1|2024.02.29|2024/03/01 12:30:05|xyz|1\x022\x023|a\x031\x02b\x03|Oslo\x02150\n"
        "2||false|||-2.5e+300||||||\n"
        "3|bo b||127|-0.01||1970.01.01|1999/12/31 23:59:59||\x027||\x02"  # no row delimiter after the last row
    )
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "text",
            "schema": SCHEMA,
            "field_delimiter": "|",
            "skip_header_row_number": 1,
        }
    )
    assert read(source) == expected_text_rows()


def test_seatunnel_written_text_is_read_with_nested_separators_and_any_date_format(tmp_path):
    """Lines as SeaTunnel's own e2e text fixtures have them (\\u0001 fields, nested by
    \\u0002..\\u0004), dates and timestamps in SeaTunnel's other formats, \\r\\n line ends."""
    (tmp_path / "a.txt").write_bytes(
        b"k1\x03v1\x02k2\x03v2\x01545\x02157\x01MTDna\x01false\x012023/06/07\x012023-05-08T16:08:51\x01"
        b"Abc\x04x\x03y\x04z\x0277\r\n"
        b"\x01\x01 \x01TRUE\x0120230102\x0120230102030405\x01\r\n"
    )
    schema = {
        "fields": {
            "m": "map<string, string>",
            "arr": "array<int>",
            "s": "string",
            "b": "boolean",
            "d": "date",
            "ts": "timestamp",
            "r": {"m": "map<string, string>", "i": "int"},
        }
    }
    source = load_source(
        {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "text", "schema": schema}
    )
    assert read(source) == [
        {
            "m": [("k1", "v1"), ("k2", "v2")],
            "arr": [545, 157],
            "s": "MTDna",
            "b": False,
            "d": dt.date(2023, 6, 7),
            "ts": dt.datetime(2023, 5, 8, 16, 8, 51),
            "r": {"m": [("Abc", "x"), ("y", "z")], "i": 77},
        },
        {
            "m": None,
            "arr": None,
            "s": None,
            "b": True,
            "d": dt.date(2023, 1, 2),
            "ts": dt.datetime(2023, 1, 2, 3, 4, 5),
            "r": None,
        },
    ]


def test_text_without_schema_is_one_content_column_and_delimiters_follow_seatunnel(tmp_path):
    (tmp_path / "a.txt").write_text("tyrant#26#male\n\nx|y#1\n")
    plain = load_source({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "text"})
    plain.preflight()
    assert plain.produced_schema() == pa.schema([("content", pa.string())])
    assert read(plain) == [{"content": "tyrant#26#male"}, {"content": "x|y#1"}]  # empty lines are no rows
    # the text reader splits with a delimiter as SeaTunnel's does: as a (Java) regular expression
    regex = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "text",
            "delimiter": "\\||#",
            "schema": {"fields": {"a": "string", "b": "string", "c": "string"}},
        }
    )
    assert read(regex)[1] == {"a": "x", "b": "y", "c": "1"}
    with pytest.raises(ConfigError, match=r"^source\[0\]\.field_delimiter: '\|\|' matches the empty text"):
        load_source(
            {
                "plugin_name": "LocalFile",
                "path": str(tmp_path),
                "file_format_type": "text",
                "field_delimiter": "||",
                "schema": {"fields": {"a": "string"}},
            }
        )


def test_json_files_are_seatunnels_objects_per_row(tmp_path):
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "json",
            "sink_columns": ["id", "price", "attrs", "at", "raw"],
            "row_delimiter": "\n",
        }
    )
    write_epochs(sink, [[rows_batch(ROWS[:1]), rows_batch(ROWS[1:2])]])
    (name,) = visible(tmp_path)
    # Jackson's: no spaces, decimals numbers without trailing zeros, maps objects, no
    # delimiter after the last row
    assert (tmp_path / name).read_text() == (
        '{"id":1,"price":12.5,"attrs":{"a":"1","b":null},"at":"2024-03-01T12:30:05","raw":"eHl6"}\n'
        '{"id":2,"price":null,"attrs":null,"at":null,"raw":null}'
    )


def test_csv_quotes_what_needs_it_and_reads_quoted_fields_and_short_rows(tmp_path):
    schema = {"fields": {"id": "int", "text": "string", "n": "double"}}
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path / "out"),
            "file_format_type": "csv",
            "enable_header_write": True,
        }
    )
    rows = [{"id": 1, "text": 'say "hi", then\tgo', "n": 1.5}, {"id": 2, "text": "plain", "n": None}]
    write_epochs(sink, [[rows_batch(rows, parse_schema(schema))]])
    (name,) = visible(tmp_path / "out")
    assert (tmp_path / "out" / name).read_text() == 'id,text,n\n1,"say ""hi"", then\tgo",1.5\n2,plain,'
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path / "out"),
            "file_format_type": "csv",
            "schema": schema,
            "skip_header_row_number": 1,
        }
    )
    assert read(source) == rows
    # fewer fields than the schema: the rest are null; more: ignored (SeaTunnel's csv reader)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.csv").write_text('7\n8,"a,b",2,extra\n')
    source = load_source(
        {"plugin_name": "LocalFile", "path": str(tmp_path / "in"), "file_format_type": "csv", "schema": schema}
    )
    assert read(source) == [{"id": 7, "text": None, "n": None}, {"id": 8, "text": "a,b", "n": 2.0}]


# ---------------------------------------------------------------------------------------
# partitions


def test_partition_directories_and_partition_columns_read_back_from_the_path(tmp_path):
    schema = parse_schema({"fields": {"id": "bigint", "dt": "date", "region": "string"}})
    rows = [{"id": i, "dt": dt.date(2024, 1, 1 + i % 2), "region": [None, "eu", "us"][i % 3]} for i in range(12)]
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "parquet",
            "have_partition": True,
            "partition_by": ["dt", "Region"],
        }
    )  # names match ignoring case
    write_epochs(sink, [[rows_batch(rows[:6], schema)], [rows_batch(rows[6:], schema)]])
    tag = job_tag("job-1")
    # each epoch's six groups, in the order their first row came: the file index within the epoch
    groups = [
        ("2024-01-01", "null"),
        ("2024-01-02", "eu"),
        ("2024-01-01", "us"),
        ("2024-01-02", "null"),
        ("2024-01-01", "eu"),
        ("2024-01-02", "us"),
    ]
    assert visible(tmp_path) == sorted(
        f"dt={d}/Region={r}/T_{tag}_0_0_{c:010d}_{i}.parquet" for c in (1, 2) for i, (d, r) in enumerate(groups)
    )
    one = tmp_path / visible(tmp_path)[0]
    assert pq.read_schema(one).names == ["id"]  # is_partition_field_write_in_file = false
    source = load_source({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "parquet"})
    back = sorted(read(source), key=lambda r: r["id"])
    assert back == [{"id": r["id"], "dt": str(r["dt"]), "Region": r["region"] or "null"} for r in rows]
    assert source.produced_schema() is None
    # a custom expression, partition fields kept in the files
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path / "x"),
            "file_format_type": "json",
            "partition_by": ["region"],
            "partition_dir_expression": "${k0}_is/${v0}",
            "is_partition_field_write_in_file": True,
            "sink_columns": ["region", "id"],
        }
    )
    write_epochs(sink, [[rows_batch(rows[:3], schema)]])
    assert [f.rsplit("/", 1)[0] for f in visible(tmp_path / "x")] == ["region_is/eu", "region_is/null", "region_is/us"]
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path / "x"),
            "file_format_type": "json",
            "schema": {"fields": {"id": "bigint"}},
        }
    )
    source.preflight()
    assert source.produced_schema() == pa.schema([("id", pa.int64())])  # region_is=... is no k=v part
    assert sorted(r["id"] for r in read(source)) == [0, 1, 2]


def test_partition_columns_come_after_the_schema_and_must_not_repeat_it(tmp_path):
    (tmp_path / "day=1" / "region=eu").mkdir(parents=True)
    (tmp_path / "day=1" / "region=eu" / "a.json").write_text('{"id": 1, "region": "x"}\n')
    base = {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "json"}
    source = load_source({**base, "schema": {"fields": {"id": "bigint"}}})
    assert source.produced_schema() is None  # not listed before preflight: run --check contacts nothing
    source.preflight()
    assert source.produced_schema() == pa.schema([("id", pa.int64()), ("day", pa.string()), ("region", pa.string())])
    assert read(source) == [{"id": 1, "day": "1", "region": "eu"}]
    with pytest.raises(ConfigError, match=r"^source\[0\]\.schema: column 'region' is also a partition of "):
        load_source({**base, "schema": {"fields": {"id": "bigint", "region": "string"}}}).splits(1)
    off = load_source(
        {**base, "schema": {"fields": {"id": "bigint", "region": "string"}}, "parse_partition_from_path": False}
    )
    assert read(off) == [{"id": 1, "region": "x"}]


def test_a_partition_value_that_would_hide_or_escape_the_directory_fails(tmp_path):
    schema = parse_schema({"fields": {"id": "int", "p": "string"}})
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "text",
            "partition_by": ["p"],
            "partition_dir_expression": "${v0}",
        }
    )
    writer = sink.create_writer("job-1", 0, 0)
    for bad in ("..", "_x", ".x"):
        with pytest.raises(ValueError, match="partition directory"):
            writer.write(rows_batch([{"id": 1, "p": bad}], schema))


# ---------------------------------------------------------------------------------------
# exactly once: names, replays, rollbacks


def test_file_names_follow_the_expression_and_a_replayed_commit_publishes_the_same_names(tmp_path):
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "text",
            "custom_filename": True,
            "file_name_expression": "${transactionId}_${now}_${uuid}",
            "filename_time_format": "yyyyMMdd",
            "batch_size": 2,
        }
    )
    committer = sink.create_committer("job-1")
    writer = sink.create_writer("job-1", 3, 1)
    writer.write(rows_batch())  # 3 rows, 2 per file: two files
    info = json.loads(json.dumps(writer.prepare_commit(5)))
    assert visible(tmp_path) == []  # staged, not published
    committer.commit([info])
    names = visible(tmp_path)
    today = dt.date.today().strftime("%Y%m%d")
    pattern = rf"T_{job_tag('job-1')}_3_1_0000000005_{today}_[0-9a-f-]{{36}}_([01])\.txt"
    assert sorted(re.fullmatch(pattern, n).group(1) for n in names) == ["0", "1"], names
    committer.commit([info])  # replayed after a restore: nothing new, nothing lost
    committer.commit([info])
    assert visible(tmp_path) == names
    assert sum((tmp_path / n).read_text().count("\n") + 1 for n in names) == 3


def test_a_restore_rolls_back_newer_epochs_in_partition_dirs_and_cleans_what_was_staged(tmp_path):
    schema = parse_schema({"fields": {"id": "int", "p": "string"}})
    options = {
        "plugin_name": "LocalFile",
        "path": str(tmp_path),
        "file_format_type": "csv",
        "partition_by": ["p"],
        "file_name_expression": "${transactionId}_${uuid}",
    }
    sink = load_sink(options)
    infos = write_epochs(
        sink,
        [[rows_batch([{"id": 1, "p": "a"}, {"id": 2, "p": "b"}], schema)], [rows_batch([{"id": 3, "p": "a"}], schema)]],
    )
    (tmp_path / "p=a" / "mine.csv").write_text("9,x")  # not this job's: left alone
    other = load_sink(options)
    write_epochs(other, [[rows_batch([{"id": 4, "p": "a"}], schema)]] * 3, job="job-2")
    # the run restored checkpoint 1: epoch 2 is produced again, by a new writer
    committer = sink.create_committer("job-1")
    writer = sink.create_writer("job-1", 0, 1)
    writer.write(rows_batch([{"id": 99, "p": "c"}], schema))
    stale = writer.prepare_commit(3)  # staged for a checkpoint that never completes
    assert stale is not None
    committer.cleanup(keep=[infos[0]])
    committer.rollback(1)
    writer = sink.create_writer("job-1", 0, 2)
    writer.write(rows_batch([{"id": 3, "p": "a"}], schema))
    committer.commit([infos[0], json.loads(json.dumps(writer.prepare_commit(2)))])
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "csv",
            "schema": {"fields": {"id": "int"}},
            "file_filter_pattern": "T_.*",
        }
    )
    ids = sorted(r["id"] for r in read(source))
    assert ids == [1, 2, 3, 4, 4, 4]  # every row once, job-2's three epochs untouched, nothing of id 99
    assert (tmp_path / "p=a" / "mine.csv").exists()
    assert not list((tmp_path / "_staging").rglob("*.csv"))


def test_without_transactions_names_still_carry_the_transaction_and_a_warning_says_so(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        sink = load_sink(
            {
                "plugin_name": "LocalFile",
                "path": str(tmp_path),
                "file_format_type": "json",
                "is_enable_transaction": False,
                "file_name_expression": "out_${now}",
                "tmp_path": "/tmp/seatunnel",
            }
        )
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "is_enable_transaction = false" in messages and "tmp_path is ignored" in messages
    assert "start with ${transactionId}_" in messages
    write_epochs(sink, [[rows_batch(ROWS[:1])]])
    (name,) = visible(tmp_path)
    assert re.fullmatch(rf"T_{job_tag('job-1')}_0_0_0000000001_out_\d{{4}}\.\d\d\.\d\d_0\.json", name)


# ---------------------------------------------------------------------------------------
# sources: exact positions, filters, compression


def _lines_file(tmp_path: Path, fmt: str, n: int) -> None:
    if fmt == "text":
        (tmp_path / "a.txt").write_text("header\n" + "\n".join(f"{i}\x01n{i}" for i in range(n)) + "\n")
    elif fmt == "csv":
        (tmp_path / "a.csv").write_text("id,name\n" + "".join(f'{i},"n,{i}"\n' for i in range(n)))
    elif fmt == "json":
        (tmp_path / "a.json").write_text("".join(json.dumps({"id": i, "name": f"n{i}"}) + "\n" for i in range(n)))
    elif fmt == "gzip":
        (tmp_path / "a.txt.gz").write_bytes(
            gzip.compress(("header\n" + "".join(f"{i}\x01n{i}\n" for i in range(n))).encode())
        )
    else:
        sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": fmt})
        schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
        write_epochs(sink, [[pa.RecordBatch.from_pylist([{"id": i, "name": f"n{i}"} for i in range(n)], schema)]])


@pytest.mark.parametrize("fmt", ["text", "csv", "json", "gzip", "parquet", "orc"])
def test_a_reader_resumes_at_the_exact_row(tmp_path, fmt):
    _lines_file(tmp_path, fmt, 1000)
    options = {
        "plugin_name": "LocalFile",
        "path": str(tmp_path),
        "file_format_type": "text" if fmt == "gzip" else fmt,
        "schema": {"fields": {"id": "bigint", "name": "string"}},
    }
    if fmt in ("text", "csv", "gzip"):
        options["skip_header_row_number"] = 1
    if fmt == "gzip":
        options["compress_codec"] = "gzip"
    source = load_source(options)
    (split,) = source.splits(1)
    full = read(source, batch_size=64)
    assert [r["id"] for r in full] == list(range(1000))
    assert full[5]["name"] == ("n,5" if fmt == "csv" else "n5")
    reader = source.create_reader(split, None, ReaderContext(0, 1, 37))
    first = [row for _ in range(5) for row in reader.read_batch().to_pylist()]
    position = json.loads(json.dumps(reader.position()))
    reader.close()
    rest = []
    for batch in iter_batches(source.create_reader(split, position, ReaderContext(0, 1, 37))):
        rest.extend(batch.to_pylist())
    assert first + rest == full


def test_files_are_chosen_as_seatunnel_chooses_them(tmp_path):
    for name, text in (
        ("a.txt", "1"),
        ("b.log", "2"),
        ("empty.txt", ""),
        ("_SUCCESS", ""),
        (".hidden.txt", "3"),
        ("sub/c.txt", "4"),
        ("sub/d.txt", "5"),
    ):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    base = {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "text"}
    assert [s.split_id for s in load_source(base).splits(1)] == ["a.txt", "b.log", "sub/c.txt", "sub/d.txt"]
    only = load_source({**base, "file_filter_pattern": r".*\.txt"})
    assert [s.split_id for s in only.splits(1)] == ["a.txt", "sub/c.txt", "sub/d.txt"]
    assert read(load_source({**base, "file_filter_pattern": "c.txt", "parse_partition_from_path": False})) == [
        {"content": "4"}
    ]


def test_s3_oss_and_hdfs_options_map_onto_the_storage_options(tmp_path):
    s3 = load_source(
        {
            "plugin_name": "S3File",
            "path": "/data/in",
            "bucket": "s3a://my-bucket",
            "file_format_type": "parquet",
            "fs.s3a.endpoint": "http://minio:9000",
            "access_key": "AK",
            "secret_key": "SK",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "hadoop_s3_properties": {"fs.s3a.path.style.access": "true"},
        }
    )
    assert isinstance(s3, S3FileSource) and s3.root == "/data/in"
    assert (s3.fs.bucket, s3.fs.endpoint_url, s3.fs.access_key_id, s3.fs.path_style) == (
        "my-bucket",
        "http://minio:9000",
        "AK",
        True,
    )
    oss = load_sink(
        {
            "plugin_name": "OssFile",
            "path": "/out",
            "bucket": "oss://oss-bucket",
            "file_format_type": "orc",
            "endpoint": "oss-cn-hangzhou.aliyuncs.com",
            "access_key": "a",
            "access_secret": "b",
        }
    )
    assert isinstance(oss, OssFileSink) and (oss.fs.bucket, oss.root, oss.fs.access_key_id) == (
        "oss-bucket",
        "/out",
        "a",
    )
    site = tmp_path / "hdfs-site.xml"
    site.write_text(
        "<configuration>"
        "<property><name>dfs.nameservices</name><value>ns1</value></property>"
        "<property><name>dfs.ha.namenodes.ns1</name><value>nn1,nn2</value></property>"
        "<property><name>dfs.namenode.http-address.ns1.nn1</name><value>h1:9870</value></property>"
        "<property><name>dfs.namenode.http-address.ns1.nn2</name><value>h2:9870</value></property>"
        "</configuration>"
    )
    hdfs = load_source(
        {
            "plugin_name": "HdfsFile",
            "path": "/in",
            "fs.defaultFS": "hdfs://ns1",
            "hdfs_site_path": str(site),
            "remote_user": "etl",
            "file_format_type": "orc",
        }
    )
    assert isinstance(hdfs, HdfsFileSource) and hdfs.root == "/in"
    assert (hdfs.fs.urls, hdfs.fs.user) == (["http://h1:9870", "http://h2:9870"], "etl")


# ---------------------------------------------------------------------------------------
# options SeaTunnel has and this does not: one line naming the key, or a warning


@pytest.mark.parametrize(
    "kind, options, message",
    [
        ("source", {"file_format_type": "excel"}, r"source\[0\]\.schema: is required for excel files"),
        (
            "source",
            {"file_format_type": "binary", "compress_codec": "gzip"},
            r"source\[0\]\.compress_codec: 'gzip': binary",
        ),
        (
            "source",
            {"file_format_type": "text", "compress_codec": "rar"},
            r"source\[0\]\.compress_codec: 'rar' is not one of none, lzo",
        ),
        ("source", {"file_format_type": "json", "encoding": "gbk2"}, r"source\[0\]\.encoding: 'gbk2' is not a known"),
        (
            "source",
            {"file_format_type": "xml", "xml_row_tag": "r", "xml_use_attr_format": True},
            r"source\[0\]\.schema: is required for xml",
        ),
        ("source", {"file_format_type": "text", "read_columns": ["a"]}, r"source\[0\]\.read_columns: needs a schema"),
        (
            "source",
            {"file_format_type": "csv", "schema": {"fields": {"a": "int"}}, "read_columns": ["b"]},
            r"source\[0\]\.read_columns: no column 'b' in schema",
        ),
        (
            "source",
            {"file_format_type": "parquet", "archive_compress_codec": "zip"},
            r"source\[0\]\.archive_compress_codec: zip archives of parquet files",
        ),
        (
            "source",
            {"file_format_type": "text", "tables_configs": [{}]},
            r"source\[0\]\.tables_configs\[0\]\.schema\.table: is required",
        ),
        ("source", {"file_format_type": "text", "datetime_format": "dd/MM/yyyy"}, r"source\[0\]\.datetime_format: "),
        ("source", {"file_format_type": "text", "colour": 1}, r"source\[0\]\.colour: unknown option for LocalFile"),
        ("sink", {"file_format_type": "xml"}, r"sink\[0\]\.file_format_type: xml files are read, not written"),
        ("sink", {"file_format_type": "text", "compress_codec": "gzip"}, r"sink\[0\]\.compress_codec: 'gzip': text"),
        (
            "sink",
            {"file_format_type": "orc", "compress_codec": "brotli"},
            r"sink\[0\]\.compress_codec: 'brotli' is not",
        ),
        (
            "sink",
            {"file_format_type": "text", "file_name_expression": "out_${now}"},
            r"sink\[0\]\.file_name_expression: must contain \$\{transactionId\}",
        ),
        ("sink", {"single_file_mode": True}, r"sink\[0\]\.single_file_mode: is not supported"),
        ("sink", {"data_save_mode": "CUSTOM_PROCESSING"}, r"sink\[0\]\.data_save_mode: CUSTOM_PROCESSING is not"),
        ("sink", {"schema_save_mode": "DROP_SCHEMA"}, r"sink\[0\]\.schema_save_mode: 'DROP_SCHEMA' is not one of"),
        ("sink", {"encoding": "no-such"}, r"sink\[0\]\.encoding: 'no-such' is not a known"),
        ("sink", {"filename_time_format": "yyyy/MM/dd"}, r"sink\[0\]\.filename_time_format: .* subdirectories"),
        ("sink", {"sink_columns": ["a"], "partition_by": ["b"]}, r"sink\[0\]\.partition_by: partition fields must be"),
        ("sink", {"path": "s3a://bucket/x"}, r"sink\[0\]\.path: 's3a://bucket/x' is not a local path"),
    ],
)
def test_a_bad_option_is_one_line_naming_its_key(tmp_path, kind, options, message):
    entry = {"plugin_name": "LocalFile", "path": str(tmp_path), **options}
    with pytest.raises(ConfigError) as err:
        (load_source if kind == "source" else load_sink)(entry)
    assert re.match(message, str(err.value)) and "\n" not in str(err.value), str(err.value)


def test_a_sink_checks_the_rows_columns_before_writing(tmp_path):
    sink = load_sink(
        {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "orc", "sink_columns": ["id", "t"]}
    )
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.sink_columns: no column 't' in the rows; they have id, x$"):
        sink.accepts(pa.schema([("id", pa.int64()), ("x", pa.string())]))
    with pytest.raises(ConfigError, match=r"orc files cannot hold time column 't'"):
        sink.accepts(pa.schema([("id", pa.int64()), ("t", pa.time64("us"))]))


def test_sink_options_on_a_source_are_ignored_with_a_warning(tmp_path, caplog):
    (tmp_path / "a.txt").write_text("x\n")
    with caplog.at_level(logging.WARNING):
        source = load_source(
            {
                "plugin_name": "LocalFile",
                "path": str(tmp_path),
                "file_format_type": "text",
                "file_name_expression": "${transactionId}",
                "is_enable_transaction": True,
            }
        )
    assert read(source) == [{"content": "x"}]
    assert "option file_name_expression is a sink option" in caplog.text


# ---------------------------------------------------------------------------------------
# SeaTunnel job files, in-process as the subtasks run them


def test_seatunnel_job_files_write_and_read_local_files_unchanged(tmp_path):
    out = tmp_path / "hive" / "warehouse" / "test1"
    write = tmp_path / "fake_to_local_file_text.conf"
    write.write_text(
        """
env {
  parallelism = 2
  job.mode = "BATCH"
}
source {
  FakeSource {
    result_table_name = "fake"
    row.num = 20
    int.min = 1
    int.max = 3
    schema = { fields { c_bigint = bigint, c_string = string, c_int = int, c_date = date } }
  }
}
sink {
  LocalFile {
    path = "%s"
    field_delimiter = "\\t"
    row_delimiter = "\\n"
    partition_by = ["c_int"]
    partition_dir_expression = "${k0}=${v0}"
    is_partition_field_write_in_file = true
    file_name_expression = "${transactionId}_${now}"
    file_format_type = "text"
    filename_time_format = "yyyy.MM.dd"
    is_enable_transaction = true
  }
}
"""
        % out
    )
    assert run_in_process(write, "fake-to-text") == 40
    assert {p.split("/")[0] for p in visible(out)} <= {"c_int=1", "c_int=2"}
    check = tmp_path / "local_file_text_to_assert.conf"
    check.write_text(
        """
env { parallelism = 1, job.mode = "BATCH" }
source {
  LocalFile {
    path = "%s"
    file_format_type = "text"
    field_delimiter = "\\t"
    parse_partition_from_path = false
    schema = { fields { c_bigint = bigint, c_string = string, c_int = int, c_date = date } }
    result_table_name = "fake"
  }
}
sink {
  Assert {
    rules {
      row_rules = [ { rule_type = MIN_ROW, rule_value = 40 }, { rule_type = MAX_ROW, rule_value = 40 } ]
      field_rules = [
        { field_name = c_int, field_type = int, field_value = [ { rule_type = MIN, rule_value = 1 },
                                                                 { rule_type = MAX, rule_value = 2 } ] },
        { field_name = c_date, field_type = date, field_value = [ { rule_type = NOT_NULL } ] }
      ]
    }
  }
}
"""
        % out
    )
    assert run_in_process(check, "text-to-assert") == 40


def test_the_classes_are_registered_under_seatunnels_names():
    from airflow_provider_seatunnel_ckpt.connectors import sink_class, source_class

    for name in ("LocalFile", "S3File", "OssFile", "HdfsFile"):
        assert source_class(name).plugin_name == name and sink_class(name.lower()).plugin_name == name
    assert source_class("localfile") is LocalFileSource and sink_class("LOCALFILE") is LocalFileSink


def test_the_driver_lists_the_input_once_for_preflight_and_the_plan(tmp_path):
    """preflight lists ``path`` for its partition columns; the split plan made a few
    seconds later is the same files. Listing 100,000 files took 1.7 s, and it was done
    twice per start (bench/scale_bench.py)."""
    for day in (1, 2):
        (tmp_path / f"day={day}").mkdir()
        for i in range(3):
            (tmp_path / f"day={day}" / f"{i}.json").write_text(f'{{"id": {day * 10 + i}}}\n')
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "json",
            "schema": {"fields": {"id": "bigint"}},
        }
    )
    listed = []
    real_list_dir = source.fs.list_dir
    source.fs.list_dir = lambda path: listed.append(path) or real_list_dir(path)
    source.preflight()
    after_preflight = len(listed)
    plan = source.splits(2)
    assert after_preflight == 3 and len(listed) == 3, listed  # the root and two partition directories, once
    assert [s.spec["partitions"] for s in plan] == [[["day", "1"]]] * 3 + [[["day", "2"]]] * 3
    assert plan == source.splits(1)  # a split is a file, whatever the parallelism
