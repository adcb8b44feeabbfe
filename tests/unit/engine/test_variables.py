"""``${VAR}`` references in job files."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.engine.job import load_job
from airflow_provider_seatunnel_ckpt.engine.variables import load_variables, substitute
from airflow_provider_seatunnel_ckpt.errors import ConfigError

JOB = """
env: {parallelism: 1}
source: [{plugin_name: Sequence, rows: "${ROWS}"}]
sink: [{plugin_name: File, path: "file://${OUT}/data/"}]
"""


def test_variables_file_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROWS", "5")
    monkeypatch.setenv("OUT", "/tmp/env")
    job = load_job(JOB, {"OUT": "/tmp/file"})
    assert job.source["rows"] == "5"
    assert job.sink["path"] == "file:///tmp/file/data/"


def test_unset_variable_names_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROWS", raising=False)
    with pytest.raises(ConfigError) as err:
        load_job(JOB, {"OUT": "/x"})
    assert str(err.value) == "source[0].rows: variable ${ROWS} is not set (neither in the variables file nor in the environment)"


def test_escape_and_nesting() -> None:
    doc = {"a": ["x-${A}-$${A}", {"b": "${B}${A}"}], "n": 3}
    assert substitute(doc, {"A": "1", "B": "2"}) == {"a": ["x-1-${A}", {"b": "21"}], "n": 3}


def test_variables_file(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text("PG_PASSWORD: 's3cret'\nPORT: 5432\n")
    assert load_variables(path) == {"PG_PASSWORD": "s3cret", "PORT": "5432"}
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="--variables: .* must be a mapping"):
        load_variables(path)
    path.write_text("PW: [unclosed s3cret\n")
    with pytest.raises(ConfigError) as err:
        load_variables(path)
    assert "s3cret" not in str(err.value)
