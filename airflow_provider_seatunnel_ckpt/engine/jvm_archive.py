"""A class-data-sharing archive of the driver JVM's classes (Java's AppCDS), built once per
machine: a driver JVM that maps it starts sooner (measured here: a SparkContext in 1.4 s,
not 2.1 s; a small spark-submit application in 4.8 s, not 6.8 s; a restore, from the kill
to the first newly committed row, in a median 5.8 s, not 6.4 s), so every start does.

``python -m airflow_provider_seatunnel_ckpt.engine.jvm_archive [--if-missing]`` builds it
(scripts/bootstrap does, here): one small
Spark job run with ``-XX:ArchiveClassesAtExit``, written under a temporary name and renamed
once that JVM has exited (a truncated archive crashes the JVM that maps it). The archive
is named by a fingerprint of the java binary and of Spark's jars, so a driver only ever
maps one made for its own JVM and classpath; after an upgrade it finds none and starts as
before until the archive is built again. docs/deployment.md, "Faster driver starts".
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: where archives are kept (default: ~/.cache/airflow-provider-seatunnel-ckpt/jvm)
DIR_ENV = "SEATUNNEL_CKPT_JVM_ARCHIVE_DIR"
BUILD_TIMEOUT_S = 300

#: the job the archive is made from: a driver's start and one small RDD job, as a job's
_WARM_UP = """
from pyspark import SparkConf, SparkContext
context = SparkContext.getOrCreate(SparkConf().setAppName("seatunnel-ckpt jvm archive"))
context.parallelize(range(4), 2).mapPartitions(lambda rows: [sum(rows)]).collect()
context.stop()
"""


def archive_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or Path.home() / ".cache" / "airflow-provider-seatunnel-ckpt" / "jvm")


def spark_home() -> Path | None:
    """The Spark whose spark-submit starts the driver: $SPARK_HOME, else pyspark's own
    (found without importing it: the Airflow face asks too, where importing Spark is kept
    out)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    spec = importlib.util.find_spec("pyspark")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def java_binary() -> Path | None:
    """The java spark-submit runs: $JAVA_HOME/bin/java, else the one on PATH."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"]) / "bin" / "java"
    found = shutil.which("java")
    return Path(found) if found else None


def fingerprint() -> str | None:
    """Of the java binary and Spark's jars (names, sizes, times): an archive only maps into
    the JVM and classpath it was made with."""
    java, spark = java_binary(), spark_home()
    jars = spark / "jars" if spark is not None else None
    if java is None or not java.exists() or jars is None or not jars.is_dir():
        return None
    digest = hashlib.sha256()
    for path in [java.resolve(), *sorted(jars.iterdir())]:
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def archive_path() -> Path | None:
    """This machine's archive for the driver's JVM and classpath, when one was built."""
    key = fingerprint()
    if key is None:
        return None
    path = archive_dir() / f"driver-{key}.jsa"
    return path if path.is_file() else None


def driver_java_option() -> str | None:
    """The JVM options that map the archive, or None without one. Quietly: a JVM that
    cannot map it (a spark-submit of another Spark than the one it was made for) warns on
    every start otherwise, and starts as it would without it either way."""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} -Xlog:cds*=off" if path is not None else None


#: JVM options that map or write a class archive: one is enough, and a JVM refuses to map
#: one archive while it writes another
_ARCHIVE_FLAGS = ("-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit")


def with_driver_archive(conf: dict[str, str]) -> None:
    """Add the option to ``conf``'s ``spark.driver.extraJavaOptions`` (after the job's own),
    when there is an archive: for a driver JVM this process starts. An archive the job's
    options or ``$SPARK_SUBMIT_OPTS`` already map or write wins (the test suite's own,
    tests/support/spark_class_archive.py, among them)."""
    key = "spark.driver.extraJavaOptions"
    chosen = f"{conf.get(key, '')} {os.environ.get('SPARK_SUBMIT_OPTS', '')}"
    if any(flag in chosen for flag in _ARCHIVE_FLAGS):
        return
    option = driver_java_option()
    if option is not None:
        conf[key] = f"{conf[key]} {option}" if conf.get(key) else option


def build() -> Path:
    """Build this machine's archive (replacing one of the same fingerprint); its path."""
    key, spark = fingerprint(), spark_home()
    if key is None or spark is None:
        raise RuntimeError("no java binary or no Spark jars: cannot build a JVM archive")
    directory = archive_dir()
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"driver-{key}.jsa"
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        partial = Path(scratch) / final.name
        script = Path(scratch) / "warm_up.py"
        script.write_text(_WARM_UP)
        # SPARK_SUBMIT_OPTS emptied: an archive mapped from there would make the JVM refuse
        # to write this one
        env = {
            **os.environ,
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "SPARK_SUBMIT_OPTS": "",
        }
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        submit = spark / "bin" / "spark-submit"
        finished = subprocess.run(
            [
                str(submit),
                "--master",
                "local[2]",
                "--conf",
                "spark.ui.enabled=false",
                "--driver-java-options",
                f"-XX:ArchiveClassesAtExit={partial}",
                str(script),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        # spark-submit is the driver JVM: it has exited, so the archive is whole or absent
        if finished.returncode != 0 or not partial.is_file():
            tail = (finished.stderr or finished.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"building the JVM archive failed (exit {finished.returncode}): {' / '.join(tail)}")
        os.replace(partial, final)
    # Archives of other fingerprints stay: another install of Spark or Java on this machine
    # may be using its own.
    return final


def main(argv: list[str] | None = None) -> int:
    """``--if-missing``: keep an archive already built for this JVM and classpath."""
    args = sys.argv[1:] if argv is None else argv
    try:
        existing = archive_path() if "--if-missing" in args else None
        print(existing or build())
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as err:
        print(f"seatunnel-ckpt jvm archive: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
