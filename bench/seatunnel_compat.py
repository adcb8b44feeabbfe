"""How many of SeaTunnel's own job files this project accepts unchanged, and how many run.

``python bench/seatunnel_compat.py --seatunnel DIR [--json OUT] [--run] [--files LIST]``

DIR is a SeaTunnel source tree (e.g. ``git archive`` of apache/seatunnel). The job files
are found where SeaTunnel keeps them (``find_job_files``): its e2e test resources, the
``config/`` templates and the examples. Every HOCON file there (``.conf``, ``.hocon``,
``.template``) is counted, as the survey behind docs/seatunnel.md counted them (a few of
them are not jobs: they are reported with ``job_like: false``); a JSON or YAML file only
when it is a job document (``source`` and ``sink`` keys), which leaves out seatunnel.yaml,
hazelcast*.yaml, Kubernetes manifests and data or schema JSON.

For each file:

* ``parsed``: the document reads (HOCON/JSON/YAML). A file whose ``${var}`` values its
  e2e test passes in (``-i``, or written into a template before the run) is read with the
  values that test passes (``TEST_VARIABLES``), as SeaTunnel's test runs it;
* ``loaded``: ``load_job`` and ``JobSpec.validate`` (every connector built from its
  options) raise nothing: what the survey behind docs/seatunnel.md counted as accepted
  before ``--check`` existed;
* ``accepted``: ``check_job`` raises nothing either, i.e. ``seatunnel-ckpt run --check``
  would print the job (it contacts no system); otherwise ``error`` is the line;
* ``needs_server``: ``needs_server`` below, one rule over the job's sources and sinks;
* with ``--run``, an accepted job that needs no server is run in-process
  (``tests/seatunnel_jobs.run_in_process``: its connectors fed split by split along its
  wiring, without Spark) in a child process with a 120 s timeout: ``passed``,
  ``failed_as_expected`` (SeaTunnel's own test expects this file to fail, and it fails with
  the error that test expects: ``tests/seatunnel_jobs.EXPECTED_FAILURES``), ``failed`` (a DataError such as a
  broken Assert rule, any other exception, or the timeout),
  ``refused`` (a ConfigError raised only when run) or ``needs_input`` (a LocalFile source
  path that does not exist: SeaTunnel's tests lay those files out first). The children
  run in a scratch directory; whatever they write under the jobs' LocalFile sink paths is
  removed after each run (only what the run created), so runs do not feed each other.
  Inputs a job found already there (``inputs_found``) make its result depend on this
  machine.

Prints JSON: totals, files/accepted per family (the module directory a file comes from:
``connector-fake-e2e``, ``seatunnel-transforms-v2-e2e-part-1``...; ``config``;
``examples``) and the 30 most common rejection reasons (first lines with the file, indices
and numbers taken out), each with a count and an example file. ``--json OUT`` writes the
same plus one record per file. ``--files LIST``: only the files listed in LIST (paths
relative to DIR, one per line).

``--differential`` (bench/seatunnel_differential.py): the accepted files with deterministic
output run on SeaTunnel's Zeta and on ours, their rows compared; prints the figures and
each file's difference (``--json OUT``: also written there, with the machine and date; with
``--files`` and an OUT already there, the files run replace theirs in OUT, the figures recounted).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

#: where SeaTunnel keeps job files, relative to its source tree
JOB_GLOBS = ("seatunnel-e2e/**/src/test/resources/**/*", "config/*", "seatunnel-examples/**/resources/**/*")
HOCON_SUFFIXES = (".conf", ".hocon", ".template")
DOCUMENT_SUFFIXES = (".json", ".yaml", ".yml")
RUN_TIMEOUT_S = 120

#: sources and sinks that need no server: generated rows, checks, printed rows, local files
NO_SERVER_CONNECTORS = frozenset({"fakesource", "assert", "console", "localfile", "inmemory"})


#: file name -> the variables its SeaTunnel e2e test passes in (the test named beside it);
#: placeholders it leaves unset (``${transactionId}``, ``${now}``) stay the connector's
TEST_VARIABLES: dict[str, dict[str, str]] = {
    # UserVariableIT.userVariableTest (-i)
    "fake_to_console.variables.conf": {
        "resName": "a20261128",
        "rowNum": "10",
        "strTemplate": "[abc,def]",
        "nameType": "string",
        "nameVal": "abc",
        "sourceTableName": "sql",
    },
    # UserVariableIT.userVariableWithDefaultValueTest (-i)
    "fake_to_console_with_default_value.variables.conf": {
        "strTemplate": "[abc,def]",
        "ageType": "int",
        "nameVal": "abc",
        "sourceTableName": "sql",
    },
    # ClusterFaultToleranceIT.testBatchJobRunOkIn2Node (TestUtils.createTestConfigFileFromTemplate)
    "cluster_batch_fake_to_localfile_template.conf": {
        "dynamic_test_case_name": "testBatchJobRunOkIn2Node",
        "dynamic_job_mode": "BATCH",
        "dynamic_test_row_num_per_parallelism": "1000",
        "dynamic_test_parallelism": "6",
    },
    # ClusterFaultToleranceTwoPipelineIT.testTwoPipelineBatchJobRunOkIn2Node (template)
    "cluster_batch_fake_to_localfile_two_pipeline_template.conf": {
        "dynamic_test_case_name": "testTwoPipelineBatchJobRunOkIn2Node",
        "dynamic_job_mode": "BATCH",
        "dynamic_test_row_num_per_parallelism": "1000",
        "dynamic_test_parallelism": "6",
    },
    # TextHeaderIT.enableWriteHeader, its first case (template)
    "batch_fakesource_to_file_header.conf": {"file_format_type": "text", "enable_header_write": "true"},
}


def test_variables(path: Path) -> dict[str, str] | None:
    return TEST_VARIABLES.get(path.name)


def needs_server(entries: Iterable[Mapping[str, Any]]) -> bool:
    """Does a job with these source and sink entries need an external server?

    Yes as soon as one of them is a connector other than FakeSource, Assert, Console or
    LocalFile (plugin names compared without case, as SeaTunnel and this project do):
    Jdbc, Kafka, S3File, OssFile, HdfsFile, Iceberg and every connector not built here
    (MongoDB, Paimon, Http, the CDC sources, InMemory...). A LocalFile source reads local
    paths only; files SeaTunnel's tests lay out first count as input, not as a server."""
    return any(str(entry.get("plugin_name", "")).lower() not in NO_SERVER_CONNECTORS for entry in entries)


def find_job_files(root: Path) -> list[Path]:
    found = {path for pattern in JOB_GLOBS for path in root.glob(pattern) if path.is_file()}
    return sorted((path for path in found if is_job_file(path)), key=lambda p: p.relative_to(root).as_posix())


def is_job_file(path: Path) -> bool:
    """Every HOCON file; a JSON or YAML file when it is a job document."""
    if path.name.lower().endswith(HOCON_SUFFIXES):
        return True
    if not path.name.lower().endswith(DOCUMENT_SUFFIXES):
        return False
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        return False
    return isinstance(doc, dict) and "source" in doc and "sink" in doc


def family(relative: Path) -> str:
    """The module a file comes from: the directory above ``src`` (e2e), else config/examples."""
    parts = relative.parts
    if parts[0] == "seatunnel-examples":
        return "examples"
    if "src" in parts:
        return parts[parts.index("src") - 1]
    return parts[0]


class _EveryVariable(dict):
    """Variables for reading the plugin names of a file whose test passes some in."""

    def __contains__(self, name: object) -> bool:
        return True

    def __getitem__(self, name: str) -> str:
        return "0"


def plugin_entries(path: Path) -> tuple[list[dict], str | None]:
    """The job's source and sink entries (for ``needs_server``), and the parse error if any."""
    from airflow_provider_seatunnel_ckpt.jobfile.documents import read_job_document

    error = None
    try:
        doc = read_job_document(path, test_variables(path))[0]
    except Exception as exc:  # any parse error is a finding
        error = first_line(exc)
        try:
            doc = read_job_document(path, _EveryVariable(placeholder="0"))[0]
        except Exception:
            doc = {}
    entries = []
    for section in ("source", "sink"):
        value = doc.get(section) if isinstance(doc, dict) else None
        value = [value] if isinstance(value, dict) else value or []
        entries += [entry for entry in value if isinstance(entry, dict)]
    return entries, error


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else "") or type(exc).__name__


def normalize(error: str, path: Path) -> str:
    """A rejection reason for grouping: no file, line numbers, indices or numbers."""
    error = error.replace(str(path), "<file>")
    error = re.sub(r"\[\d+\]", "[N]", error)
    error = re.sub(r"(?<![\w.])\d+(\.\d+)?(?![\w.])", "N", error)
    return error.split("; known ")[0]  # "unknown sink 'X'; known sinks: ..." -> "unknown sink 'X'"


def check_file(path: Path) -> dict[str, Any]:
    """Parse, classify and check one file, as ``seatunnel-ckpt run --check`` would."""
    from airflow_provider_seatunnel_ckpt.engine.job_check import check_job
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    entries, parse_error = plugin_entries(path)
    record: dict[str, Any] = {
        "job_like": bool(entries),
        "parsed": parse_error is None,
        "connectors": [str(entry.get("plugin_name")) for entry in entries],
        "needs_server": needs_server(entries) if entries else None,
        "loaded": False,
        "accepted": False,
        "error": parse_error,
    }
    if parse_error is None:
        try:
            job = load_job(path, test_variables(path))
            job.validate()
            record["loaded"] = True
            check_job(job)
            record["accepted"] = True
        except Exception as exc:  # every rejection is a finding
            record["error"] = first_line(exc)
    return record


def local_file_paths(path: Path, section: str) -> list[str]:
    """The ``path`` of the job's LocalFile entries in ``source`` or ``sink`` (a path
    with ``${...}`` cut there: the connector fills it in)."""
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    job = load_job(path, test_variables(path))
    entries = job.sources if section == "source" else job.sinks
    paths = []
    for entry in entries:
        if str(entry.get("plugin_name", "")).lower() == "localfile":
            for option in [entry, *(entry.get("tables_configs") or [])]:
                if isinstance(option, Mapping) and isinstance(option.get("path"), str):
                    paths.append(option["path"].split("${")[0] or ".")
    return paths


def _tree(top: Path) -> set[Path]:
    if not top.exists():
        return set()
    return {top, *top.rglob("*")}


class WrittenFiles:
    """Removes what one run creates under the given paths, and nothing that was there."""

    def __init__(self, paths: Iterable[str], cwd: Path):
        self.before: dict[Path, set[Path]] = {}
        for raw in paths:
            top = (cwd / raw).resolve()
            while not top.parent.exists():
                top = top.parent
            self.before[top] = _tree(top)

    def remove_new(self) -> None:
        for top, before in self.before.items():
            new = _tree(top) - before
            for entry in sorted(new):
                if entry.parent in new or not os.path.lexists(entry):
                    continue
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def run_file(path: Path, scratch: Path) -> dict[str, Any]:
    """Run one accepted job in-process in a child (``--run-one``), timeout 120 s."""
    inputs = local_file_paths(path, "source")
    written = WrittenFiles(local_file_paths(path, "sink"), scratch)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    result: dict[str, Any] = {"inputs_found": [p for p in inputs if (scratch / p).exists()]}
    try:
        child = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--run-one", str(path)],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        lines = [line for line in child.stdout.splitlines() if line.startswith('{"status"')]
        if lines:
            result.update(json.loads(lines[-1]))
        else:
            tail = (child.stderr.strip().splitlines() or [f"exit code {child.returncode}"])[-1]
            result.update(status="failed", detail=f"child died: {tail}")
    except subprocess.TimeoutExpired:
        result.update(status="failed", detail=f"timeout after {RUN_TIMEOUT_S} s")
    finally:
        written.remove_new()
    return result


def run_one(path: Path) -> dict[str, Any]:
    """In the child: run the job, classify the outcome."""
    from airflow_provider_seatunnel_ckpt.connectors.in_memory import InMemorySink
    from airflow_provider_seatunnel_ckpt.errors import CheckpointError, ConfigError
    from tests.seatunnel_jobs import EXPECTED_FAILURES, run_in_process

    # the InMemory test sink sleeps so that SeaTunnel's checkpoints pass; nothing to wait for here
    InMemorySink.exception_sleep_s = InMemorySink.checkpoint_sleep_s = 0.0
    expected = EXPECTED_FAILURES[path.name][1] if path.name in EXPECTED_FAILURES else None
    try:
        rows = run_in_process(path, variables=test_variables(path))
        if expected is not None:
            return {"status": "failed", "detail": f"finished, where SeaTunnel's test expects: {expected}"}
        return {"status": "passed", "rows": rows}
    except ConfigError as exc:
        line = first_line(exc)
        missing = "does not exist" in line and re.match(r"source\[\d+\]", line)
        return {"status": "needs_input" if missing else "refused", "detail": line}
    except FileNotFoundError as exc:
        return {"status": "needs_input", "detail": first_line(exc)}
    except CheckpointError as exc:
        if expected is not None and first_line(exc).startswith(expected):
            return {"status": "failed_as_expected", "detail": first_line(exc)}
        return {"status": "failed", "detail": first_line(exc)}
    except Exception as exc:
        return {"status": "failed", "detail": f"{type(exc).__name__}: {first_line(exc)}"}


def summarize(records: dict[str, dict[str, Any]], root: Path) -> dict[str, Any]:
    runs = Counter(r["run"]["status"] for r in records.values() if "run" in r)
    totals = {
        "files": len(records),
        "job_like": sum(r["job_like"] for r in records.values()),
        "parsed": sum(r["parsed"] for r in records.values()),
        "loaded": sum(r["loaded"] for r in records.values()),
        "accepted": sum(r["accepted"] for r in records.values()),
        "no_server": sum(r["needs_server"] is False for r in records.values()),
        "no_server_loaded": sum(r["needs_server"] is False and r["loaded"] for r in records.values()),
        "no_server_accepted": sum(r["needs_server"] is False and r["accepted"] for r in records.values()),
        "run_passed": runs["passed"],
        "run_failed_as_expected": runs["failed_as_expected"],
        "run_failed": runs["failed"],
        "needs_input": runs["needs_input"],
        "refused": runs["refused"],
    }
    families: dict[str, dict[str, int]] = {}
    for name, record in records.items():
        counts = families.setdefault(family(Path(name)), {"files": 0, "accepted": 0})
        counts["files"] += 1
        counts["accepted"] += record["accepted"]
    reasons: dict[str, dict[str, Any]] = {}
    for name, record in records.items():
        if not record["accepted"]:
            reason = reasons.setdefault(normalize(record["error"], root / name), {"count": 0, "example": name})
            reason["count"] += 1
    top = sorted(reasons.items(), key=lambda item: (-item[1]["count"], item[0]))[:30]
    return {
        "totals": totals,
        "families": dict(sorted(families.items(), key=lambda item: (-item[1]["files"], item[0]))),
        "rejections": [{"reason": reason, **value} for reason, value in top],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seatunnel", type=Path, help="SeaTunnel source tree")
    parser.add_argument("--json", type=Path, help="also write the summary and every file's record here")
    parser.add_argument("--run", action="store_true", help="run the accepted jobs that need no server, in-process")
    parser.add_argument("--files", type=Path, help="only these files (paths relative to DIR, one per line)")
    parser.add_argument(
        "--differential", action="store_true", help="run the deterministic accepted jobs on Zeta and ours, compare rows"
    )
    parser.add_argument("--keep", type=Path, help="--differential: keep each run's files under this directory")
    parser.add_argument("--run-one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the connectors' warning lines; errors are recorded
    warnings.simplefilter("ignore")
    if args.run_one:
        print(json.dumps(run_one(args.run_one)))
        return 0
    if args.seatunnel is None:
        parser.error("--seatunnel DIR is required")
    root = args.seatunnel.resolve()
    paths = find_job_files(root)
    if args.files:
        wanted = {
            line.strip() for line in args.files.read_text().splitlines() if line.strip() and not line.startswith("#")
        }
        paths = [p for p in paths if p.relative_to(root).as_posix() in wanted]
    records = {p.relative_to(root).as_posix(): check_file(p) for p in paths}
    if args.differential:  # bench/seatunnel_differential.py
        from bench.seatunnel_differential import differential, merge_result, write_result

        result = differential(root, records, args.keep)
        if args.files and args.json and args.json.exists():  # a re-run of some files: merged into OUT
            result = merge_result(json.loads(args.json.read_text()), result)
        print(json.dumps(result, indent=2))
        if args.json:
            write_result(result, args.json)
        return 0
    if args.run:
        scratch = Path(tempfile.mkdtemp(prefix="seatunnel_compat_"))
        try:
            for name, record in records.items():
                if record["accepted"] and record["needs_server"] is False:
                    record["run"] = run_file(root / name, scratch)
                    print(f"{record['run']['status']:12} {name}", file=sys.stderr)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    summary = {"seatunnel": str(root), **summarize(records, root)}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({**summary, "files": records}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
