"""The Arrow-kernel plan of a simple query gives exactly DuckDB's answer.

The oracle is the same ``BatchQuery`` with its Arrow plans switched off: every generated
query runs both ways over generated batches (nulls, NaN, infinities, -0.0, the int64
limits, zeros), and the results must be equal value by value, type by type, or both must
fail with the same message.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.sql.batch_query import BatchQuery

INT64_MAX = 2**63 - 1
SCHEMA = pa.schema(
    [
        ("a", pa.int64()),
        ("b", pa.int64()),
        ("x", pa.float64()),
        ("y", pa.float64()),
        ("f", pa.bool_()),
        ("s", pa.string()),
        ("n", pa.int32()),
    ]
)


ints = st.one_of(
    st.sampled_from([0, 1, -1, 2, 7, -7, 10, 1000, INT64_MAX, -INT64_MAX - 1, 3037000500]),
    st.integers(-20, 20),
    st.integers(-(2**63), 2**63 - 1),
    st.none(),
)
floats = st.one_of(
    st.sampled_from([0.0, -0.0, 1.5, -2.25, math.inf, -math.inf, math.nan, 1e308]), st.floats(allow_nan=True), st.none()
)
rows = st.lists(
    st.tuples(
        ints,
        ints,
        floats,
        floats,
        st.one_of(st.booleans(), st.none()),
        st.one_of(st.sampled_from(["", "a", "B", "b", "é"]), st.none()),
        st.one_of(st.integers(-(2**31), 2**31 - 1), st.none()),
    ),
    min_size=0,
    max_size=12,
)


def batch_of(values: list[tuple]) -> pa.RecordBatch:
    columns = list(zip(*values)) if values else [[] for _ in SCHEMA]
    return pa.RecordBatch.from_arrays([pa.array(list(c), f.type) for c, f in zip(columns, SCHEMA)], schema=SCHEMA)


#: always run too: the values where the engines could differ (a batch with one of the first
#: kind runs on DuckDB; the second has none of them, so the Arrow plan must get it right)
EDGES = batch_of(
    [
        (0, 7, math.nan, 0.0, None, "", 0),
        (-7, 0, -0.0, math.inf, True, None, None),
        (None, -1, None, -math.inf, False, "B", -(2**31)),
        (INT64_MAX, 2, 1.5, math.nan, True, "a", 2**31 - 1),
    ]
)
BIG = batch_of(
    [
        (INT64_MAX, 3, math.inf, 1e308, True, "a", 7),
        (-INT64_MAX - 1, -3, -math.inf, -0.5, False, "b", -7),
        (2**53 + 1, 16_777_217, 3.0, 9007199254740993.0, None, "é", 1),
        (16_777_217, 2**53 + 1, -2.25, 1e-300, True, "", 2),
        (3037000500, -3037000500, 0.1, 16_777_217.0, False, "B", 3),
        (-7, 2, -1.0, 2.0, True, "a", -3),
    ]
)


int_literals = st.sampled_from(["0", "1", "3", "-1", "10", "1000", "2147483648", "9223372036854775807"])
float_literals = st.sampled_from(["1e3", "2.5e0", "-0.5e0"])
columns = st.sampled_from(["a", "b", "x", "y"] * 3 + ["n"])
operands = st.one_of(columns, int_literals, float_literals)
arithmetic = st.sampled_from(["+", "-", "*", "/", "%", "&", "|"])
# every expression holds a column (an operator on two literals is DuckDB's, as are int32
# columns: both are generated, less often)
numbers = st.recursive(
    columns,
    lambda inner: st.one_of(
        st.tuples(inner, arithmetic, operands).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(operands, arithmetic, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(inner, arithmetic, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda e: f"(-{e})"),
        st.tuples(inner, st.sampled_from(["double", "bigint"])).map(lambda t: f"cast({t[0]} as {t[1]})"),
    ),
    max_leaves=5,
)
comparisons = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])
booleans = st.recursive(
    st.one_of(
        st.just("f"),
        st.tuples(numbers, comparisons, st.one_of(operands, numbers)).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(comparisons, st.sampled_from(["'a'", "'B'", "''"])).map(lambda t: f"(s {t[0]} {t[1]})"),
        st.tuples(
            st.sampled_from(["a", "x", "s", "f", "n", "(a + 1)"]), st.sampled_from(["is null", "is not null"])
        ).map(lambda t: f"({t[0]} {t[1]})"),
    ),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["and", "or"]), st.one_of(inner, st.sampled_from(["true", "false"]))).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        inner.map(lambda e: f"(not {e})"),
    ),
    max_leaves=4,
)
select_items = st.lists(
    st.one_of(st.sampled_from(["*", "a", "s", "x", "n", "f"]), numbers, booleans), min_size=1, max_size=3
)
queries = st.tuples(select_items, st.one_of(st.none(), booleans)).map(
    lambda t: (
        "select "
        + ", ".join(item if item in ("*",) else f"{item} as c{i}" for i, item in enumerate(t[0]))
        + " from source"
        + (f" where {t[1]}" if t[1] else "")
    )
)


def outcome(query: BatchQuery, batch: pa.RecordBatch):
    try:
        result = query.run(batch, "query")
    except ConfigError as err:
        return ("error", str(err))
    if result is None:
        return ("no rows",)
    return (
        "rows",
        [(f.name, str(f.type)) for f in result.schema],
        [[_comparable(v) for v in column.to_pylist()] for column in result.columns],
    )


def _comparable(value):
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and value == 0:
        return ("zero", math.copysign(1, value))
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=queries, values=rows)
def test_arrow_plan_matches_duckdb(query: str, values: list[tuple]) -> None:
    batch = batch_of(values)
    try:
        arrow = BatchQuery(query, "query")
        duckdb_only = BatchQuery(query, "query", arrow_kernels=False)
        expected_schema = duckdb_only.bind(SCHEMA, "query")
    except ConfigError:
        return  # a query DuckDB refuses to bind (e.g. an operator undefined for bool): not in scope
    assert arrow.bind(SCHEMA, "query") == expected_schema
    for data in (batch, EDGES, BIG):
        expected, got = outcome(duckdb_only, data), outcome(arrow, data)
        assert got == expected, query


@pytest.mark.parametrize(
    "query",
    [
        "select id, payload, id & 15 as bucket, cast((id * 31 + 7) % 1000 as double) / 1000 as score from source "
        "where id % 10 <> 3",
        "select *, id * 2 as twice from source where not (id > 100 or ratio is null)",
        "select s.id as key from source s where s.ratio >= -1.5e0 and id <> -3",
    ],
)
def test_simple_queries_compile(query: str) -> None:
    # a star passes payload through DuckDB, which gives fixed-size binary back as binary:
    # a column whose type DuckDB changes keeps the query on DuckDB, so payload is text here
    schema = pa.schema([("id", pa.int64()), ("payload", pa.string()), ("ratio", pa.float64())])
    assert BatchQuery(query, "query").arrow_plan(schema) is not None


def test_filter_conditions_compile() -> None:
    from airflow_provider_seatunnel_ckpt.transforms.filter import FilterTransform

    schema = pa.schema([("id", pa.int64()), ("payload", pa.binary(4))])
    batch = pa.RecordBatch.from_pydict({"id": list(range(10)), "payload": [b"abcd"] * 10}, schema=schema)
    transform = FilterTransform({"condition": "id % 3 == 1"})
    assert transform.output_schema(schema) == schema
    assert transform.process(batch, None).column("id").to_pylist() == [1, 4, 7]
    assert transform._query.arrow_plan(schema.append(pa.field("__st_row", pa.int64()))) is not None


@pytest.mark.parametrize(
    "query",
    [
        "select id from source order by id",  # a modifier
        "select count(*) from source",  # an aggregate
        "select ID from source",  # DuckDB's case-insensitive names
        "select n + 1 as m from source",  # int32 arithmetic (DuckDB's INTEGER overflows differently)
        "select id * 1.5 as d from source",  # a DECIMAL literal
        "select upper(s) as u from source",  # a function
        "select id from source where id in (1, 2)",
        "select 1 as one from source",
    ],
)
def test_other_queries_stay_on_duckdb(query: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32()), ("s", pa.string())])
    assert BatchQuery(query, "query").arrow_plan(schema) is None


@pytest.mark.parametrize(
    "query, values, column",
    [
        ("select x > 1 as c from source", [math.nan, 2.0], [True, True]),  # DuckDB: NaN above every number
        ("select a % b as c from source", [(7, 0), (7, 2)], [None, 1]),  # DuckDB: x % 0 is null
    ],
)
def test_values_the_engines_disagree_on_are_duckdbs(query: str, values: list, column: list) -> None:
    if isinstance(values[0], tuple):
        batch = pa.RecordBatch.from_pydict({"a": [v[0] for v in values], "b": [v[1] for v in values]})
    else:
        batch = pa.RecordBatch.from_pydict({"x": pa.array(values, pa.float64())})
    query_ = BatchQuery(query, "query")
    assert query_.arrow_plan(batch.schema) is not None
    assert query_.run(batch, "query").column(0).to_pylist() == column


def test_overflow_is_duckdbs_error() -> None:
    batch = pa.RecordBatch.from_pydict({"a": pa.array([INT64_MAX], pa.int64())})
    query = BatchQuery("select a + 1 as c from source", "transform[0].query")
    assert query.arrow_plan(batch.schema) is not None
    with pytest.raises(ConfigError, match=r"transform\[0\]\.query: .*Overflow in addition of INT64"):
        query.run(batch, "transform[0].query")


_JSON_TAG = {b"ARROW:extension:name": b"arrow.json", b"ARROW:extension:metadata": b""}


@pytest.mark.parametrize(
    "query, batch",
    [
        # a column alias list renames the table's columns
        ("select b from source s(b, a) where a > 15", pa.RecordBatch.from_pydict({"a": [1, 2], "b": [10, 20]})),
        # DuckDB's names are case-insensitive: it renames the second of A/a and binds a to A
        (
            "select a + 1 as c from source where A > 1",
            pa.RecordBatch.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["A", "a"]),
        ),
        # an extension type: DuckDB reads arrow.json as JSON
        (
            "select a from source where s = 'a'",
            pa.RecordBatch.from_arrays(
                [pa.array(["x", "a"]), pa.array([1, 2])],
                schema=pa.schema([pa.field("s", pa.string(), metadata=_JSON_TAG), pa.field("a", pa.int64())]),
            ),
        ),
        # an interval comes back from DuckDB without its nanoseconds, in the same Arrow type
        (
            "select i from source",
            pa.RecordBatch.from_arrays(
                [pa.array([pa.MonthDayNano([0, 0, 1])], pa.month_day_nano_interval())], names=["i"]
            ),
        ),
        # after an alias, source.a is field a of the struct column named source
        (
            "select source.a from source s",
            pa.RecordBatch.from_arrays(
                [pa.array([1, 2]), pa.StructArray.from_arrays([pa.array([100, 200])], names=["a"])],
                names=["a", "source"],
            ),
        ),
        # a type Arrow's kernels cannot even make an empty table of
        (
            "select a from source",
            pa.RecordBatch.from_arrays(
                [pa.UnionArray.from_sparse(pa.array([0], pa.int8()), [pa.array([1])]), pa.array([1])], names=["u", "a"]
            ),
        ),
    ],
)
def test_inputs_found_in_review_match_duckdb(query: str, batch: pa.RecordBatch) -> None:
    assert outcome(BatchQuery(query, "query"), batch) == outcome(BatchQuery(query, "query", arrow_kernels=False), batch)


def test_a_plan_is_not_reused_for_a_schema_differing_in_an_extension_type() -> None:
    plain = pa.RecordBatch.from_pydict({"s": ["x", "a"], "a": [1, 2]})
    tagged = pa.RecordBatch.from_arrays(
        plain.columns, schema=pa.schema([pa.field("s", pa.string(), metadata=_JSON_TAG), pa.field("a", pa.int64())])
    )
    query = BatchQuery("select a from source where s = 'a'", "query")
    assert query.run(plain, "query").column(0).to_pylist() == [2]
    with pytest.raises(ConfigError, match="Malformed JSON"):
        query.run(tagged, "query")


def test_the_benchmark_query_compiles_on_the_sequence_sources_batches() -> None:
    from airflow_provider_seatunnel_ckpt.connectors.sequence import SequenceSource

    schema = SequenceSource({"rows": 10, "payload_bytes": 100}).produced_schema()
    query = (
        "select id, payload, id & 15 as bucket, cast((id * 31 + 7) % 1000 as double) / 1000 as score "
        "from source where id % 10 <> 3"
    )
    assert BatchQuery(query, "query").arrow_plan(schema) is not None
