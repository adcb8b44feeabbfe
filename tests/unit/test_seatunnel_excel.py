"""SeaTunnel's file connectors read and write ``file_format_type = excel`` (.xlsx through
openpyxl): SeaTunnel's own excel job files (tests/fixtures/seatunnel/connector-file-local-e2e/
excel, unchanged) run in-process with their Assert rules holding, the sink job writes xlsx
files our source reads back row for row, a restored reader resumes at the exact row (also
inside a zip of workbooks), and bad cells, sheets and workbooks are one line each.

The job files read absolute paths that SeaTunnel's ``LocalFileIT.java`` fills in its
container; here its inputs are laid out the same way under a tmp directory (``excel/e2e.xlsx``
copied, zipped once and twice) and only the source's ``path`` (the sink's for the sink job)
is rebased. ``e2e.xls`` (Excel 97-2003, which LocalFileIT copies next to ``e2e.xlsx``) is
read through xlrd: the jobs reading that directory get both files' rows."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import re
import sys
import zipfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.connectors.file.formats.excel import xls_sheets
from airflow_provider_seatunnel_ckpt.errors import ConfigError, DataError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from tests import seatunnel_jobs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seatunnel" / "connector-file-local-e2e" / "excel"
E2E_XLSX = (FIXTURES / "e2e.xlsx").read_bytes()
E2E_XLS = (FIXTURES / "e2e.xls").read_bytes()


def _zip(copies: int) -> bytes:
    """LocalFileIT.convertToZipFile: entries named Random.nextInt() + name + "_" + millis + suffix."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for i, rand in enumerate([1804289383, -846930886][:copies]):
            archive.writestr(f"{rand}e2e_{1732800000000 + i}.xlsx", E2E_XLSX)
    return out.getvalue()


#: LocalFileIT's excel inputs: path in its container -> bytes
LAYOUT = {
    "/seatunnel/read/excel/name=tyrantlucifer/hobby=coding/e2e.xlsx": lambda: E2E_XLSX,
    "/seatunnel/read/excel/name=tyrantlucifer/hobby=coding/e2e.xls": lambda: E2E_XLS,
    "/seatunnel/read/zip/excel/single/e2e-xlsx.zip": lambda: _zip(1),
    "/seatunnel/read/zip/excel/multifile/multiZip.zip": lambda: _zip(2),
    "/seatunnel/read/excel_filter/name=tyrantlucifer/hobby=coding/e2e_filter.xlsx": lambda: E2E_XLSX,
}

#: job file -> rows its sink gets (its Assert rules check every value they name)
JOBS = {
    "local_excel_to_assert.conf": 10,  # e2e.xls and e2e.xlsx
    "local_excel_projection_to_assert.conf": 10,
    "local_excel_zip_to_assert.conf": 5,
    "local_excel_multi_zip_to_assert.conf": 10,
    "local_filter_excel_to_assert.conf": 5,
    "local_excel_to_assert_with_multipletable.conf": 20,  # two tables of 10
}


def _lay_out(root: Path) -> None:
    for where, build in LAYOUT.items():
        path = root / where.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(build())


def _rebase(entry: dict, root: Path) -> dict:
    if "tables_configs" in entry:
        return {**entry, "tables_configs": [_rebase(dict(t), root) for t in entry["tables_configs"]]}
    return {**entry, "path": str(root / entry["path"].lstrip("/"))}


def _run_rebased(job_file: Path, root: Path, monkeypatch: pytest.MonkeyPatch, side: str = "source") -> int:
    """``run_in_process`` on the unchanged file, with only ``side``'s ``path`` under ``root``."""
    job = load_job(job_file)
    rebased = dataclasses.replace(job, **{side: _rebase(dict(getattr(job, side)), root)})
    if side == "source" and job.extra_sources:
        rebased = dataclasses.replace(rebased, extra_sources=tuple(_rebase(dict(e), root) for e in job.extra_sources))
    monkeypatch.setattr(seatunnel_jobs, "load_job", lambda path, *args: rebased)
    return seatunnel_jobs.run_in_process(job_file)


def test_the_fixtures_are_seatunnels_excel_job_files() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.conf")) == sorted([*JOBS, "fake_to_local_excel.conf"])


@pytest.mark.parametrize("name", sorted(JOBS))
def test_seatunnels_excel_jobs_run_unchanged_and_their_assert_rules_hold(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_out(tmp_path)
    assert _run_rebased(FIXTURES / name, tmp_path, monkeypatch) == JOBS[name]


@pytest.mark.filterwarnings("ignore:Workbook contains no default style")  # POI's workbooks have none
def test_a_broken_rule_fails_an_excel_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules run on the sheet's values: a blank c_string cell breaks NOT_NULL."""
    book = openpyxl.load_workbook(io.BytesIO(E2E_XLSX))
    book.active["C3"] = None
    path = tmp_path / "seatunnel/read/excel/name=tyrantlucifer/hobby=coding/e2e.xlsx"
    path.parent.mkdir(parents=True)
    book.save(path)
    with pytest.raises(DataError, match=r"c_string"):
        _run_rebased(FIXTURES / "local_excel_to_assert.conf", tmp_path, monkeypatch)


@pytest.mark.parametrize("suffix", ["xlsx", "xls"])
def test_the_e2e_sheet_reads_as_seatunnel_converts_it(suffix: str, tmp_path: Path) -> None:
    """Every column of SeaTunnel's e2e.xlsx and e2e.xls (the same rows), row 1, through the
    schema of its job files."""
    _lay_out(tmp_path)
    job = load_job(FIXTURES / "local_excel_to_assert.conf")
    source = load_source(_rebase(dict(job.source), tmp_path))
    splits = source.splits(1)
    assert [s.spec["path"].rsplit(".", 1)[1] for s in splits] == ["xls", "xlsx"]
    split = splits[["xls", "xlsx"].index(suffix)]
    tables = {
        s.spec["path"]: pa.Table.from_batches(list(iter_batches(source.create_reader(s, None, ReaderContext(0, 1)))))
        for s in splits
    }
    assert len({t.num_rows for t in tables.values()}) == 1
    assert tables[splits[0].spec["path"]].equals(tables[splits[1].spec["path"]])
    row = tables[split.spec["path"]].to_pylist()[0]
    assert row["c_map"] == [
        ("OQBqH", "wTKAH"),
        ("rkvlO", "KXStv"),
        ("pCMEX", "CyJKx"),
        ("DAgdj", "SMbQe"),
        ("dsJag", "jyFsb"),
    ]
    assert row["c_array"] == [2095115245, 220036717, 1427565674, 454707262, 1254213323]
    assert (row["c_string"], row["c_boolean"], row["c_tinyint"], row["c_smallint"]) == ("rDAya", True, 25, 22478)
    assert (row["c_int"], row["c_bigint"]) == (1333226130, 2121369863495191552)  # the double, as Java's (long)
    assert row["c_float"] == pytest.approx(3.2607234e38, rel=1e-7) and row["c_double"] == 9.981217840075622e307
    assert row["c_bytes"] == b"[77, 116, 89, 118, 119]"  # the cell's text, as SeaTunnel reads bytes
    assert row["c_date"] == dt.date(2023, 6, 13)
    assert row["c_decimal"] == Decimal("61746461279068210000.000000000000000000")
    assert row["c_timestamp"] == dt.datetime(2023, 5, 17, 0, 36, 12)
    inner = row["c_row"]  # text split at field_delimiter = ";", each part converted
    assert (inner["c_string"], inner["c_boolean"], inner["c_tinyint"], inner["c_date"]) == (
        "YjilG",
        False,
        11,
        dt.date(2023, 12, 18),
    )
    assert inner["c_timestamp"] == dt.datetime(2023, 3, 4, 7, 8, 58)
    assert (row["name"], row["hobby"]) == ("tyrantlucifer", "coding")  # partition directories


# ---------------------------------------------------------------------------------------
# the sink: SeaTunnel's fake_to_local_excel.conf, read back


def test_seatunnels_excel_sink_job_writes_xlsx_files_our_source_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = load_job(FIXTURES / "fake_to_local_excel.conf")
    fake = load_source(dict(job.source))
    written = pa.Table.from_batches(
        [b for split in fake.splits(1) for b in iter_batches(fake.create_reader(split, None, ReaderContext(0, 1)))]
    )
    rows = _run_rebased(FIXTURES / "fake_to_local_excel.conf", tmp_path, monkeypatch, side="sink")
    out = tmp_path / "tmp/seatunnel/excel"
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert files and all(p.suffix == ".xlsx" and "_staging" not in p.parts for p in files), files
    book = openpyxl.load_workbook(files[0])  # openpyxl reads it normally
    [sheet] = book.worksheets
    assert re.fullmatch(r"Sheet-?\d+", sheet.title)  # SeaTunnel: "Sheet" + Random.nextInt()
    header = [c.value for c in next(sheet.iter_rows(max_row=1))]
    assert header == written.schema.names  # SeaTunnel always writes the header row
    first = [c for c in next(sheet.iter_rows(min_row=2, max_row=2))]
    styles = dict(zip(header, (c.number_format for c in first)))
    assert (styles["c_string"], styles["c_int"], styles["c_date"], styles["c_timestamp"]) == (
        "@",
        "General",
        "yyyy-MM-dd",
        "yyyy-MM-dd HH:mm:ss",
    )

    # read back with the reading jobs' schema (the sink's field_delimiter: SeaTunnel's default \u0001)
    entry = dict(load_job(FIXTURES / "local_excel_to_assert.conf").source)
    del entry["field_delimiter"]
    entry["path"] = str(out)
    source = load_source(entry)
    back = pa.Table.from_batches(
        [b for split in source.splits(1) for b in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))]
    )
    assert back.num_rows == rows == written.num_rows > 0
    key = "c_string"
    got = {r[key]: r for r in back.to_pylist()}
    for want in written.to_pylist():
        have = got[want[key]]
        for name in (
            "c_map",
            "c_array",
            "c_boolean",
            "c_tinyint",
            "c_smallint",
            "c_int",
            "c_float",
            "c_double",
            "c_date",
        ):
            assert have[name] == (list(want[name].items()) if isinstance(want[name], dict) else want[name]), name
        assert have["c_bigint"] == int(float(want["c_bigint"]))  # through a double cell, as in SeaTunnel
        assert have["c_timestamp"] == want["c_timestamp"].replace(microsecond=0) or abs(
            have["c_timestamp"] - want["c_timestamp"]
        ) < dt.timedelta(milliseconds=1)
        assert float(have["c_decimal"]) == pytest.approx(float(want["c_decimal"]))
        assert have["c_row"]["c_string"] == want["c_row"]["c_string"]
        assert have["c_row"]["c_int"] == want["c_row"]["c_int"]
        assert have["c_row"]["c_date"] == want["c_row"]["c_date"]


def test_a_sink_names_its_sheet_and_round_trips_nulls_and_times(tmp_path: Path) -> None:
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "excel",
            "sheet_name": "Sheet1",
            "max_rows_in_memory": 1024,
            "batch_size": 3,
        }
    )
    batch = pa.record_batch(
        {
            "id": pa.array([1, 2, None, 4], pa.int32()),
            "name": pa.array(["a", None, "c", "d"]),
            "at": pa.array([dt.time(1, 2, 3), None, dt.time(23, 59, 59), dt.time(0, 0, 0)], pa.time64("us")),
        }
    )
    writer = sink.create_writer("xl", 0, 0)
    writer.open(0)
    writer.write(batch)
    committer = sink.create_committer("xl")
    committer.commit([writer.prepare_commit(1)])
    committer.job_finished(None)
    files = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
    assert [f[-len("_0.xlsx") :] for f in files] == ["_0.xlsx", "_1.xlsx"]  # batch_size cuts files
    assert openpyxl.load_workbook(tmp_path / files[0]).sheetnames == ["Sheet1"]
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "excel",
            "sheet_name": "Sheet1",
            "skip_header_row_number": 1,
            "schema": {"fields": {"id": "int", "name": "string", "at": "time"}},
        }
    )
    back = [
        r
        for split in source.splits(1)
        for b in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
        for r in b.to_pylist()
    ]
    assert back == batch.to_pylist()


def test_a_sink_cuts_files_by_sheet_size_and_a_discarded_file_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "excel"})
    sink.max_file_bytes = 4096
    rows = pa.record_batch({"id": pa.array(range(3000), pa.int64()), "text": [f"row {i}" for i in range(3000)]})
    writer = sink.create_writer("xl", 0, 0)
    writer.open(0)
    for start in range(0, 3000, 100):
        writer.write(rows.slice(start, 100))
    committer = sink.create_committer("xl")
    committer.commit([writer.prepare_commit(1)])
    files = sorted(p for p in tmp_path.iterdir() if p.is_file())
    assert len(files) > 2
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "excel",
            "skip_header_row_number": 1,
            "schema": {"fields": {"id": "bigint", "text": "string"}},
        }
    )
    ids = sorted(
        v
        for split in source.splits(1)
        for b in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
        for v in b.column("id").to_pylist()
    )
    assert ids == list(range(3000))

    import tempfile

    # a temporary directory of this test's own: the machine's /tmp changes under other processes
    private_tmp = tmp_path.parent / f"{tmp_path.name}-tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    writer = sink.create_writer("xl", 0, 1)
    writer.open(1)
    writer.write(rows.slice(0, 10))
    assert list(private_tmp.iterdir()), "openpyxl's temporary file is not where this test looks"
    writer.close()  # the open xlsx is abandoned: not staged, openpyxl's temporary file removed
    assert not [p for p in (tmp_path / "_staging").rglob("*") if p.is_file()]
    assert list(private_tmp.iterdir()) == []


# ---------------------------------------------------------------------------------------
# positions, and what one line says


def _sheet(path: Path, rows: list[list[Any]], title: str = "data", extra_sheets: tuple[str, ...] = ()) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = title
    for row in rows:
        sheet.append(row)
    for name in extra_sheets:
        book.create_sheet(name)
    book.save(path)


def _source(path: Path, **options: Any) -> Any:
    return load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(path),
            "file_format_type": "excel",
            "schema": {"fields": {"id": "int", "name": "string"}},
            **options,
        }
    )


def _read(source: Any, split: Any, position: int | None, batch_size: int = 2) -> tuple[list[Any], list[int]]:
    reader = source.create_reader(split, position, ReaderContext(0, 1, batch_size=batch_size))
    rows, positions = [], []
    for batch in iter_batches(reader):
        rows += batch.column("id").to_pylist()
        positions.append(reader.position())
    reader.close()
    return rows, positions


def test_a_restored_reader_resumes_at_every_row_of_a_sheet(tmp_path: Path) -> None:
    """A header row skipped, seven rows with an empty row among them (no row, as in
    SeaTunnel): every row offset and every reported position reopens to exactly the rows after it."""
    rows: list[list[Any]] = (
        [["id", "name"]] + [[i, f"n{i}"] for i in range(4)] + [[None, None]] + [[i, f"n{i}"] for i in range(4, 7)]
    )
    _sheet(tmp_path / "in.xlsx", rows)
    source = _source(tmp_path, skip_header_row_number=1)
    [split] = source.splits(1)
    everything, positions = _read(source, split, None)
    assert everything == list(range(7))
    assert positions == [2, 4, 6, 7]
    for offset in range(8):
        assert _read(source, split, offset, batch_size=3)[0] == everything[offset:], offset
    for position in positions:
        assert _read(source, split, position)[0] == everything[position:]
    with pytest.raises(ValueError, match=r"position 8 is past the end \(7 rows\)"):
        _read(source, split, 8)


def test_a_zip_of_workbooks_resumes_at_the_exact_row_across_entries(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for part, ids in (("a", range(3)), ("b", range(3, 7))):
            book = io.BytesIO()
            _sheet(book, [["id", "name"]] + [[i, part] for i in ids])  # type: ignore[arg-type]
            archive.writestr(f"{part}.xlsx", book.getvalue())
        archive.writestr("notes.txt", b"skipped")
    (tmp_path / "in.zip").write_bytes(out.getvalue())
    source = _source(tmp_path, skip_header_row_number=1, archive_compress_codec="zip")
    [split] = source.splits(1)
    assert _read(source, split, None)[0] == list(range(7))
    for offset in range(8):
        assert _read(source, split, offset, batch_size=2)[0] == list(range(offset, 7)), offset


def test_skip_header_row_number_skips_sheet_rows(tmp_path: Path) -> None:
    _sheet(tmp_path / "in.xlsx", [["title"], ["id", "name"], [1, "a"], [2, "b"]])
    assert _read(_source(tmp_path, skip_header_row_number=2), _source(tmp_path).splits(1)[0], None)[0] == [1, 2]
    source = _source(tmp_path, skip_header_row_number=3)
    assert _read(source, source.splits(1)[0], None)[0] == [2]


def test_cells_convert_as_seatunnel_converts_them(tmp_path: Path) -> None:
    """Numbers are doubles (a number in a string column reads "25.0", 2.9 in an int column 2),
    booleans are Boolean.parseBoolean of the text, dates in text are parsed, error cells are null."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["s", "i", "b", "d", "t"])
    sheet.append([25, 2.9, "TRUE", "2024/01/31", "2024-01-31 10:11:12"])
    sheet.append([True, "-7", 1, dt.datetime(2024, 2, 1, 5, 6), dt.date(2024, 2, 2)])
    sheet.append(["#N/A", 1e10, "yes", None, None])
    sheet["A4"].data_type = "e"
    book.save(tmp_path / "in.xlsx")
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "excel",
            "skip_header_row_number": 1,
            "schema": {"fields": {"s": "string", "i": "int", "b": "boolean", "d": "date", "t": "timestamp"}},
        }
    )
    [split] = source.splits(1)
    rows = [r for b in iter_batches(source.create_reader(split, None, ReaderContext(0, 1))) for r in b.to_pylist()]
    assert rows == [
        {"s": "25.0", "i": 2, "b": True, "d": dt.date(2024, 1, 31), "t": dt.datetime(2024, 1, 31, 10, 11, 12)},
        {"s": "true", "i": -7, "b": False, "d": dt.date(2024, 2, 1), "t": dt.datetime(2024, 2, 2)},
        {"s": None, "i": 2147483647, "b": False, "d": None, "t": None},  # Java's (int) saturates
    ]


def test_text_in_an_int_column_is_one_line_naming_file_row_and_column(tmp_path: Path) -> None:
    _sheet(tmp_path / "in.xlsx", [["id", "name"], [1, "a"], [2, "b"], ["three", "c"]])
    source = _source(tmp_path, skip_header_row_number=1)
    with pytest.raises(ValueError) as err:
        _read(source, source.splits(1)[0], None)
    assert str(err.value) == (
        f"LocalFile source file://{tmp_path / 'in.xlsx'}: row 4, column id (A4): cannot read "
        "int from 'three': not a number"
    )


def test_a_missing_sheet_is_one_line_naming_the_key_and_the_sheets(tmp_path: Path) -> None:
    _sheet(tmp_path / "in.xlsx", [["id"], [1]], title="first", extra_sheets=("second",))
    source = _source(tmp_path, sheet_name="third")
    with pytest.raises(ValueError) as err:
        _read(source, source.splits(1)[0], None)
    assert str(err.value) == (
        f"LocalFile source file://{tmp_path / 'in.xlsx'}: sheet_name 'third': no such sheet; "
        "the workbook has 'first', 'second'"
    )
    assert _read(_source(tmp_path, sheet_name="first", skip_header_row_number=1), source.splits(1)[0], None)[0] == [1]


def test_an_xls_restore_resumes_at_every_row(tmp_path: Path) -> None:
    """e2e.xls, header skipped: every offset reopens to exactly the rows after it."""
    (tmp_path / "e2e.xls").write_bytes(E2E_XLS)
    source = load_source(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "excel",
            "skip_header_row_number": 1,
            "read_columns": ["c_string", "c_int"],
            "schema": {
                "fields": {
                    "c_map": "map<string, string>",
                    "c_array": "array<int>",
                    "c_string": "string",
                    "c_boolean": "boolean",
                    "c_tinyint": "tinyint",
                    "c_smallint": "smallint",
                    "c_int": "int",
                }
            },
        }
    )
    [split] = source.splits(1)
    reader = source.create_reader(split, None, ReaderContext(0, 1, batch_size=2))
    everything = [r["c_string"] for b in iter_batches(reader) for r in b.to_pylist()]
    assert everything == ["rDAya", "tlGZx", "OJAhJ", "XbsPD", "LnIBa"]
    for offset in range(6):
        reader = source.create_reader(split, offset, ReaderContext(0, 1, batch_size=2))
        assert [r["c_string"] for b in iter_batches(reader) for r in b.to_pylist()] == everything[offset:]


def test_every_cell_of_e2e_xls_reads_as_the_biff8_reader_read_it() -> None:
    """The raw cells (before conversion) of every row of SeaTunnel's e2e.xls, as the
    project's own BIFF8 reader read them before xlrd replaced it (tests/fixtures/excel/
    e2e_xls_cells.json, written by that reader): numbers as doubles, booleans, text,
    date-formatted cells as date-times, row numbers as the sheet's."""
    expected = json.loads(
        (Path(__file__).resolve().parents[1] / "fixtures" / "excel" / "e2e_xls_cells.json").read_text()
    )
    names, rows = xls_sheets(E2E_XLS)
    assert names == list(expected)
    for name in names:
        read = [
            [number, [{"datetime": v.isoformat()} if isinstance(v, dt.datetime) else v for v in values]]
            for number, values in rows(name)
        ]
        # as JSON text, so a type matters too (25 is not 25.0: a string column reads "25.0")
        assert [json.dumps(row) for row in read] == [json.dumps(row) for row in expected[name]]


def test_broken_workbooks_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "old.xls").write_bytes(b"\xd0\xcf\x11\xe0 not an OLE2 file")
    source = _source(tmp_path)
    with pytest.raises(ValueError) as err:
        _read(source, source.splits(1)[0], None)
    assert str(err.value) == (
        f"LocalFile source file://{tmp_path / 'old.xls'}: not a valid xls workbook: not an OLE2 compound file"
    )
    for cut in (600, 3000, 9000, 20000, len(E2E_XLS) - 700):  # truncated: one line, never a traceback
        (tmp_path / "old.xls").write_bytes(E2E_XLS[:cut])
        fresh = _source(tmp_path)
        with pytest.raises(ValueError, match=r"old\.xls: not a valid xls workbook: [^\n]+$"):
            _read(fresh, fresh.splits(1)[0], None)
    (tmp_path / "old.xls").unlink()
    (tmp_path / "bad.xlsx").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"bad\.xlsx: not a valid xlsx workbook: File is not a zip file$"):
        _read(source, _source(tmp_path).splits(1)[0], None)


@pytest.mark.parametrize(
    "kind, options, message",
    [
        (
            "source",
            {"compress_codec": "gzip", "schema": {"fields": {"a": "int"}}},
            r"^source\[0\]\.compress_codec: 'gzip': excel files are read as they are",
        ),
        ("source", {}, r"^source\[0\]\.schema: is required for excel files, as in SeaTunnel$"),
        ("sink", {"compress_codec": "lzo"}, r"^sink\[0\]\.compress_codec: 'lzo': excel files are written uncompressed"),
        ("sink", {"archive_compress_codec": "zip"}, r"^sink\[0\]\.archive_compress_codec: zip archives are read"),
    ],
)
def test_a_refused_excel_option_is_one_line_naming_its_key(
    tmp_path: Path, kind: str, options: dict, message: str
) -> None:
    entry = {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "excel", **options}
    with pytest.raises(ConfigError) as err:
        (load_source if kind == "source" else load_sink)(entry)
    assert "\n" not in str(err.value) and re.match(message, str(err.value)), str(err.value)


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_excel_without_the_excel_extra_names_the_pip_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # how an absent install looks to find_spec
    entry = {
        "plugin_name": "LocalFile",
        "path": str(tmp_path),
        "file_format_type": "excel",
        **({"schema": {"fields": {"a": "int"}}} if kind == "source" else {}),
    }
    with pytest.raises(ConfigError) as err:
        (load_source if kind == "source" else load_sink)(entry)
    assert str(err.value) == (
        f"{kind}[0].file_format_type: excel needs the 'excel' extra: "
        "pip install 'airflow-provider-seatunnel-ckpt[excel]'"
    )
