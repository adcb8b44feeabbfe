"""SeaTunnel's ``JsonPath`` transform (:class:`JsonPathTransform`, described in
:mod:`.transform`).

**Why not DuckDB's JSON functions.** SeaTunnel reads the text with Jayway JsonPath over
json-smart in its *permissive* mode, and its own test files rely on that: the data of
``json_path_basic_type_test.conf`` is ``{data:{c_string: this is a string, ...,
c_date:'2023-10-29'}}`` (unquoted keys and text, single quotes), which DuckDB refuses.
Missing paths are errors (Jayway's PathNotFoundException) that the error-handling options
act on, where DuckDB gives null. So this package carries a port of what those two libraries
do for the paths SeaTunnel's documents use: json-smart's permissive parser (strict JSON
goes through Python's ``json`` first), Jayway's compiler and evaluator for ``$``, ``.name``,
``['name']`` / ``['a','b']``, ``[0]`` / ``[-1]`` / ``[0,2]``, slices ``[1:3]``, ``*`` and
``..`` (deep scan), with Jayway's definite/indefinite rules (a definite path gives the
value, an indefinite one the list of matches, possibly empty), and Jackson's conversion of
the result to ``dest_type`` (SeaTunnel's JsonToRowConverters).

One module per job:

* :mod:`.transform`: the transform, its options and the columnar evaluation;
* :mod:`.path_compiler` and :mod:`.path_reader`: Jayway's path compiler and evaluator;
* :mod:`.permissive_json`: json-smart's permissive parser;
* :mod:`.source_json`: a ``row``, ``array`` or ``map`` source column written as JSON;
* :mod:`.convert` and :mod:`.java_dates`: the result converted to ``dest_type``;
* :mod:`..java_text` (shared with the excel format): Java's and Jackson's texts of values;
* :mod:`.failures`: the errors the error-handling options act on, and the others.
"""

from .transform import JsonPathTransform

__all__ = ["JsonPathTransform"]
