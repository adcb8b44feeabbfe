"""README.md as a first-time user reads it: its Install section shows first what works
today. The package is not on PyPI yet, so `pip install airflow-provider-seatunnel-ckpt`
fails; the section's commands install from a clone, and the PyPI form is only prose for
once it is released."""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DISTRIBUTION = PROJECT["name"]


def section(title: str) -> str:
    text = README.read_text()
    assert f"\n## {title}\n" in text, f"README has no '## {title}' section"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def commands(markdown: str) -> list[list[str]]:
    """The commands of the bash blocks, in order, as words (comments dropped)."""
    found = []
    for body in re.findall(r"```bash\n(.*?)```", markdown, re.S):
        for line in body.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                found.append(words)
    return found


def installs_from_the_index(words: list[str]) -> bool:
    """`pip install <distribution>[extras]` (or uv pip / pipx): the package from PyPI."""
    if "install" not in words:
        return False
    targets = words[words.index("install") + 1 :]
    return any(re.fullmatch(rf"{re.escape(DISTRIBUTION)}(\[[\w,]+\])?([=<>~!].*)?", target) for target in targets)


def test_install_shows_first_a_command_that_works_from_a_clone():
    shown = commands(section("Install"))
    assert shown, "the Install section shows no command"
    first = shown[0]
    # a script of the repository, run from its root
    assert os.access(ROOT / first[0], os.X_OK), f"the first install command is not a script of the clone: {first}"


def test_install_shows_no_install_from_pypi_as_a_command():
    shown = commands(section("Install"))
    from_index = [" ".join(words) for words in shown if installs_from_the_index(words)]
    assert not from_index, f"the package is not on PyPI yet, but the Install section shows {from_index}"


def test_the_wheel_the_install_section_installs_is_the_one_the_build_makes():
    """The wheel path in README's pip command is the file `uv build` / `python -m build`
    writes: name normalized, this version (pip expands no wildcard, so README names it)."""
    shown = commands(section("Install"))
    wheels = [target for words in shown if "install" in words for target in words if ".whl" in target]
    assert wheels, "the Install section installs no built wheel"
    normalized = re.sub(r"[-_.]+", "_", DISTRIBUTION).lower()
    for target in wheels:
        wheel = f"dist/{normalized}-{PROJECT['version']}-py3-none-any.whl"
        assert re.fullmatch(rf"{re.escape(wheel)}(\[[\w,]+\])?", target), f"{target}: the build writes {wheel}"
