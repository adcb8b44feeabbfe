"""The multi-host cluster (tests/cluster/cluster.py), started once for the session's
cluster tests and torn down (namespaces deleted) even when one fails."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.chaos.conftest import chaos  # noqa: F401 - fixture re-exported

from .cluster import NetCluster
from .netns import missing_requirements


@pytest.fixture(scope="session")
def net_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetCluster]:
    missing = missing_requirements()
    if missing:
        pytest.fail(f"the multi-host cluster tests cannot run here: {missing}", pytrace=False)
    with NetCluster(tmp_path_factory.mktemp("net-cluster")) as cluster:
        yield cluster
