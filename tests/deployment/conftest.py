"""One real Airflow deployment per session (tests/deployment/deployment.py): PostgreSQL
(the session's server, the one the Jdbc tests use) as its metadata database, and the
example DAGs plus tests/deployment/dags as its DAGs folder. Stopped at the end of the session, also on failure."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from .deployment import AirflowDeployment

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def deployment(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowDeployment]:
    home = tmp_path_factory.mktemp("airflow-deployment")
    dags = home / "dags"
    dags.mkdir()
    for source in [*(ROOT / "dags_examples").glob("*.py"), *(Path(__file__).parent / "dags").glob("*.py")]:
        shutil.copy(source, dags / source.name)
    database = postgres_server.create_database("airflow_metadata")
    deployment = AirflowDeployment(home, postgres_server.uri(database), dags,
                                   env={"SEATUNNEL_CKPT_CACHE_DIR": str(home / "cache")})
    with deployment:
        yield deployment
    postgres_server.drop_database(database)
