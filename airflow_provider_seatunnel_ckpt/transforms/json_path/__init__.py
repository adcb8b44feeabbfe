"""SeaTunnel's ``JsonPath`` transform (:class:`JsonPathTransform`, described in
:mod:`.transform`): a port of Jayway JsonPath over json-smart's permissive parsing, as
SeaTunnel reads paths (docs/seatunnel.md, "JsonPath", says why not DuckDB's JSON functions).

* :mod:`.transform`: the transform, its options and the columnar evaluation;
* :mod:`.path_compiler` and :mod:`.path_reader`: Jayway's path compiler and evaluator;
* :mod:`.permissive_json`: json-smart's permissive parser;
* :mod:`.source_json`: a ``row``, ``array`` or ``map`` source column written as JSON;
* :mod:`.convert` and :mod:`.java_dates`: the result converted to ``dest_type``;
* ``connectors/java_text.py`` (shared with the excel format): Java's and Jackson's texts;
* :mod:`.failures`: the errors the error-handling options act on, and the others.
"""

from .transform import JsonPathTransform

__all__ = ["JsonPathTransform"]
