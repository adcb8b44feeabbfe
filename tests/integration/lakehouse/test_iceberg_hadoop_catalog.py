"""Iceberg's ``hadoop`` catalog (connectors/lakehouse/iceberg_hadoop_catalog.py): SeaTunnel's
Iceberg e2e job files run unchanged but for their warehouse, the files on disk are the
layout Iceberg Java's HadoopCatalog reads, and racing commits cannot both win."""

from __future__ import annotations

import datetime
import decimal
import json
import os
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.connectors.lakehouse.iceberg_hadoop_catalog import HadoopCatalog
from airflow_provider_seatunnel_ckpt.engine.routing import load_sources
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from tests.seatunnel_jobs import run_in_process

from .conftest import duckdb_lake

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "seatunnel" / "connector-iceberg-e2e"
SEATUNNEL_WAREHOUSES = "file:///tmp/seatunnel/iceberg/"


def _job_in(tmp_path: Path, name: str) -> Path:
    """The SeaTunnel job file with only its warehouse moved under ``tmp_path``."""
    text = (FIXTURES / name).read_text()
    assert SEATUNNEL_WAREHOUSES in text
    job = tmp_path / name
    job.write_text(text.replace(SEATUNNEL_WAREHOUSES, f"file://{tmp_path}/iceberg/"))
    return job


def _fake_rows(job: Path) -> list[dict[str, Any]]:
    """What the job's FakeSource emits (repeatable: seeded by split and position)."""
    source = load_sources(load_job(job).sources)[0]
    source.preflight()
    batches = [
        batch
        for split in source.splits(1)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
    ]
    return pa.Table.from_batches(batches).to_pylist()


def _key(row: dict[str, Any]) -> tuple:
    return row["c_bigint"], row["c_string"], row["c_timestamp"]


@pytest.mark.parametrize(
    "name, branch",
    [
        ("fake_to_iceberg.conf", None),
        # the first commit to a new table starts the branch, main stays empty (IcebergSinkWithBranchIT)
        ("fake_to_iceberg_with_branch.conf", "commit-branch"),
    ],
)
def test_seatunnel_fake_to_iceberg_writes_a_table_java_can_read(tmp_path: Path, name: str, branch: str | None) -> None:
    job = _job_in(tmp_path, name)
    assert run_in_process(job) == 100

    catalog = HadoopCatalog("seatunnel_test", warehouse=f"file://{tmp_path}/iceberg/hadoop-sink/")
    table = catalog.load_table("seatunnel_namespace.iceberg_sink_table")
    snapshot = table.snapshot_by_name(branch) if branch else table.current_snapshot()
    assert snapshot is not None
    if branch:
        assert table.current_snapshot() is None  # the rows went to the branch only
    read = table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
    assert read.num_rows == 100
    assert [str(f.transform) for f in table.spec().fields] == ["identity"]  # partition-keys = c_timestamp

    expected = sorted(_fake_rows(job), key=_key)
    got = sorted(read.to_pylist(), key=_key)
    for column in (
        "c_string",
        "c_boolean",
        "c_tinyint",
        "c_smallint",
        "c_int",
        "c_bigint",
        "c_float",
        "c_double",
        "c_decimal",
        "c_bytes",
        "c_date",
        "c_timestamp",
        "c_array",
    ):
        assert [r[column] for r in got] == [r[column] for r in expected], column
    assert [dict(r["c_map"]) for r in got] == [dict(r["c_map"]) for r in expected]
    assert isinstance(got[0]["c_decimal"], decimal.Decimal) and isinstance(got[0]["c_date"], datetime.date)

    # Java's HadoopCatalog layout: <warehouse>/<namespace>/<table>/metadata/v<N>.metadata.json + version-hint.text
    table_dir = tmp_path / "iceberg" / "hadoop-sink" / "seatunnel_namespace" / "iceberg_sink_table"
    metadata_dir = table_dir / "metadata"
    versions = sorted(p.name for p in metadata_dir.glob("v*.metadata.json"))
    assert versions == ["v1.metadata.json", "v2.metadata.json"]  # created, then one commit
    assert (metadata_dir / "version-hint.text").read_text() == "2"
    assert not list(metadata_dir.glob(".*"))  # no temporary file left behind
    newest = json.loads((metadata_dir / "v2.metadata.json").read_text())
    assert newest["location"] == table_dir.as_uri()
    assert [log["metadata-file"] for log in newest["metadata-log"]] == [(metadata_dir / "v1.metadata.json").as_uri()]
    assert all(Path(s["manifest-list"].removeprefix("file://")).is_file() for s in newest["snapshots"])
    assert table.metadata_location == (metadata_dir / "v2.metadata.json").as_uri()

    if not branch:
        # DuckDB's reader finds the table by version-hint.text, as Java's does
        lake = duckdb_lake({})
        assert lake.execute(f"SELECT count(*) FROM iceberg_scan('{table_dir}')").fetchone() == (100,)

    # the same job's checkpoint again commits nothing (exactly once); another job commits version 3 on top
    run_in_process(job)
    assert catalog.load_table("seatunnel_namespace.iceberg_sink_table").metadata_location.endswith("/v2.metadata.json")
    assert run_in_process(job, job_id="again") == 100
    table = catalog.load_table("seatunnel_namespace.iceberg_sink_table")
    assert table.metadata_location.endswith("/metadata/v3.metadata.json")
    assert (metadata_dir / "version-hint.text").read_text() == "3"
    snapshot = table.snapshot_by_name(branch) if branch else table.current_snapshot()
    assert table.scan(snapshot_id=snapshot.snapshot_id).to_arrow().num_rows == 200


def _ids(start: int, stop: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, stop), pa.int64())})


def test_racing_commits_one_wins_the_other_fails_and_the_table_stays_consistent(tmp_path: Path) -> None:
    warehouse = f"file://{tmp_path}/wh"
    setup = HadoopCatalog("c", warehouse=warehouse)
    setup.create_namespace("ns")
    # pyiceberg retries a failed append itself (on the refreshed table); off here to see the race
    setup.create_table("ns.t", schema=_ids(0, 0).schema, properties={"commit.retry.num-retries": "0"})
    first, second = HadoopCatalog("c", warehouse=warehouse), HadoopCatalog("c", warehouse=warehouse)
    tables = [first.load_table("ns.t"), second.load_table("ns.t")]
    assert tables[0].metadata_location == tables[1].metadata_location

    # Both commits are computed from version 1 before either publishes: only the link decides.
    outcomes = _race(first, second, tables)
    assert sorted(map(str, outcomes)).count("ok") == 1, outcomes
    loser = next(i for i, o in enumerate(outcomes) if o != "ok")
    assert isinstance(outcomes[loser], CommitFailedException)
    assert "version 2 was committed" in str(outcomes[loser])  # refused by the catalog's link, not by pyiceberg

    metadata_dir = tmp_path / "wh" / "ns" / "t" / "metadata"
    assert sorted(p.name for p in metadata_dir.glob("v*.metadata.json")) == ["v1.metadata.json", "v2.metadata.json"]
    assert (metadata_dir / "version-hint.text").read_text() == "2"
    assert not list(metadata_dir.glob(".*"))
    table = setup.load_table("ns.t")
    assert len(table.snapshots()) == 1
    winner = 1 - loser
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(winner * 10, winner * 10 + 10))

    # A writer still holding version 2 after a third commit is refused too (pyiceberg's own check).
    stale = first.load_table("ns.t")
    setup.load_table("ns.t").append(_ids(100, 101))
    with pytest.raises(CommitFailedException):
        stale.append(_ids(200, 201))

    # The loser retries from the newest version and lands on top: one line of history.
    retried = HadoopCatalog("c", warehouse=warehouse).load_table("ns.t")
    retried.append(_ids(loser * 10, loser * 10 + 10))
    table = setup.load_table("ns.t")
    assert table.metadata_location.endswith("/v4.metadata.json")
    snapshots = table.snapshots()
    assert len(snapshots) == 3
    assert [s.parent_snapshot_id for s in snapshots] == [None, snapshots[0].snapshot_id, snapshots[1].snapshot_id]
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [*range(0, 20), 100]

    # With pyiceberg's retries on, the same race ends with both appends, one after the other.
    with setup.load_table("ns.t").transaction() as txn:
        txn.remove_properties("commit.retry.num-retries")
    tables = [first.load_table("ns.t"), second.load_table("ns.t")]
    assert _race(first, second, tables, [(300, 301), (400, 401)]) == ["ok", "ok"]
    table = setup.load_table("ns.t")
    assert table.metadata_location.endswith("/v7.metadata.json")  # v5: the property; v6, v7: the appends
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [*range(0, 20), 100, 300, 400]
    snapshots = table.snapshots()
    assert [s.parent_snapshot_id for s in snapshots[1:]] == [s.snapshot_id for s in snapshots[:-1]]
    assert not list(metadata_dir.glob(".*"))

    # A stale or missing hint does not hide a newer version (a writer died before rewriting it).
    (metadata_dir / "version-hint.text").write_text("1")
    assert setup.load_table("ns.t").metadata_location.endswith("/v7.metadata.json")
    (metadata_dir / "version-hint.text").unlink()
    assert setup.load_table("ns.t").metadata_location.endswith("/v7.metadata.json")
    assert setup.list_tables("ns") == [("ns", "t")] and setup.list_namespaces() == [("ns",)]


def _race(
    first: HadoopCatalog, second: HadoopCatalog, tables: list[Any], ranges: list[tuple[int, int]] | None = None
) -> list[Any]:
    """Append to ``tables`` (one per catalog) at once, their first publish held until both
    have computed their commit from the same version: "ok" or the exception, per table."""
    ranges = ranges or [(0, 10), (10, 20)]
    barrier = threading.Barrier(2, timeout=30)
    for catalog in (first, second):
        publish = catalog.__class__._publish.__get__(catalog)
        held = [True]

        def waiting(*args: Any, _publish: Any = publish, _held: list[bool] = held) -> str:
            if _held[0]:  # a retry publishes at once
                _held[0] = False
                barrier.wait()
            return _publish(*args)

        catalog._publish = waiting  # type: ignore[method-assign]
    outcomes: list[Any] = [None, None]

    def commit(index: int) -> None:
        try:
            tables[index].append(_ids(*ranges[index]))
            outcomes[index] = "ok"
        except Exception as err:  # the test inspects it
            outcomes[index] = err

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for catalog in (first, second):
        del catalog._publish
    return outcomes


SOURCE_SCHEMA = pa.schema(
    [
        ("f1", pa.int64()),
        ("f2", pa.bool_()),
        ("f3", pa.int32()),
        ("f4", pa.int64()),
        ("f5", pa.float32()),
        ("f6", pa.float64()),
        ("f7", pa.date32()),
        ("f9", pa.timestamp("us", tz="UTC")),
        ("f10", pa.timestamp("us")),
        ("f11", pa.string()),
        ("f12", pa.binary(10)),
        ("f13", pa.binary()),
        ("f14", pa.decimal128(19, 9)),
        ("f15", pa.list_(pa.int32())),
        ("f16", pa.map_(pa.string(), pa.int32())),
    ]
)


def _source_table(warehouse: str) -> None:
    """database1.source as SeaTunnel's IcebergSourceIT fills it: f1 = 0..99."""
    catalog = HadoopCatalog("seatunnel", warehouse=warehouse)
    catalog.create_namespace("database1")
    table = catalog.create_table("database1.source", schema=SOURCE_SCHEMA)
    ts = datetime.datetime(2024, 1, 2, 3, 4, 5)
    table.append(
        pa.Table.from_pylist(
            [
                {
                    "f1": i,
                    "f2": i % 2 == 0,
                    "f3": i,
                    "f4": i * 10,
                    "f5": i / 2,
                    "f6": i / 4,
                    "f7": datetime.date(2024, 1, 1),
                    "f9": ts.replace(tzinfo=datetime.UTC),
                    "f10": ts,
                    "f11": f"s{i}",
                    "f12": b"0123456789",
                    "f13": bytes([i]),
                    "f14": decimal.Decimal(i) / 8,
                    "f15": [i, i + 1],
                    "f16": [("k", i)],
                }
                for i in range(100)
            ],
            schema=SOURCE_SCHEMA,
        )
    )


def _read(source: Any) -> pa.Table:
    source.preflight()
    batches = [
        b for split in source.splits(1) for b in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
    ]
    return pa.Table.from_batches(batches, schema=source.produced_schema())


def test_iceberg_source_schema_reads_those_columns_in_those_types(tmp_path: Path) -> None:
    job = _job_in(tmp_path, "iceberg_source.conf")
    warehouse = f"file://{tmp_path}/iceberg/hadoop/"
    _source_table(warehouse)
    assert run_in_process(job) == 100  # its Assert: f1 bigint, not null, 0..99

    options = {
        "plugin_name": "Iceberg",
        "catalog_name": "seatunnel",
        "namespace": "database1",
        "table": "source",
        "iceberg.catalog.config": {"type": "hadoop", "warehouse": warehouse},
    }
    source = load_source(
        {
            **options,
            "schema": {"fields": {"f11": "string", "f1": "int", "f9": "timestamp", "f12": "bytes", "f6": "float"}},
        }
    )
    read = _read(source)
    assert read.schema == pa.schema(
        [
            ("f11", pa.string()),
            ("f1", pa.int32()),
            ("f9", pa.timestamp("us")),
            ("f12", pa.binary()),
            ("f6", pa.float32()),
        ]
    )
    rows = sorted(read.to_pylist(), key=lambda r: r["f1"])
    assert len(rows) == 100
    assert rows[3] == {
        "f11": "s3",
        "f1": 3,
        "f9": datetime.datetime(2024, 1, 2, 3, 4, 5),
        "f12": b"0123456789",
        "f6": 0.75,
    }

    with pytest.raises(ConfigError) as err:
        load_source({**options, "schema": {"fields": {"f1": "bigint", "nope": "string"}}}).preflight()
    assert err.value.key == "source[0].schema" and "nope" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ConfigError) as err:  # a list is no int: refused before any row is read
        load_source({**options, "schema": {"fields": {"f15": "int"}}}).preflight()
    assert err.value.key == "source[0].schema"
    with pytest.raises(ConfigError) as err:
        load_source({**options, "schema": {"fields": {"f1": "bigint"}}, "read_columns": ["f1"]})
    assert err.value.key == "source[0].schema"


@pytest.mark.parametrize("warehouse", ["s3://bucket/wh", "hdfs://nn:8020/wh", "oss://bucket/wh"])
def test_a_hadoop_catalog_off_local_disk_is_one_line_naming_the_warehouse(warehouse: str) -> None:
    config = {"iceberg.catalog.config": {"type": "hadoop", "warehouse": warehouse}, "namespace": "ns", "table": "t"}
    for load, key in ((load_sink, "sink[0]"), (load_source, "source[0]")):
        with pytest.raises(ConfigError) as err:
            load({"plugin_name": "Iceberg", **config})
        text = str(err.value)
        assert err.value.key == f"{key}.iceberg.catalog.config.warehouse"
        assert "\n" not in text and warehouse in text and "type = sql" in text


def test_a_new_metadata_version_is_on_disk_before_its_name_and_the_name_before_the_commit_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 47, defect 6: ``v<N>.metadata.json`` must be fsynced before it is linked, and
    the directory after, else an OS crash can leave the newest version (the one every
    reader takes) empty, or lose a commit the sink already reported.

    A real crash cannot be produced here: what it loses is what the kernel's page cache
    has not written yet, and killing the process (all a test can do to itself) leaves the
    page cache to be written as usual; only a power loss or a kernel panic drops it, which
    needs a machine or VM to crash, or a file system that simulates one (dm-flakey,
    LazyFS: root or FUSE). So the test records the calls that make the commit durable, in
    their order, on a real commit (the file each fsync reaches, through /proc)."""
    catalog = HadoopCatalog("c", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=_ids(0, 0).schema)
    metadata_dir = str(tmp_path / "wh" / "ns" / "t" / "metadata")
    calls: list[tuple[str, ...]] = []
    real = {name: getattr(os, name) for name in ("fsync", "link", "replace")}

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real["fsync"](fd)

    def named(name: str) -> Any:
        def call(source: Any, destination: Any, *args: Any, **kwargs: Any) -> None:
            calls.append((name, os.fspath(source), os.fspath(destination)))
            real[name](source, destination, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", named("link"))
    monkeypatch.setattr(os, "replace", named("replace"))
    table.append(_ids(0, 10))
    monkeypatch.undo()

    def index(call: tuple[str, ...]) -> int:
        assert call in calls, f"{call} not among {calls}"
        return calls.index(call)

    link = next(c for c in calls if c[0] == "link" and c[2] == f"{metadata_dir}/v2.metadata.json")
    temp = link[1]
    assert os.path.dirname(temp) == metadata_dir and not os.path.exists(temp)
    assert index(("fsync", temp)) < index(link) < index(("fsync", metadata_dir))  # bytes, name, then reported
    hint = next(c for c in calls if c[0] == "replace" and c[2] == f"{metadata_dir}/version-hint.text")
    assert index(("fsync", hint[1])) < index(hint)  # the hint is never found empty either
    assert (Path(metadata_dir) / "version-hint.text").read_text() == "2"
    reloaded = HadoopCatalog("c", warehouse=f"file://{tmp_path}/wh").load_table("ns.t")
    assert reloaded.metadata_location.endswith("/v2.metadata.json") and reloaded.metadata == table.metadata
    assert sorted(reloaded.scan().to_arrow().column("id").to_pylist()) == list(range(10))
