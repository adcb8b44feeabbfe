"""The tests' own layout (issue #52 item 7, tests by need): no Python file under tests/
(test module, conftest.py or helper) imports a test module, a file named ``test_*.py``:
not at the top, not inside a function, neither relatively nor absolutely. What several
test modules share lives in tests/support/; from elsewhere under tests/ a module may
import tests/servers/, a folder's conftest.py (its fixtures and their types) and the
folder's helper modules, which are therefore never named ``test_*.py`` (pytest would
collect them as test modules too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def _package(path: Path) -> list[str]:
    """The dotted package a file under the project root is in, as its parts."""
    return list(path.relative_to(ROOT).parent.parts)


def _is_test_module(parts: list[str]) -> bool:
    """Whether the dotted name ``parts`` is a module file named test_*.py under the root."""
    return bool(parts) and parts[-1].startswith("test_") and ROOT.joinpath(*parts).with_suffix(".py").is_file()


def imports_of_test_modules(source: str, path: Path) -> list[str]:
    """The imports in ``source`` (the text of ``path``) of a test_*.py module, one line each."""
    found = []
    for node in sorted(ast.walk(ast.parse(source, str(path))), key=lambda node: getattr(node, "lineno", 0)):
        if isinstance(node, ast.Import):
            targets = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            package = _package(path)
            base = package[: len(package) - node.level + 1] if node.level else []
            module = [*base, *(node.module.split(".") if node.module else [])]
            targets = [module, *([*module, alias.name] for alias in node.names)]
        else:
            continue
        for target in targets:
            if _is_test_module(target):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {'.'.join(target)}")
    return found


def test_no_file_under_tests_imports_a_test_module() -> None:
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 200  # the tree was found
    found = [line for path in files for line in imports_of_test_modules(path.read_text(), path)]
    assert found == [], "move what is shared into tests/support/:\n" + "\n".join(found)


def test_the_check_finds_every_form_of_such_an_import() -> None:
    """The check itself: relative, absolute, ``from . import``, inside a function; and not a
    helper module, a conftest.py or a function whose name starts with test_."""
    path = TESTS / "unit" / "connectors" / "test_example.py"
    source = (
        "from .test_file_sink import FileSink\n"
        "import tests.unit.test_troubleshooting\n"
        "from . import test_file_sink_runs\n"
        "def helper():\n"
        "    from tests.unit.test_troubleshooting import ROOT\n"
        "    from ..test_layers import PACKAGE\n"
        "from tests.support.file_sink import batch\n"
        "from tests.integration.jdbc.conftest import Database\n"
        "from tests.support import workspace\n"
        "from .test_file_sink import test_nothing_is_visible_before_commit\n"
    )
    assert [line.split(" imports ")[1] for line in imports_of_test_modules(source, path)] == [
        "tests.unit.connectors.test_file_sink",
        "tests.unit.test_troubleshooting",
        "tests.unit.connectors.test_file_sink_runs",
        "tests.unit.test_troubleshooting",
        "tests.unit.test_layers",
        "tests.unit.connectors.test_file_sink",
    ]


def test_docs_testing_lists_every_module_of_tests_support() -> None:
    text = (ROOT / "docs" / "testing.md").read_text()
    section = text.split("\n## Shared helpers: tests/support\n", 1)[1].split("\n## ", 1)[0]
    listed = {line.split("`")[1] for line in section.splitlines() if line.startswith("| `")}
    modules = {path.name for path in (TESTS / "support").glob("*.py") if path.name != "__init__.py"}
    assert listed == modules
