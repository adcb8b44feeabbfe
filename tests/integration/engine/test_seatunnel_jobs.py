"""SeaTunnel's own job files, unchanged, under real Spark with ``seatunnel-ckpt run``: HOCON,
FakeSource (one table and several), a Sql transform and Assert; a broken Assert rule fails the run with one line.
(tests/unit/test_seatunnel_jobs.py checks every fixture in-process.)"""

from __future__ import annotations

from pathlib import Path

from tests.support.workspace import Workspace

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "seatunnel"


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def test_a_seatunnel_file_runs_unchanged_and_one_whose_rule_breaks_fails_with_one_line(workspace: Workspace) -> None:
    config = workspace.write_config(interval=1000)
    passing = workspace.run(FIXTURES / "connector-fake-e2e" / "fake_to_assert.conf", config, "fake-to-assert")
    assert passing.returncode == 0, passing.explain()
    assert "job fake-to-assert finished" in passing.stderr

    # several tables from one FakeSource (tables_configs), each with its own Assert rules
    tables = workspace.run(
        FIXTURES / "connector-assert-e2e" / "fakesource_to_multi_table_assert.conf", config, "multi-table"
    )
    assert tables.returncode == 0, tables.explain()
    assert "job multi-table finished" in tables.stderr

    # SeaTunnel's own test expects this job to fail: one of its rows has score 200 > MAX 100
    failing = workspace.run(
        FIXTURES / "connector-fake-e2e" / "fake_to_assert_with_multitable_exception.conf",
        config,
        "multitable-exception",
    )
    assert failing.returncode == 1, failing.explain()
    assert _error_lines(failing.stderr) == [
        "error: job multitable-exception failed: sink[0].rules.field_rules[0].field_value[0]: score = 200 breaks MAX 100 "
        "(row {'pk_id': 3, 'name': 'C', 'score': 200})"
    ], failing.explain()
    assert "Traceback" not in failing.stderr, failing.explain()


JOB = """
env {
  parallelism = 2
  job.mode = "BATCH"
}
source {
  FakeSource {
    result_table_name = "fake"
    row.num = ${rows}
    split.num = 3
    schema = { fields { id = bigint, name = string, score = int } }
  }
}
transform {
  Sql {
    source_table_name = "fake"
    result_table_name = "scored"
    query = "select id, name, score % 100 as score from fake"
  }
}
sink {
  Assert {
    source_table_name = "scored"
    rules {
      row_rules = [ { rule_type = MIN_ROW, rule_value = "${expected:40}" }, { rule_type = MAX_ROW, rule_value = 40 } ]
      field_rules = [ { field_name = score, field_type = int, field_value = [ { rule_type = MAX, rule_value = 99 } ] } ]
    }
  }
}
"""


def test_variables_as_seatunnel_passes_them_and_a_row_count_checked_at_the_end(workspace: Workspace) -> None:
    config = workspace.write_config(interval=500)
    job = workspace.root / "scored.conf"
    job.write_text(JOB)
    # row.num is per reader: 20 rows x 2 readers, checked by MIN_ROW/MAX_ROW at the end
    ok = workspace.run(job, config, "scored", "-i", "rows=20")
    assert ok.returncode == 0, ok.explain()
    short = workspace.run(job, config, "scored-short", "--variable", "rows=19")
    assert short.returncode == 1, short.explain()
    assert _error_lines(short.stderr) == [
        "error: job scored-short failed: sink[0].rules.row_rules[0]: 38 rows break MIN_ROW 40"
    ]


TABLES_TO_FILES = """
env { parallelism = 2, job.mode = "BATCH", checkpoint.interval = 500 }
source {
  FakeSource {
    split.num = 3
    tables_configs = [
      { row.num = 50, schema = { table = "shop.orders", fields { id = bigint, amount = int } } },
      { row.num = 30, schema = { table = "shop.users", fields { id = bigint, name = string } } }
    ]
  }
}
sink {
  LocalFile {
    path = "${out}/${database_name}/${table_name}"
    file_format_type = "json"
  }
}
"""


def test_several_tables_into_a_file_sink_one_directory_each(workspace: Workspace) -> None:
    """SeaTunnel's multi-table sink under Spark: each subtask's batches go to the sink of
    their table; each table's rows once, in its own columns."""
    import pyarrow as pa
    import pyarrow.json as pj

    config = workspace.write_config(interval=500)
    job = workspace.root / "tables.conf"
    job.write_text(TABLES_TO_FILES)
    out = workspace.root / "out"
    result = workspace.run(job, config, "tables-to-files", "-i", f"out={out}")
    assert result.returncode == 0, result.explain()
    found = {}
    for directory in sorted((out / "shop").iterdir()):
        table = pa.concat_tables([pj.read_json(p) for p in directory.glob("*.json")])
        found[directory.name] = (table.num_rows, table.column_names)
    # row.num per reader: 2 readers
    assert found == {"orders": (100, ["id", "amount"]), "users": (60, ["id", "name"])}
