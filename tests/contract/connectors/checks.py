"""The suite's verdicts: every id counted, and refusals that are one line."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tests.support.workspace import RunResult


def assert_exact(found: Iterable[int], expected: Iterable[int], what: str = "committed rows") -> None:
    """``found`` holds each id exactly as often as ``expected`` does."""
    have, want = Counter(found), Counter(expected)
    if have == want:
        return
    missing = sorted((want - have).elements())
    extra = sorted((have - want).elements())
    raise AssertionError(
        f"{what}: {sum(have.values())} rows, expected {sum(want.values())}; "
        f"missing {len(missing)} {_sample(missing)}, extra (duplicated or foreign) {len(extra)} {_sample(extra)}"
    )


def _sample(ids: list[int]) -> str:
    return f"(e.g. {ids[:8]})" if ids else ""


def error_lines(result: RunResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def is_one_line_refusal(result: RunResult, key: str | None = None) -> bool:
    """Exit 2 with a single ``error:`` line (naming ``key`` when given) and no traceback."""
    lines = error_lines(result)
    return (
        result.returncode == 2
        and len(lines) == 1
        and "Traceback" not in result.stderr
        and (key is None or key in lines[0])
    )


def assert_succeeded(result: RunResult) -> None:
    assert result.returncode == 0, result.explain()
