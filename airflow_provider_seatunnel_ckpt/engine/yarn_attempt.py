"""A driver started again by YARN: in cluster mode the driver runs in the application
master, and when that container dies YARN starts the application again, up to
``spark.yarn.maxAppAttempts``, with the very same arguments.

Those arguments were chosen for the first attempt. ``--restore none`` or a checkpoint id
(with ``--discard-existing``) told it where to *start*; by the time YARN starts attempt 2
the first one has completed newer checkpoints, and repeating its choice would refuse to
run (``none`` over existing checkpoints), delete them (``--discard-existing``) or throw
their work away (an older id). The run the user asked for is still the same one, so a
re-attempt resumes it from its latest completed checkpoint, as ``--restore latest``.

The driver learns which attempt it is before Spark starts (the claim and the restore
come first): from ``CONTAINER_ID``, which the NodeManager sets in every container, in
YARN's format ``container_[e<epoch>_]<cluster ts>_<app>_<attempt>_<container>``. The
application master's container is number 1 of its attempt, and only there is
``SPARK_YARN_STAGING_DIR`` set by Spark's YARN client as well.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_CONTAINER_ID = re.compile(r"container_(?:e\d+_)?\d+_\d+_(\d+)_(\d+)")
#: the restore every re-attempt uses
RESUME = "latest"


def application_master_attempt(env: Mapping[str, str] | None = None) -> int | None:
    """The YARN application attempt whose master this process runs in; None when this
    driver is not a YARN application master (client mode, local, standalone...)."""
    env = os.environ if env is None else env
    match = _CONTAINER_ID.fullmatch(env.get("CONTAINER_ID", "").strip())
    if match is None or not env.get("SPARK_YARN_STAGING_DIR") or int(match.group(2)) != 1:
        return None
    return int(match.group(1))


def restore_for_attempt(restore: str, discard_existing: bool, env: Mapping[str, str] | None = None) -> tuple[str, bool]:
    """``(restore, discard_existing)`` for this driver: as given on a first attempt,
    ``latest`` without discarding on a YARN re-attempt."""
    attempt = application_master_attempt(env)
    if attempt is None or attempt <= 1:
        return restore, discard_existing
    return RESUME, False
