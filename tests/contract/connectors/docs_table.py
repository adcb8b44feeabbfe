"""Keep the tables of ``docs/connectors.md`` what the suite and the mutation runner printed:
``python -m tests.contract.connectors.docs_table contract-table table.md`` puts the
Markdown of ``table.md`` between the ``<!-- contract-table -->`` markers (likewise
``mutation-table``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "connectors.md"


def splice(text: str, marker: str, table: str) -> str:
    pattern = re.compile(rf"(<!-- {marker} -->\n).*?(<!-- /{marker} -->)", re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{DOC}: no <!-- {marker} --> ... <!-- /{marker} --> block")
    return pattern.sub(lambda m: m.group(1) + table.strip() + "\n" + m.group(2), text)


def table_rows(text: str, marker: str) -> list[list[str]]:
    """The cells of the Markdown table rows between the markers."""
    block = re.search(rf"<!-- {marker} -->\n(.*?)<!-- /{marker} -->", text, re.DOTALL)
    rows = [line for line in (block.group(1).splitlines() if block else []) if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def main(argv: list[str]) -> int:
    marker, source = argv
    DOC.write_text(splice(DOC.read_text(), marker, Path(source).read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
