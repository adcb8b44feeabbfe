"""What the wheel carries besides code: the PEP 561 marker (type checkers read the
package's annotations), the project's URLs, and the changelog users read before upgrading.
The wheel is built from this tree the way README's Install section builds it."""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
MODULE = "airflow_provider_seatunnel_ckpt"


def _uv() -> str | None:
    """uv on PATH, else the one scripts/bootstrap installs into .tools."""
    local = ROOT / ".tools" / "bin" / "uv"
    return shutil.which("uv") or (str(local) if os.access(local, os.X_OK) else None)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    uv = _uv()
    if uv is None:
        pytest.skip("no uv (scripts/bootstrap installs it into .tools/bin)")
    out = tmp_path_factory.mktemp("dist")
    # --offline: hatchling comes from uv's cache, filled by scripts/bootstrap's sync
    built = subprocess.run(
        [uv, "build", "--wheel", "--offline", "--out-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_carries_the_pep_561_marker(wheel):
    assert f"{MODULE}/py.typed" in wheel.namelist()


def test_the_wheel_names_the_projects_urls(wheel):
    (metadata_name,) = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    metadata = email.message_from_bytes(wheel.read(metadata_name))
    urls = dict(value.split(", ", 1) for value in metadata.get_all("Project-URL") or [])
    assert {"Homepage", "Repository", "Issues", "Changelog"} <= set(urls), urls
    assert all(re.match(r"https://", url) for url in urls.values()), urls


def test_the_wheel_publishes_no_test_or_benchmark_tooling(wheel):
    """pytest, moto, selenium, py-spy, matplotlib... are this repository's, not its users':
    they live in dependency groups (PEP 735), which a wheel does not publish."""
    (metadata_name,) = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    metadata = email.message_from_bytes(wheel.read(metadata_name))
    published = set(metadata.get_all("Provides-Extra") or [])
    assert published.isdisjoint({"test", "bench"}), published
    requirements = " ".join(metadata.get_all("Requires-Dist") or [])
    for tool in ("pytest", "moto", "selenium", "py-spy", "matplotlib", "hypothesis", "ruff", "mypy"):
        assert not re.search(rf"(^|\s){re.escape(tool)}\b", requirements), tool
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    assert {"test", "bench"} <= set(groups)


def test_the_changelog_has_an_unreleased_section_first():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings and headings[0].startswith("Unreleased"), headings
    unreleased = text.split("\n## ", 2)[1]
    assert len(re.findall(r"^[*-] ", unreleased, re.M)) >= 5  # entries, not a stub
