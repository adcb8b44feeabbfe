"""What a run of the example DAGs (a) and (c) left behind, read without Airflow: the
checkpoint storage (job document, attempt records, manifests) and the File sink's
committed output, id by id. Shared by tests/airflow (``airflow dags test``) and
tests/deployment (a real deployment driven over REST)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from airflow_provider_seatunnel_ckpt.history.attempts import read_attempts
from airflow_provider_seatunnel_ckpt.storage import get_factory

#: ``part-<job tag>-<subtask>-<attempt>-<checkpoint id>-<n>.parquet``
_PART = re.compile(r"part-[0-9a-f]{8}-\d{5,}-\d+-(\d{10,})-\d+\.parquet$")
#: the examples' (c) rows (their default ``rows`` param)
FAIL_AND_RESUME_ROWS = 480_000


def example_storage(workdir: Path) -> Any:
    """The examples' checkpoint storage: local, under the run's ``workdir`` param."""
    return get_factory("hdfs").create({"storage.type": "local", "namespace": f"{workdir}/checkpoints/"})


def attempts(storage: Any, job_id: str) -> list[dict[str, Any]]:
    """The job's attempt records, oldest first (loose and folded)."""
    return read_attempts(storage, job_id)


def committed_ids(directory: Path) -> dict[int, list[int]]:
    """checkpoint id -> the ids in the output files that checkpoint committed."""
    import pyarrow.parquet as pq

    by_checkpoint: dict[int, list[int]] = {}
    for path in sorted(directory.glob("part-*.parquet")):
        match = _PART.search(path.name)
        assert match, f"unexpected output file {path.name}"
        by_checkpoint.setdefault(int(match.group(1)), []).extend(
            pq.read_table(path, columns=["id"]).column("id").to_pylist()
        )
    return by_checkpoint


def check_resumed_exactly_once(workdir: Path, dag_id: str, job_id: str, rows: int = FAIL_AND_RESUME_ROWS) -> None:
    """(c): the first attempt failed after completing checkpoints; the second restored the
    latest of them, did not reprocess what the first committed, and every row landed once."""
    storage = example_storage(workdir)
    first, second = attempts(storage, job_id)
    assert first["outcome"] == "failed" and "FailOnceError" in first["error"]
    restored = first["last_checkpoint_id"]
    assert restored is not None and first["checkpoints_completed"] >= 1
    assert second["outcome"] == "finished" and second["restored_from"] == restored
    assert storage.read_document(job_id, "job.json")["status"] == "finished"

    (run_dir,) = (workdir / "output" / dag_id).iterdir()
    by_checkpoint = committed_ids(run_dir)
    before = [i for cid, ids in by_checkpoint.items() if cid <= restored for i in ids]
    after = [i for cid, ids in by_checkpoint.items() if cid > restored for i in ids]
    assert before, "the failed attempt committed nothing before it failed"
    assert not set(before) & set(after), "the resumed attempt reprocessed committed rows"
    assert len(after) == rows - len(before)
    assert sorted(before + after) == list(range(rows)), "not every row exactly once"

    # the resumed attempt's own checkpoint statistics account for exactly its rows
    entries = [e for e in storage.list_checkpoint_entries(job_id, 1) if e.completed]
    manifests = [storage.read_manifest(job_id, 1, e.checkpoint_id, e.savepoint) for e in entries]
    mine = [m for m in manifests if m.properties.get("attempt") == 2]
    if len(mine) == second["checkpoints_completed"]:  # all of them still retained
        assert sum(m.statistics["rows"] for m in mine) == len(after)
    assert all(m.properties.get("attempt") == 2 for m in manifests if m.checkpoint_id > restored)
