"""SeaTunnel's ``csv`` files: text files whose fields are split at ``field_delimiter``'s
first character with ``"`` quoting (RFC 4180); the rest is the text format's
(:mod:`.text`)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def split_quoted(lines: pa.Array, delimiter: str) -> pa.ListArray:
    """Each csv line's fields: split at ``delimiter``, lines holding a quote parsed as csv."""
    plain = pc.split_pattern(lines, pattern=delimiter)
    quoted = pc.fill_null(pc.match_substring(lines, '"'), False)
    rows = np.flatnonzero(np.asarray(quoted, dtype=bool))
    if not len(rows):
        return plain
    import csv

    parsed: list[Any] = [None] * len(lines)
    for row, line in zip(rows, lines.take(pa.array(rows, pa.int64())).to_pylist()):
        try:
            parsed[row] = next(csv.reader([line], delimiter=delimiter), [])
        except csv.Error:  # SeaTunnel's CsvLineSplitor: a line it cannot parse has no fields
            parsed[row] = []
    return pc.if_else(quoted, pa.array(parsed, pa.list_(pa.string())), plain)


def _csv_quote(text: pa.Array, delimiter: str) -> pa.Array:
    """RFC 4180 quoting, only where a value needs it."""
    needs = pc.match_substring_regex(text, pattern="[" + re.escape(delimiter) + '"\r\n]')
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, pattern='"', replacement='""'), '"', "")
    return pc.if_else(needs, quoted, text)
