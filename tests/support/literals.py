"""The package's string literals, split at their placeholders: what the docs checks
(tests/unit/test_troubleshooting.py, test_docs_snippets.py) find quoted messages in."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_seatunnel_ckpt"


def literal_pieces(sources: list[str] | None = None) -> set[str]:
    """The text of every string literal of the package (or of the given Python sources),
    split at its placeholders."""
    pieces: set[str] = set()
    trees = (
        [ast.parse(text) for text in sources]
        if sources is not None
        else [ast.parse(path.read_text(), str(path)) for path in PACKAGE.rglob("*.py")]
    )
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                parts = [value.value for value in node.values if isinstance(value, ast.Constant)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                parts = [node.value]
            else:
                continue
            for part in parts:
                pieces.update(re.split(r"%[sdr]", part))
    return pieces
