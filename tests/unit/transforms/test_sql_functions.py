"""SeaTunnel's SQL function names on the ``Sql`` transform (sql/functions.py).

Each case runs through the real transform on a real Arrow batch. The inputs are the
examples of SeaTunnel's docs/en/transform-v2/sql-functions.md and the rows of its e2e
jobs (seatunnel-transforms-v2-e2e .../sql_transform/func_*.conf); the expected values are
those jobs' assertions, or what SeaTunnel's Java code (ZetaSQLFunction and
functions/*Function.java) returns for the documented example.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_transform
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.sql.batch_query import BatchQuery

# func_string.conf's row, plus a boolean
STRINGS = pa.record_batch(
    {
        "id": pa.array([1], pa.int32()),
        "name": ["Joy Ding"],
        "c1": ["A"],
        "c2": ["b"],
        "c4": ["&^^$wef9"],
        "c5": pa.array([98], pa.int32()),
        "c6": ["0037"],
        "c7": ["7"],
        "c8": ["*Joy_Ding@s.com*"],
        "c9": ["Joy_WWWDing@s.com"],
        "c10": ["2020-10-01"],
        "c11": pa.array([dt.datetime(2022, 12, 12, 23, 34, 45)]),
        "flag": [True],
        "missing": pa.array([None], pa.string()),
    }
)
# func_numeric.conf's row
NUMBERS = pa.record_batch(
    {
        "id": pa.array([1], pa.int32()),
        "c1": [-120.72],
        "c2": [0.0],
        "c3": [3.1415926],
        "c4": pa.array([13], pa.int32()),
        "c5": [13.2],
        "c6": [1324.252],
        "c7": pa.array([180], pa.int32()),
        "c8": [10.24],
        "c9": [120.72124],
        "c10": [2.0],
    }
)
# func_datetime.conf's row
TIMES = pa.record_batch(
    {
        "c1": pa.array([dt.datetime(2021, 4, 15, 13, 34, 45)]),
        "c2": pa.array([dt.datetime(2022, 1, 23, 12, 34, 56)]),
        "c3": pa.array([dt.datetime(2021, 4, 15, 13, 34, 45, 235000)]),
        "c4": pa.array([dt.datetime(2021, 4, 8, 13, 34, 45, 235000)]),
        "c5": ["2021-04-08 13:34:45.235"],
        "c6": ["2021-04-08"],
        "c7": ["2021-04-08 13:34:45.235"],
        "unixtime": pa.array([1672502400], pa.int64()),
    }
)


def run(query: str, batch: pa.RecordBatch) -> pa.RecordBatch:
    transform = load_transform({"plugin_name": "Sql", "query": query}, "transform[0]")
    assert transform.output_schema(batch.schema) is not None  # binds on the driver as a job does
    return transform.process(batch, None)


def value(expression: str, batch: pa.RecordBatch) -> Any:
    return run(f"select {expression} as v from fake", batch).column("v")[0].as_py()


def check(expression: str, batch: pa.RecordBatch, expected: Any) -> None:
    got = value(expression, batch)
    if isinstance(expected, float) and not isinstance(got, Decimal):
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), expression
    else:
        assert got == expected, expression


# --- string functions: (expression, expected) --------------------------------------------------

STRING_CASES = [
    ("ascii('Hi')", 72),
    ("ascii(c1)", 65),
    ("ascii(c2)", 98),
    ("bit_length(c4)", 64),
    ("char_length(name)", 8),
    ("length(c4)", 8),
    ("octet_length(c4)", 8),
    ("octet_length('Ding é')", 7),  # UTF-8 bytes
    ("chr(65)", "A"),
    ("chr(c5)", "b"),
    ("concat(name, '_')", "Joy Ding_"),
    ("concat(c1, id, '!')", "A1!"),
    ("concat(missing, 'x')", "x"),
    ("concat_ws(',', name, '_')", "Joy Ding,_"),
    ("concat_ws(',', 'a', missing, 'b')", "a,b"),
    ("hextoraw(c6)", "7"),
    ("hextoraw('00480069')", "Hi"),
    ("rawtohex(c7)", "0037"),
    ("rawtohex('Hi')", "00480069"),
    ("rawtohex('é')", "00e9"),
    ("rawtohex('😀')", "d83dde00"),  # a UTF-16 surrogate pair, as Java's chars
    ("rawtohex('7'::BLOB)", "37"),
    ("insert(name, 2, 2, '**')", "J** Ding"),
    ("insert(name, 1, 1, ' ')", " oy Ding"),
    ("insert(name, 20, 1, 'x')", "Joy Ding"),
    ("insert(name, 8, 5, '!!')", "Joy Din!!"),
    ("lower(name)", "joy ding"),
    ("lcase(name)", "joy ding"),
    ("upper(name)", "JOY DING"),
    ("ucase(name)", "JOY DING"),
    ("left(name, 3)", "Joy"),
    ("right(name, 4)", "Ding"),
    ("locate('.', c8)", 12),
    ("locate('o', c8, 4)", 14),
    ("locate('o', c8, -1)", 14),
    ("locate('o', c8, -4)", 3),
    ("locate('x', name)", 0),
    ("locate('.', missing)", 0),
    ("instr(c8, 'o')", 3),
    ("instr(c8, 'o', 4)", 14),
    ("instr(c8, 'o', -1)", 14),
    ("position('D' in name)", 5),
    ("lpad(name, 10, '*')", "**Joy Ding"),
    ("rpad(name, 10, '*')", "Joy Ding**"),
    ("lpad('ab', 4)", "  ab"),
    ("rpad('ab', 4)", "ab  "),
    ("lpad(name, 3, '*')", "Joy"),
    ("ltrim(c8, '*')", "Joy_Ding@s.com*"),
    ("rtrim(c8, '*')", "*Joy_Ding@s.com"),
    ("trim(c8, '*')", "Joy_Ding@s.com"),
    ("ltrim('  x ')", "x "),
    ("regexp_replace('Hello    World', ' +', ' ')", "Hello World"),
    ("regexp_replace(c9, 'w+', 'W', 'i')", "Joy_WDing@s.com"),
    ("regexp_like('Hello    World', '[A-Z ]*', 'i')", True),
    ("regexp_like(name, '[A-Z ]*', 'i')", True),
    ("regexp_like(name, 'ding')", False),
    ("regexp_like(name, 'ding', 'i')", True),
    ("regexp_like(name, 'ding', 'ic')", False),  # the last of i and c wins
    ("regexp_like(e'a\\nb', 'a.b')", False),
    ("regexp_like(e'a\\nb', 'a.b', 'n')", True),  # n: dot matches \\n
    ("regexp_like(e'x\\nab', '^ab')", False),
    ("regexp_like(e'x\\nab', '^ab', 'm')", True),
    ("regexp_like(missing, 'a')", None),
    ("regexp_substr('2020-10-01', '\\d{4}')", "2020"),
    ("regexp_substr(c10, '\\d{4}')", "2020"),
    ("regexp_substr('2020-10-01', '(\\d{4})-(\\d{2})-(\\d{2})', 1, 1, NULL, 2)", "10"),
    ("regexp_substr(c10, '\\d+', 1, 3, NULL, 0)", "01"),
    ("regexp_substr(c10, '\\d+', 6, 1, NULL, NULL)", "10"),
    ("regexp_substr(name, '\\d')", None),
    ("repeat(name || ' ', 3)", "Joy Ding Joy Ding Joy Ding "),
    ("replace(name, ' ')", "JoyDing"),
    ("replace(name, ' ', '_')", "Joy_Ding"),
    ("soundex(name)", "J352"),
    ("soundex('Robert')", "R163"),
    ("soundex('Rupert')", "R163"),
    ("soundex('Tymczak')", "T522"),
    ("soundex('Ashcraft')", "A261"),
    ("soundex('Lloyd')", "L300"),
    ("soundex('123')", "0000"),
    ("soundex(missing)", None),
    ("name || space(3)", "Joy Ding   "),
    ("space(0)", ""),
    ("substring('[Hello]', 2)", "Hello]"),
    ("substring('hour', 3, 2)", "ur"),
    ("substr(name, 1, 3)", "Joy"),
    ("to_char(id)", "1"),
    ("to_char(flag)", "true"),
    ("to_char(c11, 'yyyy-MM-dd')", "2022-12-12"),
    ("to_char(c11, 'yyyy-MM-dd HH:mm:ss')", "2022-12-12 23:34:45"),
    ("to_char(id, 'yyyy')", "1"),
    ("translate('Hello world', 'eo', 'EO')", "HEllO wOrld"),
    ("translate(name, 'ing', 'ING')", "Joy DING"),
]


@pytest.mark.parametrize("expression, expected", STRING_CASES)
def test_string_functions(expression, expected):
    check(expression, STRINGS, expected)


# --- numeric functions ----------------------------------------------------------------------------

NUMERIC_CASES = [
    ("abs(c1)", 120.72),
    ("acos(id)", 0.0),
    ("asin(c2)", 0.0),
    ("atan(c2)", 0.0),
    ("cos(c2)", 1.0),
    ("cosh(c2)", 1.0),
    ("cot(1.0)", 1 / math.tan(1.0)),
    ("sin(c2)", 0.0),
    ("sinh(c2)", 0.0),
    ("tan(c3/4)", 0.9999999732051038),
    ("tanh(c2)", 0.0),
    ("atan2(1.0, 1.0)", math.pi / 4),
    # SeaTunnel's: a literal with a point is a double, mod by a double is the remainder of
    # the shortest decimal texts (BigDecimal.valueOf), ceil/floor/sign are ints
    ("mod(c4, 5)", 3),
    ("mod(c4, 5.4)", 2.2),
    ("mod(c5, c6)", 13.2),
    ("mod(c1, c5)", -1.92),
    ("abs(-10.3)", 10.3),
    ("ceil(c5)", 14.0),
    ("ceiling(c5)", 14.0),
    ("exp(c10)", 7.38905609893065),
    ("floor(c5)", 13.0),
    ("ln(c5)", 2.580216829592325),
    ("log(10, c5)", 1.1205739312058498),
    ("log10(c6)", 3.1219706375172507),
    ("radians(c7)", 3.141592653589793),
    ("sqrt(c8)", 3.2),
    ("pi()", 3.141592653589793),
    ("power(c5, 2)", 174.23999999999998),
    ("rand(42)", 0.7275636800328681),
    ("random(42)", 0.7275636800328681),  # new java.util.Random(42).nextDouble()
    ("rand(-7)", 0.2691218093260761),
    ("round(c9, 2)", 120.72),
    ("sign(c1)", -1),
    ("trunc(c9, 2)", 120.72),
    ("truncate(c9, 2)", 120.72),
    ("truncate(-c5)", -13.0),
]


@pytest.mark.parametrize("expression, expected", NUMERIC_CASES)
def test_numeric_functions(expression, expected):
    check(expression, NUMBERS, expected)


def test_rand_without_a_seed_is_a_fresh_double_in_0_1_per_row():
    batch = pa.record_batch({"id": pa.array(range(200), pa.int64())})
    values = run("select rand() as a, random() as b from fake", batch).to_pydict()
    assert all(0 <= v < 1 for v in values["a"] + values["b"])
    assert len(set(values["a"])) > 190


# --- date and time functions ----------------------------------------------------------------------

T = dt.datetime
DATETIME_CASES = [
    ("dateadd(c1, 1)", T(2021, 4, 16, 13, 34, 45)),
    ("dateadd(c1, 40, 'DAY')", T(2021, 5, 25, 13, 34, 45)),
    ("dateadd(c1, 2, 'YEAR')", T(2023, 4, 15, 13, 34, 45)),
    ("dateadd(c1, 10, 'MONTH')", T(2022, 2, 15, 13, 34, 45)),
    ("dateadd(c1, 13, 'HOUR')", T(2021, 4, 16, 2, 34, 45)),
    ("dateadd(c1, 40, 'MINUTE')", T(2021, 4, 15, 14, 14, 45)),
    ("dateadd(c1, 30, 'SECOND')", T(2021, 4, 15, 13, 35, 15)),
    ("dateadd(c1, -2, 'week')", T(2021, 4, 1, 13, 34, 45)),
    ("timestampadd(c1, 5, 'MILLISECOND')", T(2021, 4, 15, 13, 34, 45, 5000)),
    ("dateadd(date '2021-01-31', 1, 'MONTH')", T(2021, 2, 28)),
    ("datediff(c1, c2)", 283),
    ("datediff(c1, c2, 'DAY')", 283),
    ("datediff(c1, c2, 'YEAR')", 0),
    ("datediff(c1, c2, 'MONTH')", 9),
    ("datediff(c1, c2, 'HOUR')", 6791),
    ("datediff(c1, c2, 'MINUTE')", 407460),
    ("datediff(c1, c2, 'SECOND')", 24447611),
    ("datediff(c1, c2, 'WEEK')", 40),
    ("datediff(c1, c1 + interval 1 second + interval 500 millisecond, 'MILLISECOND')", 1500),
    # Period.between: 2 years, 1 month and 30 days; the months beyond whole years
    ("datediff(date '2021-01-31', date '2023-03-30', 'YEAR')", 2),
    ("datediff(date '2021-01-31', date '2023-03-30', 'MONTH')", 1),
    ("datediff(c2, c1, 'MONTH')", -9),
    ("datediff(time '10:00', time '12:30', 'MINUTE')", 150),
    ("date_trunc('YEAR', c3)", T(2021, 1, 1)),
    ("date_trunc('MONTH', c3)", T(2021, 4, 1)),
    ("date_trunc('DAY', c3)", T(2021, 4, 15)),
    ("date_trunc('HOUR', c3)", T(2021, 4, 15, 13)),
    ("date_trunc('MINUTE', c3)", T(2021, 4, 15, 13, 34)),
    ("date_trunc('SECOND', c3)", T(2021, 4, 15, 13, 34, 45)),
    # SeaTunnel's order (func_datetime.conf), any case, DAY without a unit
    ("date_trunc(c3, 'YEAR')", T(2021, 1, 1)),
    ("date_trunc(c3, 'month')", T(2021, 4, 1)),
    ("date_trunc(c3, 'SECOND')", T(2021, 4, 15, 13, 34, 45)),
    ("date_trunc(c3)", T(2021, 4, 15)),
    ("date_trunc(date '2021-04-15', 'MONTH')", T(2021, 4, 1)),
    ("dayname(c3)", "Thursday"),
    ("day_of_month(c3)", 15),
    ("day_of_week(c3)", 4),
    ("day_of_year(c3)", 105),
    ("day_of_week(date '2021-04-18')", 7),  # Sunday
    ("extract(YEAR FROM c3)", 2021),
    ("extract(MONTH FROM c3)", 4),
    ("extract(DAY FROM c3)", 15),
    ("extract(HOUR FROM c3)", 13),
    ("extract(MINUTE FROM c3)", 34),
    ("extract(SECOND FROM c3)", 45),
    ("extract(DAYOFYEAR FROM c3)", 105),
    # SeaTunnel's: the milliseconds of the second, ISO's day of the week (7 for Sunday)
    ("extract(MILLISECOND FROM c4)", 235),
    ("extract(DAYOFWEEK FROM date '2021-04-18')", 7),
    # WeekFields.ISO.weekOfYear() + 1 (func_datetime.conf: 15); the days before the
    # year's first week with 4 days are week 0 (+ 1), late December stays in its year
    ("week(c4)", 15),
    ("week(date '2021-01-01')", 1),
    ("week(date '2021-01-04')", 2),
    ("week(date '2020-01-01')", 2),
    ("week(date '2021-12-31')", 53),
    ("formatdatetime(c4, 'yyyy-MM-dd HH:mm:ss.S')", "2021-04-08 13:34:45.2"),
    ("formatdatetime(c4, 'yyyy-MM-dd')", "2021-04-08"),
    ("formatdatetime(c4, 'HH:mm:ss.SSS')", "13:34:45.235"),
    ("formatdatetime(c4, 'ss.SS|SSSS|SSSSSS|SSSSSSSSS')", "45.23|2350|235000|235000000"),
    (
        "formatdatetime(c4, '''at'' h:mm a, EEEE d MMM yy ''o''''clock'' 100%')",
        "at 1:34 PM, Thursday 8 Apr 21 o'clock 100%",
    ),
    ("formatdatetime(c4, 'EEE, d/M/yyyy MMMM DDD')", "Thu, 8/4/2021 April 098"),
    ("formatdatetime(time '13:34:45', 'HH:mm:ss')", "13:34:45"),
    ("hour(c4)", 13),
    ("minute(c4)", 34),
    ("month(c4)", 4),
    ("monthname(c4)", "April"),
    ("parsedatetime(c5, 'yyyy-MM-dd HH:mm:ss.SSS')", T(2021, 4, 8, 13, 34, 45, 235000)),
    ("parsedatetime('2021-04-08 13:34:45', 'yyyy-MM-dd HH:mm:ss')", T(2021, 4, 8, 13, 34, 45)),
    ("to_date(c6, 'yyyy-MM-dd')", dt.date(2021, 4, 8)),  # a year, no minutes: a date (ZetaSQLType)
    ("to_date('13:34', 'HH:mm')", dt.time(13, 34)),  # minutes, no year: a time
    ("is_date('2021-04-08 13:34:45', 'yyyy-MM-dd HH:mm:ss')", True),
    ("is_date('2021-04-08 1x:34:45', 'yyyy-MM-dd HH:mm:ss')", False),
    ("is_date('2021-13-01', 'yyyy-MM-dd')", False),
    ("is_date('13', 'HH')", False),  # neither yy nor mm in the pattern
    (
        "case when c7 is not null and is_date(c7, 'yyyy-MM-dd HH:mm:ss.SSS') "
        "then to_date(c7, 'yyyy-MM-dd HH:mm:ss.SSS') else null end",
        T(2021, 4, 8, 13, 34, 45, 235000),
    ),
    ("quarter(c4)", 2),
    ("second(c4)", 45),
    ("year(c4)", 2021),
    ("from_unixtime(1672502400, 'yyyy-MM-dd HH:mm:ss', 'UTC+6')", "2022-12-31 22:00:00"),
    ("from_unixtime(unixtime, 'yyyy-MM-dd HH:mm:ss', 'UTC+8')", "2023-01-01 00:00:00"),
    ("from_unixtime(unixtime, 'HH:mm', '-05:30')", "10:30"),
    ("from_unixtime(unixtime, 'HH:mm', 'Z')", "16:00"),
    ("from_unixtime(unixtime, 'yyyy-MM-dd HH:mm', 'Asia/Kolkata')", "2022-12-31 21:30"),
    # no zone: the session's time zone, as SeaTunnel's the JVM's
    (
        "from_unixtime(unixtime, 'yyyy-MM-dd HH:mm:ss') = from_unixtime(unixtime, 'yyyy-MM-dd HH:mm:ss', "
        "current_setting('TimeZone'))",
        True,
    ),
]


@pytest.mark.parametrize("expression, expected", DATETIME_CASES)
def test_date_and_time_functions(expression, expected):
    check(expression, TIMES, expected)


def test_current_date_and_time_are_there():
    row = run(
        "select current_date as cd, current_timestamp as ct, now() as n, current_time as t from fake", TIMES
    ).to_pylist()[0]
    assert row["cd"] is not None and row["ct"] is not None and row["n"] is not None and row["t"] is not None
    # SeaTunnel's LocalDateTime.now(): a timestamp without a zone (DuckDB's are TIMESTAMPTZ)
    types = run("select current_timestamp as ct, now() as n from fake", TIMES).schema
    assert types.field("ct").type == pa.timestamp("us") and types.field("n").type == pa.timestamp("us")


# --- system functions -------------------------------------------------------------------------------

SYSTEM = pa.record_batch(
    {
        "id": pa.array([1], pa.int64()),
        "name": ["Joy Ding"],
        "c1": ["12.4"],
        "c2": pa.array([dt.datetime(2012, 12, 21, 12, 34, 56)]),
        "c3": pa.array([None], pa.string()),
    }
)
SYSTEM_CASES = [
    ("cast(id as STRING)", "1"),
    ("cast(id as INT)", 1),
    ("cast(id as LONG)", 1),
    ("cast(id as DOUBLE)", 1.0),
    ("cast(c1 as double)", 12.4),
    ("cast(c1 as DECIMAL(10,2))", Decimal("12.40")),
    ("cast(c2 as DATE)", dt.date(2012, 12, 21)),
    ("cast(name as bytes)", b"Joy Ding"),
    ("cast(id as byte)", 1),
    ("coalesce(c3, 'Unknown')", "Unknown"),
    ("ifnull(c3, 'Unknown')", "Unknown"),
    ("ifnull(nullif(name, 'Joy Ding'), 'NULL')", "NULL"),
    ("nullif(name, 'Joy Ding_')", "Joy Ding"),
    ("case when name in ('Joy Ding') then 1 else 0 end", 1),
]


@pytest.mark.parametrize("expression, expected", SYSTEM_CASES)
def test_system_functions(expression, expected):
    check(expression, SYSTEM, expected)


# SeaTunnel's casts of whole numbers (func_system.conf's c4, c5, c6), which DuckDB refuses
WHOLE = pa.record_batch(
    {
        "c4": pa.array([1687747869032], pa.int64()),
        "c5": pa.array([20230625], pa.int32()),
        "c6": pa.array([235109], pa.int32()),
        "early": pa.array([5], pa.int16()),
        "text": ["1687747869032"],
    }
)


@pytest.mark.parametrize("arrow_kernels", [True, False])
def test_integer_columns_cast_to_dates_and_times_as_seatunnel_reads_them(arrow_kernels: bool) -> None:
    query = BatchQuery(
        "select cast(c4 as timestamp) as ts, cast(c5 as date) as d, cast(c6 as time) as t, "
        "cast(early as time) as t2, date_trunc('day', CAST(c4 AS TIMESTAMP)) as day, "
        "cast(c5 as varchar) as s from fake",
        "query",
        arrow_kernels=arrow_kernels,
    )
    assert query.bind(WHOLE.schema, "query").field("ts").type == pa.timestamp("us")
    assert query.run(WHOLE, "query").to_pylist() == [
        {
            "ts": dt.datetime(2023, 6, 26, 2, 51, 9, 32000),
            "d": dt.date(2023, 6, 25),
            "t": dt.time(23, 51, 9),
            "t2": dt.time(0, 0, 5),
            "day": dt.datetime(2023, 6, 26),
            "s": "20230625",
        }
    ]


@pytest.mark.parametrize(
    "expression, expected",
    [
        # SeaTunnel computes the operand, then casts its value (ZetaSQLFunction.executeCastExpr)
        ("cast(c4 + 1 as timestamp)", dt.datetime(2023, 6, 26, 2, 51, 9, 33000)),  # epoch milliseconds
        ("cast(1687747869032 as timestamp)", dt.datetime(2023, 6, 26, 2, 51, 9, 32000)),
        ("cast(c4 - 86400000 as datetime)", dt.datetime(2023, 6, 25, 2, 51, 9, 32000)),
        ("(c4 * 1)::timestamp", dt.datetime(2023, 6, 26, 2, 51, 9, 32000)),
        ("cast((c5 + 1) as date)", dt.date(2023, 6, 26)),  # yyyyMMdd digits
        ("cast(c6 - 100 as time)", dt.time(23, 50, 9)),  # HHmmss digits
        ("cast(early * 2 as time)", dt.time(0, 0, 10)),
        ("mod(13, 5.4 * 2)", 2.2),  # by a double expression: BigDecimal's remainder (10.8), not 2.1999999999999993
    ],
)
def test_a_cast_of_an_integer_expression_reads_it_seatunnels_way(expression: str, expected: Any) -> None:
    assert value(expression, WHOLE) == expected


def test_other_casts_to_dates_and_times_stay_duckdbs() -> None:
    # a text casts as DuckDB casts it (an ISO text); a text of digits is no integer
    assert value("cast('2023-06-25 01:02:03' as timestamp)", WHOLE) == dt.datetime(2023, 6, 25, 1, 2, 3)
    with pytest.raises(ConfigError, match="Conversion Error"):
        value("cast(text as timestamp)", WHOLE)
    assert value("try_cast(c4 as timestamp)", WHOLE) is None  # DuckDB's try_cast, no SeaTunnel reading


def test_des_functions_are_seatunnels_udfs():
    # the cipher text as `openssl enc -des-cbc -K 3132333435363738 -iv 3132333435363738 -base64`
    # gives it for "Joy Ding" (SeaTunnel's DESUtil: the password's first 8 bytes, IV 12345678)
    assert value("des_encrypt('1234567890', name)", STRINGS) == "+jXI7ngL1UzB8yoBYEVgoQ=="
    assert value("des_decrypt('1234567890', des_encrypt('1234567890', name))", STRINGS) == "Joy Ding"
    assert value("des_decrypt('1234567890', 'not cipher text')", STRINGS) == "not cipher text"  # as SeaTunnel
    assert value("des_encrypt('1234567890', missing)", STRINGS) is None
    with pytest.raises(ConfigError, match="at least 8 characters"):
        value("des_encrypt('short', name)", STRINGS)


def test_char_is_seatunnels_function_and_stays_a_type_in_a_cast():
    assert value("char(c5)", STRINGS) == "b"
    assert value("cast(c5 as char(3))", STRINGS) == "98"


def test_uuid_is_a_text_uuid():
    out = run("select uuid() as u from fake", SYSTEM)
    assert out.schema.field("u").type == pa.string() and len(out.column("u")[0].as_py()) == 36


# --- types: SeaTunnel's where DuckDB has no function of the name -------------------------------------


@pytest.mark.parametrize(
    "expression, kind",
    [
        ("locate('.', c8)", pa.int32()),
        ("instr(c8, 'o', 2)", pa.int32()),
        ("regexp_like(name, 'J')", pa.bool_()),
        ("to_char(id)", pa.string()),
        ("soundex(name)", pa.string()),
    ],
)
def test_result_types_are_seatunnels(expression, kind):
    assert run(f"select {expression} as v from fake", STRINGS).schema.field("v").type == kind


@pytest.mark.parametrize(
    "expression, kind",
    [
        ("datediff(c1, c2, 'HOUR')", pa.int64()),
        ("day_of_week(c3)", pa.int32()),
        ("day_of_year(c3)", pa.int32()),
        ("extract(YEAR FROM c3)", pa.int32()),
        ("extract(MILLISECOND FROM c3)", pa.int32()),
        ("hour(c3)", pa.int32()),
        ("year(c3)", pa.int32()),
        ("quarter(c3)", pa.int32()),
        ("week(c3)", pa.int32()),
        ("date_part('year', c3)", pa.int64()),  # DuckDB's own function, by its name, stays DuckDB's
        ("dateadd(c1, 1, 'DAY')", pa.timestamp("us")),
        ("formatdatetime(c4, 'yyyy')", pa.string()),
    ],
)
def test_date_result_types_are_seatunnels(expression, kind):
    assert run(f"select {expression} as v from fake", TIMES).schema.field("v").type == kind


@pytest.mark.parametrize(
    "expression, kind",
    [
        ("abs(-10.3)", pa.float64()),
        ("1.5 + c4", pa.float64()),
        ("cast(1.5 as decimal(4, 2))", pa.decimal128(4, 2)),
        ("mod(c4, 5.4)", pa.float64()),
        ("mod(c4, 5)", pa.int32()),
        ("ceil(c5)", pa.int32()),
        ("floor(c5)", pa.int32()),
        ("sign(c1)", pa.int32()),
        ("c4 * 2", pa.int32()),
    ],
)
def test_numeric_result_types_are_seatunnels(expression, kind):
    assert run(f"select {expression} as v from fake", NUMBERS).schema.field("v").type == kind


def test_small_integer_arithmetic_gives_an_int_as_seatunnel():
    small = pa.record_batch({"t": pa.array([11], pa.int8()), "s": pa.array([23], pa.int16())})
    out = run("select t + 3 as a, s * 2 as b, t - s as c, t as d from fake", small)
    assert out.to_pylist() == [{"a": 14, "b": 46, "c": -12, "d": 11}]
    assert [f.type for f in out.schema] == [pa.int32(), pa.int32(), pa.int32(), pa.int8()]


def test_names_in_backticks_are_quoted_names_and_literals_stay_as_written():
    # SeaTunnel's func_system.conf: name as `apply` (apply is a keyword)
    out = run('select name as `apply`, `id`, \'`x`\' as s, "c1" as "a`b" from fake', STRINGS)
    assert out.schema.names == ["apply", "id", "s", "a`b"]
    assert out.to_pylist() == [{"apply": "Joy Ding", "id": 1, "s": "`x`", "a`b": "A"}]


# --- DuckDB's own call shapes keep DuckDB's meaning ---------------------------------------------------


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("instr(missing, 'a')", None),  # DuckDB's instr; SeaTunnel's 3-argument form gives 0
        ("lpad('ab', 6, 'xy')", "xyxyab"),  # DuckDB repeats the whole padding
        ("replace(name, 'Ding', 'D')", "Joy D"),
        ("octet_length('ab'::BLOB)", 2),
        ("datediff('month', timestamp '2021-04-15 10:00', timestamp '2023-06-01')", 26),  # unit boundaries, unit first
        ("datediff('hour', time '10:00', time '12:30')", 2),
        ("datediff('day', date '2021-01-01', date '2021-03-01')", 59),
        ("datediff('day', timestamptz '2021-01-01 00:00:00+00', timestamptz '2021-01-03 00:00:00+00')", 2),
        ("typeof(datediff('day', date '2021-01-01', date '2021-03-01'))", "BIGINT"),
    ],
)
def test_duckdbs_own_forms_are_unchanged(expression, expected):
    check(expression, STRINGS, expected)


# --- errors, as one line naming the option -----------------------------------------------------------


@pytest.mark.parametrize(
    "expression, batch, message",
    [
        ("dateadd(c1, 1, 'FORTNIGHT')", TIMES, "dateadd: unsupported unit FORTNIGHT"),
        ("datediff(c1, c2, 'DECADE')", TIMES, "datediff: unsupported unit DECADE"),
        ("regexp_like(name, 'a', 'x')", STRINGS, "regexp flags x: SeaTunnel allows only i, c, n and m"),
        (
            "formatdatetime(c4, 'yyyy VV')",
            TIMES,
            "formatdatetime: the date-time pattern yyyy VV has VV, which is not supported",
        ),
        ("formatdatetime(c4, 'yyyy ''T')", TIMES, "has an unterminated quote"),
        ("to_date(c6, 'yyyy-MM-dd SS')", TIMES, "to_date: the date-time pattern yyyy-MM-dd SS has SS"),
        ("formatdatetime(c5, 'yyyy')", TIMES, "formatdatetime: VARCHAR is not a date, time or timestamp"),
        ("hextoraw('003')", STRINGS, "hextoraw: the text length 3 is not a multiple of 4"),
    ],
)
def test_errors_name_the_function_and_the_option(expression, batch, message):
    with pytest.raises(ConfigError) as err:
        value(expression, batch)
    assert str(err.value).startswith("transform[0].query: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_names_duckdb_cannot_parse_fail_at_load():
    with pytest.raises(ConfigError, match=r"transform\[0\]\.query: Parser Error"):
        load_transform({"plugin_name": "Sql", "query": "select position('a', name) as c from fake"}, "transform[0]")


# --- the Arrow fast path and the pass-through leave the functions to DuckDB --------------------------


@pytest.mark.parametrize(
    "query",
    [
        "select id, locate('o', name) as p from fake where regexp_like(name, 'ding', 'i')",
        "select id + 1 as n, name from fake where insert(name, 1, 1, 'x') = 'xoy Ding'",
        "select * from fake where day_of_week(c11) = 1",
        "select id, cast(name as bytes) as b from fake",
    ],
)
def test_the_arrow_plan_leaves_seatunnel_functions_to_duckdb(query):
    batch = STRINGS
    assert BatchQuery(query, "query").arrow_plan(batch.schema) is None
    assert run(query, batch).num_rows == 1


def test_a_wide_column_passed_through_next_to_a_function():
    batch = pa.record_batch({"id": pa.array(range(4), pa.int64()), "name": ["a.b", "ab", None, "x.y.z"]})
    out = run("select name, locate('.', name) as p, soundex(name) as s from fake where id <> 1", batch)
    assert out.to_pylist() == [
        {"name": "a.b", "p": 2, "s": "A100"},
        {"name": None, "p": 0, "s": None},
        {"name": "x.y.z", "p": 2, "s": "X200"},
    ]


def test_filter_conditions_have_the_functions_too():
    condition = "regexp_like(name, 'DING', 'i') and locate('J', name) = 1"
    transform = load_transform({"plugin_name": "Filter", "condition": condition}, "transform[0]")
    batch = pa.record_batch({"id": pa.array([1, 2], pa.int64()), "name": ["Joy Ding", "May Ding"]})
    assert transform.process(batch, None).to_pylist() == [{"id": 1, "name": "Joy Ding"}]


def test_every_macro_installs_alone_or_all_together():
    import duckdb

    from airflow_provider_seatunnel_ckpt.sql.batch_query import _CONNECTION_CONFIG
    from airflow_provider_seatunnel_ckpt.sql.functions import MACROS, install

    install(duckdb.connect(config=_CONNECTION_CONFIG))
    for name, _ in MACROS:  # only what a query calls is installed: each with the helpers it needs
        install(duckdb.connect(config=_CONNECTION_CONFIG), f"select {name}(x) from t")
