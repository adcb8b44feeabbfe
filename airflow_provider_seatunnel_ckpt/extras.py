"""Which optional install (pip "extra") each part of the engine needs, checked up front.

``pip install airflow-provider-seatunnel-ckpt`` is the core: the Airflow face and
checkpoint storage on the local disk. Running a job needs the ``engine`` extra (PySpark
with its jars, Arrow) and, per connector family, ``jdbc``, ``kafka``, ``iceberg``,
``delta`` or ``sql``; checkpoint storage (and data paths) on S3, OSS or HDFS needs the
``s3``, ``oss`` or ``hdfs`` extra, ``storage`` being all three; ``all`` is every one of
them. The connector registry calls :func:`require` before it imports a connector's
module, and the storage plugin when a configuration selects a backend
(``FileSystem.require_client``), so a job or a configuration that needs a missing extra
fails when its file is loaded (on the worker, before spark-submit; in ``seatunnel-ckpt
run``, before the SparkSession) with one line naming the ``pip install`` to run, not
with an ImportError from deep inside a Spark task.

Only ``importlib.util.find_spec`` and installed metadata are consulted: nothing is
imported here.
"""

from __future__ import annotations

import importlib.util
import os
from importlib import metadata

from .errors import ConfigError

DISTRIBUTION = "airflow-provider-seatunnel-ckpt"

#: extra -> top-level modules the package imports from what the extra installs
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "engine": ("pyspark", "pyarrow", "numpy"),
    "jdbc": ("adbc_driver_postgresql",),
    "kafka": ("confluent_kafka", "kafka"),
    "iceberg": ("pyiceberg",),
    "delta": ("deltalake",),
    "sql": ("duckdb", "sqlglot"),
    "lzo": ("lzallright",),
    "excel": ("openpyxl", "xlrd"),
    "avro": ("fastavro",),
    # checkpoint storage clients (storage/fs_s3.py, fs_oss.py, fs_webhdfs.py), which import
    # requests themselves beside the client built on it
    "s3": ("boto3", "botocore"),
    "oss": ("oss2", "requests"),
    "hdfs": ("hdfs", "requests"),
}
#: the extras of checkpoint storage: Airflow's scheduler-side components (API server,
#: triggerer) read checkpoints without Spark, so these do not imply the engine
STORAGE_EXTRAS = frozenset({"s3", "oss", "hdfs"})


class MissingExtra(ConfigError):
    """Something the job needs is not installed; the message is the ``pip install`` to run."""


def pip_install(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` (and of the engine, which every connector extra implies)
    that cannot be imported here."""
    if extra in STORAGE_EXTRAS:
        return [name for name in EXTRA_MODULES[extra] if _find(name) is None]
    names = EXTRA_MODULES["engine"] + (EXTRA_MODULES[extra] if extra != "engine" else ())
    missing = [name for name in names if _find(name) is None]
    if "pyspark" not in missing and not _has_spark_jars():
        missing.append("pyspark (jars)")
    return missing


def require(extra: str, what: str, key: str = "") -> None:
    """Raise :class:`MissingExtra` unless ``extra`` is installed; ``what`` names the part
    that needs it (``connector Jdbc``), ``key`` the job-file key it came from."""
    if extra not in EXTRA_MODULES:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRA_MODULES)}")
    if missing_modules(extra):
        raise MissingExtra(key, f"{what} needs the '{extra}' extra: {pip_install(extra)}")
    if extra not in STORAGE_EXTRAS:
        check_pyspark_client()


def check_pyspark_client() -> None:
    """pyspark and pyspark-client (which the Spark provider pulls in) both install the
    ``pyspark/`` package directory; at different versions one has overwritten some of
    the other's files, and Spark fails in ways that name neither."""
    spark, client = _version("pyspark"), _version("pyspark-client")
    if spark and client and spark != client:
        raise MissingExtra(
            "",
            f"pyspark {spark} and pyspark-client {client} are installed side by side and share the pyspark "
            f"package, so one has overwritten the other's files; install the same release of both: "
            f"pip install 'pyspark=={spark}' 'pyspark-client=={spark}' --force-reinstall",
        )


def _find(name: str) -> object | None:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent that is not a package, or a broken __spec__
        return None


def _has_spark_jars() -> bool:
    """pyspark-client (a dependency of the core, through the Spark provider) installs the
    ``pyspark`` package without Spark's jars: only the ``pyspark`` distribution can start
    the engine's driver. Under spark-submit, ``pyspark`` is imported from
    ``$SPARK_HOME/python/lib/pyspark.zip`` with the jars under ``$SPARK_HOME/jars``; on a
    cluster's executor (YARN, Kubernetes) from the container's ``pyspark.zip``, without a
    ``SPARK_HOME``: Spark's own Python, run by a JVM that has the jars."""
    spec = _find("pyspark")
    origin = str(getattr(spec, "origin", None) or "")
    if f".zip{os.sep}" in origin:
        return True
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home:
        locations.append(spark_home)
    return any(os.path.isdir(os.path.join(location, "jars")) for location in locations)


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
