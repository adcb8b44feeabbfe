from __future__ import annotations

from tests.integration.engine.conftest import spark_env, workspace  # noqa: F401 - fixtures re-exported
