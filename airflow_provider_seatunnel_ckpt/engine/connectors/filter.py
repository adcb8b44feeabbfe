"""``Filter`` transform: keep the rows where ``condition`` holds.

``condition`` is one comparison, ``<column> [% <divisor>] <op> <literal>``, with ``op``
one of ``== != < <= > >=`` and the literal a JSON number, ``true``/``false`` or a
quoted string (``"x"`` or ``'x'``). Column names that are not identifiers go in
backticks. Examples: ``id >= 1000``, ``id % 2 == 0``, ```user name` == 'bob'``.
Rows where the column is null are dropped.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConfigError
from .api import Transform
from .options import Options, option_key

_CONDITION = re.compile(
    r"^\s*(?P<column>`[^`]+`|[A-Za-z_][\w.]*)\s*(?:%\s*(?P<divisor>-?\d+)\s*)?"
    r"(?P<op>==|!=|<=|>=|<|>)\s*(?P<literal>.+?)\s*$"
)
_OPERATORS = {
    "==": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}
_FORM = "expected '<column> [% <divisor>] <op> <literal>' with op one of == != < <= > >=, e.g. 'id % 2 == 0'"


class FilterTransform(Transform):
    plugin_name = "Filter"

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.condition: str = Options(self.plugin_name, options, known={"condition"}).str("condition")
        match = _CONDITION.match(self.condition)
        if match is None:
            raise ConfigError("condition", f"{self.condition!r}: {_FORM}")
        self.column = match["column"].strip("`")
        self.divisor = int(match["divisor"]) if match["divisor"] is not None else None
        if self.divisor == 0:
            raise ConfigError("condition", f"{self.condition!r}: division by zero")
        self.op = match["op"]
        self.literal = _literal(match["literal"], self.condition)

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        names = batch.schema.names
        if self.column not in names:
            raise ConfigError(
                option_key(self, "condition"), f"no column {self.column!r} in the batch (columns: {names})"
            )
        values = batch.column(self.column)
        try:
            if self.divisor is not None:
                values = pc.modulo(values, self.divisor)
            mask = _OPERATORS[self.op](values, self.literal)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ConfigError(
                option_key(self, "condition"),
                f"{self.condition!r} does not apply to column {self.column!r} of type {values.type}: {exc}",
            ) from None
        kept = batch.filter(mask, null_selection_behavior="drop")
        return kept if kept.num_rows else None


def _literal(text: str, condition: str) -> Any:
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, (bool, int, float, str)):
        return value
    raise ConfigError("condition", f"{condition!r}: {text!r} is not a number, true/false or a quoted string")
