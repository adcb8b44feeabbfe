"""One real Airflow deployment for the tests of this directory (deployment.py): PostgreSQL
(the session's server, the one the Jdbc tests use) as its metadata database, and the
example DAGs plus tests/deployment/dags as its DAGs folder. Stopped after the last test
of this directory, also on failure."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .deployment import AirflowDeployment
from .rest import ensure_connection

ROOT = Path(__file__).resolve().parents[2]


# package scope: stopped after the last test of tests/deployment, so its scheduler and DAG
# processor do not keep working beside the rest of the session
@pytest.fixture(scope="package")
def deployment(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowDeployment]:
    home = tmp_path_factory.mktemp("airflow-deployment")
    dags = home / "dags"
    dags.mkdir()
    for source in [*(ROOT / "dags_examples").glob("*.py"), *(Path(__file__).parent / "dags").glob("*.py")]:
        shutil.copy(source, dags / source.name)
    database = postgres_server.create_database("airflow_metadata")
    deployment = AirflowDeployment(
        home, postgres_server.uri(database), dags, env={"SEATUNNEL_CKPT_CACHE_DIR": str(home / "cache")}
    )
    with deployment:
        yield deployment
    postgres_server.drop_database(database)


@pytest.fixture
def spark_connection(deployment: AirflowDeployment) -> None:
    """``spark_default`` as local[2], made over the API."""
    ensure_connection(deployment, {"connection_id": "spark_default", "conn_type": "spark", "host": "local[2]"})
