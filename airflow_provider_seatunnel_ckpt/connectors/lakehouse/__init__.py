"""Lakehouse table connectors: exactly-once ``Iceberg`` and ``Delta`` sinks.

Both follow one protocol (see docs/lakehouse.md): subtasks write parquet data files into
the table's directory (:mod:`.datafiles`), invisible until the driver adds a completed
checkpoint's files in one table commit that carries the job and checkpoint id, so a
replayed commit is recognised and skipped.
"""
