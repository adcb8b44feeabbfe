"""Table wiring (jobfile/wiring.py), routing along it (engine/routing.py) and several
sources or sinks as one (engine/composite.py): SeaTunnel Zeta's rules, one line per
mistake, and every row reaching each sink that reads its table, committed per sink."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_seatunnel_ckpt.connectors import SourceUnion
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.engine.composite import SinkGroup
from airflow_provider_seatunnel_ckpt.engine.routing import (
    Router,
    bind_schemas,
    load_sinks,
    load_sources,
    load_transforms,
    one_sink,
    one_source,
)
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from airflow_provider_seatunnel_ckpt.jobfile.wiring import Wiring, wire


def _job(sources: list[dict], sinks: list[dict], transforms: list[dict] | None = None) -> dict:
    return {"env": {"parallelism": 1}, "source": sources, "transform": transforms or [], "sink": sinks}


def _seq(rows: int, **names: str) -> dict:
    return {"plugin_name": "Sequence", "rows": rows, **names}


def _console(**names: object) -> dict:
    return {"plugin_name": "Console", **names}


# ---- the rules ---------------------------------------------------------------------------
def test_a_job_without_names_is_a_chain_through_every_transform() -> None:
    job = load_job(
        _job(
            [_seq(3)],
            [_console()],
            [{"plugin_name": "Filter", "condition": "id > 0"}, {"plugin_name": "Filter", "condition": "id > 1"}],
        )
    )
    assert job.wiring is None and job.graph.is_chain and job.graph.transform_order == (0, 1)


def test_named_tables_in_a_chain_keep_the_plain_chain() -> None:
    job = load_job(
        _job(
            [_seq(3, plugin_output="a")],
            [_console(plugin_input="b")],
            [{"plugin_name": "Filter", "condition": "id > 0", "plugin_input": "a", "plugin_output": "b"}],
        )
    )
    assert job.wiring is None  # checkpoints and commit infos as they always were


def test_the_older_names_and_a_comma_list_work() -> None:
    job = load_job(
        _job([_seq(3, result_table_name="a"), _seq(4, result_table_name="b")], [_console(source_table_name="a, b")])
    )
    assert job.wiring is not None and job.wiring.sink_inputs == (("a", "b"),)


@pytest.mark.parametrize(
    "sources, transforms, sinks, message",
    [
        (
            [_seq(1), _seq(1)],
            [],
            [_console()],
            r"^source: 2 sources need table names to be wired: plugin_output on each source",
        ),
        (
            [_seq(1, plugin_output="a"), _seq(1)],
            [],
            [_console(plugin_input="a")],
            r"^source\[1\]\.plugin_output: is required when a job wires tables by name",
        ),
        (
            [_seq(1, plugin_output="a"), _seq(1, plugin_output="a")],
            [],
            [_console(plugin_input="a")],
            r"^source\[1\]\.plugin_output: table 'a' is already produced by source\[0\]",
        ),
        (
            [_seq(1, plugin_output="a"), _seq(1, plugin_output="b")],
            [],
            [_console(plugin_input="a")],
            r"^source\[1\]\.plugin_output: table 'b' is read by no transform or sink$",
        ),
        (
            [_seq(1, plugin_output="a")],
            [],
            [_console(plugin_input="a"), _console(plugin_input="c")],
            r"^sink\[1\]\.plugin_input: no source or transform produces table 'c' \(produced: 'a'\)$",
        ),
        (
            [_seq(1, plugin_output="a")],
            [
                {"plugin_name": "Select", "fields": ["id"], "plugin_input": ["a", "y"], "plugin_output": "x"},
                {"plugin_name": "Select", "fields": ["id"], "plugin_input": "x", "plugin_output": "y"},
            ],
            [_console(plugin_input="x")],
            r"^transform\[0\]\.plugin_input: the transforms \[0, 1\] read each other's tables in a cycle$",
        ),
    ],
)
def test_a_wiring_mistake_is_one_line_naming_the_key(sources, transforms, sinks, message) -> None:
    with pytest.raises(ConfigError, match=message):
        load_job(_job(sources, sinks, transforms))


def test_a_simple_graph_with_names_that_do_not_fit_runs_in_file_order_with_a_warning() -> None:
    warnings: list[str] = []
    wiring = wire([_seq(1, plugin_output="a")], [], [_console(plugin_input="typo")], warnings)
    assert wiring.is_chain
    assert warnings and warnings[0].startswith("sink[0].plugin_input: no source or transform produces table 'typo'")
    assert "wired in file order, as SeaTunnel does" in warnings[0]


def test_transforms_may_come_in_any_order() -> None:
    wiring = wire(
        [_seq(1, plugin_output="a")],
        [
            {"plugin_name": "Select", "plugin_input": "b", "plugin_output": "c"},
            {"plugin_name": "Select", "plugin_input": "a", "plugin_output": "b"},
        ],
        [_console(plugin_input="c"), _console(plugin_input="a")],
        [],
    )
    assert wiring.transform_order == (1, 0)
    assert wiring.consumers("a") == [("transform", 1), ("sink", 1)]
    assert Wiring.from_json(wiring.to_json()) == wiring


# ---- routing and binding ------------------------------------------------------------------
def _fan_job() -> dict:
    """a -> Filter(id % 2 = 0) -> even -> sink 0; a and b together -> sink 1; b -> sink 2."""
    return _job(
        [_seq(10, plugin_output="a"), _seq(6, plugin_output="b")],
        [_console(plugin_input="even"), _console(plugin_input=["a", "b"]), _console(plugin_input="b")],
        [{"plugin_name": "Filter", "condition": "id % 2 = 0", "plugin_input": "a", "plugin_output": "even"}],
    )


def test_the_router_takes_each_batch_to_every_sink_that_reads_its_table() -> None:
    job = load_job(_fan_job())
    sources = load_sources(job.sources)
    union = one_source(sources)
    assert isinstance(union, SourceUnion)
    router = Router(job.graph, load_transforms(job.transforms))
    got: dict[int, Counter] = {0: Counter(), 1: Counter(), 2: Counter()}
    for split in union.splits(1):
        assert split.split_id.startswith(f"{union.origin(split)}/")
        for batch in iter_batches(union.create_reader(split, None, ReaderContext(0, 1))):
            for sink, out in router.route(batch, union.origin(split), lambda i: {}):
                got[sink].update(out.column("id").to_pylist())
    assert got[0] == Counter(range(0, 10, 2))
    assert got[1] == Counter(range(10)) + Counter(range(6))
    assert got[2] == Counter(range(6))


def test_binding_gives_each_sink_its_schema_and_refuses_a_fan_in_of_two_row_types() -> None:
    job = load_job(_fan_job())
    schemas = bind_schemas(job.graph, load_sources(job.sources), load_transforms(job.transforms))
    assert [s.names if s is not None else None for s in schemas] == [["id"], ["id"], ["id"]]
    odd = _fan_job()
    odd["source"][1]["payload_bytes"] = 4
    job = load_job(odd)
    with pytest.raises(
        ConfigError,
        match=r"^sink\[1\]\.plugin_input: tables 'a' and 'b' have different row types "
        r"\(id int64 vs id int64, payload fixed_size_binary\[4\]\)",
    ):
        bind_schemas(job.graph, load_sources(job.sources), load_transforms(job.transforms))


def test_a_fan_in_compares_row_types_as_seatunnel_does_names_and_types_only() -> None:
    # FakeSource's bigint column is nullable, Sequence's id is not: one row type in SeaTunnel
    job = load_job(
        {
            "env": {"parallelism": 1},
            "source": [
                {"plugin_name": "FakeSource", "plugin_output": "a", "schema": {"fields": {"id": "bigint"}}},
                _seq(4, plugin_output="b"),
            ],
            "sink": [{"plugin_name": "Console", "plugin_input": ["a", "b"]}],
        }
    )
    [schema] = bind_schemas(job.graph, load_sources(job.sources), load_transforms(job.transforms))
    assert schema.names == ["id"] and schema.field("id").type == pa.int64()


def test_a_union_discovers_and_reports_per_source() -> None:
    union = SourceUnion(load_sources([_seq(4, plugin_output="a"), _seq(4, plugin_output="b")]))
    assert union.discover_splits(union.splits(2)) == []
    assert union.reads_splits_together is False and union.discovery_interval_s is None


# ---- a group of sinks: each its own two-phase commit ----------------------------------------------
def _file_sinks(tmp_path: Path) -> list[dict]:
    return [
        {"plugin_name": "File", "path": str(tmp_path / f"out{k}"), "format": "parquet", "plugin_input": t}
        for k, t in enumerate(("a", "b"))
    ]


def _file_group(tmp_path: Path) -> list:
    job = load_job(_job([_seq(1, plugin_output="a"), _seq(1, plugin_output="b")], _file_sinks(tmp_path)))
    return load_sinks(job, load_sources(job.sources))


def _ids(directory: Path) -> Counter:
    # committed part files only (the staging directory holds what is not published yet)
    files = sorted(p for p in directory.glob("*.parquet"))
    return Counter(i for f in files for i in pq.read_table(f).column("id").to_pylist())


def test_a_group_of_sinks_commits_each_sink_once_and_replays_harmlessly(tmp_path: Path) -> None:
    sinks = _file_group(tmp_path)
    group = one_sink(sinks)
    assert isinstance(group, SinkGroup)
    group.run_attempt = 3
    assert [s.run_attempt for s in sinks] == [3, 3]
    writer = group.create_writer("job", 0, 0)
    writer.open(0)
    writer.write_to(0, pa.record_batch([pa.array([1, 2, 3], pa.int64())], names=["id"]))
    writer.write_to(1, pa.record_batch([pa.array([7], pa.int64())], names=["id"]))
    first = writer.prepare_commit(1)
    writer.write_to(1, pa.record_batch([pa.array([8, 9], pa.int64())], names=["id"]))
    second = writer.prepare_commit(2)
    assert first["sinks"][0] is not None and second["sinks"][0] is None  # sink 0 wrote nothing in epoch 2
    with pytest.raises(TypeError):
        writer.write(pa.record_batch([pa.array([1], pa.int64())], names=["id"]))
    writer.close()
    committer = group.create_committer("job")
    committer.commit([first])
    assert _ids(tmp_path / "out0") == Counter([1, 2, 3]) and _ids(tmp_path / "out1") == Counter([7])
    committer.commit([first, second])  # a replay after a restore commits the older infos again
    assert _ids(tmp_path / "out0") == Counter([1, 2, 3]) and _ids(tmp_path / "out1") == Counter([7, 8, 9])
    committer.cleanup([first, second])
    assert _ids(tmp_path / "out1") == Counter([7, 8, 9])


def test_a_group_rolls_back_every_sink_and_drops_what_no_checkpoint_keeps(tmp_path: Path) -> None:
    group = one_sink(_file_group(tmp_path))
    group.run_attempt = 1
    writer = group.create_writer("job", 0, 0)
    writer.open(0)
    writer.write_to(0, pa.record_batch([pa.array([1], pa.int64())], names=["id"]))
    writer.write_to(1, pa.record_batch([pa.array([2], pa.int64())], names=["id"]))
    kept = writer.prepare_commit(1)
    writer.write_to(0, pa.record_batch([pa.array([3], pa.int64())], names=["id"]))
    writer.write_to(1, pa.record_batch([pa.array([4], pa.int64())], names=["id"]))
    later = writer.prepare_commit(2)
    committer = group.create_committer("job")
    committer.commit([kept, later])
    committer.rollback(1)  # a restore of checkpoint 1: what epoch 2 published goes, in both sinks
    assert _ids(tmp_path / "out0") == Counter([1]) and _ids(tmp_path / "out1") == Counter([2])


def test_the_wiring_example_of_the_docs_runs(tmp_path: Path) -> None:
    """docs/seatunnel.md's example, as written there (only its output paths moved here)."""
    import re

    from tests.seatunnel_jobs import run_in_process

    docs = (Path(__file__).resolve().parents[3] / "docs" / "seatunnel.md").read_text()
    section = docs[docs.index("## Table wiring") :]
    example = re.search(r"```hocon\n(.*?)```", section, re.S).group(1)
    job = tmp_path / "wired.conf"
    job.write_text(example.replace("/data/", f"{tmp_path}/"))
    rows = run_in_process(job)
    big, everything = pq.read_table(tmp_path / "big_orders"), pq.read_table(tmp_path / "all")
    assert everything.num_rows == 1100 and big.num_rows == rows - 1100
    assert 0 < big.num_rows < 1000 and min(big.column("amount").to_pylist()) > 100


def test_a_simple_graph_that_leaves_a_name_out_is_wired_silently() -> None:
    warnings: list[str] = []
    assert wire([_seq(1, result_table_name="fake")], [], [_console()], warnings).is_chain
    assert warnings == []  # SeaTunnel's files often name the source's table only


def test_run_check_prints_the_wiring_and_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from airflow_provider_seatunnel_ckpt.cli import main

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "seatunnel" / "seatunnel-transforms-v2-e2e-part-2"
    assert main(["run", "--check", str(fixture / "inner_query.conf")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "job inner_query: 1 subtask, BATCH"
    assert out[2] == "transform[0] Sql (fake -> tmp1)"
    assert out[3].startswith("sink[0] Console <- tmp1: c_date date32[day], c_string string")
    assert out[4].startswith("sink[1] Assert <- tmp1: ") and out[-1].startswith("ok: the job file is valid")

    job = tmp_path / "bad.conf"
    job.write_text(
        'source {\n  FakeSource { plugin_output = "a", schema = { fields { id = bigint } } }\n'
        '  FakeSource { plugin_output = "b", schema = { fields { id = bigint } } }\n}\n'
        'sink { Console { plugin_input = ["a", "c"] } }\n'
    )
    assert main(["run", "-ck", str(job)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err.strip().splitlines()[-1]
        == "error: sink[0].plugin_input: no source or transform produces table 'c' (produced: 'a', 'b')"
    )


def test_the_check_example_in_the_docs_is_what_check_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/jobs.md shows --check on the wiring example of docs/seatunnel.md."""
    import re

    from airflow_provider_seatunnel_ckpt.cli import main

    docs = Path(__file__).resolve().parents[3] / "docs"
    wiring = (docs / "seatunnel.md").read_text()
    example = re.search(r"```hocon\n(.*?)```", wiring[wiring.index("## Table wiring") :], re.S).group(1)
    job = tmp_path / "orders.conf"
    job.write_text(example)
    assert main(["run", "--check", str(job)]) == 0
    shown = re.search(r"\$ seatunnel-ckpt run --check orders.conf\n(.*?)```", (docs / "jobs.md").read_text(), re.S)
    assert capsys.readouterr().out == shown.group(1)


def test_run_check_contacts_no_system(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SeaTunnel's --check: a file source over a directory that does not exist here, and
    one at an object store nobody can reach, are checked without listing either."""
    from airflow_provider_seatunnel_ckpt.cli import main

    job = tmp_path / "files.conf"
    job.write_text(f"""
source {{
  LocalFile {{ path = "{tmp_path}/not-there", file_format_type = "text", plugin_output = "local" }}
  S3File {{ path = "/in", bucket = "s3a://nobody", fs.s3a.endpoint = "http://127.0.0.1:9",
           file_format_type = "csv", plugin_output = "remote" }}
}}
sink {{ Console {{ plugin_input = ["local", "remote"] }} }}
""")
    assert main(["run", "--check", str(job)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:3] == [
        "source[0] LocalFile -> local: columns known when read",
        "source[1] S3File -> remote: columns known when read",
    ]
    assert not (tmp_path / "not-there").exists()
