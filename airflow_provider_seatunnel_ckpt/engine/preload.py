"""Whether executors fork their Python workers from the engine's preloading daemon
(engine/worker_daemon.py), and the Spark settings that say so.

``spark.seatunnel.preloadDaemon``: ``auto`` (default, or ``$SEATUNNEL_CKPT_PRELOAD_DAEMON``
when that is set: a machine-wide default, e.g. for a host that runs many short jobs),
``true`` or ``false``. The daemon
module must be importable by the executors' Python *before* any task runs (``--py-files``
are added to a worker's path only when a task starts), so ``auto`` turns it on only where
that is known: a local master whose workers' Python can import the engine from a
directory (checked by starting it once). On a cluster, turn it on when the package is installed on
the executors (a venv archive, a container image). A ``spark.python.daemon.module`` of
your own always wins.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

PRELOAD_KEY = "spark.seatunnel.preloadDaemon"
DAEMON_KEY = "spark.python.daemon.module"
DAEMON_MODULE = "airflow_provider_seatunnel_ckpt.engine.worker_daemon"
PRELOAD_ENV_KEY = "spark.executorEnv.SEATUNNEL_CKPT_PRELOAD"
#: environment variable with the default for PRELOAD_KEY (a job's or --conf setting wins)
DEFAULT_ENV = "SEATUNNEL_CKPT_PRELOAD_DAEMON"


def preload_settings(job: Any, master: str | None, conf: Mapping[str, str], worker_python: str) -> dict[str, str]:
    """Spark settings to add for ``job`` (empty when the stock daemon stays); ``conf`` is
    the Spark configuration as it will be, ``worker_python`` the executors' Python."""
    key, raw = (
        (PRELOAD_KEY, conf[PRELOAD_KEY])
        if PRELOAD_KEY in conf
        else (DEFAULT_ENV, os.environ.get(DEFAULT_ENV) or "auto")
    )
    choice = str(raw).strip().lower()
    if choice not in ("auto", "true", "false"):
        raise ConfigError(key, f"expected auto, true or false, got {raw!r}")
    if choice == "false" or DAEMON_KEY in conf:
        return {}
    if choice == "auto" and not ((master or "").startswith("local") and _importable_by(worker_python)):
        return {}
    return {DAEMON_KEY: DAEMON_MODULE, PRELOAD_ENV_KEY: ",".join(connector_modules(job))}


def connector_modules(job: Any) -> list[str]:
    """The modules of the job's sources, transforms and sinks (built-in or registered)."""
    from ..connectors import module_of

    entries = [
        *(("source", s) for s in job.sources),
        *(("transform", t) for t in job.transforms),
        *(("sink", s) for s in job.sinks),
    ]
    found = [module_of(kind, entry.get("plugin_name")) for kind, entry in entries]
    return list(dict.fromkeys(m for m in found if m))


def _importable_by(python: str) -> bool:
    """Can ``python``, started like the Python workers, run the daemon module from a
    directory? The workers' environment has no ``--py-files`` archives, so those are
    left out of the probe's path; like a local master's daemon, it runs in the current
    directory."""
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and not os.path.isfile(p)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    check = (
        f"import importlib.util as u, os; s = u.find_spec({DAEMON_MODULE!r}); "
        "raise SystemExit(not (s and s.origin and os.path.isfile(s.origin)))"
    )
    try:
        probe = subprocess.run(
            [python, "-c", check],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0
