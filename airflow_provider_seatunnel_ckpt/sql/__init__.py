"""The per-batch SQL engine: one ``SELECT`` over each Arrow batch (:mod:`.batch_query`).

DuckDB runs a query, or Arrow's compute kernels when it compiles to them
(:mod:`.arrow`), read by sqlglot (:mod:`.tree`), with SeaTunnel's function names
(:mod:`.functions`, :mod:`.des`), syntax (:mod:`.syntax`) and readings of casts and
built-ins (:mod:`.rewrites`), and untouched columns passed through (:mod:`.passthrough`).
Used by the ``Sql`` and ``Filter`` transforms (``transforms/``) and by the Kafka sink's
record encoding, so it sits below both; it imports nothing of the package but its errors.
"""
