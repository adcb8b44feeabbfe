"""The multi-host cluster (tests/cluster/cluster.py), started once for the session's
cluster tests and torn down (namespaces deleted) even when one fails."""

from __future__ import annotations

import atexit
import signal
from collections.abc import Iterator

import pytest

from tests.support.chaos import chaos  # noqa: F401 - fixture re-exported

from .cluster import NetCluster
from .netns import missing_requirements


@pytest.fixture(scope="session")
def net_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetCluster]:
    missing = missing_requirements()
    if missing:
        pytest.fail(f"the multi-host cluster tests cannot run here: {missing}", pytrace=False)
    cluster = NetCluster(tmp_path_factory.mktemp("net-cluster"))
    # A pytest stopped by SIGTERM skips fixture teardown; atexit still runs then.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    atexit.register(cluster.stop)
    try:
        with cluster:
            yield cluster
    finally:
        atexit.unregister(cluster.stop)
        signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
