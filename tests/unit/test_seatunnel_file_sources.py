"""SeaTunnel's LocalFile source jobs over plain text, json, orc and parquet files
(tests/fixtures/seatunnel/connector-file-local-e2e, unchanged) run in-process with their
Assert rules holding: projections, ``skip_header_row_number``, delimiters, date-time
formats, orc casts and several tables (``tables_configs``); and an engine e2e pair, one
job writing the text files the next one reads and asserts.

SeaTunnel's ``LocalFileIT.java`` copies its input files to absolute paths in its container
(``/seatunnel/read/orc/name=tyrantlucifer/hobby=coding/e2e.orc``...). Here the same files
(copied from its resources beside the jobs) are laid out at the same paths under a tmp
directory, and only that root is put before ``/seatunnel/read/`` in the job's text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.errors import DataError
from tests import seatunnel_jobs
from tests.support.seatunnel_files import SOURCE_JOBS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seatunnel" / "connector-file-local-e2e"
#: LocalFileIT's copies: its resource -> where its container has it
INPUTS = {
    "json/e2e.json": "seatunnel/read/json/name=tyrantlucifer/hobby=coding/e2e.json",
    "text/e2e.txt": "seatunnel/read/text/name=tyrantlucifer/hobby=coding/e2e.txt",
    "text/e2e_delimiter.txt": "seatunnel/read/text_delimiter/e2e.txt",
    "text/e2e_time_format.txt": "seatunnel/read/text_time_format/e2e.txt",
    "orc/e2e.orc": "seatunnel/read/orc/name=tyrantlucifer/hobby=coding/e2e.orc",
    "orc/orc_for_cast.orc": "seatunnel/read/orc_cast/e2e.orc",
    "parquet/e2e.parquet": "seatunnel/read/parquet/name=tyrantlucifer/hobby=coding/e2e.parquet",
}


def rooted(name: str, root: Path) -> Path:
    """The job file with SeaTunnel's container paths put under ``root`` (nothing else), its
    inputs laid out there as LocalFileIT lays them out."""
    for resource, where in INPUTS.items():
        target = root / where
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / resource, target)
    (root / "tmp/fake_empty").mkdir(parents=True, exist_ok=True)
    path = root / Path(name).name
    text = (FIXTURES / name).read_text()
    path.write_text(
        text.replace("/seatunnel/read/", f"{root}/seatunnel/read/").replace("/tmp/fake_empty", f"{root}/tmp/fake_empty")
    )
    return path


@pytest.mark.parametrize("name", sorted(SOURCE_JOBS))
def test_seatunnels_file_source_jobs_run_unchanged_and_their_assert_rules_hold(name: str, tmp_path: Path) -> None:
    assert seatunnel_jobs.run_in_process(rooted(name, tmp_path)) == SOURCE_JOBS[name]


def test_a_broken_rule_fails_an_orc_job(tmp_path: Path) -> None:
    """The rules really run: one bound tightened fails the job on the rows that break it."""
    path = rooted("orc/local_file_orc_to_assert.conf", tmp_path)
    text = path.read_text()
    assert "rule_value = 5" in text
    path.write_text(text.replace("rule_value = 5", "rule_value = 4", 1))  # its MAX_ROW
    with pytest.raises(DataError, match=r"rules\.row_rules\[0\]: 5 rows break MAX_ROW 4"):
        seatunnel_jobs.run_in_process(path)


def test_a_job_reads_and_asserts_what_another_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SeaTunnel's CheckpointDisableIT pair: FakeSource's 100 rows to text files, then a
    LocalFile source reading them with an Assert of exactly 100 rows."""
    from airflow_provider_seatunnel_ckpt.connectors import fake_source

    monkeypatch.setattr(fake_source.time, "sleep", lambda seconds: None)  # its 3 s between splits prove nothing here
    directory = FIXTURES.parent / "connector-seatunnel-e2e-base" / "checkpoint-batch-disable-test-resources"
    jobs = []
    for name in ("batch_fakesource_to_localfile_checkpoint_disable.conf", "sink_file_text_to_assert.conf"):
        path = tmp_path / name
        path.write_text((directory / name).read_text().replace("/tmp/seatunnel/config/", f"{tmp_path}/config/"))
        jobs.append(path)
    writer, reader = jobs
    assert seatunnel_jobs.run_in_process(writer) == 100
    assert seatunnel_jobs.run_in_process(reader) == 100
