from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt import connectors
from airflow_provider_seatunnel_ckpt.connectors import (
    load_sink,
    load_source,
    load_transform,
    register_source,
    sink_class,
    source_class,
    transform_class,
)
from airflow_provider_seatunnel_ckpt.connectors.api import Source, Split, assign_splits
from airflow_provider_seatunnel_ckpt.connectors.console import ConsoleSink
from airflow_provider_seatunnel_ckpt.connectors.file.sink import FileSink
from airflow_provider_seatunnel_ckpt.connectors.file.source import FileSource
from airflow_provider_seatunnel_ckpt.connectors.sequence import SequenceSource
from airflow_provider_seatunnel_ckpt.errors import ConfigError


@pytest.mark.parametrize(
    "lookup, name, cls",
    [
        (source_class, "Sequence", SequenceSource),
        (source_class, "SEQUENCE", SequenceSource),
        (source_class, "file", FileSource),
        (sink_class, "File", FileSink),
        (sink_class, "console", ConsoleSink),
    ],
)
def test_names_are_case_insensitive(lookup, name, cls):
    assert lookup(name) is cls


def test_every_builtin_loads():
    for name in connectors.sources:
        assert issubclass(source_class(name), Source)
    for name in connectors.transforms:
        transform_class(name)
    for name in connectors.sinks:
        sink_class(name)
    assert set(connectors.transforms) == {
        "python",
        "countbykey",
        "select",
        "rename",
        "filter",
        "sql",
        "fieldmapper",
        "copy",
        "replace",
        "jsonpath",
        "split",
        "filterrowkind",
        "rowkindextractor",
    }


def test_unknown_plugin_lists_known_ones():
    with pytest.raises(ConfigError) as err:
        load_source({"plugin_name": "Pulsar"}, "source[2]")
    assert err.value.key == "source[2].plugin_name"
    assert (
        "unknown source 'Pulsar'; known sources: Delta, FakeSource, File, HdfsFile, Iceberg, Jdbc, Kafka, LocalFile, "
        "OssFile, S3File, Sequence"
    ) in err.value.problem


def test_missing_or_bad_plugin_name():
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.plugin_name: is required"):
        load_sink({"path": "/x"}, "sink[0]")
    with pytest.raises(ConfigError, match=r"^transform\[1\]\.plugin_name: expected the name"):
        load_transform({"plugin_name": 3}, "transform[1]")
    with pytest.raises(ConfigError, match=r"^source\[0\]: expected a mapping"):
        load_source(["Sequence"])  # type: ignore[arg-type]


def test_option_errors_carry_the_entry_key():
    with pytest.raises(ConfigError) as err:
        load_source({"plugin_name": "Sequence", "rows": "many"}, "source[0]")
    assert str(err.value) == "source[0].rows: expected an integer, got 'many'"
    with pytest.raises(ConfigError) as err:
        load_source({"plugin_name": "Sequence"}, "source[0]")
    assert str(err.value) == "source[0].rows: is required for Sequence"
    with pytest.raises(ConfigError) as err:
        load_sink({"plugin_name": "File", "path": "s3://bucket/x", "fs.s3a.multipart.size": "tiny"}, "sink[3]")
    assert err.value.key == "sink[3].fs.s3a.multipart.size"


def test_loaded_instances_remember_their_key_and_drop_table_wiring():
    source = load_source({"plugin_name": "Sequence", "rows": 5, "plugin_output": "t1"}, "source[0]")
    assert source.config_key == "source[0]" and source.rows == 5
    transform = load_transform({"plugin_name": "Select", "fields": ["id"], "plugin_input": "t1"}, "transform[0]")
    assert transform.config_key == "transform[0]"


def test_register_a_third_party_source():
    class Custom(Source):
        plugin_name = "Custom"

        def splits(self, parallelism: int) -> list[Split]:
            return [Split("only")]

    register_source("MyCustom", Custom)
    try:
        assert isinstance(load_source({"plugin_name": "mycustom", "x": 1}), Custom)
        register_source("Broken", "no_such_module_xyz:Thing")
        with pytest.raises(ConfigError, match="cannot be loaded"):
            load_source({"plugin_name": "broken"})
        register_source("NotASource", "json:dumps")
        with pytest.raises(ConfigError, match="not a Source"):
            load_source({"plugin_name": "notasource"})
    finally:
        for name in ("mycustom", "broken", "notasource"):
            connectors._registry["source"].pop(name, None)


@pytest.mark.parametrize("parallelism", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("n_splits", [0, 1, 4, 7, 13])
def test_assign_splits_deals_each_split_exactly_once(parallelism, n_splits):
    splits = SequenceSource({"rows": 100, "splits": max(n_splits, 1)}).splits(parallelism)[:n_splits]
    dealt = [s.split_id for sub in range(parallelism) for s in assign_splits(splits, parallelism, sub)]
    assert sorted(dealt) == sorted(s.split_id for s in splits)
    assert len(dealt) == len(set(dealt))
    sizes = [len(assign_splits(splits, parallelism, sub)) for sub in range(parallelism)]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize(
    "kind, entry",
    [
        ("source", {"plugin_name": "Sequence", "rows": 10, "rows_per_second": 5, "payload_bytes": 2}),
        ("source", {"plugin_name": "File", "path": "s3://bkt/x", "fs.s3a.access.key": "a", "fs.s3a.secret.key": "b"}),
        ("transform", {"plugin_name": "Python", "function": "json:dumps"}),
        ("transform", {"plugin_name": "CountByKey", "key": "k"}),
        ("transform", {"plugin_name": "Filter", "condition": "id % 2 == 0"}),
        ("sink", {"plugin_name": "File", "path": "memory://pickle/x", "format": "csv"}),
        ("sink", {"plugin_name": "Console"}),
    ],
)
def test_connectors_pickle_as_configuration(kind, entry):
    """The runtime may ship connector objects to executors: they pickle without clients or caches."""
    import pickle

    from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext

    load = {"source": load_source, "transform": load_transform, "sink": load_sink}[kind]
    original = load(entry, f"{kind}[0]")
    if entry["plugin_name"] == "Sequence":  # warm the per-process caches
        original.create_reader(original.splits(1)[0], None, ReaderContext(0, 1)).read_batch()
    if entry["plugin_name"] == "Python":
        original.resolve()
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is type(original) and copy.options == original.options
    assert copy.config_key == f"{kind}[0]"
    if entry["plugin_name"] == "Sequence":
        reader = copy.create_reader(copy.splits(1)[0], None, ReaderContext(0, 1))
        assert reader.read_batch().column("id").to_pylist() == [0]  # 5 rows/s: 0.1 s of rows = 1 row
