"""A job file or seatunnel.yaml that still holds Jinja (written for the operator, which
renders it, then run directly) is refused by the CLI in one line naming the line, the key
and the template; never a traceback. YAML reads ``{{ x }}`` as a mapping inside a
mapping, HOCON as an object where a key belongs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.cli import main

JOBS = {
    "yaml flow": (
        "job.yaml",
        "env: {parallelism: 1}\nsource:\n  - {plugin_name: Sequence, rows: {{ params.rows }}}\n"
        "sink: [{plugin_name: Console}]\n",
        3,
        "rows",
        "{{ params.rows }}",
    ),
    "yaml block": (
        "job.yaml",
        "env: {parallelism: 1}\nsource:\n  - plugin_name: Sequence\n    rows: {{ params.rows }}\n"
        "sink: [{plugin_name: Console}]\n",
        4,
        "rows",
        "{{ params.rows }}",
    ),
    "yaml statement": (
        "job.yaml",
        "{% if params.big %}\nenv: {parallelism: 1}\n{% endif %}\n",
        1,
        None,
        "{% if params.big %}",
    ),
    "hocon": (
        "job.conf",
        "env {\n  parallelism = 1\n}\nsource {\n  FakeSource {\n    row.num = {{ ds }}\n  }\n}\n"
        "sink {\n  Console {}\n}\n",
        6,
        "row.num",
        "{{ ds }}",
    ),
}


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: ")
    return lines[0]


def _assert_names_the_template(line: str, path: Path, number: int, key: str | None, template: str) -> None:
    assert line.startswith(f"error: {path}:{number}: "), line
    if key:
        assert f" {key}: " in line, line
    assert template in line and "unrendered Jinja" in line, line
    # says what to do: the operator renders it, a file used directly must be rendered first
    assert "rendered first" in line, line


@pytest.mark.parametrize("case", sorted(JOBS))
def test_run_check_refuses_a_job_file_with_jinja_in_one_line(case, tmp_path, capsys):
    name, text, number, key, template = JOBS[case]
    path = tmp_path / name
    path.write_text(text)
    assert main(["run", "--check", str(path)]) == 2
    _assert_names_the_template(_one_error_line(capsys), path, number, key, template)


def test_validate_refuses_a_seatunnel_yaml_with_jinja_in_one_line(tmp_path, capsys):
    path = tmp_path / "seatunnel.yaml"
    path.write_text("seatunnel:\n  engine:\n    checkpoint:\n      interval: {{ x }}\n")
    assert main(["validate", str(path)]) == 2
    _assert_names_the_template(_one_error_line(capsys), path, 4, "interval", "{{ x }}")


def test_a_mapping_as_a_key_without_jinja_is_one_line_too(tmp_path, capsys):
    path = tmp_path / "seatunnel.yaml"
    path.write_text("checkpoint:\n  {interval: 1}: 2\n")
    assert main(["validate", str(path)]) == 2
    line = _one_error_line(capsys)
    assert line == f"error: {path}: line 2: a mapping or a list cannot be a key", line


def test_the_console_script_prints_no_traceback(tmp_path):
    """The installed entry point, as a user runs it: exit 2, one line."""
    name, text, number, key, template = JOBS["yaml block"]
    path = tmp_path / name
    path.write_text(text)
    script = Path(sys.executable).with_name("seatunnel-ckpt")
    result = subprocess.run([str(script), "run", "--check", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1, result.stderr
    _assert_names_the_template(result.stderr.strip(), path, number, key, template)
