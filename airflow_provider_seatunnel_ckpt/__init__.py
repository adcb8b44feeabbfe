"""Airflow provider for checkpointed, exactly-once PySpark pipelines.

Layers, each knowing nothing of the ones above it, from ``storage`` (checkpoint storage
plugins) up through ``connectors`` and ``engine`` (checkpointing inside PySpark) to the
Airflow face: docs/architecture.md#layers, checked by the import-linter contracts in
pyproject.toml.

This module stays free of Airflow imports: it also ships to Spark in the engine archive.
"""

from __future__ import annotations

__version__ = "0.1.0"

PACKAGE_NAME = "airflow-provider-seatunnel-ckpt"
INTEGRATION = "SeaTunnel Checkpointed Spark"


#: the namespace form field of the seatunnel_checkpoint_* connection types
_NAMESPACE_FIELD = {
    "label": "Namespace",
    "description": "parent path of all checkpoints, when seatunnel.yaml sets none",
    "schema": {"type": ["string", "null"]},
}


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
        # Our types only. Airflow lets the first provider (by package name) that registers a
        # connection type own its form and its UI Test, and ours sorts before apache-*: taking
        # fs / webhdfs / aws / oss would hijack those types for every other hook. Those
        # standard types still work everywhere a connection id is taken; the
        # seatunnel_checkpoint_* types carry the same fields and make the UI's Test run the
        # checkpoint-storage check (also where the HDFS or Alibaba provider is not installed).
        "extra-links": ["airflow_provider_seatunnel_ckpt.ui.link.CheckpointViewLink"],
        "connection-types": [
            {
                "connection-type": "seatunnel_checkpoint",
                "hook-class-name": "airflow_provider_seatunnel_ckpt.hooks.seatunnel.SeaTunnelCheckpointHook",
                "hook-name": "SeaTunnel Checkpoint Storage",
                "conn-fields": {
                    "storage_type": {
                        "label": "Storage type",
                        "description": "plugin-config storage.type: where checkpoints are written",
                        # no None in the enum: the UI offers every enum value as a choice, None as a
                        # literal "null"; an optional choice is declared so by Airflow's own providers
                        # (smtp's auth_type), and the hook reads an unset field as no storage.type
                        "schema": {"type": ["string", "null"], "enum": ["local", "hdfs", "s3", "oss"]},
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
            },
            {
                "connection-type": "seatunnel_checkpoint_aws",
                "hook-class-name": "airflow_provider_seatunnel_ckpt.hooks.s3.SeaTunnelS3CheckpointHook",
                "hook-name": "SeaTunnel checkpoints on S3 (AWS connection fields)",
                "conn-fields": {
                    "bucket_name": {
                        "label": "Bucket",
                        "description": "checkpoint bucket, when the job's seatunnel.yaml sets no s3.bucket",
                        "schema": {"type": ["string", "null"]},
                    },
                    "namespace": _NAMESPACE_FIELD,
                },
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "schema", "port"],
                    "relabeling": {"login": "AWS Access Key ID", "password": "AWS Secret Access Key"},
                    "placeholders": {
                        "login": "empty: the role, profile or default credential chain",
                        "extra": '{"region_name": "eu-west-1", "role_arn": "arn:aws:iam::123456789012:role/ckpt", '
                        '"endpoint_url": "http://minio:9000"}',
                    },
                },
            },
            {
                "connection-type": "seatunnel_checkpoint_webhdfs",
                "hook-class-name": "airflow_provider_seatunnel_ckpt.hooks.webhdfs.SeaTunnelWebHdfsCheckpointHook",
                "hook-name": "SeaTunnel checkpoints on HDFS (WebHDFS connection fields)",
                "conn-fields": {
                    "namespace": _NAMESPACE_FIELD,
                    "use_ssl": {"label": "Use SSL", "schema": {"type": ["boolean", "null"]}},
                    "kerberos_principal": {"label": "Kerberos principal", "schema": {"type": ["string", "null"]}},
                    "kerberos_keytab": {
                        "label": "Kerberos keytab",
                        "description": "path of the keytab on every worker and Spark node",
                        "schema": {"type": ["string", "null"]},
                    },
                },
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "password"],
                    "relabeling": {"host": "Name node host(s)", "port": "WebHDFS port", "login": "HDFS user"},
                    "placeholders": {"host": "nn1.example.com,nn2.example.com", "port": "9870"},
                },
            },
            {
                "connection-type": "seatunnel_checkpoint_oss",
                "hook-class-name": "airflow_provider_seatunnel_ckpt.hooks.oss.SeaTunnelOssCheckpointHook",
                "hook-name": "SeaTunnel checkpoints on Aliyun OSS (OSS connection fields)",
                "conn-fields": {
                    "region": {"label": "Region", "schema": {"type": ["string", "null"]}},
                    "endpoint": {
                        "label": "Endpoint",
                        "description": "default https://oss-<region>.aliyuncs.com",
                        "schema": {"type": ["string", "null"]},
                    },
                    "namespace": _NAMESPACE_FIELD,
                },
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "port"],
                    "relabeling": {"schema": "Bucket", "login": "AccessKeyId", "password": "AccessKeySecret"},
                },
            },
            {
                "connection-type": "seatunnel_checkpoint_fs",
                "hook-class-name": "airflow_provider_seatunnel_ckpt.hooks.local.SeaTunnelLocalCheckpointHook",
                "hook-name": "SeaTunnel checkpoints on the local file system (File (path) fields)",
                "conn-fields": {
                    "path": {
                        "label": "Path",
                        "description": "absolute checkpoint directory that every worker and Spark node sees",
                        "schema": {"type": ["string", "null"]},
                    },
                },
                "ui-field-behaviour": {"hidden-fields": ["host", "schema", "port", "login", "password"]},
            },
        ],
    }
