"""Spark settings that break the engine's model: refused, or overridden with a warning.

A job runs as one Spark job of N long-running tasks, one per subtask, and a failed
subtask fails over by being retried; speculation, dynamic allocation, task and stage
exclusion, killing idle Python workers and a ``spark.task.maxFailures`` below 1 break
that. A breaking value ``chosen`` for the job (the job file's ``env``, ``run --conf``) is
refused with ``ConfigError(key, problem)``; one from the ``launcher`` (spark-submit,
``spark-defaults.conf``, the operator's ``conf``) is overridden, with one warning line
each. The engine's values (:data:`ENFORCED`) are returned every time;
:func:`check_running_spark_settings` refuses an existing context that breaks the model.
Values are read as Spark reads them (trimmed booleans, durations with Spark's suffixes).

Each setting, what is done and why: docs/jobs.md, "Spark settings the engine refuses or
overrides".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import ConfigError

log = logging.getLogger(__name__)

SPECULATION = "spark.speculation"
DYNAMIC_ALLOCATION = "spark.dynamicAllocation.enabled"
EXCLUDE_ON_FAILURE = "spark.excludeOnFailure.enabled"
EXCLUDE_TASK_AND_STAGE = "spark.excludeOnFailure.taskAndStage.enabled"
PYTHON_IDLE_TIMEOUT = "spark.python.worker.idleTimeoutSeconds"
PYTHON_KILL_ON_IDLE = "spark.python.worker.killOnIdleTimeout"
TASK_MAX_FAILURES = "spark.task.maxFailures"
#: the engine's default number of attempts per subtask (engine/launch.py uses the same)
DEFAULT_TASK_MAX_FAILURES = 4

#: what the engine sets for every job, on top of every other setting
ENFORCED: Mapping[str, str] = MappingProxyType(
    {
        SPECULATION: "false",
        DYNAMIC_ALLOCATION: "false",
        # Spark 4 decides task and stage exclusion by this key first, so it wins over
        # spark.excludeOnFailure.enabled (application-level exclusion is left alone).
        EXCLUDE_TASK_AND_STAGE: "false",
        PYTHON_KILL_ON_IDLE: "false",
    }
)

#: where spark-submit's settings come from, for warnings
LAUNCHER_ORIGIN = "set by spark-submit: spark-defaults.conf, --conf or the operator's conf"

_SPECULATION_WHY = (
    "would let Spark start a second copy of a running subtask (each subtask is one Spark task that "
    "runs for the whole job): two attempts of one subtask at once, reading the same splits and staging the same rows"
)
_DYNAMIC_ALLOCATION_WHY = (
    "would let Spark run fewer executors than the subtasks need at once: each subtask holds its task slot "
    "for the whole job, so one that gets no slot never starts and no checkpoint completes, and the slot check "
    "at start cannot see what dynamic allocation will grant"
)
_DYNAMIC_ALLOCATION_FIX = (
    "remove it or set it to false, and give the job its executors (spark.executor.instances, "
    "or spark.cores.max on a standalone cluster)"
)
_DYNAMIC_ALLOCATION_NOTE = (
    "give it its executors with spark.executor.instances (or spark.cores.max on a standalone cluster)"
)
_EXCLUDE_WHY = (
    "would forbid retrying a failed subtask on the executor it failed on while every other slot is held "
    "by another subtask for the whole job: the retry cannot be placed, so the job aborts or waits for ever "
    "instead of failing over"
)


_JAVA_WHITESPACE = "".join(map(chr, range(0x21)))


def _java_trim(text: str) -> str:
    """``String.trim()``: strip characters up to U+0020 (not Unicode spaces)."""
    return text.strip(_JAVA_WHITESPACE)


def parse_spark_bool(value: str) -> bool:
    """A boolean setting as Spark reads it (``s.trim.toBoolean``): ``true`` or ``false``
    in any case, with whitespace around; anything else raises ``ValueError``."""
    text = _java_trim(str(value))
    for word, result in (("true", True), ("false", False)):
        if _equals_ignore_case(text, word):
            return result
    raise ValueError(f"expected true or false, got {_shown(value)}")


def _equals_ignore_case(text: str, word: str) -> bool:
    # Java's String.equalsIgnoreCase, character by character
    return len(text) == len(word) and all(
        a == b or a.upper() == b.upper() or a.lower() == b.lower() for a, b in zip(text, word)
    )


def parse_spark_int(value: str) -> int:
    """An int setting as Spark reads it (``s.trim.toInt``); ``ValueError`` otherwise."""
    text = _java_trim(str(value))
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(f"expected an integer, got {_shown(value)}")
    number = int(text)
    if not -(2**31) <= number < 2**31:
        raise ValueError(f"expected an integer, got {_shown(value)}")
    return number


_TIME_UNITS_US = {
    "us": 1,
    "ms": 1_000,
    "s": 1_000_000,
    "m": 60_000_000,
    "min": 60_000_000,
    "h": 3_600_000_000,
    "d": 86_400_000_000,
}


def parse_spark_seconds(value: str) -> int:
    """A duration setting in seconds as Spark reads it (``JavaUtils.timeStringAs``): a
    whole number with an optional unit suffix (``us ms s m min h d``; none: seconds),
    truncated to whole seconds; ``ValueError`` otherwise."""
    text = _java_trim(str(value).lower())
    match = re.fullmatch(r"(-?[0-9]+)([a-z]+)?", text)
    if not match or (match.group(2) and match.group(2) not in _TIME_UNITS_US):
        raise ValueError(f"expected a duration such as 60s or 5min, got {_shown(value)}")
    number, unit = int(match.group(1)), match.group(2) or "s"
    micros = abs(number) * _TIME_UNITS_US[unit]
    return (micros // 1_000_000) * (-1 if number < 0 else 1)  # toward zero, as TimeUnit.convert


def _shown(value: str) -> str:
    text = _java_trim(str(value))
    return text if text and text.isprintable() and text == str(value) else repr(str(value))


@dataclass(frozen=True)
class Problem:
    """One setting that breaks the engine's model, or that Spark cannot read."""

    key: str
    #: the value and what it would do (or why it cannot be read)
    what: str
    #: what the user should do about it
    fix: str = ""
    #: what the engine sets instead when it overrides it
    override: Mapping[str, str] = field(default_factory=dict)
    #: the value cannot be read at all (Spark itself refuses it)
    invalid: bool = False
    #: what the user may need to do once it is overridden
    note: str = ""

    @property
    def refusal(self) -> str:
        """The text after ``key: `` when the setting is refused."""
        return f"{self.what}; {self.fix}" if self.fix else self.what


def find_problems(conf: Mapping[str, str]) -> list[Problem]:
    """Every setting of ``conf`` (the effective Spark settings) that breaks the engine's
    model, in a fixed order; each names the key that decides it."""
    found: list[Problem] = []
    for key, why, fix, note in (
        (SPECULATION, _SPECULATION_WHY, "remove it or set it to false", ""),
        (DYNAMIC_ALLOCATION, _DYNAMIC_ALLOCATION_WHY, _DYNAMIC_ALLOCATION_FIX, _DYNAMIC_ALLOCATION_NOTE),
    ):
        if key in conf:
            found.extend(_boolean_problem(key, conf[key], why, fix, {key: ENFORCED[key]}, note))
    # Spark 4: spark.excludeOnFailure.taskAndStage.enabled, else spark.excludeOnFailure.enabled, else off
    exclude_key = EXCLUDE_TASK_AND_STAGE if EXCLUDE_TASK_AND_STAGE in conf else EXCLUDE_ON_FAILURE
    if exclude_key in conf:
        fix = "remove it or set it to false"
        if exclude_key == EXCLUDE_ON_FAILURE:
            fix = (
                f"remove it, or also set {EXCLUDE_TASK_AND_STAGE}=false "
                "(exclusion at application level alone is harmless)"
            )
        override = {EXCLUDE_TASK_AND_STAGE: ENFORCED[EXCLUDE_TASK_AND_STAGE]}
        found.extend(_boolean_problem(exclude_key, conf[exclude_key], _EXCLUDE_WHY, fix, override))
    if PYTHON_KILL_ON_IDLE in conf:
        found.extend(_kill_on_idle_problem(conf))
    if TASK_MAX_FAILURES in conf:
        found.extend(_max_failures_problem(conf[TASK_MAX_FAILURES]))
    return found


def _boolean_problem(
    key: str, value: str, why: str, fix: str, override: Mapping[str, str], note: str = ""
) -> list[Problem]:
    try:
        enabled = parse_spark_bool(value)
    except ValueError as err:
        return [Problem(key, str(err), override=dict(override), invalid=True)]
    return [Problem(key, f"{_shown(value)} {why}", fix, dict(override), note=note)] if enabled else []


def _kill_on_idle_problem(conf: Mapping[str, str]) -> list[Problem]:
    value = conf[PYTHON_KILL_ON_IDLE]
    override = {PYTHON_KILL_ON_IDLE: ENFORCED[PYTHON_KILL_ON_IDLE]}
    try:
        if not parse_spark_bool(value):
            return []
    except ValueError as err:
        return [Problem(PYTHON_KILL_ON_IDLE, str(err), override=override, invalid=True)]
    timeout = conf.get(PYTHON_IDLE_TIMEOUT, "0")
    try:
        seconds: int | None = parse_spark_seconds(timeout)
    except ValueError:
        seconds = None  # unreadable: Spark fails on it; the kill is still what was asked for
    if seconds is not None and seconds <= 0:
        return []  # no idle timeout: nothing is ever killed
    after = f"{seconds} s" if seconds is not None else "that long"
    return [
        Problem(
            PYTHON_KILL_ON_IDLE,
            f"{_shown(value)} with {PYTHON_IDLE_TIMEOUT}={_shown(timeout)} would kill every subtask's Python worker "
            f"after {after} without output (a subtask sends its result only when it ends), so the subtasks are "
            "retried over and over until the job fails",
            "remove it or set it to false (the idle timeout alone only logs)",
            override,
        )
    ]


def _max_failures_problem(value: str) -> list[Problem]:
    override = {TASK_MAX_FAILURES: str(DEFAULT_TASK_MAX_FAILURES)}
    fix = f"set it to 1 or more (attempts per subtask before the job fails; default {DEFAULT_TASK_MAX_FAILURES})"
    try:
        attempts = parse_spark_int(value)
    except ValueError as err:
        return [Problem(TASK_MAX_FAILURES, str(err), fix, override, invalid=True)]
    if attempts >= 1:
        return []
    what = f"{_shown(value)} is not a number of attempts, and a failed subtask fails over by being retried"
    return [Problem(TASK_MAX_FAILURES, what, fix, override)]


def check_spark_settings(
    chosen: Mapping[str, str],
    launcher: Mapping[str, str] | None = None,
    *,
    warn: Callable[[str], None] | None = None,
) -> dict[str, str]:
    """Refuse the job's breaking Spark settings, override spark-submit's; return the
    settings to apply on top of every other one.

    ``chosen``: the job file's ``spark.*`` env keys merged with ``--conf`` (they win over
    ``launcher``); a breaking or unreadable value raises ``ConfigError(key, problem)``.
    ``launcher``: spark-submit's settings (``spark-defaults.conf``, its ``--conf``); a
    breaking value ``chosen`` does not replace is overridden, and ``warn`` (default: a
    logged warning) gets one line for it. An unreadable value there is left to Spark
    unless the override replaces it.

    Returns a new dict: :data:`ENFORCED`, plus ``spark.task.maxFailures`` when the
    launcher's is not a number of attempts. Pure: reads nothing but its arguments,
    changes nothing, starts nothing; ``warn`` is its only effect.
    """
    chosen = {str(k): str(v) for k, v in chosen.items()}
    launcher = {str(k): str(v) for k, v in (launcher or {}).items()}
    problems = find_problems({**launcher, **chosen})
    for problem in problems:
        if problem.key in chosen:
            raise ConfigError(problem.key, problem.refusal)
    settings = dict(ENFORCED)
    for problem in problems:
        if problem.invalid and problem.key not in problem.override:
            continue  # nothing replaces it: Spark reports it in its own words
        settings.update(problem.override)
        instead = ", ".join(f"{k}={v}" for k, v in problem.override.items())
        note = f"; {problem.note}" if problem.note else ""
        (warn or log.warning)(f"{problem.key}: {problem.what} ({LAUNCHER_ORIGIN}); this job runs with {instead}{note}")
    return settings


def check_running_spark_settings(conf: Mapping[str, str]) -> None:
    """Refuse a Spark context whose settings break the engine's model (``conf``: its
    ``getConf().getAll()``): once a context exists they can no longer be changed, which
    happens when the job is given a context or ``getOrCreate`` finds one."""
    for problem in find_problems({str(k): str(v) for k, v in conf.items()}):
        raise ConfigError(
            problem.key,
            f"{problem.what} (in a Spark context created before the job, whose settings can no longer "
            f"change); {problem.fix or 'change it'} where that context is created",
        )
