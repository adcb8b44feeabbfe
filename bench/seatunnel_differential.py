"""Differential test of SeaTunnel's semantics: the same job file on Zeta and on ours, row by row.

``bench/seatunnel_compat.py --seatunnel DIR --differential`` selects, among the job files
the survey accepts that need no server, those whose output is deterministic
(``not_deterministic`` says why a file is left out):

* every FakeSource lists its rows (``rows``), or has the rows it would generate pinned
  as explicit ``rows`` (bench/seatunnel_pinned_rows.py: generated rows are random, so
  both engines are given the same ones; the record says ``pinned``, and
  ``seatunnel_differential_compared_pinned`` counts them);
* every LocalFile source reads inputs that SeaTunnel's LocalFileIT lays out
  (tests/support/seatunnel_inputs.py, built from DIR's own test resources), not files
  another job writes;
* SeaTunnel's own test does not expect the job to fail.

Each selected file is read once (its test's variables filled in) and written back as one
HOCON job for both engines, changed only where rows are captured: each sink is replaced
by a LocalFile sink on the same input tables writing parquet into ``out/sink<i>/${table_name}``
(a directory per table: this project's sink writes several tables apart only so; Assert,
Console and InMemory keep no rows; parquet keeps the types), LocalFile inputs are rebased
under the run's root, and a streaming job runs as batch (its FakeSource rows are bounded;
Zeta would otherwise wait forever). Zeta runs it through bench/peers/zeta.py (one JVM at a
time); ours through ``tests/seatunnel_jobs.run_in_process`` in a child (the same
connectors, transforms and sink writers as a Spark run, fed split by split, committed once).

The parquet files of each side (hidden files and ``_staging`` left out; file names
differ) are read into rows of (columns and their types, values) and compared as
multisets: in any order, every value and type. Types are compared at parquet's
resolution: Zeta's Avro-based writer stores tinyint and smallint as int32 and timestamps
as milliseconds in UTC, so ints of up to 32 bits are ``int`` and timestamps are compared
at the millisecond, without a zone. Columns a Sql transform computes with a volatile
function (NOW(), CURRENT_TIMESTAMP, RAND(), UUID()) are left out on both sides
(``volatile_columns``; the record's ``left_out`` names them).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
#: where LocalFileIT's input resources are in a SeaTunnel tree
RESOURCES = "seatunnel-e2e/seatunnel-connector-v2-e2e/connector-file-local-e2e/src/test/resources"
ZETA_TIMEOUT_S = 240
#: the lzo codec (aircompressor) reaches into direct buffers, closed to it on Java 17 unless opened
ZETA_JAVA_OPTIONS = ("--add-opens", "java.base/java.nio=ALL-UNNAMED")
OURS_TIMEOUT_S = 180
#: why a file whose FakeSource generates its rows is not compared as written
RANDOM_ROWS = "FakeSource generates random rows (no `rows`)"


def entries(doc: Mapping[str, Any], section: str) -> list[dict[str, Any]]:
    value = doc.get(section)
    value = [value] if isinstance(value, Mapping) else value or []
    return [dict(entry) for entry in value if isinstance(entry, Mapping)]


def _plugin(entry: Mapping[str, Any]) -> str:
    return str(entry.get("plugin_name", "")).lower()


def _source_paths(entry: Mapping[str, Any]) -> list[str]:
    options = [entry, *(entry.get("tables_configs") or [])]
    return [str(o["path"]) for o in options if isinstance(o, Mapping) and isinstance(o.get("path"), str)]


def not_deterministic(doc: Mapping[str, Any], name: str, inputs: Iterable[str]) -> str | None:
    """Why this job's output is not deterministic here, or None when it is."""
    from tests.seatunnel_jobs import EXPECTED_FAILURES

    if Path(name).name in EXPECTED_FAILURES:
        return "its SeaTunnel test expects it to fail"
    inputs = list(inputs)
    for entry in entries(doc, "source"):
        if _plugin(entry) == "fakesource":
            tables = [entry, *(entry.get("tables_configs") or [])]
            if not any("rows" in t for t in tables if isinstance(t, Mapping)):
                return RANDOM_ROWS
        elif _plugin(entry) == "localfile":
            for path in _source_paths(entry):
                top = path.rstrip("/")
                if not any(where == top or where.startswith(top + "/") for where in inputs):
                    return f"LocalFile input {path} is not one LocalFileIT lays out"
        else:
            return f"source {entry.get('plugin_name')} is not FakeSource or LocalFile"
    return None


def capture_document(doc: Mapping[str, Any], out: Path, root: Path, fmt: str = "parquet") -> dict[str, Any]:
    """The job with every sink replaced by a LocalFile sink writing ``fmt`` into
    ``out/sink<i>`` on the same inputs, its LocalFile sources under ``root``, batch mode."""
    job = json.loads(json.dumps(doc, default=str))
    env = job.setdefault("env", {})
    env["job.mode"] = "BATCH"
    for entry in job["source"]:
        if _plugin(entry) == "localfile":
            for option in [entry, *(entry.get("tables_configs") or [])]:
                if isinstance(option, dict) and isinstance(option.get("path"), str):
                    option["path"] = str(root) + option["path"]
    sinks = []
    for i, sink in enumerate(entries(doc, "sink")):
        capture: dict[str, Any] = {key: sink[key] for key in ("source_table_name", "plugin_input") if key in sink}
        capture.update(plugin_name="LocalFile", path=f"{out / f'sink{i}'}/${{table_name}}", file_format_type=fmt)
        sinks.append(capture)
    job["sink"] = sinks
    return job


def hocon(job: Mapping[str, Any]) -> str:
    """A job as SeaTunnel's HOCON: ``source { Plugin {...} }`` blocks (Zeta reads no list
    of plugin objects), each object as JSON."""
    lines = []
    for key, value in job.items():
        if key in ("source", "transform", "sink"):
            lines.append(f"{key} {{")
            for entry in entries(job, key):
                plugin = entry.pop("plugin_name")
                lines.append(f"  {plugin} {json.dumps(entry)}")
            lines.append("}")
        else:
            lines.append(f"{key} {json.dumps(value)}")
    return "\n".join(lines) + "\n"


# ---- reading and comparing ---------------------------------------------------------------


def type_name(arrow_type: Any) -> str:
    """An arrow type at parquet's resolution, in SeaTunnel's words."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_integer(t):
        return "bigint" if t.bit_width == 64 else "int"
    if pa.types.is_floating(t):
        return "double" if t.bit_width == 64 else "float"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision}, {t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "bytes"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_map(t):
        return f"map<{type_name(t.key_type)}, {type_name(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{type_name(t.value_type)}>"
    if pa.types.is_struct(t):
        return "row<" + ", ".join(f"{f.name} {type_name(f.type)}" for f in t) + ">"
    if pa.types.is_null(t):
        return "null"
    return str(t)


def value(v: Any) -> Any:
    """A value comparable across the two sides (and hashable)."""
    if isinstance(v, dt.datetime):
        v = v.astimezone(dt.UTC).replace(tzinfo=None) if v.tzinfo else v
        return v.replace(microsecond=v.microsecond // 1000 * 1000)
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, decimal.Decimal):
        return v.normalize() if v.is_finite() else str(v)
    if isinstance(v, dict):
        return ("row", tuple((k, value(x)) for k, x in v.items()))
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # a map's (key, value) pairs
            return ("map", tuple(sorted(((value(k), value(x)) for k, x in v), key=repr)))
        return tuple(value(x) for x in v)
    return v


def read_rows(out: Path, fmt: str = "parquet", left_out: Collection[str] = ()) -> list[tuple[Any, Any]]:
    """Every row of the ``fmt`` files under ``out``: (columns with types, values), without
    the ``left_out`` columns; json rows have no types (``json``), their values are the
    JSON values."""
    import pyarrow.parquet as pq

    rows: list[tuple[Any, Any]] = []
    files = sorted(
        p
        for p in out.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(out).parts)
    )
    for path in files:
        if fmt == "json":
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    obj = json.loads(line, parse_float=decimal.Decimal)
                    obj = {k: v for k, v in obj.items() if k not in left_out}
                    rows.append((tuple((k, "json") for k in obj), tuple(_json_value(v) for v in obj.values())))
            continue
        table = pq.read_table(path)
        table = table.drop_columns([name for name in table.column_names if name in left_out])
        columns = tuple((f.name, type_name(f.type)) for f in table.schema)
        for row in table.to_pylist():
            rows.append((columns, tuple(value(v) for v in row.values())))
    return rows


#: SQL functions whose value differs from run to run (and so between the engines)
_VOLATILE = re.compile(
    r"\b(?:now|rand|random|uuid)\s*\(|\b(?:current_date|current_time|current_timestamp|localtime|localtimestamp)\b",
    re.IGNORECASE,
)
#: a select item's alias: ``expr AS name`` or ``expr name`` (expr ending as an operand does)
_ALIAS = re.compile(r"^(.*?[\w)'`\"])\s+(?:as\s+)?(`[^`]+`|\"[^\"]+\"|\w+)$", re.IGNORECASE | re.DOTALL)


def volatile_columns(doc: Mapping[str, Any]) -> set[str]:
    """The output columns of the job's Sql transforms whose expressions call a volatile
    function (NOW(), CURRENT_TIMESTAMP, RAND(), UUID(), ...): each engine computes its
    own value, so they are left out of the comparison (the record names them). An item
    without an alias is named by its text."""
    names = set()
    for entry in entries(doc, "transform"):
        query = entry.get("query")
        if _plugin(entry) != "sql" or not isinstance(query, str):
            continue
        for item in _select_items(query):
            if _VOLATILE.search(re.sub(r"'(?:[^']|'')*'", "''", item)):
                alias = _ALIAS.match(item)
                names.add(alias.group(2).strip('`"') if alias else item)
    return names


def _select_items(query: str) -> list[str]:
    """The items of a query's outermost select list, split at its top-level commas."""
    items, depth, quote, start, begin = [], 0, "", None, 0
    i = 0
    while i < len(query):
        ch = query[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'`\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif (
            depth == 0 and start is None and query[i : i + 6].lower() == "select" and not query[i + 6 : i + 7].isalnum()
        ):
            start = begin = i + 6
            i += 5
        elif depth == 0 and start is not None and ch == ",":
            items.append(query[begin:i].strip())
            begin = i + 1
        elif depth == 0 and start is not None and re.match(r"\sfrom\s", query[i : i + 6], re.IGNORECASE):
            break
        i += 1
    if start is not None:
        items.append(query[begin:i].strip())
    return [item for item in items if item]


def _json_value(v: Any) -> Any:
    if isinstance(v, dict):
        return ("object", tuple(sorted(((k, _json_value(x)) for k, x in v.items()), key=repr)))
    if isinstance(v, list):
        return tuple(_json_value(x) for x in v)
    return value(v)


def compare(zeta: list[tuple[Any, Any]], ours: list[tuple[Any, Any]]) -> dict[str, Any]:
    """The two sides' rows as multisets: identical, or the counts and the first row of
    each side that the other lacks (rows sorted by their text, so the report is stable)."""
    left, right = Counter(zeta), Counter(ours)
    only_zeta, only_ours = left - right, right - left
    result: dict[str, Any] = {
        "identical": not only_zeta and not only_ours,
        "rows_zeta": len(zeta),
        "rows_ours": len(ours),
    }
    if not result["identical"]:
        result["only_zeta"] = sum(only_zeta.values())
        result["only_ours"] = sum(only_ours.values())
        for side, rest in (("first_only_zeta", only_zeta), ("first_only_ours", only_ours)):
            if rest:
                columns, values = min(rest, key=repr)
                result[side] = {name: _shown(v) for (name, _), v in zip(columns, values)}
                result[side + "_types"] = dict(columns)
    return result


def _shown(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)


# ---- running -----------------------------------------------------------------------------


def run_ours(job: Path, cwd: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    compat = REPO / "bench" / "seatunnel_compat.py"
    try:
        child = subprocess.run(
            [sys.executable, str(compat), "--run-one", str(job)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=OURS_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return {"status": "failed", "detail": f"timeout after {OURS_TIMEOUT_S} s"}
    lines = [line for line in child.stdout.splitlines() if line.startswith('{"status"')]
    if lines:
        return json.loads(lines[-1])
    return {"status": "failed", "detail": (child.stderr.strip().splitlines() or ["no output"])[-1]}


def zeta_error(log: Path) -> str:
    """The first ``Caused by`` (else ERROR) line of a failed Zeta run."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    for marker in ("Caused by:", "ERROR"):
        found = [line.strip() for line in lines if marker in line]
        if found:
            return found[-1 if marker == "Caused by:" else 0][:300]
    return "no error line"


#: Zeta's parquet writer refuses a column type (``null``) or a row of no columns: such a
#: job is captured as json
_PARQUET_REFUSED = (
    "Unsupported data type",
    "Unable to create a sink for identifier 'LocalFile'",
    # its Avro-based writer casting a row inside a map or an array (SeaTunnel 2.3.8)
    "cannot be cast to class org.apache.seatunnel.shade.connector.file.org.apache.avro.generic.IndexedRecord",
)


def run_file(name: str, doc: Mapping[str, Any], resources: Path, work: Path) -> dict[str, Any]:
    """One file on both engines: its record (status ``compared`` with the comparison, or
    ``zeta_failed``/``ours_failed``/``both_failed`` with the lines). Captured as parquet; as json when
    Zeta's parquet writer refuses the job's types (the record says ``capture``)."""
    record = run_both(doc, resources, work, "parquet")
    log = work / "zeta" / "zeta" / "zeta.log"
    text = log.read_text(errors="replace") if record["status"] == "zeta_failed" and log.exists() else ""
    if any(line in text for line in _PARQUET_REFUSED):
        shutil.rmtree(work, ignore_errors=True)
        record = run_both(doc, resources, work, "json")
    return record


def run_both(doc: Mapping[str, Any], resources: Path, work: Path, fmt: str) -> dict[str, Any]:
    from tests.support.seatunnel_inputs import lay_out

    record: dict[str, Any] = {"capture": fmt}
    for side in ("zeta", "ours"):
        root = work / side
        root.mkdir(parents=True)
        lay_out(root, resources)
        lzop_as_localfileit(root, resources)
        job = root / "job.conf"
        job.write_text(hocon(capture_document(doc, root / "out", root, fmt)))
        run_side(side, job, root, record)
    if "status" in record:
        return record
    record["status"] = "compared"
    left_out = volatile_columns(doc)
    if left_out:
        record["left_out"] = sorted(left_out)
    comparison = compare(
        read_rows(work / "zeta" / "out", fmt, left_out), read_rows(work / "ours" / "out", fmt, left_out)
    )
    return {"status": "compared", **record, **comparison}


def run_side(side: str, job: Path, root: Path, record: dict[str, Any]) -> None:
    """Run ``job`` on one engine (``zeta`` first, then ``ours``) in ``root``; a failure
    goes into ``record`` (``zeta_failed``, ``ours_failed``, or ``both_failed``), and so
    does the side's time."""
    from bench.peers import zeta as zeta_peer

    started = time.monotonic()
    if side == "zeta":
        run = zeta_peer.run_job(
            job,
            checkpoint_interval_ms=None,
            work_dir=root / "zeta",
            timeout_s=ZETA_TIMEOUT_S,
            extra_java_options=ZETA_JAVA_OPTIONS,
        )
        if run.exit_code != 0:
            detail = f"no end within {ZETA_TIMEOUT_S} s" if run.timed_out else zeta_error(run.log)
            record.update(status="zeta_failed", detail=detail)
    else:
        outcome = run_ours(job, root)
        if outcome["status"] != "passed":
            # both failing is agreement of a kind, but nothing to compare (the record says so)
            failed = "both_failed" if record.get("status") == "zeta_failed" else "ours_failed"
            record.update(
                status=failed, **{"ours_detail" if failed == "both_failed" else "detail": outcome.get("detail")}
            )
    record[f"{side}_s"] = round(time.monotonic() - started, 1)


#: WriteLzop.java, compiled here against SeaTunnel's connector jar
_LZOP_WRITER = REPO / "bench" / "peers" / "java" / "WriteLzop.java"


def lzop_as_localfileit(root: Path, resources: Path) -> None:
    """The lzo inputs under ``root`` written again as LocalFileIT writes them: with
    aircompressor's LzopCodec (LZO1X-1 blocks), the one in SeaTunnel's own file connector.
    tests/support/seatunnel_inputs.py compresses them as this project's sinks do
    (LZO1X-999, ``lzallright``), which the 2018 aircompressor SeaTunnel ships misreads
    (docs/seatunnel.md): with LocalFileIT's bytes both engines read the inputs SeaTunnel's
    test reads. One JVM for all of them."""
    from tests.support.seatunnel_inputs import ARCHIVES

    pairs = [
        (resources / name, root / where.lstrip("/"))
        for where, (kind, name, _) in ARCHIVES.items()
        if kind == "lzo" and (root / where.lstrip("/")).exists()
    ]
    if not pairs:
        return
    classes = _lzop_writer_classes()
    subprocess.run(
        [
            _java(),
            *ZETA_JAVA_OPTIONS,
            "-cp",
            f"{classes}{os.pathsep}{_lzop_classpath()}",
            "WriteLzop",
            *(str(p) for pair in pairs for p in pair),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def _java() -> str:
    from bench.peers.zeta import java_binary

    return java_binary()


def _lzop_classpath() -> str:
    """SeaTunnel's connector-file-local jar (aircompressor inside) and its Hadoop uber jar
    (LzopCodec is a Hadoop CompressionCodec)."""
    from bench.peers.zeta import ensure_home

    home = ensure_home()
    jars = [
        *sorted((home / "connectors").glob("connector-file-local-*.jar")),
        *sorted((home / "lib").glob("*hadoop*.jar")),
    ]
    return os.pathsep.join(str(jar) for jar in jars)


def _lzop_writer_classes() -> Path:
    """WriteLzop compiled once per source text (a directory named by its digest)."""
    import hashlib

    source = _LZOP_WRITER.read_bytes()
    out = REPO / ".cache" / "zeta" / f"write-lzop-{hashlib.sha256(source).hexdigest()[:12]}"
    if not (out / "WriteLzop.class").exists():
        out.mkdir(parents=True, exist_ok=True)
        javac = str(Path(_java()).with_name("javac"))
        subprocess.run(
            [javac, "-cp", _lzop_classpath(), "-d", str(out), str(_LZOP_WRITER)],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return out


def differential(root: Path, records: Mapping[str, Mapping[str, Any]], keep: Path | None = None) -> dict[str, Any]:
    """Select, run and compare; the figures and one record per file. Files on PostgreSQL
    run against one server started for them (bench/seatunnel_differential_pg.py)."""
    from airflow_provider_seatunnel_ckpt.jobfile.documents import read_job_document
    from bench.seatunnel_compat import test_variables
    from tests.support.seatunnel_inputs import EMPTY_DIRS, layout

    resources = root / RESOURCES
    inputs = [*layout(resources), *EMPTY_DIRS]
    from bench import seatunnel_differential_pg as on_postgres

    files: dict[str, dict[str, Any]] = {}
    scratch = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="seatunnel_differential_"))
    server = None  # PostgreSQL, started for the first file that needs it
    try:
        for n, (name, record) in enumerate(sorted(records.items())):
            if not record.get("accepted") or record.get("needs_server") is None:
                continue
            doc = read_job_document(root / name, test_variables(root / name))[0]
            postgres = bool(record["needs_server"]) and on_postgres.uses_postgres(doc)
            if record["needs_server"] and not postgres:
                continue
            if postgres:
                doc, pinned, reason = on_postgres.deterministic(doc)
            else:
                doc, pinned, reason = _deterministic_document(doc, name, inputs)
            if reason is not None:
                files[name] = {"status": "not_selected", "detail": reason}
                continue
            work = scratch / f"{n:03d}"
            shutil.rmtree(work, ignore_errors=True)
            if postgres:
                if server is None:
                    from tests.servers.postgres import PostgresServer

                    server = PostgresServer().start()
                files[name] = on_postgres.run_both(doc, work, server)
            else:
                files[name] = run_file(name, doc, resources, work)
            if pinned:
                files[name]["pinned"] = pinned
            print(f"{files[name]['status']:12} {files[name].get('identical', '')!s:6} {name}", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
        if keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    return {"summary": figures(files), "files": files}


def _deterministic_document(
    doc: dict[str, Any], name: str, inputs: Collection[str]
) -> tuple[dict[str, Any], int, str | None]:
    """The job both engines run, how many FakeSource tables had their generated rows
    pinned (bench/seatunnel_pinned_rows.py), and why the file is not selected (None: it is)."""
    from airflow_provider_seatunnel_ckpt.errors import ConfigError
    from bench.seatunnel_pinned_rows import NotPinnable, pin_fake_rows

    reason = not_deterministic(doc, name, inputs)
    if reason != RANDOM_ROWS:
        return doc, 0, reason
    try:
        pinned_doc, pinned = pin_fake_rows(doc)
    except (NotPinnable, ConfigError) as err:
        return doc, 0, f"{RANDOM_ROWS}; not pinned: {err}"
    return pinned_doc, pinned, not_deterministic(pinned_doc, name, inputs)


def merge_result(previous: Mapping[str, Any], rerun: Mapping[str, Any]) -> dict[str, Any]:
    """``previous`` with the files of ``rerun`` replaced (each marked ``rerun``), figures recounted."""
    files = {name: dict(record) for name, record in previous["files"].items()}
    files.update({name: {**record, "rerun": True} for name, record in rerun["files"].items()})
    return {"summary": figures(files), "files": files}


def figures(files: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    statuses = Counter(r["status"] for r in files.values())
    compared = statuses["compared"]
    identical = sum(bool(r.get("identical")) for r in files.values())
    return {
        "seatunnel_differential_selected": sum(r["status"] != "not_selected" for r in files.values()),
        "seatunnel_differential_compared": compared,
        "seatunnel_differential_identical": identical,
        "seatunnel_differential_identical_share": round(identical / compared, 3) if compared else None,
        "seatunnel_differential_zeta_failed": statuses["zeta_failed"],
        "seatunnel_differential_ours_failed": statuses["ours_failed"],
        "seatunnel_differential_both_failed": statuses["both_failed"],
        "seatunnel_differential_compared_pinned": sum(
            r["status"] == "compared" and bool(r.get("pinned")) for r in files.values()
        ),
        "seatunnel_differential_compared_postgres": sum(
            r["status"] == "compared" and r.get("server") == "postgresql" for r in files.values()
        ),
    }


def write_result(result: Mapping[str, Any], out: Path) -> None:
    """The result as bench/results/seatunnel_differential.json holds it (``summary``: the
    keys bench/report.py merges into summary.json; ``table``: every file not identical)."""
    from bench.common import machine_info
    from bench.peers.zeta import SEATUNNEL_VERSION

    summary = result["summary"]
    compared, share = summary["seatunnel_differential_compared"], summary["seatunnel_differential_identical_share"]
    rows = [
        [name.rsplit("/", 1)[-1], record["status"], _difference(record)]
        for name, record in result["files"].items()
        if record["status"] not in ("not_selected",) and not record.get("identical")
    ]
    doc = {
        "benchmark": "SeaTunnel's own job files on Zeta and on ours, their rows compared (values and types, any order)",
        "machine": machine_info(),
        "settings": {
            "zeta": SEATUNNEL_VERSION,
            "ours": "tests/seatunnel_jobs.run_in_process, in a child",
            "postgresql": "Debian's server and PostGIS (tests/servers/postgres.py), a fresh database per engine run",
        },
        "table": {"columns": ["file", "status", "difference"], "rows": rows},
        "targets": [
            {"figure": "seatunnel_differential_compared", "target": ">= 60", "value": compared, "met": compared >= 60},
            {
                "figure": "seatunnel_differential_identical_share",
                "target": ">= 0.95",
                "value": share,
                "met": share is not None and share >= 0.95,
            },
        ],
        **result,
    }
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")


def _difference(record: Mapping[str, Any]) -> str:
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in _described(record))


def _described(record: Mapping[str, Any]) -> str:
    if record["status"] != "compared":
        return str(record.get("detail", ""))[:200]
    zeta, ours = record.get("first_only_zeta") or {}, record.get("first_only_ours") or {}
    columns = [c for c in {**zeta, **ours} if zeta.get(c) != ours.get(c)]
    shown = "; ".join(f"{c}: Zeta {zeta.get(c)!r}, ours {ours.get(c)!r}" for c in columns)
    return f"{record['rows_zeta']} rows on Zeta, {record['rows_ours']} on ours; first rows apart: {shown}"[:400]
