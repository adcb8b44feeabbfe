"""What a job reads and writes, as OpenLineage datasets and Airflow asset URIs: one naming
for both, no credentials. The events themselves are checked on a real run of example (d)
in test_example_dags.py (the provider's file transport)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_provider_seatunnel_ckpt.operators.datasets import sink_datasets, source_datasets


def named(refs):
    return [(r.namespace, r.name, r.uri) for r in refs]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"plugin_name": "Sequence", "rows": 10}, []),
        ({"plugin_name": "File", "path": "/data/in/", "format": "parquet"}, [("file", "/data/in", "file:///data/in")]),
        (
            {
                "plugin_name": "File",
                "path": "s3a://bucket/in/day=1/",
                "fs.s3a.access.key": "ak",
                "fs.s3a.secret.key": "sk",
            },
            [("s3://bucket", "in/day=1", "s3://bucket/in/day=1")],
        ),
        (
            {"plugin_name": "Delta", "path": "hdfs://nn:8020/lake/t"},
            [("hdfs://nn:8020", "/lake/t", "hdfs://nn:8020/lake/t")],
        ),
        (
            {
                "plugin_name": "Jdbc",
                "url": "jdbc:postgresql://pg:5433/shop?password=pw&currentSchema=sales",
                "table": "orders",
            },
            [("postgres://pg:5433", "shop.sales.orders", "postgres://pg:5433/shop/sales/orders")],
        ),
        (
            {"plugin_name": "Jdbc", "url": "postgresql://u:pw@pg/shop", "table_path": "shop.public.Orders"},
            [("postgres://pg:5432", "shop.public.orders", "postgres://pg:5432/shop/public/orders")],
        ),
        (
            {
                "plugin_name": "Jdbc",
                "url": "postgresql://pg/shop",
                "password": "pw",
                "query": "select o.id, c.name from sales.orders o join customers c on c.id = o.customer_id",
            },
            [
                ("postgres://pg:5432", "shop.public.customers", "postgres://pg:5432/shop/public/customers"),
                ("postgres://pg:5432", "shop.sales.orders", "postgres://pg:5432/shop/sales/orders"),
            ],
        ),
        (
            {
                "plugin_name": "Iceberg",
                "catalog_name": "lake",
                "namespace": "db",
                "table": "orders",
                "iceberg.catalog.config": {
                    "type": "sql",
                    "uri": "sqlite:////lake/catalog.db",
                    "warehouse": "file:///lake",
                },
            },
            [("iceberg://lake", "db.orders", "iceberg://lake/db/orders")],
        ),
        (
            {
                "plugin_name": "Kafka",
                "bootstrap.servers": "b1:9092,b2:9092",
                "topic": ["a", "b"],
                "format": "text",
                "kafka.config": {"sasl.password": "pw"},
            },
            [("kafka://b1:9092", "a", "kafka://b1:9092/a"), ("kafka://b1:9092", "b", "kafka://b1:9092/b")],
        ),
        (
            {"plugin_name": "Kafka", "bootstrap.servers": "b1", "topic": "events.*", "pattern": True, "format": "text"},
            [],
        ),
    ],
)
def test_source_datasets(source, expected):
    refs = source_datasets(source)
    assert named(refs) == expected
    assert not [r for r in refs if "pw" in repr(r) or "sk" in r.uri]


@pytest.mark.parametrize(
    ("sink", "expected"),
    [
        ({"plugin_name": "Console"}, []),
        (
            {
                "plugin_name": "File",
                "path": "oss://bucket/out/",
                "fs.oss.endpoint": "oss-cn-hangzhou.aliyuncs.com",
                "fs.oss.accessKeyId": "ak",
                "fs.oss.accessKeySecret": "pw",
            },
            [("oss://bucket", "out", "oss://bucket/out")],
        ),
        (
            {"plugin_name": "Jdbc", "url": "jdbc:postgresql://pg:5433/shop", "database": "dw", "table": "sales.orders"},
            [("postgres://pg:5433", "dw.sales.orders", "postgres://pg:5433/dw/sales/orders")],
        ),
        ({"plugin_name": "Jdbc", "url": "mysql://db/shop", "table": "orders"}, []),  # the job's validation says why
        (
            {"plugin_name": "Kafka", "bootstrap.servers": "broker", "topic": "out"},
            [("kafka://broker:9092", "out", "kafka://broker:9092/out")],
        ),
    ],
)
def test_sink_datasets(sink, expected):
    assert named(sink_datasets(sink)) == expected


def test_operator_lineage_names_source_sink_and_checkpoint_without_credentials():
    from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator

    op = CheckpointedSparkSubmitOperator(task_id="etl", job_file="j.yaml")
    assert op.get_openlineage_facets_on_failure(None).inputs == []  # failed before the job was read
    op._lineage_entries = (
        [{"plugin_name": "Jdbc", "url": "postgresql://u:secret@pg/shop", "table": "orders"}],
        [{"plugin_name": "File", "path": "/out"}, {"plugin_name": "File", "path": "/copy"}],
    )
    op._lineage_run = {"job_id": "j1", "status": "finished", "attempt": 2, "restored_from": 7, "final_checkpoint_id": 9}
    lineage = op.get_openlineage_facets_on_complete(None)
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("postgres://pg:5432", "shop.public.orders")]
    assert [(d.namespace, d.name) for d in lineage.outputs] == [("file", "/out"), ("file", "/copy")]  # every sink
    facet = lineage.run_facets["seatunnelCheckpoint"]
    assert (facet.job_id, facet.attempt, facet.restored_from, facet.final_checkpoint_id) == ("j1", 2, 7, 9)
    assert "secret" not in repr(lineage)


def test_start_events_carry_the_rendered_jobs_datasets(tmp_path):
    """What the OpenLineage provider's extractor sends with START: the rendered job's
    source and sink, known before the job runs, and no credentials."""
    from airflow.providers.openlineage.extractors.base import DefaultExtractor
    from airflow.sdk import DAG

    from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator

    job = (
        "env: {job.name: j}\n"
        "source: [{plugin_name: Jdbc, url: 'postgresql://u:secret@pg/shop', table: orders}]\n"
        "sink: [{plugin_name: File, path: 'file:///out/{{ ds }}/', format: parquet}]\n"
    )
    with DAG("lineage_start", schedule=None):
        op = CheckpointedSparkSubmitOperator(task_id="etl", job_file=job, job_id="{{ ds_nodash }}")
    op.render_template_fields({"ds": "2026-01-02", "ds_nodash": "20260102"})
    lineage = DefaultExtractor(op).extract()
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("postgres://pg:5432", "shop.public.orders")]
    assert [(d.namespace, d.name) for d in lineage.outputs] == [("file", "/out/2026-01-02")]
    assert lineage.run_facets["seatunnelCheckpoint"].job_id == "20260102"
    assert "secret" not in repr(lineage)


def test_a_variable_from_env_vars_is_resolved_in_lineage_and_in_the_asset_event_as_the_driver_resolves_it(
    tmp_path, monkeypatch
):
    """docs/airflow.md's pattern: ``env_vars={"RUN_DAY": "{{ ds }}"}`` and ``${RUN_DAY}`` in
    the job file. The driver fills it from its environment; the operator's lineage and its
    asset event must name the same path, not ``day=${RUN_DAY}`` (an asset Airflow would
    create, wrongly, on the first event)."""
    from collections import defaultdict

    from airflow.providers.openlineage.extractors.base import DefaultExtractor
    from airflow.sdk import DAG

    from airflow_provider_seatunnel_ckpt.hooks import get_checkpoint_hook
    from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator
    from airflow_provider_seatunnel_ckpt.storage import CheckpointKind, PipelineState

    monkeypatch.delenv("RUN_DAY", raising=False)
    config = (
        f"checkpoint:\n  storage:\n    plugin-config:\n      storage.type: local\n      namespace: {tmp_path}/ckpt/\n"
    )
    job = (
        "env: {job.name: j, parallelism: 1}\n"
        "source: [{plugin_name: Sequence, rows: 10}]\n"
        "sink: [{plugin_name: File, path: 'file:///out/day=${RUN_DAY}/', format: parquet}]\n"
    )
    with DAG("env_vars_lineage", schedule=None):
        op = CheckpointedSparkSubmitOperator(
            task_id="etl", job_file=job, config_file=config, job_id="done", env_vars={"RUN_DAY": "{{ ds }}"}
        )
    op.render_template_fields({"ds": "2026-01-02"})
    lineage = DefaultExtractor(op).extract()
    assert [(d.namespace, d.name) for d in lineage.outputs] == [("file", "/out/day=2026-01-02")]

    # a finished job (no spark-submit): the task announces its output
    storage = get_checkpoint_hook(config_file=config).storage
    storage.store_checkpoint(
        PipelineState(job_id="done", pipeline_id=1, checkpoint_id=4, states=b"", kind=CheckpointKind.FINAL)
    )
    storage.write_document("done", "job.json", {"status": "finished", "attempt": 1, "final_checkpoint_id": 4})
    announced: list[str] = []
    alias_events = SimpleNamespace(add=lambda asset, extra: announced.append(asset.uri))
    ti = SimpleNamespace(
        dag_id="env_vars_lineage", task_id="etl", run_id="r", map_index=-1, xcom_push=lambda **kw: None
    )
    op.execute({"ti": ti, "outlet_events": defaultdict(lambda: alias_events)})
    assert announced == ["file:///out/day=2026-01-02"]
