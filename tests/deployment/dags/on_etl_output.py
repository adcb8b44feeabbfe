"""A DAG scheduled on the output of example (a): the asset alias its Spark task declares
(``seatunnel-ckpt/<dag_id>.<task_id>``), to which every finished job adds the asset of
the path it wrote."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, AssetAlias, task

with DAG(
    dag_id="on_etl_output",
    schedule=[AssetAlias("seatunnel-ckpt/example_checkpointed_etl_local.etl")],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["seatunnel-ckpt", "test"],
):

    @task
    def report(triggering_asset_events=None) -> list[str]:
        return sorted(asset.uri for asset in (triggering_asset_events or {}))

    report()
