"""Short module docstrings (issue #52 item 5): every module of the package opens with at
most ``MAX_LINES`` lines of docstring (what it is for, its one job, the key why, and where
the docs hold the rest); option references and lists of SeaTunnel differences live in
docs/. And no project file refers to a file outside the repository."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "airflow_provider_seatunnel_ckpt"
#: counted from the opening quotes to the closing ones; about 15 is the aim
MAX_LINES = 20
#: an absolute path into the machines this project was built on (spelled in two parts,
#: so this file does not match itself)
OUTSIDE = re.compile(r"(?<![\w.])/(?:" + r"work|home)/\w|(?<![\w])STYLE\.md")
#: recorded outputs of past runs (bench results carry the logs they captured)
RECORDED = ("bench/results/", "uv.lock")


def _docstring_lines(path: Path) -> int:
    body = ast.parse(path.read_text(), filename=str(path)).body
    first = body[0] if body else None
    if not (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    ):
        return 0
    assert first.end_lineno is not None
    return first.end_lineno - first.lineno + 1


def test_module_docstrings_are_short() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := _docstring_lines(path)) > MAX_LINES
    }
    assert not long, (
        f"module docstrings over {MAX_LINES} lines (move option lists and SeaTunnel differences "
        f"to docs/options.md, docs/seatunnel.md or the connector's page, and point there): {long}"
    )


def test_the_counter_counts_the_docstring() -> None:
    assert _docstring_lines(PACKAGE / "connectors" / "api.py") >= 3
    assert _docstring_lines(Path(__file__)) == 4


def test_no_project_file_refers_outside_the_repository() -> None:
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    )
    found = []
    for name in files:
        if not name or name.startswith(RECORDED) or not (ROOT / name).is_file():
            continue
        try:
            text = (ROOT / name).read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]
    assert not found, f"references to files outside the repository: {found}"
