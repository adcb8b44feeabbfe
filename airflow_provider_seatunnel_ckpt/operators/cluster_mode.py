"""``deploy_mode=cluster``: the driver in YARN's application master (docs/deployment.md, "YARN").

The driver reads the checkpoint configuration, which may hold credentials, from a file.
In client mode that is a 0600 file on the Airflow worker. In YARN cluster mode the driver
runs on a NodeManager host, so the files travel with ``--files``: spark-submit uploads
them to the application's staging directory on HDFS, which Spark creates readable by the
submitting user only (0700, as for a keytab it ships) and deletes when the application
ends, and YARN localizes them into the driver's container. The driver is then given their
names, which resolve in its working directory.

Other cluster managers have no such private channel (a standalone cluster reads files
from paths every worker must see; Kubernetes uploads them to a shared
``spark.kubernetes.file.upload.path``), so cluster mode stays refused there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

#: spark-submit waits for the application and exits with its final status: the task's
#: outcome is the job's (and on_kill finds spark-submit still running)
WAIT_KEY = "spark.yarn.submit.waitAppCompletion"


def runs_on_yarn_cluster(connection: Mapping[str, Any]) -> bool:
    """True for YARN cluster mode, False for client mode; refuses cluster mode elsewhere."""
    if connection.get("deploy_mode") != "cluster":
        return False
    if "yarn" not in str(connection.get("master") or ""):
        raise AirflowFailException(
            f"deploy_mode=cluster is supported on YARN only (master {connection.get('master')!r}): elsewhere "
            "the checkpoint configuration (with credentials) has no private way to the driver; use client mode"
        )
    return True


def check_cluster_conf(conf: Mapping[str, Any]) -> None:
    if str(conf.get(WAIT_KEY, "true")).strip().lower() != "true":
        raise AirflowFailException(
            "spark.yarn.submit.waitAppCompletion: must stay true in cluster mode: the task follows the job through spark-submit, "
            "which otherwise exits as soon as YARN accepts the application"
        )


def shipped_files(user_files: str | None, paths: Sequence[str]) -> str:
    """The ``--files`` value: the user's files, then the driver's own. YARN localizes every
    file by its name (or the ``#name`` after it), so two with the same name cannot both
    reach the driver."""
    entries = [f.strip() for f in (user_files or "").split(",") if f.strip()]
    names = [Path(f.split("#", 1)[-1]).name for f in entries] + [Path(p).name for p in paths]
    clashing = sorted({name for name in names if names.count(name) > 1})
    if clashing:
        raise AirflowFailException(
            f"files: {', '.join(clashing)} would reach the driver's working directory twice in cluster mode "
            "(the job file, seatunnel.yaml and variables.yaml are shipped there too); rename one"
        )
    return ",".join([*entries, *paths])
