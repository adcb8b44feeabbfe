"""What the operator suites share (tests/airflow/test_operator*.py): a task context that
records what the operator pushes to XCom, a checkpoint config on the local disk, and a
small job that runs in seconds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any


def fake_context(pushed: dict[str, Any]) -> dict[str, Any]:
    ti = SimpleNamespace(
        dag_id="kill_test",
        task_id="etl",
        run_id="manual__1",
        map_index=-1,
        xcom_push=lambda key, value: pushed.__setitem__(key, value),
    )
    return {"ti": ti}


def local_config(tmp_path: Path) -> str:
    return (
        f"checkpoint:\n  storage:\n    plugin-config:\n      storage.type: local\n      namespace: {tmp_path}/ckpt/\n"
    )


JOB_TEXT = (
    "env: {job.name: j, parallelism: 1}\nsource: [{plugin_name: Sequence, rows: 10}]\nsink: [{plugin_name: Console}]\n"
)
