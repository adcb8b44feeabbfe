"""Jinja left in a document, named instead of the parse error it causes.

Job files and seatunnel.yaml are often written for CheckpointedSparkSubmitOperator, which
renders a ``job_file`` (and a ``config_file`` given as text) before reading it. The same
file used directly (``seatunnel-ckpt run``, ``validate``, a ``config_file`` path) still
holds ``{{ ... }}``, which
YAML reads as a mapping used as a key and HOCON as an object where a key belongs: the
readers ask here whether the line they failed on holds a template.
"""

from __future__ import annotations

import re

from ..errors import ConfigError

#: an expression, a statement or a comment, each closed on its line
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}")
#: the key whose value the template is: YAML's ``key:``, HOCON's ``key =`` / ``key:``
_KEY_BEFORE = re.compile(r"""["']?([A-Za-z_][\w.-]*)["']?\s*[:=]\s*$""")


def unrendered_jinja(origin: str, text: str, line: int) -> ConfigError | None:
    """The error for a document whose ``line`` (1-based) holds a Jinja template, or None."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    source = lines[line - 1]
    template = _TEMPLATE.search(source)
    if template is None:
        return None
    key = _KEY_BEFORE.search(source[: template.start()])
    return ConfigError(
        f"{origin}:{line}",
        f"{key.group(1) + ': ' if key else ''}holds unrendered Jinja {template.group(0)!r}: the file must be "
        "rendered first (the operator renders a job_file, and a config_file given as text; seatunnel-ckpt and a "
        "config_file path read the file as it is)",
    )
