"""``${VAR}`` references in job files."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from airflow_provider_seatunnel_ckpt.jobfile.variable_options import load_variables, parse_variable_options
from airflow_provider_seatunnel_ckpt.jobfile.variables import substitute

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


def test_an_unset_variable_stays_as_seatunnel_leaves_it_and_an_option_that_needs_a_value_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ROWS", raising=False)
    with pytest.raises(ConfigError) as err:
        load_job(JOB, {"OUT": "/x"})
    assert str(err.value) == (
        "source[0].rows: expected an integer, got '${ROWS}'; a variable in it is not set "
        "(-i NAME=value, --variables or the environment)"
    )
    warnings: list[str] = []
    assert substitute({"sink": {"path": "/out/${DAY}/${now}_${transactionId}"}}, {}, warnings=warnings) == {
        "sink": {"path": "/out/${DAY}/${now}_${transactionId}"}
    }
    assert warnings == [
        "sink.path: ${DAY} is not set (neither a variable of the job nor in the environment); left as it is"
    ]


def test_defaults_as_in_seatunnel_and_a_secret_never_stays_a_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAME", raising=False)
    monkeypatch.delenv("PG_PASSWORD", raising=False)
    assert substitute({"a": "${NAME:fake_test}_table", "b": "${NAME:}", "c": "${ NAME : x }"}, {}) == {
        "a": "fake_test_table",
        "b": "",
        "c": "x",
    }
    assert substitute({"a": "${NAME:fake_test}"}, {"NAME": "given"}) == {"a": "given"}
    with pytest.raises(ConfigError) as err:
        substitute({"sink": {"password": "${PG_PASSWORD}"}}, {})
    assert (
        str(err.value)
        == "sink.password: variable ${PG_PASSWORD} is not set (neither a variable of the job nor in the environment)"
    )


def test_variable_options_split_as_seatunnel_splits_them() -> None:
    assert parse_variable_options(["a=1,b=2", "list=[x,y]", 'q="u,v"', "eq=a=b"]) == {
        "a": "1",
        "b": "2",
        "list": "[x,y]",
        "q": '"u,v"',
        "eq": "a=b",
    }
    with pytest.raises(ConfigError, match=r"--variable: expected NAME=VALUE, got 'nothing'"):
        parse_variable_options(["nothing"])


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
