"""Where the CPU of a benchmark run goes: py-spy samples of the executors' Python workers,
grouped by what the code on the stack is doing.

``record(pid)`` samples a PySpark daemon and every worker it forks (``--subprocesses``)
while the ``with`` block runs; ``breakdown(raw, CATEGORIES)`` assigns each sample to the
first category (in list order) that any frame of its stack matches, so a pyarrow or
storage call made by the File sink counts as the sink, even when the sink runs inside
the checkpoint (staging the epoch's file at a barrier), and returns the shares.
py-spy leaves idle threads out, so the shares are of CPU, not of wall time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

#: (category, substrings of a frame "function (file:line)"), most specific first: a sample
#: belongs to the first category any frame of its stack matches
CATEGORY_TRANSFORM = "transform: the user's pyarrow.compute function"
CATEGORY_SOURCE = "source: Sequence generating batches"
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    (CATEGORY_TRANSFORM, ("bench/workloads.py", "transforms/python_function.py")),
    (CATEGORY_SOURCE, ("connectors/sequence.py",)),
    (
        "checkpoint: state snapshot, encoding and upload",
        ("engine/state_codec.py", "_store_state", "snapshot_split_states", "write_state"),
    ),
    ("sink: writing the files (write, fsync, rename)", ("storage/",)),
    ("sink: parquet encoding", ("pyarrow/parquet", "connectors/file/sink.py", "connectors/file/formats/")),
    ("checkpoint: barrier handling and ACK", ("_take_barriers", "_complete_barrier")),
    ("control channel (barriers, ACKs, heartbeats)", ("engine/transport/", "engine/messages.py")),
    (
        "engine: the subtask's read/process loop",
        ("engine/subtask.py", "engine/spark_app.py", "engine/runner.py", "engine/launch.py"),
    ),
    ("PySpark: worker start, task (de)serialisation, result", ("pyspark/", "daemon.py", "worker_util.py")),
]
OTHER = "other (interpreter, imports, libraries called from elsewhere)"


@contextlib.contextmanager
def record(pid: int, rate: int = 100, native: bool = False) -> Iterator[dict[str, str]]:
    """py-spy record of ``pid`` and its subprocesses for the duration of the block; the
    yielded dict gets ``raw`` (collapsed stacks) or ``error`` afterwards. ``native`` adds
    the C frames (the garbage collector's among them), pausing the process at every
    sample: for a profiled run, never a measured one."""
    py_spy = str(Path(sys.executable).parent / "py-spy")
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-pyspy-") as tmp:
        out, err_path = os.path.join(tmp, "raw.txt"), os.path.join(tmp, "err.txt")
        with open(err_path, "w") as err:
            recorder = subprocess.Popen(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--subprocesses",
                    # py-spy reads native stacks only from a stopped process
                    *(["--native"] if native else ["--nonblocking"]),
                    "--rate",
                    str(rate),
                    "--format",
                    "raw",
                    "-o",
                    out,
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        time.sleep(1.0)  # py-spy attaches before the measured work starts
        try:
            yield found
        finally:
            recorder.send_signal(2)  # SIGINT: py-spy writes what it has and exits
            try:
                recorder.wait(timeout=60)
            except subprocess.TimeoutExpired:
                recorder.kill()
                recorder.wait()
            if os.path.exists(out):
                found["raw"] = Path(out).read_text(errors="replace")
            else:
                found["error"] = Path(err_path).read_text(errors="replace")[-400:]


def stacks(raw: str) -> Iterator[tuple[list[str], int]]:
    """(frames outermost first, sample count) of each line of a py-spy raw profile."""
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            yield stack.split(";"), int(count)


def breakdown(raw: str, categories: list[tuple[str, tuple[str, ...]]] = CATEGORIES) -> dict[str, object]:
    """Shares (percent of samples) per category; see the module docstring."""
    counts: dict[str, int] = {name: 0 for name, _ in categories}
    counts[OTHER] = 0
    leaves: dict[str, dict[str, int]] = {name: {} for name in counts}
    total = 0
    for frames, n in stacks(raw):
        total += n
        name = _category(frames, categories)
        counts[name] += n
        leaves[name][frames[-1]] = leaves[name].get(frames[-1], 0) + n

    def top(name: str) -> list[list[object]]:
        ranked = sorted(leaves[name].items(), key=lambda item: -item[1])[:5]
        return [[frame, round(100 * n / total, 1)] for frame, n in ranked]

    return {
        "samples": total,
        "percent": {name: round(100 * n / total, 1) if total else 0.0 for name, n in counts.items()},
        "top_leaf_frames": {name: top(name) for name in counts if counts[name]},
    }


def _category(frames: list[str], categories: list[tuple[str, tuple[str, ...]]]) -> str:
    for name, patterns in categories:
        if any(p in frame for frame in frames for p in patterns):
            return name
    return OTHER


def daemon_of(root: int) -> int | None:
    """The PySpark daemon (stock or the engine's) a JVM below ``root`` started, if any."""
    from bench._procs import _cmdline, _is_daemon, descendants

    for pid in descendants(root):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if _is_daemon(_cmdline(pid)) and "java" in os.readlink(f"/proc/{parent}/exe"):
                return pid
    return None
