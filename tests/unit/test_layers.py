"""The package's layers, as SeaTunnel splits its own (api, engine, connectors): storage
knows nothing of Spark, Airflow, the engine or the connectors; the checkpoint history
(``history/``) knows storage only; connectors know nothing of
the engine, Spark or Airflow; the engine reaches connectors only through the connector API
(``connectors/api.py``) and the registry (``connectors/__init__.py``), and knows nothing of
Airflow. Read from the source with ``ast``, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_seatunnel_ckpt"
ROOT = PACKAGE.name


def _imports(path: Path) -> set[str]:
    """Absolute module names ``path`` imports (relative imports resolved)."""
    module_parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
    if module_parts[-1] == "__init__":
        module_parts = module_parts[:-1]
        package_parts = module_parts
    else:
        package_parts = module_parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
    return found


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def _violations(layer: str, allowed: Callable[[str], bool], forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for path in _modules(layer):
        for name in sorted(_imports(path)):
            if any(name == f or name.startswith(f + ".") for f in forbidden) and not allowed(name):
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    return bad


@pytest.mark.parametrize("layer, forbidden", [
    ("storage", (f"{ROOT}.engine", f"{ROOT}.connectors", f"{ROOT}.operators", f"{ROOT}.hooks", "pyspark", "airflow")),
    ("connectors", (f"{ROOT}.engine", f"{ROOT}.operators", f"{ROOT}.hooks", f"{ROOT}.sensors", "pyspark", "airflow")),
    ("history", (f"{ROOT}.engine", f"{ROOT}.connectors", f"{ROOT}.operators", f"{ROOT}.hooks", f"{ROOT}.ui", "pyspark",
                 "airflow")),
])
def test_a_lower_layer_imports_nothing_above_it(layer: str, forbidden: tuple[str, ...]) -> None:
    assert _violations(layer, lambda name: False, forbidden) == []


def test_the_engine_reaches_connectors_only_through_the_api_and_the_registry() -> None:
    registry = f"{ROOT}.connectors"
    public = {f"{registry}.{name}" for name in _registry_names()}

    def through_the_front(name: str) -> bool:
        return name in (registry, f"{registry}.api") or name.startswith(f"{registry}.api.") or name in public

    assert _violations("engine", through_the_front, (f"{ROOT}.connectors",)) == []
    assert _violations("engine", lambda name: False, ("airflow", f"{ROOT}.operators", f"{ROOT}.hooks", f"{ROOT}.ui")) == []


def _registry_names() -> set[str]:
    from airflow_provider_seatunnel_ckpt import connectors

    return set(connectors.__all__)


def test_the_import_reader_resolves_relative_imports() -> None:
    """Else the tests above would pass vacuously."""
    found = _imports(PACKAGE / "engine" / "routing.py")
    assert f"{ROOT}.connectors.api" in found
    assert f"{ROOT}.connectors.load_sink" in found
