"""A class-data-sharing archive for the tests' Spark drivers.

Each Spark job the tests start is a new driver JVM that loads and verifies about ten
thousand classes before its first batch; on two cores that start is a fair part of the
suite's CPU. Java's class-data sharing maps classes that a training run archived instead
(a dynamic archive: ``-XX:ArchiveClassesAtExit`` at the end of one checkpointed job,
``-XX:SharedArchiveFile`` on every later driver).

The JVM checks an archive against its own build and the jars of its class path, and runs
without it when anything differs (a new JDK, another pyspark, a driver class path put in
front), so a stale archive costs a start, never a wrong class. Its warning about that is
switched off (``-Xlog:cds...=off``): some tests read the driver's stderr line by line.

    python -m tests.support.spark_class_archive   build it (scripts/test does, once)

``spark_submit_opts()`` is what tests/conftest.py puts in SPARK_SUBMIT_OPTS.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# The drivers mostly wait: the client compiler alone and the serial collector cut a
# restore test's CPU by about a quarter (52 against 39 CPU-seconds, the same wall time).
JIT_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# A small checkpointed job through the project's own CLI, so the archive holds the
# classes every test job loads: Spark SQL, Arrow, the Python runner, checkpoints, parquet.
TRAINING_JOB = """\
env { job.name = "class-archive", parallelism = 2 }
source { Sequence { rows = 20000, rows_per_second = 20000, batch_size = 1000 } }
sink { File { path = "file://{output}/", format = "parquet" } }
"""
TRAINING_CONFIG = """\
seatunnel:
  engine:
    checkpoint:
      interval: 300
      timeout: 60000
      storage:
        type: hdfs
        max-retained: 3
        plugin-config:
          storage.type: hdfs
          fs.defaultFS: "file:///"
          namespace: "{checkpoints}/"
"""


def archive_path() -> Path:
    """Keyed by the pyspark version and the Java build: an upgrade of either makes another."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    build = "".join(c if c.isalnum() or c in ".-" else "_" for c in (java[1] if len(java) > 1 else "java"))[:80]
    return ROOT / ".cache" / "spark-class-archive" / f"driver-pyspark{version('pyspark')}-{build}.jsa"


def spark_submit_opts() -> str:
    """The tests' driver JVM options, with the archive when it has been built (not in an
    environment without pyspark or Java, such as the core-install checks')."""
    try:
        path = archive_path()
    except (PackageNotFoundError, OSError):
        return JIT_OPTIONS
    return f"{JIT_OPTIONS} -XX:SharedArchiveFile={path} {QUIET}" if path.is_file() else JIT_OPTIONS


def build() -> Path:
    """Run the training job once and keep its archive; a no-op when it is there already.
    Written to a temporary name and renamed, under a lock: parallel callers build one."""
    path = archive_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            return path
        with tempfile.TemporaryDirectory(prefix="spark-class-archive-") as scratch:
            work = Path(scratch)
            job = work / "job.conf"
            job.write_text(TRAINING_JOB.replace("{output}", str(work / "output")))
            config = work / "seatunnel.yaml"
            config.write_text(TRAINING_CONFIG.replace("{checkpoints}", str(work / "checkpoints")))
            partial = path.with_suffix(f".{os.getpid()}.partial")
            env = {
                **os.environ,
                "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_SUBMIT_OPTS": f"{JIT_OPTIONS} -XX:ArchiveClassesAtExit={partial} {QUIET}",
            }
            command = [str(VENV_BIN / "seatunnel-ckpt"), "run", str(job), "--config", str(config)]
            command += ["--job-id", "class-archive", "--master", "local[2]"]
            done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work, timeout=600)
            if done.returncode != 0 or not partial.is_file():
                partial.unlink(missing_ok=True)
                raise RuntimeError(f"the training job for the class archive failed:\n{done.stderr[-3000:]}")
            partial.rename(path)
    return path


if __name__ == "__main__":
    print(build())
