"""SeaTunnel's SQL spelling DuckDB's parser does not take, rewritten before it reads the
query: a name in backticks (``name as `apply```: SeaTunnel's parser, like MySQL's, quotes
names so) becomes a double-quoted name, SQL's and DuckDB's quoting. String literals and
double-quoted names are left exactly as written. (SeaTunnel's type and function names are
DuckDB types and macros: :mod:`.sql_functions`.)
"""

from __future__ import annotations

import re

#: a string literal, a double-quoted name, a backticked name, or a run of anything else
_PIECES = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|[^'\"`]+|['\"`]")


def duckdb_syntax(query: str) -> str:
    out = []
    for piece in _PIECES.findall(query):
        if piece.startswith("`") and len(piece) > 1 and piece.endswith("`"):
            name = piece[1:-1].replace("``", "`")
            out.append('"' + name.replace('"', '""') + '"')
        else:
            out.append(piece)  # a literal, a quoted name (an unclosed one fails in DuckDB) or plain text
    return "".join(out)
