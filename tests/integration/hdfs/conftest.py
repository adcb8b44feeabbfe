"""The real HDFS suites reuse the engine suite's Spark fixtures (``workspace``)."""

from tests.integration.engine.conftest import spark_env, workspace  # noqa: F401 - fixtures re-exported
