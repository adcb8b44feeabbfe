"""What a job reads and writes, named for Airflow assets and for OpenLineage.

The connectors name their datasets themselves (``Source.datasets()``, ``Sink.datasets()``:
OpenLineage's namespace and name, connectors/datasets.py), so an Asset URI, an OpenLineage
dataset and the sink identity the engine records in its checkpoints always agree. Here a
(rendered) job-file entry is built into its connector, as ``load_job`` builds it to check
the job, and each dataset gets its Airflow URI (``file://``, ``s3://``,
``postgres://host:port/db/schema/table``, ``kafka://host:port/topic``; an Iceberg table
``iceberg://<catalog>/<ns>/<table>``, since neither spec names a catalog table).

No credentials: a URL's user and password never reach a name. An entry that names no
lasting dataset (``Sequence``, ``Console``, a Kafka topic pattern), or that the job itself
would refuse, gives none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError


@dataclass(frozen=True)
class DatasetRef:
    #: OpenLineage namespace and name
    namespace: str
    name: str
    #: Airflow asset URI
    uri: str


def source_datasets(source: Mapping[str, Any]) -> list[DatasetRef]:
    """The datasets a job's source entry reads."""
    from ..connectors import load_source

    return _refs(lambda: load_source(source, "source").datasets())


def sink_datasets(sink: Mapping[str, Any]) -> list[DatasetRef]:
    """The datasets a job's sink entry writes."""
    from ..connectors import load_sink

    return _refs(lambda: load_sink(sink, "sink").datasets())


def _refs(datasets: Callable[[], list[Any]]) -> list[DatasetRef]:
    try:
        found = datasets()
    except ConfigError:
        return []  # the job's own validation says what is wrong; lineage is not the place
    return [DatasetRef(d.namespace, d.name, asset_uri(d)) for d in found]


def asset_uri(dataset: Any) -> str:
    """Airflow's URI of a connector's dataset: its namespace and name as one URL, a
    table's dotted name as path segments."""
    namespace, name = dataset.namespace, dataset.name
    scheme = namespace.partition("://")[0]
    if scheme == "postgres":  # database.schema.table
        return f"{namespace}/" + "/".join(name.split(".", 2))
    if scheme == "iceberg":  # namespace.table (a namespace may have dots itself)
        table_namespace, _, table = name.rpartition(".")
        return f"{namespace}/{table_namespace}/{table}"
    return str(dataset)
