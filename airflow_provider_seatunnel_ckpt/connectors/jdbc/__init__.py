"""The ``Jdbc`` connectors for PostgreSQL: an Arrow-native source and an exactly-once sink.

Named and configured like SeaTunnel's connector-v2 ``Jdbc`` (``url``, ``user``,
``password``, ``query``/``table``, ``partition_column``...), but no JVM is involved:
reads and writes go through libpq with the ADBC PostgreSQL driver, which moves Arrow
batches with PostgreSQL's binary COPY (no per-row Python).

* :mod:`.target` parses the connection options (``jdbc:postgresql://`` or ``postgresql://``)
  and describes a target without its password;
* :mod:`.client` opens connections and turns driver errors into one-line messages;
* :mod:`.types` maps result columns to Arrow types (and says which cannot be mapped);
* :mod:`.source` plans key-range splits and reads them with keyset pagination;
* :mod:`.transactions` names, prepares, commits and rolls back the sink's prepared
  transactions, with a commit log that makes a replayed commit detectable;
* :mod:`.sink` writes with COPY inside one transaction per subtask and epoch.
"""
