from __future__ import annotations

import json
import random
import sys
from collections import Counter

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_transform
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.transforms.count_by_key import CountByKeyTransform
from airflow_provider_seatunnel_ckpt.transforms.filter import FilterTransform
from airflow_provider_seatunnel_ckpt.transforms.python_function import PythonTransform
from airflow_provider_seatunnel_ckpt.transforms.rename import RenameTransform
from airflow_provider_seatunnel_ckpt.transforms.select import SelectTransform


# functions for the Python transform (imported by name)
def double_ids(batch: pa.RecordBatch) -> pa.RecordBatch:
    return batch.set_column(0, "id", pa.compute.multiply(batch.column("id"), 2))


def drop_all(batch: pa.RecordBatch) -> None:
    return None


def as_table(batch: pa.RecordBatch) -> pa.Table:
    return pa.Table.from_batches([batch.slice(0, 2), batch.slice(2)])


def returns_list(batch: pa.RecordBatch) -> list:
    return []


class Holder:
    @staticmethod
    def method(batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.slice(1)


NOT_CALLABLE = 42
HERE = __name__


def ids(n: int = 5) -> pa.RecordBatch:
    return pa.record_batch({"id": pa.array(range(n), pa.int64()), "name": [f"n{i}" for i in range(n)]})


# ---- Python --------------------------------------------------------------------------------------
def test_python_transform_calls_the_function():
    t = load_transform({"plugin_name": "Python", "function": f"{HERE}:double_ids"})
    assert not t.stateful
    assert t.process(ids(), None).column("id").to_pylist() == [0, 2, 4, 6, 8]
    assert PythonTransform({"function": f"{HERE}:drop_all"}).process(ids(), None) is None
    assert PythonTransform({"function": f"{HERE}:Holder.method"}).process(ids(), None).num_rows == 4
    out = PythonTransform({"function": f"{HERE}:as_table"}).process(ids(), None)
    assert isinstance(out, pa.RecordBatch) and out.to_pylist() == ids().to_pylist()
    with pytest.raises(TypeError, match="returned list"):
        PythonTransform({"function": f"{HERE}:returns_list"}).process(ids(), None)


def test_python_transform_imports_lazily(tmp_path, monkeypatch):
    (tmp_path / "late_udf_module.py").write_text("def fn(batch):\n    return batch.slice(0, 1)\n")
    t = PythonTransform({"function": "late_udf_module:fn"})  # not importable yet: fine
    monkeypatch.syspath_prepend(str(tmp_path))
    t.open(ReaderContext(0, 1))
    assert t.process(ids(), None).num_rows == 1
    sys.modules.pop("late_udf_module", None)


@pytest.mark.parametrize(
    "spec", ["no_colon", "mod:", ":fn", "mod:fn()", "a-b:c", "mod:fn:x", "mod.:fn", "my module:fn"]
)
def test_python_transform_function_shape(spec):
    with pytest.raises(ConfigError) as err:
        load_transform({"plugin_name": "python", "function": spec}, "transform[2]")
    assert err.value.key == "transform[2].function" and "package.module:function" in err.value.problem


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("no_such_module_xyz:fn", "cannot import module 'no_such_module_xyz'"),
        (f"{HERE}:missing", f"module '{HERE}' has no attribute 'missing'"),
        (f"{HERE}:Holder.missing", "has no attribute 'Holder.missing'"),
        (f"{HERE}:NOT_CALLABLE", "is a int, not a function"),
    ],
)
def test_python_transform_loading_errors_are_config_errors(spec, fragment):
    t = load_transform({"plugin_name": "Python", "function": spec}, "transform[0]")
    with pytest.raises(ConfigError) as err:
        t.process(ids(), None)
    assert err.value.key == "transform[0].function"
    assert fragment in err.value.problem


def test_python_transform_broken_module_is_a_config_error(tmp_path, monkeypatch):
    (tmp_path / "broken_udf_module.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="RuntimeError: boom"):
        PythonTransform({"function": "broken_udf_module:fn"}).open(ReaderContext(0, 1))


def test_python_transform_options():
    with pytest.raises(ConfigError, match="^function: is required"):
        PythonTransform({})
    with pytest.raises(ConfigError, match="^args: unknown option for Python; known options: function"):
        PythonTransform({"function": "a:b", "args": []})


# ---- CountByKey ----------------------------------------------------------------------------------
def naive_running_counts(keys: list) -> list[int]:
    seen: Counter = Counter()
    out = []
    for k in keys:
        seen[k] += 1
        out.append(seen[k])
    return out


@pytest.mark.parametrize("seed", range(5))
def test_count_by_key_running_counts_across_batches_and_restores(seed):
    rng = random.Random(seed)
    keys = [rng.choice(["a", "b", "c", None, "d"]) if seed % 2 else rng.randrange(7) for _ in range(500)]
    t = load_transform({"plugin_name": "countbykey", "key": "k"})
    assert t.stateful
    state: dict = {}
    got: list[int] = []
    i = 0
    while i < len(keys):
        n = rng.randint(0, 60)
        chunk = keys[i : i + n]
        out = t.process(pa.record_batch({"k": pa.array(chunk, pa.string() if seed % 2 else pa.int64())}), state)
        assert out.schema.names == ["k", "count"] and out.schema.field("count").type == pa.int64()
        got += out.column("count").to_pylist()
        i += n
        state = json.loads(json.dumps(state))  # checkpoint + restore between batches
    assert got == naive_running_counts(keys)
    expected_state = {str(k): c for k, c in Counter(k for k in keys if k is not None).items()}
    assert state["counts"] == expected_state
    assert state.get("nulls", 0) == keys.count(None)


def test_count_by_key_state_is_per_split():
    t = CountByKeyTransform({"key": "k", "output": "n"})
    s1: dict = {}
    s2: dict = {}
    b = pa.record_batch({"k": ["x", "x", "y"]})
    assert t.process(b, s1).column("n").to_pylist() == [1, 2, 1]
    assert t.process(b, s2).column("n").to_pylist() == [1, 2, 1]
    assert t.process(b, s1).column("n").to_pylist() == [3, 4, 2]
    assert s1 == {"counts": {"x": 4, "y": 2}}


def test_count_by_key_dictionary_column_and_empty_batch():
    t = CountByKeyTransform({"key": "k"})
    state: dict = {}
    dict_col = pa.array(["b", "a", "b"]).dictionary_encode()
    assert t.process(pa.record_batch({"k": dict_col}), state).column("count").to_pylist() == [1, 1, 2]
    empty = t.process(pa.record_batch({"k": pa.array([], pa.string())}), state)
    assert empty.num_rows == 0 and empty.schema.names == ["k", "count"]
    assert state == {"counts": {"b": 2, "a": 1}}


def test_count_by_key_errors():
    t = load_transform({"plugin_name": "CountByKey", "key": "k"}, "transform[1]")
    with pytest.raises(ConfigError) as err:
        t.process(pa.record_batch({"other": [1]}), {})
    assert err.value.key == "transform[1].key"
    with pytest.raises(ConfigError) as err:
        t.process(pa.record_batch({"k": [1], "count": [0]}), {})
    assert err.value.key == "transform[1].output"
    with pytest.raises(ValueError, match="stateful"):
        t.process(pa.record_batch({"k": [1]}), None)
    with pytest.raises(ConfigError, match="^key: is required"):
        CountByKeyTransform({})
    with pytest.raises(ConfigError, match="^output: must differ"):
        CountByKeyTransform({"key": "a", "output": "a"})


# ---- Select / Rename / Filter -------------------------------------------------------------------
def test_select():
    t = load_transform({"plugin_name": "Select", "fields": ["name", "id"]})
    assert t.process(ids(2), None).to_pylist() == [{"name": "n0", "id": 0}, {"name": "n1", "id": 1}]
    with pytest.raises(ConfigError, match="no column 'x'"):
        SelectTransform({"fields": ["x"]}).process(ids(), None)
    for bad in ([], "id", ["id", "id"], [1]):
        with pytest.raises(ConfigError, match="^fields: "):
            SelectTransform({"fields": bad})


def test_rename():
    t = load_transform({"plugin_name": "rename", "mapping": {"id": "key"}})
    assert t.process(ids(2), None).schema.names == ["key", "name"]
    with pytest.raises(ConfigError, match="no column 'x'"):
        RenameTransform({"mapping": {"x": "y"}}).process(ids(), None)
    with pytest.raises(ConfigError, match="duplicate column names"):
        RenameTransform({"mapping": {"id": "name"}}).process(ids(), None)
    with pytest.raises(ConfigError, match="same new name"):
        RenameTransform({"mapping": {"a": "c", "b": "c"}})
    with pytest.raises(ConfigError, match="^mapping: "):
        RenameTransform({"mapping": ["a"]})


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("id % 2 == 0", [0, 2, 4, 6, 8]),
        ("id>=7", [7, 8, 9]),
        ("id < 2", [0, 1]),
        ("id <= 1.5", [0, 1]),
        ("id != 3", [0, 1, 2, 4, 5, 6, 7, 8, 9]),
        ("id % 3 > 1", [2, 5, 8]),
        ("name == 'n4'", [4]),
        ('name == "n5"', [5]),
        ("`name` > 'n7'", [8, 9]),
    ],
)
def test_filter(condition, expected):
    t = load_transform({"plugin_name": "Filter", "condition": condition})
    assert t.process(ids(10), None).column("id").to_pylist() == expected


def test_filter_drops_nulls_and_empty_results():
    t = FilterTransform({"condition": "v > 0"})
    out = t.process(pa.record_batch({"v": pa.array([1, None, -1, 2])}), None)
    assert out.column("v").to_pylist() == [1, 2]
    assert t.process(pa.record_batch({"v": pa.array([-1, None])}), None) is None


@pytest.mark.parametrize(
    "condition, expected",
    [  # plain SQL, beyond the original syntax
        ("id = 3 or name = 'n7'", [3, 7]),
        ("id between 2 and 4 and id <> 3", [2, 4]),
        ("name like 'n%' and id % 4 = 1", [1, 5, 9]),
        ("3 == id", [3]),
        ("id % 0 == 1", []),  # SQL: a modulo by zero is null, so no row holds
        ("id in (1, 8)", [1, 8]),
    ],
)
def test_filter_sql_conditions(condition, expected):
    t = load_transform({"plugin_name": "Filter", "condition": condition})
    out = t.process(ids(10), None)
    assert (out.column("id").to_pylist() if out is not None else []) == expected


@pytest.mark.parametrize(
    "condition", ["id ==", "id >", "(id = 1", "id = 1; drop table x", "1 = 1 union select * from other"]
)
def test_filter_bad_conditions(condition):
    with pytest.raises(ConfigError) as err:
        load_transform({"plugin_name": "Filter", "condition": condition}, "transform[0]")
    assert err.value.key == "transform[0].condition"
    assert "\n" not in str(err.value) and "LINE" not in str(err.value)


def test_filter_type_mismatch_and_missing_column():
    t = load_transform({"plugin_name": "Filter", "condition": "name > 3"}, "transform[4]")
    with pytest.raises(ConfigError) as err:
        t.process(ids(), None)
    assert err.value.key == "transform[4].condition" and "Cannot compare values of type VARCHAR" in err.value.problem
    with pytest.raises(ConfigError, match='column "zz" not found'):
        FilterTransform({"condition": "zz == 1"}).process(ids(), None)


def test_output_schemas_follow_what_process_returns():
    batch = ids(3)
    chain = [
        load_transform({"plugin_name": "Rename", "mapping": {"name": "label"}}),
        load_transform({"plugin_name": "Select", "fields": ["label", "id"]}),
        load_transform({"plugin_name": "Filter", "condition": "id > 0"}),
        load_transform({"plugin_name": "CountByKey", "key": "label"}),
    ]
    schema = batch.schema
    for transform in chain:
        schema = transform.output_schema(schema)
        batch = transform.process(batch, {} if transform.stateful else None)
        assert schema.names == batch.schema.names and schema.types == batch.schema.types
    assert load_transform({"plugin_name": "Python", "function": f"{HERE}:double_ids"}).output_schema(schema) is None
    assert chain[0].output_schema(None) is None


def test_output_schema_names_the_option_of_a_missing_column():
    with pytest.raises(ConfigError) as err:
        load_transform({"plugin_name": "Select", "fields": ["nope"]}, "transform[3]").output_schema(ids().schema)
    assert err.value.key == "transform[3].fields"
    with pytest.raises(ConfigError) as err:
        load_transform({"plugin_name": "CountByKey", "key": "nope"}, "transform[1]").output_schema(ids().schema)
    assert err.value.key == "transform[1].key"
