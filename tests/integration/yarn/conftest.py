"""The YARN suite reuses the engine suite's Spark fixtures (``workspace``)."""

from tests.integration.engine.conftest import spark_env, workspace  # noqa: F401 - fixtures re-exported
