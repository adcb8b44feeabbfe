"""The driver JVM's class archive, built and mapped for real (engine/jvm_archive.py): the
build leaves a whole archive under its final name, and a driver JVM started by
spark-submit with the options the engine adds (the archive's, and C1-only compilation:
engine/driver_jit.py) maps it (``-Xshare:on`` makes an archive that cannot be mapped an
error instead of a warning) and runs a job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.engine import driver_jit, jvm_archive

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

JOB = """
from pyspark import SparkConf, SparkContext
context = SparkContext.getOrCreate(SparkConf().setAppName("mapped"))
print("sum", context.parallelize(range(10), 2).sum())
context.stop()
"""


def test_a_built_archive_is_mapped_by_the_driver_jvm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jvm_archive.DIR_ENV, str(tmp_path / "archives"))
    path = jvm_archive.build()
    assert path == jvm_archive.archive_path()
    assert [p.name for p in (tmp_path / "archives").iterdir()] == [path.name]  # no partial file left
    option = jvm_archive.driver_java_option()
    assert option == f"-XX:SharedArchiveFile={path} -Xlog:cds*=off"
    (tmp_path / "job.py").write_text(JOB)
    # without the suite's own archive (tests/conftest.py's SPARK_SUBMIT_OPTS): this one is mapped
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_SUBMIT_OPTS": ""}
    run = subprocess.run(
        [
            str(jvm_archive.spark_home() / "bin" / "spark-submit"),
            "--master",
            "local[2]",
            "--conf",
            f"spark.driver.extraJavaOptions={option} {driver_jit.OPTION} -Xshare:on",
            str(tmp_path / "job.py"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "sum 45" in run.stdout
