"""Airflow provider for checkpointed, exactly-once PySpark pipelines.

Layers, each knowing nothing of the ones above it:
``storage`` (checkpoint storage plugins) < ``engine`` (checkpointing inside PySpark)
< ``hooks`` / ``operators`` / ``sensors`` / ``triggers`` (the Airflow face).

This module stays free of Airflow imports: it also ships to Spark in the engine archive.
"""

from __future__ import annotations

__version__ = "0.1.0"

PACKAGE_NAME = "airflow-provider-seatunnel-ckpt"
INTEGRATION = "SeaTunnel Checkpointed Spark"


def get_provider_info() -> dict:
    """Provider metadata for Airflow's ``apache_airflow_provider`` entry point."""
    return {
        # Must equal the distribution name, or `airflow providers list` fails.
        "package-name": PACKAGE_NAME,
        "name": "SeaTunnel Checkpointed Spark",
        "description": "Checkpointed, exactly-once PySpark pipelines with SeaTunnel-compatible checkpoint storage.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://seatunnel.apache.org/docs/seatunnel-engine/checkpoint-storage",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_seatunnel_ckpt.operators.spark_submit",
                    "airflow_provider_seatunnel_ckpt.operators.recovery",
                ],
            }
        ],
        "sensors": [
            {"integration-name": INTEGRATION, "python-modules": ["airflow_provider_seatunnel_ckpt.sensors.checkpoint"]}
        ],
        "hooks": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_provider_seatunnel_ckpt.hooks.base",
                    "airflow_provider_seatunnel_ckpt.hooks.local",
                    "airflow_provider_seatunnel_ckpt.hooks.webhdfs",
                    "airflow_provider_seatunnel_ckpt.hooks.s3",
                    "airflow_provider_seatunnel_ckpt.hooks.oss",
                    "airflow_provider_seatunnel_ckpt.hooks.seatunnel",
                ],
            }
        ],
        "triggers": [
            {"integration-name": INTEGRATION, "python-modules": ["airflow_provider_seatunnel_ckpt.triggers.checkpoint"]}
        ],
        # Only the provider's own type: fs, webhdfs, aws and oss connections are the
        # standard types of their providers and are read as they are.
        "connection-types": [
            {
                "connection-type": "seatunnel_checkpoint",
                "hook-class-name": "airflow_provider_seatunnel_ckpt.hooks.seatunnel.SeaTunnelCheckpointHook",
                "hook-name": "SeaTunnel Checkpoint Storage",
                "conn-fields": {
                    "storage_type": {
                        "label": "Storage type",
                        "description": "plugin-config storage.type: where checkpoints are written",
                        "schema": {"type": ["string", "null"], "enum": ["local", "hdfs", "s3", "oss", None]},
                    },
                    "namespace": {
                        "label": "Namespace",
                        "description": "parent path of all checkpoints, e.g. /seatunnel/checkpoint/",
                        "schema": {"type": ["string", "null"]},
                    },
                    "plugin_config": {
                        "label": "plugin-config",
                        "description": "any other SeaTunnel plugin-config keys as a JSON object, e.g. "
                        '{"s3.bucket": "s3a://ckpt", "fs.s3a.endpoint": "http://minio:9000"}',
                        "schema": {"type": ["object", "null"]},
                    },
                    "storage_plugin": {
                        "label": "Storage plugin",
                        "description": "checkpoint.storage.type (default hdfs; another registered plugin's name)",
                        "schema": {"type": ["string", "null"]},
                    },
                },
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "schema", "port"],
                    "relabeling": {"login": "Access key id / HDFS user", "password": "Secret key"},
                    "placeholders": {
                        "login": "S3: access key id; OSS: AccessKeyId; HDFS: user name",
                        "password": "S3: secret access key; OSS: AccessKeySecret",
                    },
                },
            }
        ],
    }
