"""docs/airflow.md: every connection example builds its storage configuration, and every
Python example runs (the DAG examples build their DAGs; the hook example reads storage).
The ``airflow dags test`` command it shows is what test_example_dags.py runs. README.md's
DAG builds, and by its trigger rules a run whose Spark job failed and was recovered ends
in success."""

from __future__ import annotations

import json
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
    connections = exported_connections()
    assert len(connections) >= 7
    for name, value in connections.items():
        monkeypatch.setenv(name, value)
    for name, value in connections.items():
        conn_id = name[len("AIRFLOW_CONN_") :].lower()
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
        exec(compile(body, f"{DOC}:python-block-{index}", "exec"), namespace)  # our own docs
    assert namespace["etl"].dag.dag_id == "nightly_etl_with_recovery"
    assert namespace["recover"].trigger_rule == "one_failed"
    assert namespace["done"].deferrable is True and namespace["progress"].newer_than == 10
    assert namespace["ok"] is True and namespace["hook"].describe("nightly").endswith("/checkpoints/nightly")


README = DOC.parents[1] / "README.md"


def readme_dag() -> dict:
    """README's "In a DAG" example, run: its namespace."""
    section = README.read_text().split("\n## In a DAG\n", 1)[1].split("\n## ", 1)[0]
    (body,) = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict = {}
    exec(compile(body, f"{README}:In a DAG", "exec"), namespace)  # our own docs
    return namespace


def run_state(dag, failed: set[str]) -> str:
    """The DAG run's end state by Airflow's trigger rules when the tasks in ``failed`` fail
    and every task that runs otherwise succeeds (the rules the README's DAG uses)."""
    states: dict[str, str] = {}
    for task in dag.topological_sort():
        upstream = [states[task_id] for task_id in task.upstream_task_ids]
        broken = any(state in ("failed", "upstream_failed") for state in upstream)
        rule = str(task.trigger_rule.value if hasattr(task.trigger_rule, "value") else task.trigger_rule)
        if rule == "all_success":
            runs, otherwise = all(state == "success" for state in upstream), "upstream_failed" if broken else "skipped"
        elif rule == "one_failed":
            runs, otherwise = broken, "skipped"
        elif rule == "none_failed":
            runs, otherwise = not broken, "upstream_failed"
        else:
            raise AssertionError(f"{task.task_id}: trigger rule {rule} not modelled here")
        states[task.task_id] = ("failed" if task.task_id in failed else "success") if runs else otherwise
    leaves = [states[task.task_id] for task in dag.tasks if not task.downstream_task_ids]
    return "failed" if any(state in ("failed", "upstream_failed") for state in leaves) else "success"


def test_readme_dag_ends_in_success_after_a_recovery(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    namespace = readme_dag()
    dag = namespace["etl"].dag
    # the run the example is about: etl fails, the recovery resumes it, the sensor sees the final checkpoint
    assert run_state(dag, failed={"etl"}) == "success"
    assert run_state(dag, failed=set()) == "success"
    # and a failed recovery still fails the run
    assert run_state(dag, failed={"etl", "recover"}) == "failed"
    final = dag.get_task("final_checkpoint")
    assert final.upstream_task_ids == {"recover"} and final.trigger_rule == "none_failed"
    assert dag.get_task("recover").upstream_task_ids == {"etl"}


def readme_section(title: str) -> str:
    text = README.read_text()
    assert f"\n## {title}\n" in text, f"README has no '## {title}' section"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def readme_connections() -> dict:
    """Every connection README's Connections section defines, as Airflow builds it: the
    ``airflow connections add`` commands read by Airflow's own CLI parser, the
    ``AIRFLOW_CONN_<ID>`` exports as Airflow reads those variables (JSON or URI)."""
    from airflow.cli.cli_parser import get_parser
    from airflow.models.connection import Connection

    found = {}
    for body in re.findall(r"```bash\n(.*?)```", readme_section("Connections"), re.S):
        for line in body.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:3] == ["airflow", "connections", "add"]:
                args = get_parser().parse_args(words[1:])
                if args.conn_uri:
                    found[args.conn_id] = Connection(conn_id=args.conn_id, uri=args.conn_uri)
                else:
                    json.loads(args.conn_extra or "{}")  # the CLI stores it as given: it must be JSON
                    found[args.conn_id] = Connection(
                        conn_id=args.conn_id,
                        conn_type=args.conn_type,
                        host=args.conn_host,
                        login=args.conn_login,
                        password=args.conn_password,
                        schema=args.conn_schema,
                        port=args.conn_port,
                        extra=args.conn_extra,
                    )
            elif words and words[0] == "export" and words[1].startswith("AIRFLOW_CONN_"):
                name, _, value = words[1].partition("=")
                conn_id = name[len("AIRFLOW_CONN_") :].lower()
                found[conn_id] = (
                    Connection.from_json(value, conn_id=conn_id)
                    if value.lstrip().startswith("{")
                    else Connection(conn_id=conn_id, uri=value)
                )
    return found


def test_readme_connections_are_what_the_operator_and_hooks_read(monkeypatch):
    import sys

    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_provider_seatunnel_ckpt import get_provider_info

    connections = readme_connections()
    # the Spark connection the operator submits through by default, read by the Spark provider
    assert connections["spark_default"].conn_type == "spark"
    for conn_id, connection in connections.items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", connection.as_json())
    assert SparkSubmitHook(conn_id="spark_default")._connection["master"] == connections["spark_default"].host
    # every checkpoint-storage connection shown builds its storage configuration
    storage = {conn_id: connection for conn_id, connection in connections.items() if conn_id != "spark_default"}
    assert storage, "README shows no checkpoint-storage connection"
    for conn_id, connection in storage.items():
        hook = get_checkpoint_hook(conn_id)
        assert type(hook) is HOOKS_BY_CONN_TYPE[connection.conn_type]
        assert hook.config.storage.type == "hdfs", conn_id
    # the section names every connection type the provider registers, and no other of its own
    section = readme_section("Connections")
    registered = {entry["connection-type"] for entry in get_provider_info()["connection-types"]}
    named = set(re.findall(r"`(seatunnel_checkpoint\w*)`", section))
    assert named == registered, (named, registered)
    assert {"fs", "webhdfs", "aws", "oss"} <= set(re.findall(r"`(\w+)`", section)) & set(HOOKS_BY_CONN_TYPE)
    # spark-submit: where README says pip's pyspark puts it
    assert "spark-submit" in section and Path(sys.executable).with_name("spark-submit").exists()
