"""What the version floor run (scripts/floor) checks beyond the provider's Airflow tests.

Every DAG this repository ships (dags_examples/ and tests/airflow/dags/) is parsed and
serialized as the DAG processor does it, on whichever Airflow is installed. Under
scripts/floor (SEATUNNEL_CKPT_FLOOR=1) every distribution pyproject.toml gives a lower
bound (the core, and the extras the floor installs) must be installed at exactly that
bound, Airflow and the Spark provider first: what pyproject says is what runs.
"""

from __future__ import annotations

import os
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from .conftest import DAGS_FOLDER, EXAMPLE_DAGS, ROOT, TEST_DAGS

FLOOR = os.environ.get("SEATUNNEL_CKPT_FLOOR") == "1"


def test_every_shipped_dag_parses_and_serializes():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.serialization.serialized_objects import DagSerialization

    shipped = {path.name for folder in (EXAMPLE_DAGS, TEST_DAGS) for path in folder.glob("*.py")}
    assert len(shipped) >= 6
    bag = DagBag(dag_folder=str(DAGS_FOLDER))  # conftest copied both folders there
    assert bag.import_errors == {}
    # every file gave at least one DAG
    assert {Path(dag.fileloc).name for dag in bag.dags.values()} == shipped
    for dag in bag.dags.values():
        dag.validate()
        DagSerialization.serialize_dag(dag)


def lower_bounds() -> dict[str, str]:
    """Every ``>=`` bound of pyproject.toml's core and of the extras the floor installs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    lines = project["dependencies"] + [line for name in FLOOR_EXTRAS for line in extras[name]]
    bounds = {}
    for line in lines:
        requirement = Requirement(line)
        for spec in requirement.specifier:
            if spec.operator == ">=":
                bounds[requirement.name] = spec.version
    return bounds


#: the extras scripts/floor installs (besides the core): all's (the storage extra's three
#: included) and openlineage
FLOOR_EXTRAS = (
    "engine",
    "jdbc",
    "kafka",
    "iceberg",
    "delta",
    "sql",
    "lzo",
    "excel",
    "avro",
    "s3",
    "oss",
    "hdfs",
    "openlineage",
)


@pytest.mark.skipif(not FLOOR, reason="only in the floor environment (scripts/floor)")
@pytest.mark.parametrize("distribution", sorted(lower_bounds()))
def test_the_floor_environment_runs_pyprojects_lower_bounds(distribution):
    bound = lower_bounds()[distribution]
    installed = version(distribution)
    assert Version(installed) == Version(bound), (
        f"{distribution}: pyproject.toml says >={bound}, the floor runs {installed}; "
        "after changing pyproject.toml run scripts/floor --lock"
    )


def test_the_floor_covers_airflow_and_the_spark_provider():
    assert {"apache-airflow", "apache-airflow-providers-apache-spark"} <= set(lower_bounds())
