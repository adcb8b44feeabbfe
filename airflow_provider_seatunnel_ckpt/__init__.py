"""Airflow provider for checkpointed, exactly-once PySpark pipelines.

Layers, each knowing nothing of the ones above it:
``storage`` (checkpoint storage plugins) < ``engine`` (checkpointing inside PySpark)
< ``hooks`` / ``operators`` / ``sensors`` / ``triggers`` (the Airflow face).
"""

from __future__ import annotations

__version__ = "0.1.0"

PACKAGE_NAME = "airflow-provider-seatunnel-ckpt"


def get_provider_info() -> dict:
    """Provider metadata for Airflow's ``apache_airflow_provider`` entry point."""
    return {
        # Must equal the distribution name, or `airflow providers list` fails.
        "package-name": PACKAGE_NAME,
        "name": "SeaTunnel Checkpointed Spark",
        "description": "Checkpointed, exactly-once PySpark pipelines with SeaTunnel-compatible checkpoint storage.",
        "versions": [__version__],
        "connection-types": [],
    }
