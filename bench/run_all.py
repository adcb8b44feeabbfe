"""Run every benchmark script in bench/, then write bench/results/summary.json and docs/benchmarks.md.

::

    python bench/run_all.py                  # full run of every script (or: scripts/bench)
    python bench/run_all.py --quick          # smoke run: tiny sizes, written under bench/results/quick/
    python bench/run_all.py --only throughput,recovery
    python bench/run_all.py --report-only    # no runs: summary.json and docs from the existing results

Each script runs as its own subprocess, ``<python> bench/<script>.py --out [--quick]``, from
the repository root; its stderr is shown live (prefixed) and its last lines are kept. A
script that is missing, exits non-zero or times out is reported as failed in the summary
(with its stderr tail) and the others still run. The exit status is non-zero when a
script failed or a required summary key is missing.

``--quick`` keeps the full results safe: the result file and plots each quick run writes
(``bench/results/<name>.json``, ``docs/img/bench_<name>*.png``) are moved to
``bench/results/quick/`` (with ``summary.json``, ``benchmarks.md``, ``img/``) and the full
ones are put back, so ``docs/benchmarks.md`` only ever shows full runs.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import PLOTS_DIR, REPO_ROOT, RESULTS_DIR
from bench.report import SCRIPTS, build_summary, load_results, write_report

BENCH_DIR = REPO_ROOT / "bench"
QUICK_DIR = RESULTS_DIR / "quick"
# the throughput benchmark alone takes ~10 min since its repetitions are 4 interleaved rounds
TIMEOUT_FULL_S = 25 * 60
TIMEOUT_QUICK_S = 6 * 60
#: full runs that take longer by design (the soak runs for 60 minutes; peers starts three
#: engines 30 times, and restores each three times)
TIMEOUT_FULL_S_OF = {"scale_soak": 80 * 60, "peers": 60 * 60}
#: quick runs that do too (peers: 12 engine runs, each a JVM's start)
TIMEOUT_QUICK_S_OF = {"peers": 25 * 60}
STDERR_TAIL_LINES = 25
#: the line that says what went wrong: a Python exception, or an argparse/CLI "error: ..." line
_ERROR_LINE = re.compile(r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)|[\w.-]*: error|error)(?::|$)")


def log(message: str) -> None:
    print(f"[run_all {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_script(script: str, name: str, quick: bool, timeout_s: float) -> dict[str, Any]:
    """Run one script; return its run record (status ok / failed / missing / timeout)."""
    path = BENCH_DIR / script
    record: dict[str, Any] = {"script": f"bench/{script}", "status": "ok", "seconds": 0.0}
    if not path.exists():
        record.update(status="missing", reason=f"bench/{script} does not exist")
        log(f"{script}: missing")
        return record
    command = [sys.executable, str(path), "--out"] + (["--quick"] if quick else [])
    record["command"] = " ".join(["python", f"bench/{script}", *command[2:]])
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    log(f"{script}: starting ({' '.join(command[2:])})")
    started = time.perf_counter()
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
    error_lines: list[str] = []
    stdout_chunks: list[str] = []
    process = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )

    def pump_err() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            line = line.rstrip("\n")
            tail.append(line)
            if _ERROR_LINE.match(line):
                error_lines.append(line.strip())
            print(f"  {name}| {line}", file=sys.stderr, flush=True)

    def pump_out() -> None:
        assert process.stdout is not None
        stdout_chunks.append(process.stdout.read())

    threads = [threading.Thread(target=pump_err, daemon=True), threading.Thread(target=pump_out, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        code = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        code = None
    for thread in threads:
        thread.join(timeout=10)
    record["seconds"] = round(time.perf_counter() - started, 1)
    record["stderr_tail"] = "\n".join(tail)
    if code is None:
        record.update(status="timeout", reason=f"killed after {timeout_s:.0f} s")
    elif code != 0:
        # the first exception line is the cause (later ones are usually its re-raise)
        cause = f": {error_lines[0][:300]}" if error_lines else ""
        record.update(status="failed", reason=f"exit code {code}{cause}", exit_code=code)
    else:
        try:
            json.loads("".join(stdout_chunks))
        except ValueError:
            record.update(status="failed", reason="exit code 0 but stdout is not one JSON document")
    log(
        f"{script}: {record['status']} in {record['seconds']:.0f} s"
        + (f" ({record['reason']})" if record.get("reason") else "")
    )
    return record


def _kill_group(process: subprocess.Popen[str]) -> None:
    # the script and the Spark JVM / workers it started: its own session, started above
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=15)
            return
        except subprocess.TimeoutExpired:
            continue


class QuickIsolation:
    """Keep one quick run's result file and plots apart from the full ones.

    Only the files of the script being run are touched (``bench/results/<name>.json`` and
    ``docs/img/bench_<name>*.png`` or ``<name>*.png``) and only when written while it ran, so a full run of
    another benchmark going on at the same time keeps its results."""

    def __init__(self, name: str, plot_map: dict[str, str]) -> None:
        self.name = name
        self.plot_map = plot_map
        self.backup = Path(tempfile.mkdtemp(prefix=f"bench-full-{name}-"))
        self.saved: dict[Path, Path] = {}
        self.started = 0.0

    def _tracked(self) -> list[Path]:
        files = [RESULTS_DIR / f"{self.name}.json"]
        if PLOTS_DIR.exists():
            files += sorted(PLOTS_DIR.glob(f"bench_{self.name}*.png")) + sorted(PLOTS_DIR.glob(f"{self.name}*.png"))
        return [p for p in files if p.exists()]

    def __enter__(self) -> QuickIsolation:
        for path in self._tracked():
            copy = self.backup / path.name
            shutil.copy2(path, copy)
            self.saved[path] = copy
        self.started = time.time()
        return self

    def __exit__(self, *exc: Any) -> None:
        """Move what the quick run wrote to bench/results/quick/, put the full files back."""
        try:
            (QUICK_DIR / "img").mkdir(parents=True, exist_ok=True)
            for path in self._tracked():
                if path.stat().st_mtime < self.started - 1:
                    continue
                if path.suffix == ".json":
                    shutil.move(str(path), QUICK_DIR / path.name)
                else:
                    target = QUICK_DIR / "img" / path.name
                    shutil.move(str(path), target)
                    self.plot_map[str(path.relative_to(REPO_ROOT))] = str(target.relative_to(REPO_ROOT))
            for original, copy in self.saved.items():
                if not original.exists():
                    shutil.copy2(copy, original)
        finally:
            shutil.rmtree(self.backup, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="pass --quick to every script (smoke run, few minutes)")
    parser.add_argument(
        "--only",
        help="comma-separated result names or scripts to run (the others' results are kept): "
        + ", ".join(name for _, name, _ in SCRIPTS),
    )
    parser.add_argument("--report-only", action="store_true", help="run nothing; regenerate summary.json and the docs")
    parser.add_argument(
        "--timeout", type=float, help=f"seconds per script (default {TIMEOUT_FULL_S}, quick {TIMEOUT_QUICK_S})"
    )
    args = parser.parse_args(argv)

    selected = SCRIPTS
    if args.only:
        wanted = {w.strip().removesuffix(".py").removesuffix("_bench") for w in args.only.split(",") if w.strip()}
        selected = [s for s in SCRIPTS if s[1] in wanted or s[0].removesuffix(".py").removesuffix("_bench") in wanted]
        unknown = (
            wanted - {s[1] for s in selected} - {s[0].removesuffix(".py").removesuffix("_bench") for s in selected}
        )
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    timeout_s = args.timeout or (TIMEOUT_QUICK_S if args.quick else TIMEOUT_FULL_S)
    started = time.perf_counter()
    runs: dict[str, dict[str, Any]] = {}
    plot_map: dict[str, str] = {}

    if args.report_only:
        results = load_results()
    elif args.quick:
        if QUICK_DIR.exists():
            shutil.rmtree(QUICK_DIR)
        for script, name, _ in selected:
            with QuickIsolation(name, plot_map):
                runs[name] = run_script(script, name, True, max(timeout_s, TIMEOUT_QUICK_S_OF.get(name, 0)))
        results = load_results(QUICK_DIR)
    else:
        for script, name, _ in selected:
            runs[name] = run_script(script, name, False, max(timeout_s, TIMEOUT_FULL_S_OF.get(name, 0)))
        results = load_results()

    summary = build_summary(results, runs, quick=args.quick)
    summary["run_all_seconds"] = round(time.perf_counter() - started, 1)
    if args.quick:
        summary_path, doc_path = QUICK_DIR / "summary.json", QUICK_DIR / "benchmarks.md"
    else:
        summary_path, doc_path = RESULTS_DIR / "summary.json", REPO_ROOT / "docs" / "benchmarks.md"
    write_report(results, summary, summary_path=summary_path, doc_path=doc_path, plot_map=plot_map)

    log(
        f"wrote {summary_path.relative_to(REPO_ROOT)} and {doc_path.relative_to(REPO_ROOT)} "
        f"in {summary['run_all_seconds']:.0f} s"
    )
    for run in runs.values():
        log(
            f"  {run['script']}: {run['status']}"
            + (f" ({run.get('reason')})" if run.get("reason") else "")
            + f", {run['seconds']:.0f} s"
        )
        if run["status"] != "ok" and run.get("stderr_tail"):
            for line in run["stderr_tail"].splitlines()[-8:]:
                log(f"      {line}")
    if summary["missing"]:
        log(f"MISSING summary keys: {', '.join(summary['missing'])}")
    failed = [n for n, r in runs.items() if r["status"] != "ok"]
    return 1 if summary["missing"] or failed else 0


if __name__ == "__main__":
    sys.exit(main())
