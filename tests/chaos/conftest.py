"""Fixtures for the chaos suite: the integration suite's Spark fixtures, and ``chaos`` (a
seeded random generator and a record per test: tests/support/chaos.py)."""

from __future__ import annotations

from tests.integration.engine.conftest import (  # noqa: F401 - fixtures re-exported
    s3_bucket,
    s3_plugin_config,
    spark_env,
    webhdfs_server,
    workspace,
)
from tests.support.chaos import chaos  # noqa: F401 - fixture re-exported
