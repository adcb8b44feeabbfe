"""SeaTunnel's file connectors: ``encoding`` (files read and written in GBK and other
charsets), json without a schema, and the save modes that delete output
(``RECREATE_SCHEMA``, ``DROP_DATA``), which run when a run starts the job from its
beginning and never when it restores a checkpoint.

SeaTunnel's job files (tests/fixtures/seatunnel/connector-file-local-e2e, unchanged) run
in-process with their inputs laid out as ``LocalFileIT.java`` lays them out, under a tmp
directory (only the source's ``path`` is rebased)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.engine.runner import JobRun, RunRequest
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from tests import seatunnel_jobs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seatunnel" / "connector-file-local-e2e"

# the job files of the fixture directory this module runs or loads are listed in
# tests/support/seatunnel_files.py (FORMATS_FILES)

#: LocalFileIT's inputs of the encoding jobs: path in its container -> fixture
LAYOUT = {
    "/seatunnel/read/encoding/json/e2e_gbk.json": "json/e2e_gbk.json",
    "/seatunnel/read/encoding/text/e2e_gbk.txt": "text/e2e_gbk.txt",
}


def _lay_out(root: Path) -> None:
    for where, fixture in LAYOUT.items():
        path = root / where.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((FIXTURES / fixture).read_bytes())
    (root / "tmp/fake_empty").mkdir(parents=True, exist_ok=True)


def _run_rebased(job_file: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    job = load_job(job_file)
    entry = dict(job.source)
    rebased = dataclasses.replace(job, source={**entry, "path": str(root / entry["path"].lstrip("/"))})
    monkeypatch.setattr(seatunnel_jobs, "load_job", lambda path, *args: rebased)
    return seatunnel_jobs.run_in_process(job_file)


def _one_file_written(sink: Any, batch: pa.RecordBatch, directory: Path) -> Path:
    """``batch`` through one writer of ``sink``, committed as one epoch: the one file it made
    in ``directory``."""
    writer = sink.create_writer("one-file", 0, 0)
    writer.open(0)
    writer.write(batch)
    sink.create_committer("one-file").commit([writer.prepare_commit(1)])
    [file] = [p for p in directory.iterdir() if p.is_file()]
    return file


def _read(entry: dict[str, Any]) -> pa.Table:
    source = load_source(entry)
    batches = [
        b for split in source.splits(1) for b in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
    ]
    return pa.Table.from_batches(batches, schema=batches[0].schema if batches else None)


@pytest.mark.parametrize(
    "name, rows",
    [
        ("json/local_file_json_to_console_with_encoding.conf", 4),
        ("text/local_file_text_to_console_with_encoding.conf", 4),
        ("json/local_file_to_console.conf", 0),
    ],
)
def test_seatunnels_encoding_and_empty_json_jobs_run_unchanged(
    name: str, rows: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_out(tmp_path)
    assert _run_rebased(FIXTURES / name, tmp_path, monkeypatch) == rows


@pytest.mark.parametrize(
    "name",
    [
        "json/fake_to_local_file_json_with_encoding.conf",
        "text/fake_to_local_file_with_encoding.conf",
        "json/fake_to_local_file_json.conf",
        "json/fake_to_local_file_json_save_mode.conf",
    ],
)
def test_seatunnels_encoding_and_save_mode_sinks_load(name: str) -> None:
    try:
        job = load_job(FIXTURES / name)
    except ConfigError as err:
        if "UPDATE_BEFORE" not in str(err):
            raise
        pytest.skip("the file's FakeSource emits change rows, which FakeSource does not support yet")
    sink = load_sink(dict(job.sink))
    assert sink.plugin_name == "LocalFile"


def test_gbk_files_read_as_seatunnel_reads_them(tmp_path: Path) -> None:
    _lay_out(tmp_path)
    entry = dict(load_job(FIXTURES / "json/local_file_json_to_console_with_encoding.conf").source)
    table = _read({**entry, "path": str(tmp_path / "seatunnel/read/encoding/json")})
    assert table.column("c_string").to_pylist() == ["你好，世界ABC123!@#", "海底隧道", "GBK字符﨎", "测试字符"]
    assert table.column("c_map").to_pylist()[0] == [("a测试", "b测试")]
    assert table.column("c_decimal").to_pylist()[0] == Decimal("2924137191386439303744.39292216")
    assert table.column("c_timestamp").to_pylist()[0] == dt.datetime(2023, 4, 22, 23, 20, 58)

    entry = dict(load_job(FIXTURES / "text/local_file_text_to_console_with_encoding.conf").source)
    table = _read({**entry, "path": str(tmp_path / "seatunnel/read/encoding/text")})
    assert table.column("3").to_pylist() == ["你好，世界ABC123!@#", "海底隧道", "GBK字符﨎", "测试字符"]
    assert table.column("0").to_pylist()[1] == [("aA测试", "c")]


@pytest.mark.parametrize("fmt", ["text", "csv", "json"])
def test_a_sink_writes_gbk_that_the_source_reads_back(fmt: str, tmp_path: Path) -> None:
    sink = load_sink(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": fmt,
            "encoding": "gbk",
            "enable_header_write": fmt == "csv",
        }
    )
    batch = pa.record_batch({"name": pa.array(["你好，世界", "海底隧道", None]), "n": pa.array([1, 2, 3], pa.int32())})
    file = _one_file_written(sink, batch, tmp_path)
    data = file.read_bytes()
    assert "海底隧道".encode("gbk") in data and "海底隧道".encode() not in data
    options = {
        "plugin_name": "LocalFile",
        "path": str(tmp_path),
        "file_format_type": fmt,
        "encoding": "GBK",
        "schema": {"fields": {"name": "string", "n": "int"}},
    }
    if fmt == "text":
        options["field_delimiter"] = "\u0001"
    if fmt == "csv":
        options["skip_header_row_number"] = 1
    assert _read(options).column("name").to_pylist()[:2] == ["你好，世界", "海底隧道"]


def test_a_decimal_in_a_row_beside_a_map_reads_exactly_from_json(tmp_path: Path) -> None:
    """The row's map is left to pyarrow's inference, its other fields are named: the
    decimal does not pass through a double (50854841532374245376). Found by the
    differential test against Zeta (local_file_json_to_assert.conf)."""
    (tmp_path / "in.json").write_text(
        '{"r": {"m": {"k": "v"}, "d": 50854841532374241314.10974669, "l": [{"a": 1}]}, "m": {"x": 1}}\n'
    )
    fields = {"r": {"m": "map<string, string>", "d": "decimal(38, 8)", "l": "array<map<string, int>>"}}
    table = _read(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "json",
            "schema": {"fields": {**fields, "m": "map<string, int>"}},
        }
    )
    assert table.to_pylist() == [
        {
            "r": {"m": [("k", "v")], "d": decimal.Decimal("50854841532374241314.10974669"), "l": [[("a", 1)]]},
            "m": [("x", 1)],
        }
    ]


def test_a_json_sink_writes_floats_with_their_own_digits(tmp_path: Path) -> None:
    """As Jackson writes a FLOAT (Float.toString): 1.23, not the double it widens to
    (1.2300000190734863); nested ones too. Found by the differential test against Zeta
    (fake_to_local_file_json_with_encoding.conf)."""
    sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "json"})
    row_type = pa.struct([("f", pa.float32()), ("d", pa.float64())])
    batch = pa.record_batch(
        {
            "f": pa.array([1.23, float("nan"), None, 6.9086283e37], pa.float32()),
            "a": pa.array([[0.1], [], None, [2.5]], pa.list_(pa.float32())),
            "r": pa.array([{"f": 3.3, "d": 3.3}, None, None, {"f": -0.0, "d": 1.0}], row_type),
            "m": pa.array([[("k", 0.7)], [], None, []], pa.map_(pa.string(), pa.float32())),
        }
    )
    file = _one_file_written(sink, batch, tmp_path)
    assert file.read_text().splitlines() == [
        '{"f":1.23,"a":[0.1],"r":{"f":3.3,"d":3.3},"m":{"k":0.7}}',
        '{"f":"NaN","a":[],"r":null,"m":{}}',
        '{"f":null,"a":null,"r":null,"m":null}',
        '{"f":6.9086283E37,"a":[2.5],"r":{"f":-0.0,"d":1.0},"m":{}}',
    ]


def test_a_json_sink_writes_a_double_that_is_not_finite_as_a_string(tmp_path: Path) -> None:
    """Jackson writes a NaN or an infinite DOUBLE as a string ("NaN", "Infinity"), where
    json.dumps wrote a bare NaN, which is not JSON. Finite doubles keep Python's shortest
    digits (1e-05: the value Jackson's 1.0E-5 is)."""
    sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "json"})
    batch = pa.record_batch(
        {
            "d": pa.array([1e-05, 1e16, float("nan"), 1335890568809505536.0, 0.1, None], pa.float64()),
            "l": pa.array([[1.5e300], [], None, [-0.0], [100.0], [float("inf")]], pa.list_(pa.float64())),
        }
    )
    file = _one_file_written(sink, batch, tmp_path)
    assert file.read_text().splitlines() == [
        '{"d":1e-05,"l":[1.5e+300]}',
        '{"d":1e+16,"l":[]}',
        '{"d":"NaN","l":null}',
        '{"d":1.3358905688095055e+18,"l":[-0.0]}',
        '{"d":0.1,"l":[100.0]}',
        '{"d":null,"l":["Infinity"]}',
    ]
    assert [json.loads(line)["d"] for line in file.read_text().splitlines()][:2] == [1e-05, 1e16]


def test_a_json_sink_writes_map_keys_of_any_type_as_their_json_text(tmp_path: Path) -> None:
    """As SeaTunnel's RowToJsonConverters name a map's member: the key's JSON node, its
    text if textual (a date: ISO), else the node as JSON (1, 2.5, true). Found by the
    differential test against Zeta: fake_full_types_to_assert.conf's map<date, string>
    failed to write ("keys must be str ... not date")."""
    import datetime as dt

    sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "json"})
    batch = pa.record_batch(
        {
            "d": pa.array([[(dt.date(2024, 2, 29), "leap")]], pa.map_(pa.date32(), pa.string())),
            "i": pa.array([[(7, 1.5)]], pa.map_(pa.int32(), pa.float32())),
            "f": pa.array([[(2.5, True)]], pa.map_(pa.float64(), pa.bool_())),
            "b": pa.array([[(True, "t")]], pa.map_(pa.bool_(), pa.string())),
            "n": pa.array(
                [[("k", [(dt.date(2000, 1, 1), 1)])]], pa.map_(pa.string(), pa.map_(pa.date32(), pa.int64()))
            ),
        }
    )
    file = _one_file_written(sink, batch, tmp_path)
    assert file.read_text() == (
        '{"d":{"2024-02-29":"leap"},"i":{"7":1.5},"f":{"2.5":true},"b":{"true":"t"},"n":{"k":{"2000-01-01":1}}}'
    )


def test_a_json_sink_writes_decimals_and_times_as_jackson_does(tmp_path: Path) -> None:
    """SeaTunnel's json writer: Jackson's ObjectMapper, whose default node factory strips a
    decimal's trailing zeros (12.40 -> 12.4, 1000.00 -> 1E+3, 0.00 -> 0), writes no
    spaces, and DateTimeFormatter's ISO forms, whose fraction of a second has as many
    digits as it needs (.032, not Python's .032000). Found by the differential test
    against Zeta (func_system.conf: cast(c4 as timestamp), cast(c1 as decimal(10,2)))."""
    import datetime as dt

    sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "json"})
    batch = pa.record_batch(
        {
            "dec": pa.array(
                [Decimal("12.40"), Decimal("1000.00"), Decimal("0.00"), Decimal("-0.000012300")], pa.decimal128(15, 9)
            ),
            "ts": pa.array(
                [
                    dt.datetime(2023, 6, 26, 2, 51, 9, 32000),
                    dt.datetime(2012, 12, 21, 12, 34),
                    None,
                    dt.datetime(2000, 1, 1, 0, 0, 0, 123456),
                ]
            ),
            "t": pa.array([dt.time(23, 51, 9), dt.time(1, 2, 3, 500000), None, dt.time(0, 0)], pa.time64("us")),
            "m": pa.array(
                [[(dt.datetime(2020, 1, 1, 0, 0, 0, 100000), Decimal("1.50"))], [], None, []],
                pa.map_(pa.timestamp("us"), pa.decimal128(5, 2)),
            ),
        }
    )
    file = _one_file_written(sink, batch, tmp_path)
    assert file.read_text().splitlines() == [
        '{"dec":12.4,"ts":"2023-06-26T02:51:09.032","t":"23:51:09","m":{"2020-01-01T00:00:00.1":1.5}}',
        '{"dec":1E+3,"ts":"2012-12-21T12:34:00","t":"01:02:03.5","m":{}}',
        '{"dec":0,"ts":null,"t":null,"m":null}',
        '{"dec":-0.0000123,"ts":"2000-01-01T00:00:00.123456","t":"00:00:00","m":{}}',
    ]


def test_characters_the_encoding_cannot_hold_are_written_as_question_marks(tmp_path: Path) -> None:
    """Java's String.getBytes, which SeaTunnel's writers use, writes '?' for them."""
    sink = load_sink(
        {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "json", "encoding": "ISO-8859-1"}
    )
    file = _one_file_written(sink, pa.record_batch({"name": pa.array(["café 海"])}), tmp_path)
    assert json.loads(file.read_bytes().decode("iso-8859-1")) == {"name": "café ?"}


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_an_unknown_encoding_is_one_line_naming_the_option(kind: str, tmp_path: Path) -> None:
    options = {"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "text", "encoding": "klingon"}
    with pytest.raises(ConfigError, match=r"encoding.*'klingon' is not a known character encoding"):
        (load_source if kind == "source" else load_sink)(options)


def test_json_without_a_schema_reads_each_objects_content_member(tmp_path: Path) -> None:
    """SeaTunnel's simple text table: one ``content`` string column, deserialised by name."""
    (tmp_path / "a.json").write_text('{"content": "x", "b": 1}\n{"b": 2}\n{"content": {"k": [1, 2]}}\n')
    source = load_source({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "json"})
    assert source.produced_schema() is None or source.produced_schema().names[:1] == ["content"]
    table = _read({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "json"})
    assert table.column("content").to_pylist() == ["x", None, '{"k":[1,2]}']


def test_json_with_an_empty_schema_reads_rows_of_no_columns(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"a": 1}\n{"b": 2}\n')
    table = _read(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": "json",
            "schema": {},
            "parse_partition_from_path": False,
        }
    )
    assert (table.num_rows, table.num_columns) == (2, 0)


# ---------------------------------------------------------------------------------------
# save modes: at a fresh start, never on a restore

JOB_ID = "save-mode"


def _request(tmp_path: Path, out: Path, **sink: Any) -> RunRequest:
    checkpoint = {
        "interval": 1000,
        "storage": {
            "type": "hdfs",
            "plugin-config": {
                "storage.type": "hdfs",
                "fs.defaultFS": "file:///",
                "namespace": f"{tmp_path}/checkpoints/",
            },
        },
    }
    job = load_job(
        {
            "env": {"job.name": JOB_ID, "parallelism": 1},
            "source": [{"plugin_name": "FakeSource", "row.num": 3, "schema": {"fields": {"id": "int"}}}],
            "sink": [{"plugin_name": "LocalFile", "path": str(out), "file_format_type": "json", **sink}],
        }
    )
    return RunRequest(
        job=job,
        config=load_config({"seatunnel": {"engine": {"checkpoint": checkpoint}}}),
        job_id=JOB_ID,
        master="local[1]",
    )


def _claim(request: RunRequest, manifest: Any = None) -> None:
    from airflow_provider_seatunnel_ckpt.engine.routing import load_sinks, load_sources, one_sink

    run = JobRun(request, progress=lambda line: None)
    run.choose_restore = lambda existing=None: manifest  # type: ignore[method-assign]
    sink = one_sink(load_sinks(request.job, load_sources(request.job.sources)))
    run.claim("token", sink, sink.create_committer(request.job_id))


class _Restored:
    """A restored checkpoint's manifest, as far as ``claim`` reads it."""

    checkpoint_id = 3
    commit_infos: list[Any] = []
    sinks: tuple[Any, ...] = ()  # recorded by none of its sinks: the infos go by place


def _earlier_output(out: Path) -> list[Path]:
    files = [out / "old.json", out / "k=v" / "older.json"]
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text('{"id": 0}')
    return files


@pytest.mark.parametrize(
    "modes",
    [
        {"schema_save_mode": "RECREATE_SCHEMA"},
        {"data_save_mode": "DROP_DATA"},
        {"schema_save_mode": "RECREATE_SCHEMA", "data_save_mode": "DROP_DATA"},
    ],
)
def test_recreate_and_drop_data_delete_the_directory_at_a_fresh_start(modes: dict, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _earlier_output(out)
    _claim(_request(tmp_path, out, **modes))
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]


def test_a_restore_never_applies_them(tmp_path: Path) -> None:
    """A run that restores a checkpoint leaves the directory (the job's committed output)."""
    out = tmp_path / "out"
    files = _earlier_output(out)
    _claim(_request(tmp_path, out, schema_save_mode="RECREATE_SCHEMA", data_save_mode="DROP_DATA"), _Restored())
    assert all(file.exists() for file in files)


def test_a_restart_before_the_first_checkpoint_deletes_again_and_loses_nothing_committed(tmp_path: Path) -> None:
    """The first run died after its delete, before a checkpoint completed: it committed
    nothing (commits follow durable checkpoints), so the next run starts fresh and deletes
    again; output the job committed after a checkpoint is only ever seen by a restore."""
    out = tmp_path / "out"
    _earlier_output(out)
    request = _request(tmp_path, out, schema_save_mode="RECREATE_SCHEMA")
    _claim(request)
    (out / "k=v").mkdir(parents=True)
    (out / "k=v" / "late.json").write_text("{}")  # someone else's file, after the delete
    _claim(request)
    assert not out.exists()
    committed = out / "T_x_0_0_0000000001_0.json"
    committed.parent.mkdir(parents=True)
    committed.write_text("{}")
    _claim(request, _Restored())
    assert committed.exists()


def test_error_when_data_exists_fails_a_fresh_start_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _earlier_output(out)
    request = _request(tmp_path, out, data_save_mode="ERROR_WHEN_DATA_EXISTS")
    with pytest.raises(ConfigError, match=r"data_save_mode.*holds files.*ERROR_WHEN_DATA_EXISTS"):
        _claim(request)
    _claim(request, _Restored())  # a restore: the files are the job's own output


def test_custom_processing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="data_save_mode.*CUSTOM_PROCESSING"):
        load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "data_save_mode": "CUSTOM_PROCESSING"})


# ---------------------------------------------------------------------------------------
# xml


def _zip(entries: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize("name", ["xml/local_file_xml_to_assert.conf", "xml/local_file_zip_xml_to_assert.conf"])
def test_seatunnels_xml_jobs_run_unchanged_and_their_assert_rules_hold(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xml = (FIXTURES / "xml/e2e.xml").read_bytes()
    (tmp_path / "seatunnel/read/xml").mkdir(parents=True)
    (tmp_path / "seatunnel/read/xml/e2e.xml").write_bytes(xml)
    (tmp_path / "seatunnel/read/zip/xml/single").mkdir(parents=True)
    # LocalFileIT.convertToZipFile names entries Random.nextInt() + name + "_" + millis + suffix
    (tmp_path / "seatunnel/read/zip/xml/single/e2e-xml.zip").write_bytes(_zip({"1804289383e2e_1732800000000.xml": xml}))
    assert _run_rebased(FIXTURES / name, tmp_path, monkeypatch) == 1


def test_the_e2e_xml_row_reads_as_seatunnel_converts_it(tmp_path: Path) -> None:
    (tmp_path / "e2e.xml").write_bytes((FIXTURES / "xml/e2e.xml").read_bytes())
    entry = dict(load_job(FIXTURES / "xml/local_file_xml_to_assert.conf").source)
    [row] = _read({**entry, "path": str(tmp_path)}).to_pylist()
    assert row == {
        "c_bytes": 1,
        "c_short": 22,
        "c_int": 333,
        "c_bigint": 4444,
        "c_string": "DusayI",
        "c_double": 5.555,
        "c_float": pytest.approx(6.666),
        "c_decimal": Decimal("7.78"),
        "c_boolean": False,
        "c_map": [("age", "26"), ("name", "Ivan")],
        "c_array": ["Ivan", "Dusayi"],
        "c_date": dt.date(2024, 1, 31),
        "c_datetime": dt.datetime(2024, 1, 31, 16, 0, 48),
        "c_time": dt.time(16, 0, 48),
    }


def _xml_source(path: Path, use_attributes: bool, fields: dict[str, str], **options: Any) -> dict[str, Any]:
    return {
        "plugin_name": "LocalFile",
        "path": str(path),
        "file_format_type": "xml",
        "xml_row_tag": "row",
        "xml_use_attr_format": use_attributes,
        "schema": {"fields": fields},
        **options,
    }


def test_xml_child_elements_rows_anywhere_and_java_conversions(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_text(
        "<doc><group><row><id>1.9</id><name>  a  </name><extra>x</extra><t>-200</t></row></group>"
        "<row><name><b>bold</b>tail</name><id>3e9</id></row>"  # direct text only; int saturates
        "<row><other>no field of the schema: no row</other></row>"
        "<row><id> </id><name></name></row>"  # blank: "" in a string column, null elsewhere
        "<row><big>9223372036854775808</big><flag>TRUE</flag><r>1|x|</r></row></doc>"
    )
    fields = {
        "id": "int",
        "name": "string",
        "t": "tinyint",
        "big": "bigint",
        "flag": "boolean",
        "r": "{a = int, b = string}",
    }
    rows = _read(_xml_source(tmp_path, False, fields, field_delimiter="\\|")).to_pylist()
    assert [(r["id"], r["name"], r["t"]) for r in rows] == [
        (1, "  a  ", 56),
        (2147483647, "tail", None),
        (None, "", None),
        (None, None, None),
    ]
    assert (rows[3]["big"], rows[3]["flag"], rows[3]["r"]) == (-9223372036854775808, True, {"a": 1, "b": "x"})


def test_xml_is_read_in_batches_and_a_restored_reader_resumes_at_the_exact_row(tmp_path: Path) -> None:
    body = "".join(f'<row id="{i}" name="n{i}"/>' for i in range(2500))
    (tmp_path / "a.xml").write_text(f"<rows>{body}</rows>")
    source = load_source(_xml_source(tmp_path, True, {"id": "int", "name": "string"}))
    [split] = source.splits(1)
    reader = source.create_reader(split, None, ReaderContext(0, 1, batch_size=1000))
    first = reader.read_batch()
    assert first.num_rows == 1000 and reader.position() == 1000
    resumed = source.create_reader(split, reader.position(), ReaderContext(0, 1, batch_size=1000))
    ids = [r["id"] for b in iter_batches(resumed) for r in b.to_pylist()]
    assert ids == list(range(1000, 2500))


def test_xml_in_gbk_and_bad_documents_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_bytes('<?xml version="1.0"?><rows><row name="海底隧道"/></rows>'.encode("gbk"))
    assert _read(_xml_source(tmp_path, True, {"name": "string"}, encoding="GBK")).column(0).to_pylist() == ["海底隧道"]
    (tmp_path / "a.xml").write_text('<!DOCTYPE r [<!ENTITY a "aaaa">]><rows><row name="&a;"/></rows>')
    with pytest.raises(ValueError, match=r"a\.xml.*declares entities"):
        _read(_xml_source(tmp_path, True, {"name": "string"}))
    (tmp_path / "a.xml").write_text('<rows><row name="x"></rows>')
    with pytest.raises(ValueError, match=r"a\.xml.*not well-formed"):
        _read(_xml_source(tmp_path, True, {"name": "string"}))
    (tmp_path / "a.xml").write_text('<rows><row d="2024/01/31"/></rows>')
    with pytest.raises(ValueError, match=r"column d: '2024/01/31' is not a date in the format yyyy-MM-dd"):
        _read(_xml_source(tmp_path, True, {"d": "date"}))


@pytest.mark.parametrize(
    "options, key",
    [
        ({"xml_row_tag": None}, "xml_row_tag"),
        ({"xml_use_attr_format": None}, "xml_use_attr_format"),
        ({"schema": None}, "schema"),
    ],
)
def test_xml_needs_its_options(options: dict, key: str, tmp_path: Path) -> None:
    entry = {k: v for k, v in {**_xml_source(tmp_path, True, {"a": "int"}), **options}.items() if v is not None}
    with pytest.raises(ConfigError, match=f"{key}.*required"):
        load_source(entry)


# ---------------------------------------------------------------------------------------
# binary


def test_seatunnels_binary_jobs_copy_a_file_and_count_its_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LocalFileIT copies cat.png (1,969,877 bytes: 1924 chunks) to /seatunnel/read/binary/;
    the first job copies it to binary2/, the second counts binary2's chunks (MAX_ROW 1924).
    A file of the same size and random bytes stands in for the picture."""
    import os

    data = os.urandom(1_969_877)
    (tmp_path / "seatunnel/read/binary").mkdir(parents=True)
    (tmp_path / "seatunnel/read/binary/cat.png").write_bytes(data)
    name = "binary/local_file_binary_to_local_file_binary.conf"
    job = load_job(FIXTURES / name)
    rebased = dataclasses.replace(
        job,
        **{
            side: {**dict(getattr(job, side)), "path": str(tmp_path) + dict(getattr(job, side))["path"]}
            for side in ("source", "sink")
        },
    )
    monkeypatch.setattr(seatunnel_jobs, "load_job", lambda path, *args: rebased)
    assert seatunnel_jobs.run_in_process(FIXTURES / name) == 1924
    assert (tmp_path / "seatunnel/read/binary2/cat.png").read_bytes() == data
    assert _run_rebased(FIXTURES / "binary/local_file_binary_to_assert.conf", tmp_path, monkeypatch) == 1924


def test_binary_chunks_relative_paths_and_a_restored_reader(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/a.bin").write_bytes(b"x" * 2048 + b"yz")
    (tmp_path / "b.bin").write_bytes(b"q" * 1024)
    source = load_source({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "binary"})
    assert source.produced_schema().names == ["data", "relativePath", "partIndex"]
    rows = _read({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "binary"}).to_pylist()
    assert [(len(r["data"]), r["relativePath"], r["partIndex"]) for r in rows] == [
        (1024, "b.bin", 0),
        (1024, "sub/a.bin", 0),
        (1024, "sub/a.bin", 1),
        (2, "sub/a.bin", 2),
    ]
    split = [s for s in source.splits(1) if s.spec["path"].endswith("a.bin")][0]
    resumed = source.create_reader(split, 2, ReaderContext(0, 1))
    assert [r["data"] for b in iter_batches(resumed) for r in b.to_pylist()] == [b"yz"]
    single = _read({"plugin_name": "LocalFile", "path": str(tmp_path / "b.bin"), "file_format_type": "binary"})
    assert single.column("relativePath").to_pylist() == ["b.bin"]


def test_a_binary_sink_writes_files_from_ordered_chunks_only(tmp_path: Path) -> None:
    sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": "binary"})
    with pytest.raises(ConfigError, match="file_format_type.*binary schema"):
        sink.accepts(pa.schema([("data", pa.binary())]))
    writer = sink.create_writer("bin", 0, 0)
    writer.open(0)
    batch = pa.record_batch(
        [pa.array([b"ab", b"cd", b"x"]), pa.array(["d/f.bin", "d/f.bin", "g.bin"]), pa.array([0, 1, 0], pa.int64())],
        names=["data", "relativePath", "partIndex"],
    )
    writer.write(batch)
    sink.create_committer("bin").commit([writer.prepare_commit(1)])
    assert (tmp_path / "d/f.bin").read_bytes() == b"abcd" and (tmp_path / "g.bin").read_bytes() == b"x"
    # chunks that continue a file after a checkpoint (SeaTunnel: "Last order is -1, but get 2")
    with pytest.raises(ValueError, match=r"'d/f.bin': last part is -1, but got 2"):
        writer.write(batch.slice(0, 1).set_column(2, "partIndex", pa.array([2], pa.int64())))


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_floats_read_into_a_string_column_have_javas_digits(fmt: str, tmp_path: Path) -> None:
    """A schema that reads a float column as a string gives the text SeaTunnel's readers
    make, String.valueOf: Float.toString for a float (4.7301637E37, 1.0), Double.toString
    for a double, not Arrow's cast (4.7301637e+37, 1). Found by the differential test
    against Zeta (local_file_orc_to_assert_with_time_and_cast.conf: c_float = string)."""
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "f": pa.array([4.7301637e37, 1.0, None, float("nan"), -0.5], pa.float32()),
            "d": pa.array([0.1, 1e-5, 1e7, None, 123456789.0], pa.float64()),
        }
    )
    (orc.write_table if fmt == "orc" else pq.write_table)(table, str(tmp_path / f"in.{fmt}"))
    read = _read(
        {
            "plugin_name": "LocalFile",
            "path": str(tmp_path),
            "file_format_type": fmt,
            "schema": {"fields": {"f": "string", "d": "string"}},
        }
    )
    assert read.column("f").to_pylist() == ["4.7301637E37", "1.0", None, "NaN", "-0.5"]
    assert read.column("d").to_pylist() == ["0.1", "1.0E-5", "1.0E7", None, "1.23456789E8"]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_parquet_and_orc_sinks_write_field_names_in_lower_case(fmt: str, tmp_path: Path) -> None:
    """SeaTunnel's parquet and orc writers name the columns in lower case (ParquetWriteStrategy,
    OrcWriteStrategy: ``toLowerCase()``), the orc writer a row's fields too. Found by the
    differential test against Zeta (the binary source's relativePath and partIndex came
    back as relativepath and partindex; a parquet row's C_MAP stayed C_MAP)."""
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    sink = load_sink({"plugin_name": "LocalFile", "path": str(tmp_path), "file_format_type": fmt})
    batch = pa.record_batch(
        {
            "relativePath": ["cat.png"],
            "partIndex": pa.array([3], pa.int64()),
            "Row": pa.array([{"innerName": {"X": 1}}]),
            "MapOf": pa.array([[("k", {"Y": 2})]], pa.map_(pa.string(), pa.struct([("Y", pa.int64())]))),
        }
    )
    file = _one_file_written(sink, batch, tmp_path)
    table = pq.read_table(file) if fmt == "parquet" else orc.read_table(file)
    assert table.column_names == ["relativepath", "partindex", "row", "mapof"]
    inner, x, y = ("innername", "x", "y") if fmt == "orc" else ("innerName", "X", "Y")
    assert table.schema.field("row").type == pa.struct([(inner, pa.struct([(x, pa.int64())]))])
    assert table.schema.field("mapof").type.item_type == pa.struct([(y, pa.int64())])
    assert table.to_pylist() == [
        {"relativepath": "cat.png", "partindex": 3, "row": {inner: {x: 1}}, "mapof": [("k", {y: 2})]}
    ]
