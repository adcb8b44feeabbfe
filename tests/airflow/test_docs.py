"""docs/airflow.md: every connection example builds its storage configuration, and every
Python example runs (the DAG examples build their DAGs; the hook example reads storage).
The ``airflow dags test`` command it shows is what test_example_dags.py runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from airflow_provider_seatunnel_ckpt.hooks import HOOKS_BY_CONN_TYPE, get_checkpoint_hook

DOC = Path(__file__).resolve().parents[2] / "docs" / "airflow.md"


def blocks(language: str) -> list[str]:
    return [body for lang, body in re.findall(r"```(\w+)\n(.*?)```", DOC.read_text(), re.S) if lang == language]


def exported_connections() -> dict[str, str]:
    found = {}
    for body in blocks("bash"):
        # whole blocks, since a JSON value may span lines inside its quotes
        words = shlex.split(body, comments=True)
        for before, word in zip(words, words[1:]):
            if before == "export" and word.startswith("AIRFLOW_CONN_"):
                name, _, value = word.partition("=")
                found[name] = value
    return found


def test_every_connection_example_builds_its_storage(monkeypatch):
    import json

    connections = exported_connections()
    assert len(connections) >= 7
    for name, value in connections.items():
        monkeypatch.setenv(name, value)
    for name, value in connections.items():
        conn_id = name[len("AIRFLOW_CONN_"):].lower()
        hook = get_checkpoint_hook(conn_id)
        connection = json.loads(value)
        assert type(hook) is HOOKS_BY_CONN_TYPE[connection["conn_type"]]
        if {"role_arn", "profile_name"} & set(connection.get("extra", {})):
            continue  # its config needs AWS STS or a profile; test_connections_aws.py runs them against moto
        config = hook.config  # validated: bucket, endpoint, namespace all present
        assert config.storage.type == "hdfs", name


def test_every_python_example_runs(monkeypatch, tmp_path):
    for name, value in exported_connections().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for index, body in enumerate(blocks("python")):
        exec(compile(body, f"{DOC}:python-block-{index}", "exec"), namespace)  # noqa: S102 - our own docs
    assert namespace["etl"].dag.dag_id == "nightly_etl_with_recovery"
    assert namespace["recover"].trigger_rule == "one_failed"
    assert namespace["done"].deferrable is True and namespace["progress"].newer_than == 10
    assert namespace["ok"] is True and namespace["hook"].describe("nightly").endswith("/checkpoints/nightly")
