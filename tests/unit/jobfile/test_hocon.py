"""SeaTunnel's HOCON dialect (jobfile/hocon.py) and the job loader's choice of format."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.hocon import parse_hocon
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

JOB = """
# a comment
env {
  parallelism = 2
  job.mode = "BATCH"   // another comment
}
source {
  FakeSource {
    result_table_name = "fake"
    row.num = 16
    schema = {
      fields {
        name = "string"
        age = int
      }
    }
  }
}
sink {
  Console { source_table_name = "fake" }
  console { limit: 3 }
}
"""


def test_dots_are_part_of_keys_and_plugin_blocks_become_a_list_in_file_order() -> None:
    doc = parse_hocon(JOB)
    assert doc["env"] == {"parallelism": 2, "job.mode": "BATCH"}
    assert doc["source"] == [
        {
            "plugin_name": "FakeSource",
            "result_table_name": "fake",
            "row.num": 16,
            "schema": {"fields": {"name": "string", "age": "int"}},
        }
    ]
    # the same plugin twice stays twice (plain HOCON would merge the two blocks)
    assert doc["sink"] == [
        {"plugin_name": "Console", "source_table_name": "fake"},
        {"plugin_name": "console", "limit": 3},
    ]
    assert list(doc["source"][0]["schema"]["fields"]) == ["name", "age"]  # column order is key order


def test_values_strings_and_concatenation() -> None:
    doc = parse_hocon(
        '''
a = 1, b = 2.5, c = true, d = null, e = "1", f = unquoted text here
g = """multi
"line" text""", h = [1, "x", [2]], i = {x = 1} {y = 2}
j = [1] [2], k += 3, k += 4
quoted.key = "${not_substituted}", "literal.key" = ok
l =
  { m = 1 }
n = ${a}, o = "select * from "${e}" where x", p = ${?missing}
''',
        variables={},
    )
    assert doc == {
        "a": 1,
        "b": 2.5,
        "c": True,
        "d": None,
        "e": "1",
        "f": "unquoted text here",
        "g": 'multi\n"line" text',
        "h": [1, "x", [2]],
        "i": {"x": 1, "y": 2},
        "j": [1, 2],
        "k": [3, 4],
        "quoted.key": "${not_substituted}",
        "literal.key": "ok",
        "l": {"m": 1},
        "n": 1,
        "o": "select * from 1 where x",
    }


def test_numbers_read_as_json_numbers_with_a_signed_exponent() -> None:
    # a float written by Java or JSON (1.05e+38): Typesafe config, SeaTunnel's reader, takes the
    # exponent's sign as part of the number; a ``+`` anywhere else still ends an unquoted string
    doc = parse_hocon("a = 1.05e+38, b = [1e+2, -3.25E-2, 7e3], c = 1e+x")
    assert doc == {"a": 1.05e38, "b": [100.0, -0.0325, 7000.0], "c": "1e+x"}
    with pytest.raises(ConfigError, match="unexpected '\\+'"):
        parse_hocon("a = x+y")


def test_repeated_objects_merge_and_explicit_plugin_name_wins() -> None:
    doc = parse_hocon('env { a = 1 }\nenv { b = 2 }\nsource { Alias { plugin_name = "Sequence", rows = 3 } }')
    assert doc["env"] == {"a": 1, "b": 2}
    assert doc["source"] == [{"plugin_name": "Sequence", "rows": 3}]


def test_unquoted_substitutions_come_from_the_file_then_variables_then_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FROM_ENV", "env-value")
    monkeypatch.setenv("BOTH", "env")
    doc = parse_hocon("x = ${FROM_ENV}\ny = ${BOTH}\nz = ${LIST}", variables={"BOTH": "variable", "LIST": "[a,b]"})
    assert doc == {"x": "env-value", "y": "variable", "z": ["a", "b"]}


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "a = ${NOT_SET_ANYWHERE}",
            "<text>:1: ${NOT_SET_ANYWHERE} is not set (not a key of the file, a variable or an "
            "environment variable); quote it to keep the text as it is",
        ),
        (
            "a = ${x:default}",
            "<text>:1: ${x:default}: a default value (${name:default}) must be inside quotes, as in SeaTunnel (HOCON)",
        ),
        ("env {\n  a = 1\n", "<text>:1: '{' opened on line 1 is never closed (HOCON)"),
        ("a = [1,\n 2", "<text>:1: '[' opened on line 1 is never closed (HOCON)"),
        ('a = "open\n', "<text>:1: a quoted string is not closed on its line (HOCON)"),
        ('\n\ninclude "other.conf"', "<text>:3: include is not supported: put everything in one job file (HOCON)"),
        ("env {\n  a 1\n}", "<text>:2: expected '=', ':' or '{' after key 'a' (HOCON)"),
        ("source {\n  FakeSource = 3\n}", "<text>:2: source: expected a block like FakeSource { ... } (HOCON)"),
        ("a = \n", "<text>:1: a: a value is missing (HOCON)"),
    ],
)
def test_errors_are_one_line_with_the_line_number(text: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(ConfigError) as err:
        parse_hocon(text)
    assert str(err.value) == message


def test_the_loader_reads_hocon_by_extension_or_by_its_blocks_and_yaml_otherwise(tmp_path: Path) -> None:
    hocon = "env { parallelism = 1 }\nsource { Sequence { rows = 5 } }\nsink { Console {} }\n"
    path = tmp_path / "job.conf"
    path.write_text(hocon)
    by_file, by_text = load_job(path), load_job(hocon)
    yaml_job = load_job(
        "env: {parallelism: 1}\nsource: [{plugin_name: Sequence, rows: 5}]\nsink: [{plugin_name: Console}]"
    )
    assert by_file.source == by_text.source == yaml_job.source == {"plugin_name": "Sequence", "rows": 5}
    path.write_text("env {\n  parallelism = 1\n")
    with pytest.raises(ConfigError, match=rf"^{path}:1: '{{' opened on line 1 is never closed \(HOCON\)$"):
        load_job(path)


def test_quotes_inside_a_key_are_read_again_as_a_path_expressions_quotes() -> None:
    """SeaTunnel rebuilds the parsed file with ConfigFactory.parseMap (ConfigShadeUtils),
    which reads every key, at every depth and inside lists, as a path expression: the
    quotes inside a key quote a part of it and go. Found by the differential test against
    Zeta (fake_to_local_file_with_encoding.conf: the map key aA"测试" arrives as aA测试);
    values keep their quotes."""
    doc = parse_hocon(
        r"""
source {
  FakeSource {
    rows = [ { kind = INSERT, fields = [ {"aA\"测试\"": "bB\"测试\""}, {"a": "\"q\""} ] } ]
    "plain key" = 1
    "\"whole\"" = 2
    "x\"a.b\"y" = 3
  }
}
"""
    )
    [fake] = doc["source"]
    assert fake["rows"][0]["fields"] == [{"aA测试": 'bB"测试"'}, {"a": '"q"'}]
    assert fake["plain key"] == 1 and fake["whole"] == 2 and fake["xa.by"] == 3
