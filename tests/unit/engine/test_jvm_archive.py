"""The driver JVM's class archive (engine/jvm_archive.py): which archive a driver maps, and
that it maps none made for another JVM or classpath. (Building one and a JVM mapping it:
tests/integration/engine/test_jvm_archive.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.engine import jvm_archive


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Spark home with two jars, a java binary and an empty archive directory."""
    (tmp_path / "spark" / "jars").mkdir(parents=True)
    for name in ("spark-core.jar", "scala-library.jar"):
        (tmp_path / "spark" / "jars" / name).write_bytes(b"jar " + name.encode())
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "jdk" / "bin" / "java").write_bytes(b"java")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv(jvm_archive.DIR_ENV, str(tmp_path / "archives"))
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)  # the suite's own archive (tests/conftest.py)
    return tmp_path


def _archive_for_now(machine: Path) -> Path:
    key = jvm_archive.fingerprint()
    assert key is not None
    path = machine / "archives" / f"driver-{key}.jsa"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"archive")
    return path


def test_without_an_archive_the_driver_starts_as_before(machine: Path) -> None:
    conf = {"spark.driver.extraJavaOptions": "-Dmine=1"}
    jvm_archive.with_driver_archive(conf)
    assert conf == {"spark.driver.extraJavaOptions": "-Dmine=1"}
    assert jvm_archive.driver_java_option() is None


def test_the_archive_is_mapped_after_the_jobs_own_options(machine: Path) -> None:
    path = _archive_for_now(machine)
    conf = {"spark.driver.extraJavaOptions": "-Dmine=1"}
    jvm_archive.with_driver_archive(conf)
    # quietly: a JVM that cannot map it would warn on every start
    assert conf["spark.driver.extraJavaOptions"] == f"-Dmine=1 -XX:SharedArchiveFile={path} -Xlog:cds*=off"
    alone: dict[str, str] = {}
    jvm_archive.with_driver_archive(alone)
    assert alone == {"spark.driver.extraJavaOptions": f"-XX:SharedArchiveFile={path} -Xlog:cds*=off"}


@pytest.mark.parametrize("change", ["a jar is replaced", "a jar is added", "another java"])
def test_an_archive_made_for_another_jvm_or_classpath_is_not_mapped(
    machine: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mapping an archive of another classpath makes the JVM warn and ignore it; one of
    another JVM build may not load at all: a driver only looks for its own fingerprint."""
    _archive_for_now(machine)
    assert jvm_archive.driver_java_option() is not None
    if change == "a jar is replaced":
        (machine / "spark" / "jars" / "spark-core.jar").write_bytes(b"jar of another release")
    elif change == "a jar is added":
        (machine / "spark" / "jars" / "extra.jar").write_bytes(b"jar")
    else:
        (machine / "jdk2" / "bin").mkdir(parents=True)
        (machine / "jdk2" / "bin" / "java").write_bytes(b"java")
        monkeypatch.setenv("JAVA_HOME", str(machine / "jdk2"))
    assert jvm_archive.driver_java_option() is None


def test_no_java_means_no_archive(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(machine / "nowhere"))
    assert jvm_archive.fingerprint() is None and jvm_archive.driver_java_option() is None
    with pytest.raises(RuntimeError, match="^no java binary or no Spark jars"):
        jvm_archive.build()


@pytest.mark.parametrize(
    "where, options",
    [
        ("job", "-XX:SharedArchiveFile=/other.jsa"),
        ("job", "-XX:ArchiveClassesAtExit=/new.jsa"),
        ("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/tests.jsa"),
        ("SPARK_SUBMIT_OPTS", "-XX:ArchiveClassesAtExit=/training.jsa"),
    ],
)
def test_an_archive_already_mapped_or_written_wins(
    machine: Path, where: str, options: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One archive per JVM: a JVM asked to map one archive while it writes another refuses
    to start (the test suite's training run failed so, 'Java gateway process exited')."""
    _archive_for_now(machine)
    conf: dict[str, str] = {}
    if where == "job":
        conf["spark.driver.extraJavaOptions"] = options
    else:
        monkeypatch.setenv("SPARK_SUBMIT_OPTS", options)
    before = dict(conf)
    jvm_archive.with_driver_archive(conf)
    assert conf == before
