"""A light core and extras that say what is missing.

``pip install airflow-provider-seatunnel-ckpt`` is what schedulers, DAG processors, API
servers and triggerers run: importing the provider, its operators, sensors, triggers,
hooks and provider info, and parsing every shipped DAG, must not import PySpark, Arrow,
any connector library or any checkpoint storage client (boto3, oss2, hdfs). Jobs need the
``engine`` extra and one per connector family; a job whose extra is missing fails when
its file is loaded, before Spark starts, with one line naming the ``pip install`` to run.
Checkpoint storage on S3, OSS or HDFS needs the ``s3``, ``oss`` or ``hdfs`` extra, and
says so in one line when a configuration selects it.

Everything runs in subprocesses (Airflow is only ever imported by tests/airflow's own
process): libraries are hidden the way an absent install looks to Python
(``sys.modules[name] = None``: ``import`` raises, ``find_spec`` returns None), an audit
hook records every process started, and one test builds a real core-only virtualenv
from uv.lock (about 3 s with uv's cache) and runs the same checks there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "airflow_provider_seatunnel_ckpt"
DIST = "airflow-provider-seatunnel-ckpt"

#: what the engine extra and the connector extras install
ENGINE_MODULES = ["pyspark", "py4j", "pyarrow"]
CONNECTOR_MODULES = [
    "adbc_driver_postgresql",
    "adbc_driver_manager",
    "confluent_kafka",
    "kafka",
    "pyiceberg",
    "pyiceberg_core",
    "deltalake",
    "duckdb",
    "psycopg",
]
HEAVY = ENGINE_MODULES + CONNECTOR_MODULES
#: what the storage extras (s3, oss, hdfs) install: the checkpoint storage clients
STORAGE_MODULES = ["boto3", "botocore", "oss2", "hdfs"]

#: runs before the code under test: hides modules, records started processes and, at
#: exit, which watched modules got imported
PRELUDE = textwrap.dedent(
    """
    import atexit, json, os, sys
    for _name in {hidden!r}:
        sys.modules[_name] = None
    _started = []
    def _audit(event, args):
        if event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.system"):
            _started.append(repr(args)[:300])
    sys.addaudithook(_audit)
    def _report():
        loaded = sorted({{m.split(".")[0] for m, mod in list(sys.modules.items()) if mod is not None}} & set({watched!r}))
        with open(os.environ["EXTRAS_REPORT"], "w") as out:
            json.dump({{"started": _started, "loaded": loaded}}, out)
    atexit.register(_report)
    """
)

#: imports the whole Airflow face and parses every shipped DAG; prints a summary as JSON
AIRFLOW_FACE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    from pathlib import Path
    import airflow_provider_seatunnel_ckpt as package

    info = package.get_provider_info()
    # imported only by the OpenLineage provider, which the openlineage extra installs
    optional = {"airflow_provider_seatunnel_ckpt.operators.lineage"}
    modules = []
    for name in ("operators", "sensors", "triggers", "hooks", "storage"):
        parent = importlib.import_module(f"{package.__name__}.{name}")
        for found in pkgutil.walk_packages(parent.__path__, parent.__name__ + "."):
            if found.name in optional:
                continue
            importlib.import_module(found.name)
            modules.append(found.name)
    for section in ("operators", "sensors", "hooks", "triggers"):
        for entry in info.get(section, []):
            for module in entry["python-modules"]:
                importlib.import_module(module)
    classes = [c["hook-class-name"] for c in info.get("connection-types", [])]
    for path in classes:
        module, _, name = path.rpartition(".")
        getattr(importlib.import_module(module), name)
    from airflow_provider_seatunnel_ckpt.cli import build_parser
    build_parser()

    from airflow.dag_processing.dagbag import DagBag
    parsed = {}
    for folder in sys.argv[1:]:
        bag = DagBag(dag_folder=folder)
        assert bag.import_errors == {}, bag.import_errors
        files = {p.name for p in Path(folder).glob("*.py")}
        assert {Path(d.fileloc).name for d in bag.dags.values()} == files, (files, bag.dag_ids)
        parsed[folder] = sorted(bag.dag_ids)
    print(json.dumps({"modules": len(modules), "connection_types": len(classes), "dags": parsed}))
    """
)

DAG_FOLDERS = [str(ROOT / "dags_examples"), str(ROOT / "tests" / "airflow" / "dags")]


def run_python(
    python: str,
    code: str,
    args: list[str],
    tmp_path: Path,
    hidden: list[str],
    watched: list[str] = HEAVY + STORAGE_MODULES,
    env: dict[str, str] | None = None,
    timeout: float = 180,
):
    """``python -c PRELUDE + code args``; returns (process, report)."""
    report = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
    home = tmp_path / "airflow-home"
    home.mkdir(exist_ok=True)
    full_env = {
        **os.environ,
        "EXTRAS_REPORT": str(report),
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "SEATUNNEL_CKPT_CACHE_DIR": str(tmp_path / "cache"),
        **(env or {}),
    }
    full_env.pop("PYTHONPATH", None)
    process = subprocess.run(
        [python, "-c", PRELUDE.format(hidden=hidden, watched=watched) + code, *args],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    result = json.loads(report.read_text()) if report.exists() else None
    return process, result


def run_cli(python: str, args: list[str], tmp_path: Path, hidden: list[str], env: dict[str, str] | None = None):
    code = "import sys\nfrom airflow_provider_seatunnel_ckpt.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return run_python(python, code, args, tmp_path, hidden, env=env)


# ------------------------------------------------------------------ the core import path


def test_the_airflow_face_and_every_dag_load_without_engine_connector_or_storage_libraries(tmp_path):
    process, report = run_python(sys.executable, AIRFLOW_FACE, DAG_FOLDERS, tmp_path, hidden=HEAVY + STORAGE_MODULES)
    assert process.returncode == 0, process.stderr[-3000:]
    summary = json.loads(process.stdout.strip().splitlines()[-1])
    assert summary["modules"] >= 20 and summary["connection_types"] >= 1
    assert all(summary["dags"].values())
    assert report["loaded"] == []


# ------------------------------------------------------------------ a missing extra: one line, before Spark


def job_file(tmp_path: Path, source: str, sink: str = "{plugin_name: Console}", transform: str = "") -> str:
    path = tmp_path / "job.yaml"
    path.write_text(
        "env: {parallelism: 1}\n"
        f"source: [{source}]\n" + (f"transform: [{transform}]\n" if transform else "") + f"sink: [{sink}]\n"
    )
    return str(path)


SEQUENCE = "{plugin_name: Sequence, rows: 10}"
MISSING = {
    "jdbc": dict(
        hidden=["adbc_driver_postgresql"],
        key="source[0].plugin_name",
        connector="Jdbc",
        source="{plugin_name: Jdbc, url: 'jdbc:postgresql://localhost:5432/db', table: t, user: u}",
    ),
    "kafka": dict(
        hidden=["confluent_kafka"],
        key="sink[0].plugin_name",
        connector="Kafka",
        sink="{plugin_name: Kafka, bootstrap.servers: 'localhost:9092', topic: t}",
    ),
    "kafka-python": dict(
        hidden=["kafka"],
        key="source[0].plugin_name",
        connector="Kafka",
        extra="kafka",
        source="{plugin_name: Kafka, bootstrap.servers: 'localhost:9092', topic: t}",
    ),
    "iceberg": dict(
        hidden=["pyiceberg"],
        key="sink[0].plugin_name",
        connector="Iceberg",
        sink="{plugin_name: Iceberg, catalog_name: c, namespace: n, table: t}",
    ),
    "delta": dict(
        hidden=["deltalake"],
        key="source[0].plugin_name",
        connector="Delta",
        source="{plugin_name: Delta, path: '/tmp/nowhere'}",
    ),
    "sql": dict(
        hidden=["duckdb"],
        key="transform[0].plugin_name",
        connector="Sql",
        transform="{plugin_name: Sql, query: 'select * from t'}",
    ),
    "sql-filter": dict(
        hidden=["duckdb"],
        key="transform[0].plugin_name",
        connector="Filter",
        extra="sql",
        transform="{plugin_name: Filter, condition: 'id > 1'}",
    ),
    "engine": dict(hidden=["pyspark"], key="source[0].plugin_name", connector="Sequence"),
    "engine-arrow": dict(hidden=["pyarrow"], key="source[0].plugin_name", connector="Sequence", extra="engine"),
}


@pytest.mark.parametrize("case", MISSING, ids=str)
def test_a_job_that_needs_a_missing_extra_fails_in_one_line_before_spark_starts(case, tmp_path):
    spec = MISSING[case]
    extra = spec.get("extra", case)
    job = job_file(
        tmp_path, spec.get("source", SEQUENCE), spec.get("sink", "{plugin_name: Console}"), spec.get("transform", "")
    )
    process, report = run_cli(
        sys.executable,
        ["run", job, "--job-id", "j1"],
        tmp_path,
        hidden=spec["hidden"],
        env={"SEATUNNEL_CKPT_CONFIG": ""},
    )
    assert process.returncode == 2, process.stderr[-3000:]
    assert process.stderr == (
        f"error: {spec['key']}: connector {spec['connector']} needs the '{extra}' extra: "
        f"pip install '{DIST}[{extra}]'\n"
    )
    assert process.stdout == ""
    assert report["started"] == []  # no spark-submit, no JVM, nothing
    assert not {"pyspark", "py4j"} & set(report["loaded"])


def test_a_job_with_its_extras_installed_gets_past_the_check(tmp_path):
    """The same check passes when the library is there: the Kafka job then fails on its
    real problem (an option), not on an extra."""
    job = job_file(tmp_path, SEQUENCE, "{plugin_name: Kafka, topic: t}")
    process, report = run_cli(sys.executable, ["run", job], tmp_path, hidden=[])
    assert process.returncode == 2
    assert "extra" not in process.stderr and "bootstrap.servers" in process.stderr
    assert report["started"] == []


# ------------------------------------------------------------------ a missing storage client: one line


#: per storage backend: the extra its client library comes from, its file system (module
#: of storage/ and class), the library hidden, how messages name the backend, the
#: plugin-config key that selects it and a plugin-config
STORAGE = {
    "s3": dict(
        extra="s3",
        filesystem="fs_s3:S3FileSystem",
        hidden=["boto3"],
        title="S3",
        key="storage.type",
        plugin_config={"storage.type": "s3", "s3.bucket": "s3a://ckpt", "fs.s3a.endpoint": "http://127.0.0.1:9"},
    ),
    "oss": dict(
        extra="oss",
        filesystem="fs_oss:OssFileSystem",
        hidden=["oss2"],
        title="OSS",
        key="storage.type",
        plugin_config={
            "storage.type": "oss",
            "oss.bucket": "oss://ckpt",
            "fs.oss.endpoint": "http://127.0.0.1:9",
            "fs.oss.accessKeyId": "id",
            "fs.oss.accessKeySecret": "secret",
        },
    ),
    "hdfs": dict(
        extra="hdfs",
        filesystem="fs_webhdfs:WebHdfsFileSystem",
        hidden=["hdfs"],
        title="HDFS",
        key="fs.defaultFS",  # its scheme picks WebHDFS (file:/// is the local disk)
        plugin_config={"fs.defaultFS": "hdfs://127.0.0.1:9"},
    ),
}


def storage_config(tmp_path: Path, backend: str) -> str:
    path = tmp_path / "seatunnel.yaml"
    block = {"storage": {"type": "hdfs", "plugin-config": STORAGE[backend]["plugin_config"]}}
    path.write_text(json.dumps({"seatunnel": {"engine": {"checkpoint": block}}}))  # JSON is YAML
    return str(path)


def missing_storage_line(backend: str, key: str) -> str:
    spec = STORAGE[backend]
    prefix = f"{key}: " if key else ""
    return f"{prefix}{spec['title']} checkpoint storage needs the '{spec['extra']}' extra: pip install '{DIST}[{spec['extra']}]'"


@pytest.mark.parametrize("backend", STORAGE)
def test_checkpoint_storage_without_its_client_library_names_its_extra_in_one_line(backend, tmp_path):
    spec = STORAGE[backend]
    config = storage_config(tmp_path, backend)
    process, report = run_cli(sys.executable, ["list", "--config", config], tmp_path, hidden=spec["hidden"])
    assert process.returncode == 2, process.stderr[-3000:]
    key = f"seatunnel.engine.checkpoint.storage.plugin-config.{spec['key']}"
    assert process.stderr == f"error: {missing_storage_line(backend, key)}\n"
    assert report["started"] == []

    # the Airflow face opens storage through a hook: the same line
    code = textwrap.dedent(
        f"""
        from airflow_provider_seatunnel_ckpt.hooks.base import CheckpointStorageHook
        from airflow_provider_seatunnel_ckpt.extras import MissingExtra
        try:
            CheckpointStorageHook(config_file={config!r}).storage
        except MissingExtra as err:
            print(err)
        """
    )
    process, _ = run_python(sys.executable, code, [], tmp_path, hidden=spec["hidden"])
    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stdout == missing_storage_line(backend, key) + "\n"

    # a file system built without the check (unpickled on a Spark executor, say) says the
    # same at its first request, without a key
    code = textwrap.dedent(
        f"""
        import importlib
        from airflow_provider_seatunnel_ckpt.extras import MissingExtra
        module, name = {spec["filesystem"]!r}.split(":")
        cls = getattr(importlib.import_module("airflow_provider_seatunnel_ckpt.storage." + module), name)
        fs = cls.from_plugin_config({spec["plugin_config"]!r})
        try:
            fs.info("/x")
        except MissingExtra as err:
            print(err)
        """
    )
    process, _ = run_python(sys.executable, code, [], tmp_path, hidden=spec["hidden"])
    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stdout == missing_storage_line(backend, "") + "\n"


@pytest.mark.parametrize("backend", STORAGE)
def test_checkpoint_storage_needs_no_engine(backend, tmp_path):
    """The storage extras serve Airflow components, which have no Spark: the check of a
    storage extra asks nothing of the engine's libraries."""
    process, report = run_cli(
        sys.executable, ["validate", storage_config(tmp_path, backend)], tmp_path, hidden=ENGINE_MODULES
    )
    assert process.returncode == 0, process.stderr[-3000:]
    assert report["loaded"] == []


def test_a_job_with_a_data_path_on_s3_names_the_s3_extra(tmp_path):
    """Connectors reach S3, OSS and HDFS through the same file systems (storage/urls.py)."""
    source = "{plugin_name: S3File, path: 's3a://data/in/', file_format_type: json, schema: {fields: {id: bigint}}}"
    job = job_file(tmp_path, source)
    process, report = run_cli(
        sys.executable, ["run", job, "--job-id", "j1"], tmp_path, hidden=["boto3"], env={"SEATUNNEL_CKPT_CONFIG": ""}
    )
    assert process.returncode == 2, process.stderr[-3000:]
    assert process.stderr == f"error: source[0].path: S3 storage needs the 's3' extra: pip install '{DIST}[s3]'\n"
    assert report["started"] == []


# ------------------------------------------------------------------ pyspark and pyspark-client


def fake_distribution(folder: Path, name: str, version: str) -> None:
    """An installed-looking distribution: what a stray ``pip install pyspark-client==X``
    leaves in front of the venv's own on sys.path."""
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_pyspark_and_pyspark_client_at_different_versions_refuse_to_start(tmp_path):
    from importlib.metadata import version

    spark = version("pyspark")
    assert version("pyspark-client") == spark  # what uv.lock installs
    shadow = tmp_path / "shadow"
    fake_distribution(shadow, "pyspark-client", "4.0.9")
    job = job_file(tmp_path, SEQUENCE)
    code = (
        f"import sys\nsys.path.insert(0, {str(shadow)!r})\n"
        "from airflow_provider_seatunnel_ckpt.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    process, report = run_python(sys.executable, code, ["run", job], tmp_path, hidden=[])
    assert process.returncode == 2, process.stderr[-3000:]
    assert process.stderr.count("\n") == 1 and "Traceback" not in process.stderr
    assert process.stderr.startswith(f"error: pyspark {spark} and pyspark-client 4.0.9 ")
    assert f"pip install 'pyspark=={spark}' 'pyspark-client=={spark}'" in process.stderr
    assert report["started"] == []


def test_the_lock_installs_one_release_of_pyspark_and_pyspark_client():
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    versions = {p["name"]: p["version"] for p in lock["package"]}
    assert versions["pyspark"] == versions["pyspark-client"]


# ------------------------------------------------------------------ the dependency lists


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def names(requirements: list[str]) -> set[str]:
    return {Requirement(r).name for r in requirements}


def test_the_core_brings_no_engine_no_connector_and_no_storage_library():
    core = names(project()["dependencies"])
    heavy = {
        "pyspark",
        "pyarrow",
        "numpy",
        "adbc-driver-postgresql",
        "psycopg",
        "confluent-kafka",
        "kafka-python",
        "pyiceberg",
        "deltalake",
        "duckdb",
        # the storage clients: oss2 needs crcmod, built from source where no wheel fits
        "boto3",
        "oss2",
        "hdfs",
    }
    assert core & heavy == set()
    assert {"apache-airflow", "apache-airflow-providers-apache-spark"} <= core


def test_each_storage_extra_brings_its_client_without_the_engine_and_storage_brings_all_three():
    extras = project()["optional-dependencies"]
    # the package's own WebHDFS and OSS code uses requests (storage/fs_webhdfs.py, fs_oss.py)
    expected = {"s3": {"boto3"}, "oss": {"oss2", "requests"}, "hdfs": {"hdfs", "requests"}}
    for extra, clients in expected.items():
        # Airflow components without Spark install them: no engine
        assert names(extras[extra]) == clients, extra
    (storage,) = [Requirement(r) for r in extras["storage"]]
    assert storage.name == DIST and storage.extras == {"s3", "oss", "hdfs"}
    # Kerberos is a way of reaching HDFS: the kerberos extra brings the hdfs one
    self_refs = [Requirement(r) for r in extras["kerberos"] if Requirement(r).name == DIST]
    assert [r.extras for r in self_refs] == [{"hdfs"}]


def test_each_connector_extra_brings_the_engine_and_all_brings_every_extra():
    extras = project()["optional-dependencies"]
    engine = {Requirement(r).name: Requirement(r) for r in extras["engine"]}
    # one release for both: the Spark provider floats pyspark-client
    assert str(engine["pyspark"].specifier) == str(engine["pyspark-client"].specifier)
    assert str(engine["pyspark"].specifier).startswith("==")
    connectors = ("jdbc", "kafka", "iceberg", "delta", "sql", "lzo", "excel", "avro")
    for extra in connectors:
        self_refs = [Requirement(r) for r in extras[extra] if Requirement(r).name == DIST]
        assert [r.extras for r in self_refs] == [{"engine"}], extra
    (everything,) = [Requirement(r) for r in extras["all"]]
    assert everything.extras == {"engine", *connectors, "storage"}
    # the suite runs every connector: scripts/bootstrap installs the all extra with the test group
    assert "--extra all" in (ROOT / "scripts" / "bootstrap").read_text()


# ------------------------------------------------------------------ a real core-only install


def find_uv() -> str:
    for candidate in (shutil.which("uv"), str(ROOT / ".tools" / "bin" / "uv")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("uv not found: scripts/bootstrap installs it")


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory) -> Path:
    """``pip install airflow-provider-seatunnel-ckpt`` without extras, from uv.lock and a
    wheel of this checkout."""
    venv = tmp_path_factory.mktemp("core") / "venv"
    env = {
        **os.environ,
        "UV_PROJECT_ENVIRONMENT": str(venv),
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
    }
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(
        [find_uv(), "sync", "--frozen", "--no-editable", "--quiet"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return venv


def test_a_core_install_has_no_engine_no_connector_and_no_storage_library(core_venv):
    listed = subprocess.run(
        [
            str(core_venv / "bin" / "python"),
            "-c",
            "import json, importlib.metadata as m; print(json.dumps(sorted(d.metadata['Name'].lower() "
            "for d in m.distributions())))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    installed = set(json.loads(listed.stdout))
    assert DIST in installed
    absent = {
        "pyspark",
        "py4j",
        "adbc-driver-postgresql",
        "psycopg",
        "psycopg-binary",
        "confluent-kafka",
        "kafka-python",
        "pyiceberg",
        "deltalake",
        "duckdb",
        "boto3",
        "botocore",
        "oss2",
        "crcmod",
        "hdfs",
    }
    assert installed & absent == set()


def test_a_core_install_runs_the_airflow_face_and_names_the_engine_and_storage_extras(core_venv, tmp_path):
    python = str(core_venv / "bin" / "python")
    # pyarrow comes with the Spark provider's pyspark-client; the core still must not import it
    process, report = run_python(python, AIRFLOW_FACE, DAG_FOLDERS, tmp_path, hidden=["pyarrow"])
    assert process.returncode == 0, process.stderr[-3000:]
    assert report["loaded"] == []

    job = job_file(tmp_path, SEQUENCE)
    process, report = run_cli(python, ["run", job], tmp_path, hidden=[])
    assert process.returncode == 2, process.stderr[-3000:]
    assert process.stderr == (
        f"error: source[0].plugin_name: connector Sequence needs the 'engine' extra: pip install '{DIST}[engine]'\n"
    )
    assert report["started"] == []

    # no storage client is installed: none is hidden here
    for backend, spec in STORAGE.items():
        process, _ = run_cli(python, ["list", "--config", storage_config(tmp_path, backend)], tmp_path, hidden=[])
        assert process.returncode == 2, process.stderr[-3000:]
        key = f"seatunnel.engine.checkpoint.storage.plugin-config.{spec['key']}"
        assert process.stderr == f"error: {missing_storage_line(backend, key)}\n"


def test_spark_s_own_python_in_a_zip_counts_as_spark_on_an_executor(tmp_path):
    """On a YARN (or any cluster) executor, PySpark is Spark's own ``pyspark.zip`` from the
    container, with no jars beside it and no SPARK_HOME: the JVM that runs the worker has
    them. Found on a MiniYARNCluster: every connector refused to load there ("needs the
    'engine' extra") and every subtask failed four times."""
    import zipfile

    import pyspark

    archive = tmp_path / "pyspark.zip"
    package = Path(pyspark.__file__).parent
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in package.rglob("*"):  # as Spark's own zip: the Python side, no jars
            inside = path.relative_to(package)
            if path.is_file() and inside.parts[0] not in ("jars", "__pycache__") and "__pycache__" not in inside.parts:
                zipped.write(path, Path("pyspark") / inside)
    code = (
        f"import importlib.util, sys\nsys.path.insert(0, {str(archive)!r})\n"
        "origin = importlib.util.find_spec('pyspark').origin\nassert '.zip' in origin, origin\n"
        "from airflow_provider_seatunnel_ckpt.extras import missing_modules\n"
        "print(missing_modules('engine'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stdout.strip() == "[]"
