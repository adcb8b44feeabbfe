"""Spark settings that break the engine's model (engine/spark_settings.py): a job's own
are refused with one line, spark-submit's are overridden with a warning, and the
engine's values are always returned; values are read as Spark reads them."""

from __future__ import annotations

import builtins
import json
import logging
import os
import socket
import subprocess
import sys
import time
from types import MappingProxyType
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine import spark_settings
from airflow_provider_seatunnel_ckpt.engine.spark_settings import (
    ENFORCED,
    LAUNCHER_ORIGIN,
    check_running_spark_settings,
    check_spark_settings,
    parse_spark_bool,
    parse_spark_int,
    parse_spark_seconds,
)
from airflow_provider_seatunnel_ckpt.errors import ConfigError

SPECULATION = "spark.speculation"
DYNAMIC = "spark.dynamicAllocation.enabled"
EXCLUDE = "spark.excludeOnFailure.enabled"
EXCLUDE_TS = "spark.excludeOnFailure.taskAndStage.enabled"
IDLE = "spark.python.worker.idleTimeoutSeconds"
KILL = "spark.python.worker.killOnIdleTimeout"
MAX_FAILURES = "spark.task.maxFailures"

#: (settings, the key refused, words its line must hold, the setting the engine uses instead)
BREAKING = {
    "speculation": (
        {SPECULATION: "true"},
        SPECULATION,
        ["true", "second copy of a running subtask", "remove it or set it to false"],
        {SPECULATION: "false"},
    ),
    "dynamic allocation": (
        {DYNAMIC: "true"},
        DYNAMIC,
        [
            "true",
            "fewer executors than the subtasks need at once",
            "no checkpoint completes",
            "spark.executor.instances",
        ],
        {DYNAMIC: "false"},
    ),
    "exclusion": (
        {EXCLUDE: "true"},
        EXCLUDE,
        ["true", "executor it failed on", "instead of failing over", f"{EXCLUDE_TS}=false"],
        {EXCLUDE_TS: "false"},
    ),
    "task and stage exclusion": (
        {EXCLUDE_TS: "TRUE"},
        EXCLUDE_TS,
        ["TRUE", "executor it failed on", "remove it or set it to false"],
        {EXCLUDE_TS: "false"},
    ),
    "idle kill": (
        {KILL: "true", IDLE: "60s"},
        KILL,
        ["true", f"{IDLE}=60s", "after 60 s without output", "retried over and over", "remove it or set it to false"],
        {KILL: "false"},
    ),
    "no attempts": (
        {MAX_FAILURES: "0"},
        MAX_FAILURES,
        ["0 is not a number of attempts", "set it to 1 or more"],
        {MAX_FAILURES: "4"},
    ),
    "negative attempts": ({MAX_FAILURES: "-1"}, MAX_FAILURES, ["-1 is not a number of attempts"], {MAX_FAILURES: "4"}),
}


def _refusal(chosen: dict[str, str], launcher: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        check_spark_settings(chosen, launcher, warn=_no_warning)
    return caught.value


def _no_warning(line: str) -> None:
    raise AssertionError(f"unexpected warning: {line}")


# ---- the job's own settings: refused ------------------------------------------------------
@pytest.mark.parametrize("case", BREAKING.values(), ids=BREAKING.keys())
def test_a_breaking_setting_of_the_job_is_refused_with_one_line(case: Any) -> None:
    settings, key, words, _ = case
    err = _refusal(settings)
    assert err.key == key
    line = str(err)
    assert line.startswith(f"{key}: ") and "\n" not in line
    for word in words:
        assert word in line, line


def test_a_refusal_reads_as_the_issue_asks() -> None:
    assert str(_refusal({SPECULATION: "true"})) == (
        "spark.speculation: true would let Spark start a second copy of a running subtask (each subtask is one "
        "Spark task that runs for the whole job): two attempts of one subtask at once, reading the same splits "
        "and staging the same rows; remove it or set it to false"
    )


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (SPECULATION, "yes", "spark.speculation: expected true or false, got yes"),
        (DYNAMIC, "", "spark.dynamicAllocation.enabled: expected true or false, got ''"),
        (EXCLUDE, "1", "spark.excludeOnFailure.enabled: expected true or false, got 1"),
        (KILL, "on", "spark.python.worker.killOnIdleTimeout: expected true or false, got on"),
        (MAX_FAILURES, "four", "spark.task.maxFailures: expected an integer, got four; set it to 1 or more"),
        (MAX_FAILURES, "4.0", "spark.task.maxFailures: expected an integer, got 4.0; set it to 1 or more"),
    ],
)
def test_an_unreadable_value_of_the_job_is_refused(key: str, value: str, expected: str) -> None:
    assert str(_refusal({key: value})).startswith(expected)


# ---- spark-submit's settings: overridden with a warning -----------------------------------------
@pytest.mark.parametrize("case", BREAKING.values(), ids=BREAKING.keys())
def test_a_breaking_setting_from_spark_submit_is_overridden_with_a_warning(case: Any) -> None:
    settings, key, words, instead = case
    lines: list[str] = []
    result = check_spark_settings({}, settings, warn=lines.append)
    assert result == {**ENFORCED, **instead}
    [line] = lines
    assert line.startswith(f"{key}: ") and "\n" not in line
    assert f"({LAUNCHER_ORIGIN}); this job runs with " + ", ".join(f"{k}={v}" for k, v in instead.items()) in line
    for word in words:
        if not word.startswith(("remove it", "set it to", f"{EXCLUDE_TS}=")):
            assert word in line, line


def test_the_warning_is_logged_by_default(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=spark_settings.__name__):
        check_spark_settings({}, {SPECULATION: "true", DYNAMIC: "true"})
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.WARNING]
    assert caplog.records[0].getMessage().startswith("spark.speculation: true would let Spark start a second copy")
    assert (
        caplog.records[1]
        .getMessage()
        .endswith(
            "this job runs with spark.dynamicAllocation.enabled=false; give it its executors with "
            "spark.executor.instances (or spark.cores.max on a standalone cluster)"
        )
    )


def test_an_unreadable_value_from_spark_submit_is_replaced_when_the_engine_sets_that_key() -> None:
    lines: list[str] = []
    result = check_spark_settings({}, {SPECULATION: "yes", MAX_FAILURES: "x"}, warn=lines.append)
    assert result == {**ENFORCED, MAX_FAILURES: "4"}
    assert lines == [
        f"spark.speculation: expected true or false, got yes ({LAUNCHER_ORIGIN}); this job runs with spark.speculation=false",
        f"spark.task.maxFailures: expected an integer, got x ({LAUNCHER_ORIGIN}); this job runs with spark.task.maxFailures=4",
    ]


def test_an_unreadable_value_from_spark_submit_the_engine_does_not_replace_is_left_to_spark() -> None:
    # spark.excludeOnFailure.enabled is not replaced (the engine sets taskAndStage), so
    # Spark still reads it and reports it in its own words.
    assert check_spark_settings({}, {EXCLUDE: "yes"}, warn=_no_warning) == dict(ENFORCED)


def test_the_engine_settings_are_returned_even_when_nothing_was_seen() -> None:
    # spark-defaults.conf read when pyspark starts the JVM itself is not visible before
    # it starts: the engine's values are applied anyway (the session builder's win).
    assert (
        check_spark_settings({})
        == dict(ENFORCED)
        == {SPECULATION: "false", DYNAMIC: "false", EXCLUDE_TS: "false", KILL: "false"}
    )


# ---- what is not flagged ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "settings",
    [
        {SPECULATION: "false", DYNAMIC: " FALSE "},
        # tuning keys do nothing without speculation / dynamic allocation
        {
            "spark.speculation.task.duration.threshold": "10s",
            "spark.speculation.multiplier": "1.1",
            "spark.dynamicAllocation.maxExecutors": "2",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        },
        # application-level exclusion only: Spark 4 asks taskAndStage first
        {EXCLUDE: "true", EXCLUDE_TS: "false"},
        {"spark.excludeOnFailure.application.enabled": "true", "spark.excludeOnFailure.killExcludedExecutors": "true"},
        # the idle timeout alone only logs; the kill without a timeout never fires
        {IDLE: "60"},
        {KILL: "true"},
        {KILL: "true", IDLE: "0"},
        {KILL: "true", IDLE: "500ms"},  # whole seconds: 0, no timeout
        {KILL: "false", IDLE: "60"},
        # a subtask on a decommissioned executor fails over like one on a lost executor
        {"spark.decommission.enabled": "true", "spark.executor.decommission.killInterval": "60s"},
        # one attempt is a choice (fail fast, let Airflow retry), not a break
        {MAX_FAILURES: "1"},
        {MAX_FAILURES: " +8 "},
        # one Spark job per application: the scheduling mode has nothing to choose between
        {"spark.scheduler.mode": "FAIR"},
        # fewer slots than cores: a matter for the slot check, not a broken model
        {"spark.task.cpus": "2", "spark.default.parallelism": "200"},
        # Spark 4 reads the old name no more
        {"spark.blacklist.enabled": "true"},
    ],
)
def test_settings_that_do_not_break_the_model_pass_silently(settings: dict[str, str]) -> None:
    assert check_spark_settings(settings, warn=_no_warning) == dict(ENFORCED)
    assert check_spark_settings({}, settings, warn=_no_warning) == dict(ENFORCED)
    check_running_spark_settings(settings)


# ---- which source decides ------------------------------------------------------------------------
def test_the_job_setting_wins_over_spark_submit() -> None:
    # the job turns it off: nothing to refuse or warn about
    assert check_spark_settings({SPECULATION: "false"}, {SPECULATION: "true"}, warn=_no_warning) == dict(ENFORCED)
    # the job turns it on over spark-submit's off: refused
    assert _refusal({DYNAMIC: "true"}, {DYNAMIC: "false"}).key == DYNAMIC


def test_a_job_refusal_comes_before_any_warning() -> None:
    lines: list[str] = []
    with pytest.raises(ConfigError, match="^spark.speculation: "):
        check_spark_settings({SPECULATION: "true"}, {DYNAMIC: "true"}, warn=lines.append)
    assert lines == []


def test_exclusion_is_decided_by_task_and_stage_first_wherever_it_is_set() -> None:
    # spark-submit's taskAndStage decides over the job's "enabled": overridden, not refused
    lines: list[str] = []
    assert check_spark_settings({EXCLUDE: "false"}, {EXCLUDE_TS: "true"}, warn=lines.append) == dict(ENFORCED)
    assert len(lines) == 1 and lines[0].startswith(f"{EXCLUDE_TS}: true would forbid")
    # the job's taskAndStage decides over spark-submit's "enabled": refused
    assert _refusal({EXCLUDE_TS: "true"}, {EXCLUDE: "false"}).key == EXCLUDE_TS
    # the job's own taskAndStage=false makes spark-submit's "enabled" harmless
    assert check_spark_settings({EXCLUDE_TS: "false"}, {EXCLUDE: "true"}, warn=_no_warning) == dict(ENFORCED)


def test_the_idle_kill_is_judged_by_where_the_kill_is_set() -> None:
    # the job asks for the kill, the cluster sets a timeout: refused
    err = _refusal({KILL: "True"}, {IDLE: "5min"})
    assert err.key == KILL and "after 300 s without output" in str(err)
    # the cluster asks for the kill, the job sets a timeout (to log): overridden
    lines: list[str] = []
    assert check_spark_settings({IDLE: "120"}, {KILL: "true"}, warn=lines.append) == dict(ENFORCED)
    assert len(lines) == 1 and lines[0].endswith(f"this job runs with {KILL}=false")
    # an unreadable timeout may be any length: the kill is refused, naming it
    line = str(_refusal({KILL: "true", IDLE: "ten"}))
    assert f"true with {IDLE}=ten would kill every subtask's Python worker after that long without output" in line


def test_values_and_keys_are_taken_as_strings() -> None:
    # YAML gives booleans and numbers; JobSpec.spark_conf makes them "True" and "4"
    assert _refusal({SPECULATION: True}).key == SPECULATION  # type: ignore[dict-item]
    assert check_spark_settings({MAX_FAILURES: 4}, warn=_no_warning) == dict(ENFORCED)  # type: ignore[dict-item]


def test_an_odd_value_stays_on_one_line() -> None:
    line = str(_refusal({SPECULATION: "true\n"}))
    assert line.startswith("spark.speculation: 'true\\n' would let Spark") and "\n" not in line


# ---- a running context ---------------------------------------------------------------------------
def test_a_running_context_with_a_breaking_setting_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        check_running_spark_settings({"spark.master": "spark://m:7077", SPECULATION: "true"})
    line = str(caught.value)
    assert line.startswith("spark.speculation: true would let Spark start a second copy")
    assert line.endswith(
        "(in a Spark context created before the job, whose settings can no longer change); "
        "remove it or set it to false where that context is created"
    )


def test_a_context_built_with_the_returned_settings_passes() -> None:
    launcher = {SPECULATION: "true", DYNAMIC: "true", EXCLUDE: "true", KILL: "true", IDLE: "1", MAX_FAILURES: "0"}
    overrides = check_spark_settings({}, launcher, warn=lambda line: None)
    check_running_spark_settings({**launcher, **overrides})  # what the session builder leaves in effect


# ---- reading values as Spark does -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("TRUE", True),
        ("True", True),
        ("tRuE", True),
        (" true ", True),
        ("\ttrue\n", True),
        ("false", False),
        ("FALSE", False),
        ("\x00false\x1f", False),
    ],
)
def test_booleans_read_as_spark_reads_them(text: str, value: bool) -> None:
    assert parse_spark_bool(text) is value


@pytest.mark.parametrize(
    "text", ["", " ", "yes", "no", "1", "0", "t", "f", "on", "true!", "tru e", "\u00a0true", "true\u2003"]
)
def test_anything_else_is_not_a_boolean(text: str) -> None:
    # Java's trim strips characters up to U+0020 only, so a non-breaking space stays
    with pytest.raises(ValueError, match="expected true or false"):
        parse_spark_bool(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [("4", 4), (" 4 ", 4), ("+4", 4), ("-1", -1), ("0", 0), ("2147483647", 2**31 - 1), ("-2147483648", -(2**31))],
)
def test_integers_read_as_spark_reads_them(text: str, value: int) -> None:
    assert parse_spark_int(text) == value


@pytest.mark.parametrize("text", ["", "4.0", "1_000", "4x", "0x10", "2147483648", "- 1"])
def test_anything_else_is_not_an_integer(text: str) -> None:
    with pytest.raises(ValueError, match="expected an integer"):
        parse_spark_int(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("60", 60),
        ("60s", 60),
        (" 60S ", 60),
        ("5min", 300),
        ("1m", 60),
        ("2h", 7200),
        ("1d", 86400),
        ("500ms", 0),
        ("1500ms", 1),
        ("1000000us", 1),
        ("0", 0),
        ("-5", -5),
        ("-1500ms", -1),
    ],
)
def test_durations_read_as_spark_reads_them(text: str, seconds: int) -> None:
    assert parse_spark_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "1.5s", "5 min", "5sec", "s", "ten"])
def test_anything_else_is_not_a_duration(text: str) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        parse_spark_seconds(text)


# ---- cheap and pure ---------------------------------------------------------------------------------
def test_the_check_is_cheap_and_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    """No I/O, no Spark: it can run before anything is claimed or started;
    its arguments are never changed and each call returns a fresh dict."""

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the settings check must do no I/O")

    monkeypatch.setattr(builtins, "open", forbidden)
    monkeypatch.setattr(socket, "socket", forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(os, "getenv", forbidden)
    chosen = MappingProxyType({**{f"spark.custom.{i}": str(i) for i in range(200)}, SPECULATION: "false"})
    launcher = MappingProxyType({DYNAMIC: "true", KILL: "true", IDLE: "30s", MAX_FAILURES: "0"})

    lines: list[str] = []
    start = time.perf_counter()
    results = [check_spark_settings(chosen, launcher, warn=lines.append) for _ in range(2000)]
    elapsed = time.perf_counter() - start

    assert elapsed < 2.0, f"2000 checks took {elapsed:.2f} s"  # about 10 ms on a laptop
    assert all(r == results[0] for r in results) and len(set(lines)) == 3 and len(lines) == 6000
    results[0][SPECULATION] = "true"  # a fresh dict each time: changing one changes nothing else
    assert results[1][SPECULATION] == ENFORCED[SPECULATION] == "false"
    assert check_spark_settings({}, warn=_no_warning) == dict(ENFORCED)


def test_importing_and_running_the_check_starts_no_spark() -> None:
    code = (
        "import json, sys\n"
        "from airflow_provider_seatunnel_ckpt.engine.spark_settings import check_spark_settings\n"
        "check_spark_settings({'spark.speculation': 'false'}, {'spark.dynamicAllocation.enabled': 'true'},"
        " warn=lambda line: None)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'airflow'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == []
