"""Which restore a driver uses when YARN starts its application again (engine/yarn_attempt.py)."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.yarn_attempt import application_master_attempt, restore_for_attempt

STAGING = {"SPARK_YARN_STAGING_DIR": "hdfs://nn/user/etl/.sparkStaging/application_1796230087925_0004"}


@pytest.mark.parametrize(
    ("container", "attempt"),
    [
        ("container_1796230087925_0004_01_000001", 1),
        ("container_1796230087925_0004_02_000001", 2),
        ("container_e17_1796230087925_0004_03_000001", 3),  # an RM epoch after a ResourceManager restart
        ("container_1796230087925_0004_02_000003", None),  # an executor's container, not the master's
        ("", None),
    ],
)
def test_the_attempt_comes_from_the_application_masters_container_id(container: str, attempt: int | None) -> None:
    assert application_master_attempt({**STAGING, "CONTAINER_ID": container}) == attempt


def test_a_driver_outside_a_spark_application_master_is_no_attempt() -> None:
    # the Airflow worker may itself run in a YARN container; without Spark's staging
    # directory in the environment it is not Spark's application master
    assert application_master_attempt({"CONTAINER_ID": "container_1796230087925_0004_02_000001"}) is None


@pytest.mark.parametrize(("restore", "discard"), [("none", True), ("none", False), ("3", False), ("latest", False)])
def test_a_re_attempt_resumes_from_the_latest_checkpoint_whatever_attempt_one_was_told(
    restore: str, discard: bool
) -> None:
    first = {**STAGING, "CONTAINER_ID": "container_1796230087925_0004_01_000001"}
    second = {**STAGING, "CONTAINER_ID": "container_1796230087925_0004_02_000001"}
    assert restore_for_attempt(restore, discard, first) == (restore, discard)
    assert restore_for_attempt(restore, discard, second) == ("latest", False)
    assert restore_for_attempt(restore, discard, {}) == (restore, discard)  # client mode, local, standalone
