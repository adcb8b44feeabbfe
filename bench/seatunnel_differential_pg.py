"""SeaTunnel's PostgreSQL Jdbc job files in the differential test, on a real PostgreSQL.

bench/seatunnel_differential.py compares the files that need no server. This module adds
those whose one server is PostgreSQL reached through Jdbc, as SeaTunnel's own tests run
them: their url names a container ``postgresql:5432``, database ``test``, user and
password ``test``. Selected: every source Jdbc on PostgreSQL or FakeSource (its rows
pinned as in the main harness), every sink Jdbc on PostgreSQL or one that keeps no rows
(Assert, Console, InMemory) or LocalFile.

Each engine run gets a fresh database laid out as SeaTunnel's JdbcPostgresIT lays out its
container's (``lay_out``): PostGIS, ``pg_e2e_source_table`` with 1,000 rows of every column
kind the jobs read (numbers, text, dates, geometries and a geography, json, jsonb, xml;
made here, each uuid derived from the row's number so that both engines read the same
rows) and the empty ``pg_e2e_sink_table`` (geometries as varchar there). The Jdbc sources
and sinks stay as written, their urls pointed at the server; every other sink is captured
as parquet as in the main harness. After the run each Jdbc sink's table is read back: its
columns with the types PostgreSQL gives them, its rows in PostgreSQL's own text form
(``COPY ... TO STDOUT``). The tables' rows are compared as multisets, and so are the
captured rows. Needs PostGIS beside the server binaries (Debian: postgresql-15-postgis-3).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.seatunnel_differential import (
    capture_document,
    compare,
    entries,
    hocon,
    read_rows,
    run_side,
    volatile_columns,
)

#: the server SeaTunnel's job files name (its tests' container) and what replaces it
SEATUNNEL_SERVER = "jdbc:postgresql://postgresql:5432/"
DATABASE, USER, PASSWORD = "test", "test", "test"
#: sinks that keep no rows, captured as parquet like any other non-Jdbc sink
_CAPTURED_SINKS = {"assert", "console", "inmemory", "localfile"}
SOURCE_ROWS = 1000

#: the columns both tables share (JdbcPostgresIT's), then each one's own: the source's
#: PostGIS columns are geometries, the sink's text
_COLUMNS = """
  gid SERIAL PRIMARY KEY, uuid_col UUID, text_col TEXT, varchar_col VARCHAR(255),
  char_col CHAR(10), boolean_col BOOL, smallint_col INT2, integer_col INT4, bigint_col BIGINT,
  decimal_col DECIMAL(10, 2), numeric_col NUMERIC(8, 4), real_col FLOAT4,
  double_precision_col FLOAT8, smallserial_col SMALLSERIAL, serial_col SERIAL,
  bigserial_col BIGSERIAL, date_col DATE, timestamp_col TIMESTAMP, bpchar_col BPCHAR(10),
  age INT4 NOT NULL, name VARCHAR(255) NOT NULL"""
_GEOMETRIES = (
    ("point", "POINT"),
    ("linestring", "LINESTRING"),
    ("polygon_colums", "POLYGON"),
    ("multipoint", "MULTIPOINT"),
    ("multilinestring", "MULTILINESTRING"),
    ("multipolygon", "MULTIPOLYGON"),
    ("geometrycollection", "GEOMETRYCOLLECTION"),
)
_DOCUMENTS = "json_col JSON NOT NULL, jsonb_col JSONB NOT NULL, xml_col XML NOT NULL"
_SOURCE_TABLE = (
    f"CREATE TABLE pg_e2e_source_table ({_COLUMNS}, "
    + ", ".join(f"{name} geometry({kind}, 4326)" for name, kind in _GEOMETRIES)
    + f", geog geography(POINT, 4326), {_DOCUMENTS})"
)
_SINK_TABLE = (
    f"CREATE TABLE pg_e2e_sink_table ({_COLUMNS}, "
    + ", ".join(f"{name} VARCHAR(2000)" for name, _ in [*_GEOMETRIES, ("geog", "")])
    + f", {_DOCUMENTS})"
)

#: the rows: the kinds of value JdbcPostgresIT writes, varied by the row's number
_SOURCE_ROWS = f"""
INSERT INTO pg_e2e_source_table (gid, uuid_col, text_col, varchar_col, char_col, boolean_col,
  smallint_col, integer_col, bigint_col, decimal_col, numeric_col, real_col, double_precision_col,
  smallserial_col, serial_col, bigserial_col, date_col, timestamp_col, bpchar_col, age, name,
  point, linestring, polygon_colums, multipoint, multilinestring, multipolygon,
  geometrycollection, geog, json_col, jsonb_col, xml_col)
SELECT i, md5(i::text)::uuid, 'Hello World ' || i, 'Test' || (i % 7), 'Testing', i % 3 = 0,
  (i % 100)::int2, i * 10, i::bigint * 1000003, i + 0.55, (i % 9000) + 0.8888, (i + 0.14)::float4,
  i + 0.14159265, i % 300, i, i::bigint * 10000, DATE '2023-05-07' + i,
  TIMESTAMP '2023-05-07 14:30:00' + i * INTERVAL '61 seconds', 'Testing', 20 + i % 50, 'Leblanc' || i,
  ST_GeomFromText('POINT(-122.3452 ' || (47 + i / 1000.0) || ')', 4326),
  ST_GeomFromText('LINESTRING(-122.3451 47.5924, -122.3449 47.5923)', 4326),
  ST_GeomFromText('POLYGON((-122.3453 47.5922, -122.3453 47.5926, -122.3448 47.5926, '
                  '-122.3448 47.5922, -122.3453 47.5922))', 4326),
  ST_GeomFromText('MULTIPOINT(-122.3459 47.5927, -122.3445 47.5918)', 4326),
  ST_GeomFromText('MULTILINESTRING((-122.3463 47.5920, -122.3461 47.5919),'
                  '(-122.3459 47.5924, -122.3457 47.5923))', 4326),
  ST_GeomFromText('MULTIPOLYGON(((-122.3458 47.5925, -122.3458 47.5928, -122.3454 47.5928, '
                  '-122.3454 47.5925, -122.3458 47.5925)),((-122.3453 47.5921, -122.3453 47.5924, '
                  '-122.3448 47.5924, -122.3448 47.5921, -122.3453 47.5921)))', 4326),
  ST_GeomFromText('GEOMETRYCOLLECTION(POINT(-122.3462 47.5921), '
                  'LINESTRING(-122.3460 47.5924, -122.3457 47.5924))', 4326),
  ST_GeogFromText('SRID=4326;POINT(-73.935242 ' || (40.730610 + i / 100000.0) || ')'),
  ('{{"key": "value", "n": ' || i || '}}')::json, ('{{"key": "value", "n": ' || i || '}}')::jsonb,
  ('<root><n>' || i || '</n><text>Hello</text></root>')::xml
FROM generate_series(1, {SOURCE_ROWS}) AS i"""


def _plugin(entry: Mapping[str, Any]) -> str:
    return str(entry.get("plugin_name", "")).lower()


def _on_postgres(entry: Mapping[str, Any]) -> bool:
    return _plugin(entry) == "jdbc" and str(entry.get("url", "")).startswith(SEATUNNEL_SERVER)


def uses_postgres(doc: Mapping[str, Any]) -> bool:
    return any(_on_postgres(e) for section in ("source", "sink") for e in entries(doc, section))


def not_selected(doc: Mapping[str, Any]) -> str | None:
    """Why a job on PostgreSQL is not compared here, or None when it is."""
    for entry in entries(doc, "source"):
        if not (_on_postgres(entry) or _plugin(entry) == "fakesource"):
            return f"source {entry.get('plugin_name')} is not Jdbc on PostgreSQL or FakeSource"
    for entry in entries(doc, "sink"):
        if not (_on_postgres(entry) or _plugin(entry) in _CAPTURED_SINKS):
            return f"sink {entry.get('plugin_name')} is not Jdbc on PostgreSQL, nor one that keeps no rows"
    return None


def sink_tables(doc: Mapping[str, Any]) -> list[str]:
    """The tables the Jdbc sinks write: ``table``, or the one a hand-written ``query`` inserts into."""
    tables = []
    for entry in entries(doc, "sink"):
        if not _on_postgres(entry):
            continue
        if entry.get("table"):
            tables.append(str(entry["table"]))
        else:
            found = re.search(r"insert\s+into\s+([\w.\"]+)", str(entry.get("query", "")), re.IGNORECASE)
            if found:
                tables.append(found.group(1))
    return sorted(set(tables))


def job_document(doc: Mapping[str, Any], out: Path, port: int, fmt: str = "parquet") -> dict[str, Any]:
    """The job as both engines run it: Jdbc on PostgreSQL kept, its url on this server;
    every other sink captured into ``out`` (bench/seatunnel_differential.capture_document)."""
    job = capture_document(doc, out, out.parent, fmt)
    here = f"jdbc:postgresql://127.0.0.1:{port}/"

    def pointed(entry: Mapping[str, Any]) -> dict[str, Any]:
        return {**entry, "url": here + str(entry["url"])[len(SEATUNNEL_SERVER) :]}

    job["source"] = [pointed(entry) if _on_postgres(entry) else entry for entry in entries(job, "source")]
    job["sink"] = [
        pointed(entry) if _on_postgres(entry) else capture
        for entry, capture in zip(entries(doc, "sink"), job["sink"], strict=True)
    ]
    return job


def deterministic(doc: dict[str, Any]) -> tuple[dict[str, Any], int, str | None]:
    """The job both engines run, how many FakeSource tables had their rows pinned, and why
    the file is not compared (None: it is), as the main harness's _deterministic_document."""
    from airflow_provider_seatunnel_ckpt.errors import ConfigError
    from bench.seatunnel_pinned_rows import NotPinnable, pin_fake_rows

    reason = not_selected(doc)
    fakes = [e for e in entries(doc, "source") if _plugin(e) == "fakesource"]
    random_rows = any(not any("rows" in t for t in [e, *(e.get("tables_configs") or [])]) for e in fakes)
    if reason is not None or not random_rows:
        return doc, 0, reason
    try:
        pinned_doc, pinned = pin_fake_rows(doc)
    except (NotPinnable, ConfigError) as err:
        return doc, 0, f"FakeSource generates random rows; not pinned: {err}"
    return pinned_doc, pinned, None


def lay_out(server: Any) -> None:
    """A fresh database ``test`` as SeaTunnel's PostgreSQL tests lay out theirs."""
    server.drop_database(DATABASE)
    if not server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (USER,)):
        server.create_user(USER, PASSWORD)
    server.execute(f'CREATE DATABASE "{DATABASE}" OWNER "{USER}"')
    server.execute("CREATE EXTENSION postgis", database=DATABASE)
    server.execute(f'GRANT ALL ON SCHEMA public TO "{USER}"', database=DATABASE)
    import psycopg

    with psycopg.connect(server.uri(DATABASE, USER, PASSWORD), autocommit=True) as connection:
        for statement in (_SOURCE_TABLE, _SOURCE_ROWS, _SINK_TABLE):
            connection.execute(statement)


def read_table(server: Any, table: str) -> list[tuple[Any, Any]]:
    """A table's rows as (columns with PostgreSQL's types, values in its text form); []
    when the run left no such table."""
    import psycopg

    with psycopg.connect(server.uri(DATABASE, USER, PASSWORD), autocommit=True) as connection:
        if connection.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:
            return []
        columns = tuple(
            connection.execute(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                (table,),
            ).fetchall()
        )
        rows = []
        with connection.cursor().copy(f"COPY (SELECT * FROM {table}) TO STDOUT") as copy:
            for row in copy.rows():
                rows.append((columns, tuple(row)))
    return rows


def run_both(doc: Mapping[str, Any], work: Path, server: Any, fmt: str = "parquet") -> dict[str, Any]:
    """One file on both engines against ``server``: its record, as the main harness's,
    with ``tables``: each Jdbc sink table's comparison, and ``captured`` the other sinks'.
    Identical only when some row was written and every comparison is identical."""
    record: dict[str, Any] = {"capture": fmt, "server": "postgresql"}
    tables = sink_tables(doc)
    written: dict[str, dict[str, list[tuple[Any, Any]]]] = {}
    for side in ("zeta", "ours"):
        root = work / side
        root.mkdir(parents=True)
        lay_out(server)
        job = root / "job.conf"
        job.write_text(hocon(job_document(doc, root / "out", server.port, fmt)))
        run_side(side, job, root, record)
        written[side] = {table: read_table(server, table) for table in tables}
    if "status" in record:
        return record
    comparisons = {table: compare(written["zeta"][table], written["ours"][table]) for table in tables}
    if any(not _on_postgres(entry) for entry in entries(doc, "sink")):
        left_out = volatile_columns(doc)
        comparisons["captured"] = compare(
            read_rows(work / "zeta" / "out", fmt, left_out), read_rows(work / "ours" / "out", fmt, left_out)
        )
    rows_zeta = sum(c["rows_zeta"] for c in comparisons.values())
    identical = bool(rows_zeta) and all(c["identical"] for c in comparisons.values())
    return {
        "status": "compared",
        **record,
        "identical": identical,
        "rows_zeta": rows_zeta,
        "rows_ours": sum(c["rows_ours"] for c in comparisons.values()),
        "tables": comparisons,
    }
