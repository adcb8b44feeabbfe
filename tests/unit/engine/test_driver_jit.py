"""The driver JVM's C1-only compilation (engine/driver_jit.py): added after the job's own
options, never over a job's own choice of how its JVM compiles."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.driver_jit import KEY, OPTION, with_quick_jit


@pytest.fixture(autouse=True)
def _no_submit_opts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)


def test_added_after_the_jobs_own_options() -> None:
    conf = {KEY: "-Dmine=1"}
    with_quick_jit(conf)
    assert conf == {KEY: f"-Dmine=1 {OPTION}"}
    alone: dict[str, str] = {}
    with_quick_jit(alone)
    assert alone == {KEY: OPTION}


@pytest.mark.parametrize("options", ["-XX:TieredStopAtLevel=4", "-XX:-TieredCompilation", "-Xint", "-Dmine=1 -Xcomp"])
def test_a_jobs_own_jit_choice_stands(options: str) -> None:
    conf = {KEY: options}
    with_quick_jit(conf)
    assert conf == {KEY: options}


def test_spark_submit_opts_choosing_the_jit_stand_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=4")
    conf: dict[str, str] = {}
    with_quick_jit(conf)
    assert conf == {}
