"""Stop-with-savepoint end to end: the request document in storage (what the Airflow
hook's ``request_savepoint`` writes), a real Spark run that stops on it, and a rerun
that resumes from the savepoint."""

from __future__ import annotations

import re
import time

import pytest

from airflow_provider_seatunnel_ckpt.engine.driver import STOP_REQUEST
from airflow_provider_seatunnel_ckpt.engine.split_plan import load_plan
from airflow_provider_seatunnel_ckpt.engine.state_codec import decode_subtask_state
from airflow_provider_seatunnel_ckpt.storage import CheckpointKind
from tests.support.workspace import Workspace, assert_exactly_once, open_storage, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

JOB_ID = "stopper"


def _ids_covered_by(storage, checkpoint_id: int) -> set[int]:
    """The ids a checkpoint's positions say were read: for every Sequence split
    [start, end), the ids from start up to (not including) its position."""
    manifest = storage.read_manifest(JOB_ID, 1, checkpoint_id, savepoint=True)
    plan = load_plan(storage, JOB_ID, manifest.properties)
    splits = {split_id: spec for split_id, spec in plan}
    covered: set[int] = set()
    for subtask, handle in manifest.subtask_states.items():
        data = storage.read_state(JOB_ID, 1, checkpoint_id, handle, savepoint=True)
        state = decode_subtask_state(data, f"subtask {subtask}")
        for split_id, split_state in state.splits.items():
            spec = splits[split_id]
            position = (
                spec["end"]
                if split_state.finished
                else (split_state.position if split_state.position is not None else spec["start"])
            )
            covered.update(range(spec["start"], position))
        for start, step, count in state.finished:  # finished splits without state: plan indices
            for index in range(start, start + step * count, step):
                spec = plan[index][1]
                covered.update(range(spec["start"], spec["end"]))
    return covered


def test_stop_with_savepoint_then_resume(workspace: Workspace) -> None:
    rows = 600_000
    # The stopping run deletes its checkpoints on finish and keeps one: neither may
    # touch the savepoint. The resuming run keeps them, so the savepoint can be checked.
    stop_config = workspace.write_config(
        interval=500, max_retained=1, name="stop.yaml", **{"externalized-retention": "delete-on-finish"}
    )
    resume_config = workspace.write_config(interval=500, max_retained=1, name="resume.yaml")
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 20_000, "batch_size": 1_000})
    storage = open_storage(stop_config)

    with workspace.start(job, stop_config, JOB_ID) as driver:
        assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180), driver.stderr()
        # exactly what CheckpointStorageHook.request_savepoint writes
        storage.write_document(JOB_ID, STOP_REQUEST, {"requested_ms": int(time.time() * 1000), "by": "test"})
        result = driver.wait(240)
    assert result.returncode == 0, result.explain()
    requested = re.search(r"stop-with-savepoint requested: taking savepoint (\d+)", result.stderr)
    assert requested, result.explain()
    savepoint = int(requested.group(1))
    assert re.search(rf"job {JOB_ID} stopped with savepoint {savepoint}\b", result.stderr), result.explain()
    assert re.search(rf"checkpoint {savepoint} \(savepoint\) completed", result.stderr), result.explain()
    assert "finished: final checkpoint" not in result.stderr, result.explain()
    assert storage.read_document(JOB_ID, STOP_REQUEST) is None  # the request was consumed

    # The savepoint exists, is marked as one, and survived delete-on-finish and retention.
    entries = {e.checkpoint_id: e for e in storage.list_checkpoint_entries(JOB_ID, 1)}
    assert savepoint in entries and entries[savepoint].completed and entries[savepoint].savepoint, entries
    assert storage.read_manifest(JOB_ID, 1, savepoint, savepoint=True).kind is CheckpointKind.SAVEPOINT
    job_doc = storage.read_document(JOB_ID, "job.json")
    assert (job_doc["status"], job_doc["savepoint_id"], job_doc["final_checkpoint_id"]) == ("stopped", savepoint, None)
    attempt = storage.read_document(JOB_ID, "attempts/000001.json")
    assert (attempt["outcome"], attempt["savepoint_id"]) == ("stopped", savepoint), attempt

    # Committed output is exactly the rows the savepoint covers: each id once, the job
    # stopped well before the end of its input, and nothing after the savepoint leaked.
    covered = _ids_covered_by(storage, savepoint)
    assert 0 < len(covered) < rows, len(covered)
    committed = read_output(f"file://{workspace.output}/").column("id").combine_chunks()
    counted = tally(committed, covered)
    assert counted.exactly_once, f"output after the stop is not the savepoint's cut: {counted}"

    # The rerun restores the savepoint (the newest completed cut) and finishes the job.
    rerun = workspace.run(job, resume_config, JOB_ID, "--restore", "latest", timeout=300)
    assert rerun.returncode == 0, rerun.explain()
    assert f"attempt 2: 2 subtasks, 2 splits, from savepoint {savepoint};" in rerun.stderr, rerun.explain()
    assert re.search(rf"job {JOB_ID} finished: final checkpoint \d+", rerun.stderr), rerun.explain()
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
    entries = {e.checkpoint_id: e for e in storage.list_checkpoint_entries(JOB_ID, 1)}
    assert savepoint in entries and entries[savepoint].savepoint, f"retention deleted savepoint {savepoint}: {entries}"
    assert len([e for e in entries.values() if not e.savepoint]) >= 1
    assert storage.read_document(JOB_ID, "job.json")["status"] == "finished"
