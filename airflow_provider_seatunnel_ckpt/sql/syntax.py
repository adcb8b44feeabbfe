"""SeaTunnel's SQL spelling DuckDB's parser does not take, rewritten before it reads the
query: a name in backticks (``name as `apply```: SeaTunnel's parser, like MySQL's, quotes
names so) becomes a double-quoted name, SQL's and DuckDB's quoting. String literals and
double-quoted names are left exactly as written. SeaTunnel's ``char(n)`` function (the
character of a code point) becomes ``chr(n)``: DuckDB's parser reads ``char(`` as the type;
``AS CHAR(10)`` in a cast stays the type. (SeaTunnel's type and function names are
DuckDB types and macros: :mod:`.functions`.)
"""

from __future__ import annotations

import re

#: a string literal, a double-quoted name, a backticked name, or a run of anything else
_PIECES = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|[^'\"`]+|['\"`]")


#: ``char(`` as a function: not a name's tail (``my_char(``), not a type after ``AS``
_CHAR_CALL = re.compile(r"(?<![\w.])(?<!\bas )char(\s*\()", re.IGNORECASE)


def duckdb_syntax(query: str) -> str:
    out = []
    for piece in _PIECES.findall(query):
        if piece.startswith("`") and len(piece) > 1 and piece.endswith("`"):
            name = piece[1:-1].replace("``", "`")
            out.append('"' + name.replace('"', '""') + '"')
        elif piece[0] not in "'\"`":
            out.append(_CHAR_CALL.sub(r"chr\1", piece))
        else:
            out.append(piece)  # a literal or a quoted name (an unclosed one fails in DuckDB)
    return "".join(out)
