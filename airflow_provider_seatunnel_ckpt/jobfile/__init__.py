"""Job files, SeaTunnel's and ours, read into a ``JobSpec`` without Spark.

Below the engine, so the Airflow face and the command line read and check job files
where the engine extra (pyspark) is not installed, and the engine ships the result to
Spark as plain data; above the connector registry, which checks each entry's options.
Its modules:

* ``documents.py``: a document from a path or text (YAML, JSON; HOCON for job files),
  also seatunnel.yaml's (config.py);
* ``hocon.py``: SeaTunnel's HOCON dialect; ``unrendered.py``: Jinja left in a document,
  named when it breaks the parse;
* ``variables.py``: ``${NAME}`` in values; ``variable_options.py``: their values from
  ``-i`` and ``--variables``;
* ``env.py``: the ``env`` block; ``wiring.py``: which sources, transforms and sinks
  feed which, by table name;
* ``spec.py``: the job model (``JobSpec``); ``job.py``: ``load_job``, a job file to it;
* ``secret_keys.py``: which keys hold credentials.

Each is imported by its own name; this package imports none of them.
"""
