"""docs/options.md's generated part: every built-in connector's and transform's option
table (``OPTIONS``), in the registry's order. ``python -m tests.unit.connectors.option_reference``
writes it between the ``<!-- option-tables -->`` markers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from airflow_provider_seatunnel_ckpt import connectors

DOC = Path(__file__).resolve().parents[3] / "docs" / "options.md"
MARKER = "option-tables"
_BLOCK = re.compile(rf"(<!-- {MARKER} -->\n).*?(<!-- /{MARKER} -->)", re.DOTALL)


def classes() -> list[tuple[str, str, type]]:
    """(kind, display name, class) of every built-in connector and transform."""
    found = []
    for kind, registry, load in (
        ("source", connectors.sources, connectors.source_class),
        ("transform", connectors.transforms, connectors.transform_class),
        ("sink", connectors.sinks, connectors.sink_class),
    ):
        for name, (display, _) in registry.items():
            found.append((kind, display, load(name)))
    return found


def reference() -> str:
    parts = []
    for kind, display, cls in classes():
        parts.append(f"### {display} {kind}\n\n{cls.OPTIONS.markdown()}\n")
    return "\n".join(parts)


def block(text: str) -> str | None:
    """What the page holds between the markers."""
    found = _BLOCK.search(text)
    return text[found.end(1) : found.start(2)] if found else None


def main() -> int:
    text = DOC.read_text()
    if block(text) is None:
        raise SystemExit(f"{DOC}: no <!-- {MARKER} --> ... <!-- /{MARKER} --> block")
    DOC.write_text(_BLOCK.sub(lambda m: m.group(1) + "\n" + reference() + "\n" + m.group(2), text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
