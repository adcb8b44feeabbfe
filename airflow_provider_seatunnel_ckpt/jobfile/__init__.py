"""Job files, SeaTunnel's and ours, read into a ``JobSpec`` without Spark.

Below the engine, so the Airflow face and the command line read and check job files
where the engine extra (pyspark) is not installed, and the engine ships the result to
Spark as plain data. Its modules:

* ``hocon.py``: SeaTunnel's HOCON dialect;
* ``variables.py``: ``${NAME}`` in values, and ``-i`` / ``--variables``;
* ``wiring.py``: which sources, transforms and sinks feed which, by table name;
* ``job.py``: the job model (``JobSpec``) and ``load_job``.

Each is imported by its own name; this package imports none of them.
"""
