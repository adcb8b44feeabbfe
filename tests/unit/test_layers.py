"""The package's layers are import-linter contracts in pyproject.toml, checked by
``lint-imports`` in scripts/test. Here: docs/architecture.md lists the layers the contract
has, in its order, and the contracts fail on the imports they forbid (a copy of the
package with such imports added, lazy ones inside functions among them)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "airflow_provider_seatunnel_ckpt"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def _documented_layers() -> list[list[str]]:
    """The code block of docs/architecture.md's Layers section: one layer a line, its
    parts (``cli.py | operators/``) before a gap of two spaces or more."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 2)[1]
    layers = []
    for line in block.splitlines():
        parts = re.split(r" {2,}", line.strip(), maxsplit=1)[0]
        layers.append([re.sub(r"(/|\.py)$", "", part.strip()) for part in parts.split("|")])
    return layers


def test_the_documented_layers_are_the_contracts_in_its_order() -> None:
    contract = _contracts()["layers"]
    assert contract["containers"] == [PACKAGE] and contract["exhaustive"] is True
    layers = [[part.strip() for part in layer.split("|")] for layer in contract["layers"]]
    assert _documented_layers() == layers


#: (file of the package, import added at its end, contract id it breaks, what lint-imports names)
VIOLATIONS = [
    (
        "storage/layout.py",
        "def _v():\n    from ..engine import runner\n",
        "layers",
        f"{PACKAGE}.storage.layout -> {PACKAGE}.engine.runner",
    ),
    ("config.py", "def _v():\n    import airflow\n", "airflow", f"{PACKAGE}.config -> airflow"),
    ("cli.py", "from .hooks import base\n", "no-airflow-above", f"{PACKAGE}.cli -> {PACKAGE}.hooks.base"),
    ("transforms/select.py", "def _v():\n    import pyspark\n", "spark", f"{PACKAGE}.transforms.select -> pyspark"),
    # through the engine's runtime, which imports pyspark itself
    (
        "ui/responses.py",
        "def _v():\n    from ..engine import runner\n",
        "no-spark-above",
        f"{PACKAGE}.ui.responses -> {PACKAGE}.engine.runner",
    ),
    (
        "operators/datasets.py",
        "def _v():\n    from ..connectors.jdbc import target\n",
        "connector-api",
        f"{PACKAGE}.operators.datasets -> {PACKAGE}.connectors.jdbc.target",
    ),
    ("engine/messages.py", "def _v():\n    from . import coordinator\n", "acyclic", ".messages -> .coordinator"),
    (
        "engine/transport/channel.py",
        "def _v():\n    import socket\n",
        "transport-sans-io",
        f"{PACKAGE}.engine.transport.channel -> socket",
    ),
]


def test_lint_imports_fails_on_each_kind_of_forbidden_import(tmp_path: Path) -> None:
    shutil.copytree(ROOT / PACKAGE, tmp_path / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    for path, code, _, _ in VIOLATIONS:
        with open(tmp_path / PACKAGE / path, "a") as module:
            module.write(f"\n\n{code}")
    # lint-imports analyses the package in its working directory: the copy
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    contracts = _contracts()
    broken = set(re.findall(r"^(.+) BROKEN(?: \(\d+ ignored imports?\))?$", out, re.M))
    assert broken == {contracts[id_]["name"] for _, _, id_, _ in VIOLATIONS}, out
    assert f"Contracts: 0 kept, {len(contracts)} broken." in out
    for _, _, _, named in VIOLATIONS:
        assert named in out, out
