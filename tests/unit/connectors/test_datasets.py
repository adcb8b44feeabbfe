"""Every source and sink names the datasets it reads or writes as OpenLineage names them
(``datasets()``), from its options alone and without a credential: the engine records a
sink's in each checkpoint (its identity), Airflow's lineage and assets use the same names."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.engine.routing import load_sinks, load_sources, one_sink
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

ICEBERG = {"iceberg.catalog.config": {"type": "sql", "uri": "sqlite:////lake/catalog.db", "warehouse": "file:///lake"}}
S3_KEYS = {"fs.s3a.access.key": "AKIA-SECRET", "fs.s3a.secret.key": "S3-SECRET"}
SECRETS = ("AKIA-SECRET", "S3-SECRET", "PG-SECRET", "OSS-SECRET", "KAFKA-SECRET")


def named(connector: Any) -> list[tuple[str, str]]:
    found = connector.datasets()
    assert not any(secret in repr(found) for secret in SECRETS), found
    return [(d.namespace, d.name) for d in found]


@pytest.mark.parametrize(
    ("sink", "expected"),
    [
        ({"plugin_name": "File", "path": "file:///out/day=1/", "format": "jsonl"}, [("file", "/out/day=1")]),
        ({"plugin_name": "File", "path": "s3a://bucket/out/", **S3_KEYS}, [("s3://bucket", "out")]),
        ({"plugin_name": "LocalFile", "path": "/out/", "file_format_type": "json"}, [("file", "/out")]),
        (
            {
                "plugin_name": "S3File",
                "bucket": "s3a://bucket",
                "path": "/out",
                "file_format_type": "json",
                "access_key": "AKIA-SECRET",
                "secret_key": "S3-SECRET",
            },
            [("s3://bucket", "out")],
        ),
        (
            {
                "plugin_name": "OssFile",
                "bucket": "oss://bucket",
                "path": "/out/",
                "file_format_type": "json",
                "endpoint": "oss-cn-hangzhou.aliyuncs.com",
                "access_key": "ak",
                "access_secret": "OSS-SECRET",
            },
            [("oss://bucket", "out")],
        ),
        (
            {"plugin_name": "HdfsFile", "fs.defaultFS": "hdfs://nn:8020", "path": "/out/", "file_format_type": "json"},
            [("hdfs://nn:8020", "/out")],
        ),
        (
            {
                "plugin_name": "Jdbc",
                "url": "jdbc:postgresql://pg:5433/shop?currentSchema=sales",
                "user": "u",
                "password": "PG-SECRET",
                "table": "Orders",
            },
            [("postgres://pg:5433", "shop.sales.orders")],
        ),
        (
            {"plugin_name": "Jdbc", "url": "postgresql://u:PG-SECRET@pg/shop", "database": "dw", "table": "s.t"},
            [("postgres://pg:5432", "dw.s.t")],
        ),
        (
            {
                "plugin_name": "Kafka",
                "bootstrap.servers": "b1,b2:9093",
                "topic": "out",
                "kafka.config": {"sasl.password": "KAFKA-SECRET"},
            },
            [("kafka://b1:9092", "out")],
        ),
        (
            {"plugin_name": "Iceberg", "catalog_name": "lake", "namespace": "db", "table": "orders", **ICEBERG},
            [("iceberg://lake", "db.orders")],
        ),
        ({"plugin_name": "Delta", "path": "s3://bucket/tables/t/", **S3_KEYS}, [("s3://bucket", "tables/t")]),
        ({"plugin_name": "Console"}, []),
        ({"plugin_name": "Assert", "rules": {"row_rules": [{"rule_type": "MIN_ROW", "rule_value": 1}]}}, []),
        ({"plugin_name": "InMemory"}, []),
    ],
    ids=lambda value: value.get("plugin_name") if isinstance(value, dict) else None,
)
def test_every_sink_names_what_it_writes(sink: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert named(load_sink(sink)) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"plugin_name": "File", "path": "/in/"}, [("file", "/in")]),
        ({"plugin_name": "LocalFile", "path": "/in", "file_format_type": "json"}, [("file", "/in")]),
        (
            {"plugin_name": "HdfsFile", "fs.defaultFS": "hdfs://nn:8020", "path": "/in", "file_format_type": "json"},
            [("hdfs://nn:8020", "/in")],
        ),
        (
            {"plugin_name": "Jdbc", "url": "postgresql://pg/shop", "password": "PG-SECRET", "table_path": "shop.s.T"},
            [("postgres://pg:5432", "shop.s.t")],
        ),
        (
            {"plugin_name": "Kafka", "bootstrap.servers": "b1:9092", "topic": ["a", "b"], "format": "text"},
            [("kafka://b1:9092", "a"), ("kafka://b1:9092", "b")],
        ),
        (
            {"plugin_name": "Kafka", "bootstrap.servers": "b1:9092", "topic": "a.*", "pattern": True, "format": "text"},
            [],
        ),
        (
            {"plugin_name": "Iceberg", "catalog_name": "lake", "namespace": "db", "table": "orders", **ICEBERG},
            [("iceberg://lake", "db.orders")],
        ),
        ({"plugin_name": "Delta", "path": "/lake/t"}, [("file", "/lake/t")]),
        ({"plugin_name": "Sequence", "rows": 10}, []),
        ({"plugin_name": "FakeSource", "schema": {"fields": {"id": "bigint"}}}, []),
    ],
    ids=lambda value: value.get("plugin_name") if isinstance(value, dict) else None,
)
def test_sources_name_what_they_read(source: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert named(load_source(source)) == expected


def test_several_sinks_and_a_sink_per_table_name_each_part() -> None:
    tables = [{"schema": {"table": f"db.{name}", "fields": {"id": "bigint"}}} for name in ("t1", "t2")]
    job = load_job(
        {
            "env": {"job.name": "j"},
            "source": [{"plugin_name": "FakeSource", "tables_configs": tables, "plugin_output": "rows"}],
            "sink": [
                {
                    "plugin_name": "LocalFile",
                    "path": "/out/${table_name}",
                    "file_format_type": "json",
                    "plugin_input": "rows",
                },
                {"plugin_name": "Kafka", "bootstrap.servers": "b1", "topic": "${table_name}", "plugin_input": "rows"},
            ],
        }
    )
    sources = load_sources(job.sources)
    assert named(one_sink(load_sinks(job, sources))) == [
        ("file", "/out/t1"),
        ("file", "/out/t2"),
        ("kafka://b1:9092", "t1"),
        ("kafka://b1:9092", "t2"),
    ]
    assert named(sources[0]) == []  # FakeSource's tables are generated
