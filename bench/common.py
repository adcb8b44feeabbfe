"""Pieces every benchmark script shares: machine description, summaries, JSON output.

Benchmarks are scripts that print JSON (never timed tests). Every figure is a ratio of two
things measured side by side in one run, reported as the median of the repetitions with
min and max, because these machines are noisy.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"
PLOTS_DIR = REPO_ROOT / "docs" / "img"

_LIBRARIES = ("pyspark", "pyarrow", "boto3", "botocore", "moto", "oss2", "hdfs", "requests", "apache-airflow")


def summary(values: Iterable[float], digits: int = 3) -> dict[str, float]:
    """Median, min and max (the figures every result reports), plus the sample count."""
    values = list(values)
    if not values:
        raise ValueError("summary of no values")
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
    }


def size_label(n: int) -> str:
    """1024 -> '1KiB', 64 << 20 -> '64MiB'; other sizes in bytes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def percentiles(values: Iterable[float], digits: int = 3) -> dict[str, float]:
    """p50 / p99 / max of a latency sample (nearest-rank, no interpolation)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentiles of no values")

    def rank(p: float) -> float:
        index = max(0, min(len(ordered) - 1, -(-len(ordered) * p // 100) - 1))
        return ordered[int(index)]

    return {
        "p50": round(rank(50), digits),
        "p99": round(rank(99), digits),
        "max": round(ordered[-1], digits),
        "n": len(ordered),
    }


def ratio(numerator: float, denominator: float, digits: int = 3) -> float | None:
    return round(numerator / denominator, digits) if denominator else None


def progress(bench: str, message: str) -> None:
    """Human progress on stderr; stdout is reserved for the JSON result."""
    print(f"[{bench} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _has_cpu_flag(flag: str) -> bool:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return flag in line.split()
    return False


def machine_info(extra_libraries: Iterable[str] = ()) -> dict[str, Any]:
    """What the figures were measured on: cores, memory, load, library versions, commit."""
    info: dict[str, Any] = {
        "cores": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "date_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        if models:
            info["cpu_model"] = models[0]
            info["cpu_sha_ni"] = _has_cpu_flag("sha_ni")
    with contextlib.suppress(OSError, ValueError, KeyError):
        with open("/proc/meminfo") as f:
            mem = {line.split(":")[0]: int(line.split()[1]) for line in f if line.split()}
        info["memory_total_mib"] = mem["MemTotal"] // 1024
        info["memory_available_mib"] = mem["MemAvailable"] // 1024
    with contextlib.suppress(OSError):
        info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    versions = {}
    for library in (*_LIBRARIES, *extra_libraries):
        with contextlib.suppress(PackageNotFoundError):
            versions[library] = version(library)
    info["libraries"] = versions
    with contextlib.suppress(Exception):
        commit = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "airflow_provider_seatunnel_ckpt"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        info["git_commit"] = commit + (" (package modified)" if dirty else "")
    return info


# A VM with free page reporting hands the pages its guest frees back to the host (after
# min_free_ms, at once when more than max_waiting_mib wait); touching such a page again is
# a fault the host serves, charged to whatever the guest was doing (user or system time).
# With the platform's 0 ms every run re-faults its heap and page cache at a cost the host
# decides, which swung the CPU-per-row figures of identical runs by up to 1.3x. Holding
# freed pages while a benchmark runs is to this what pinning the CPU frequency is to
# timing: the figures then measure our code, not the host's memory.
FREE_PAGE_REPORTING = Path("/sys/module/page_reporting/parameters")
HOLD_FREED_PAGES = {"min_free_ms": 120_000, "max_waiting_mib": 8192}


@contextlib.contextmanager
def freed_memory_held(enabled: bool = True) -> Iterator[dict[str, Any]]:
    """Keep freed pages in the guest (HOLD_FREED_PAGES) while the block runs, when the
    kernel has the knobs and this process may write them; restore them afterwards, also
    on SIGTERM (a benchmark stopped by run_all's timeout). Yields what was done, for the
    results' machine section. Call it from the main thread (it sets a signal handler)."""
    state: dict[str, Any] = {"free_page_reporting": None, "held": None}
    knobs = {name: FREE_PAGE_REPORTING / name for name in HOLD_FREED_PAGES}
    try:
        before = {name: int(path.read_text()) for name, path in knobs.items()}
    except (OSError, ValueError):
        state["note"] = "no free page reporting knobs: nothing to hold"
        yield state
        return
    state["free_page_reporting"] = before
    if not enabled:
        yield state
        return
    changed: dict[str, int] = {}
    stopping = False

    def stop(*_: Any) -> None:
        nonlocal stopping
        if not stopping:  # a second SIGTERM must not cut the restore short
            stopping = True
            sys.exit(143)

    previous_handler = signal.signal(signal.SIGTERM, stop)
    try:
        try:
            for name, value in HOLD_FREED_PAGES.items():
                if before[name] < value:
                    changed[name] = before[name]  # recorded first: a write that happened is undone
                    knobs[name].write_text(f"{value}\n")
            # what is in effect (a knob already set higher is left as it was)
            state["held"] = {name: HOLD_FREED_PAGES[name] if name in changed else before[name] for name in knobs}
        except OSError as exc:
            state["note"] = f"could not hold freed pages ({exc.strerror}): figures may swing with the host"
        yield state
    finally:
        stopping = True
        try:
            for name, value in changed.items():
                with contextlib.suppress(OSError):  # restore every knob that can be
                    knobs[name].write_text(f"{value}\n")
        finally:
            signal.signal(signal.SIGTERM, previous_handler if previous_handler is not None else signal.SIG_DFL)


def save_figure(fig: Any, filename: str) -> list[str]:
    """Write a matplotlib figure to docs/img/``filename`` and close it; returns the
    repository-relative path as a result's ``plots`` list."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    PLOTS_DIR.mkdir(parents=True, exist_ok=True)
    path = PLOTS_DIR / filename
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [str(path.relative_to(REPO_ROOT))]


def emit(result: dict[str, Any], name: str, write: bool, rebuilt: bool = False) -> None:
    """Print the result as JSON on stdout; with ``write`` also keep it as bench/results/NAME.json.
    ``rebuilt``: a --report-only rebuild of a saved result; its machine figures stay as measured."""
    with contextlib.suppress(OSError):
        if not rebuilt:
            result.setdefault("machine", {})["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=2)
    print(text)
    if write:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        (RESULTS_DIR / f"{name}.json").write_text(text + "\n")


def write_local_job(
    work: Path,
    job: dict[str, Any],
    checkpoint: dict[str, Any],
    namespace: str,
    job_name: str = "job.yaml",
    config_name: str = "seatunnel.yaml",
) -> tuple[Path, Path]:
    """Write a job file and a seatunnel.yaml whose checkpoint storage is the local disk
    (``hdfs`` with ``file:///``) under ``namespace``; ``checkpoint``: the other
    ``seatunnel.engine.checkpoint`` keys (interval, timeout, max-retained, ...)."""
    import yaml

    settings = dict(checkpoint)
    max_retained = settings.pop("max-retained", 3)
    config = {
        "seatunnel": {
            "engine": {
                "checkpoint": {
                    **settings,
                    "storage": {
                        "type": "hdfs",
                        "max-retained": max_retained,
                        "plugin-config": {"storage.type": "hdfs", "fs.defaultFS": "file:///", "namespace": namespace},
                    },
                }
            }
        }
    }
    job_path, config_path = work / job_name, work / config_name
    job_path.write_text(yaml.safe_dump(job, sort_keys=False))
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return job_path, config_path
