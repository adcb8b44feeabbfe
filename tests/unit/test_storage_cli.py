"""`seatunnel-ckpt list / inspect / verify / delete` on a local-storage seatunnel.yaml.

Checkpoints are stored through the Python API, then looked at and damaged on disk the
way an operator would, and the commands are run through ``cli.main`` (and once through
the installed console script). User errors are one ``error: ...`` line: exit 2 for bad
input, exit 1 when the operation failed (damage, unreachable storage).
"""

from __future__ import annotations

import base64
import json
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.cli import main
from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.storage import (
    CheckpointKind,
    CheckpointManifest,
    PipelineState,
    StateHandle,
    create_storage,
)

JOB = "orders-etl"
OTHER_JOB = "clicks"
#: recognisable state bytes; neither they nor their base64 may ever be printed
SUBTASK_INLINE = b"SECRET-INLINE-SUBTASK-STATE"
COORDINATOR_INLINE = b"SECRET-INLINE-COORDINATOR-STATE"
TASK_FILE_STATE = b"task-0 reader offset " * 50
LARGE = b"L" * 10_000  # above the inline limit: its own coordinator.state file


pytestmark = pytest.mark.usefixtures("package_logging_restored")


@dataclass
class Env:
    config: str  #: path of seatunnel.yaml
    namespace: Path  #: the checkpoint namespace on disk

    def pipeline_dir(self, pipeline: int, job: str = JOB) -> Path:
        return self.namespace / job / f"pipeline-{pipeline}"

    def chk(self, pipeline: int, checkpoint: int, job: str = JOB, savepoint: bool = False) -> Path:
        prefix = "savepoint" if savepoint else "chk"
        return self.pipeline_dir(pipeline, job) / f"{prefix}-{checkpoint:020d}"


def write_config(tmp_path: Path, namespace: Path) -> str:
    path = tmp_path / "seatunnel.yaml"
    path.write_text(
        "seatunnel:\n"
        "  engine:\n"
        "    checkpoint:\n"
        "      interval: 6000\n"
        "      storage:\n"
        "        type: hdfs\n"
        "        max-retained: 3\n"
        "        plugin-config:\n"
        "          storage.type: local\n"
        f"          namespace: {namespace}/\n"
    )
    return str(path)


def store_with_task_states(storage, pipeline: int, checkpoint: int) -> None:
    """A checkpoint as the engine writes it: one subtask state file, one inlined subtask
    state, the coordinator's state in a file, then ``_metadata`` last."""
    file_handle = storage.write_state(JOB, pipeline, checkpoint, "task-0-0.state", TASK_FILE_STATE)
    coordinator = storage.write_state(JOB, pipeline, checkpoint, "coordinator.state", LARGE)
    manifest = CheckpointManifest(
        job_id=JOB,
        pipeline_id=pipeline,
        checkpoint_id=checkpoint,
        trigger_ms=1_700_000_000_000 + checkpoint,
        complete_ms=1_700_000_000_500 + checkpoint,
        coordinator_state=coordinator,
        subtask_states={0: file_handle, 1: StateHandle.for_bytes(SUBTASK_INLINE)},
    )
    storage.complete_checkpoint(manifest)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    """orders-etl: pipeline 1 checkpoints 1-3, savepoint 7 and an in-flight 8;
    pipeline 2 checkpoint 3. clicks: pipeline 1 checkpoint 1."""
    namespace = tmp_path / "checkpoint"
    config = write_config(tmp_path, namespace)
    storage = create_storage(load_config(config).storage)
    for checkpoint in (1, 2, 3):
        store_with_task_states(storage, 1, checkpoint)
    storage.store_checkpoint(PipelineState(JOB, 1, 7, states=b"savepoint state", kind=CheckpointKind.SAVEPOINT))
    storage.write_state(JOB, 1, 8, "task-0-0.state", b"in flight")  # no _metadata yet
    storage.store_checkpoint(PipelineState(JOB, 2, 3, states=LARGE))
    storage.store_checkpoint(PipelineState(OTHER_JOB, 1, 1, states=LARGE))
    return Env(config, namespace)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_error_line(err: str, *fragments: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in err
    return lines[0]


def flip_a_bit(path: Path, offset: int = 10) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


# ---- list ---------------------------------------------------------------------------------
def test_list_jobs(env, capsys):
    code, out, err = run(capsys, "list", "--config", env.config)
    assert (code, out.splitlines(), err) == (0, [OTHER_JOB, JOB], "")
    code, out, _ = run(capsys, "list", "--config", env.config, "--json")
    assert code == 0 and json.loads(out) == [OTHER_JOB, JOB]


def test_list_jobs_of_an_empty_namespace(tmp_path, capsys):
    config = write_config(tmp_path, tmp_path / "empty")
    code, out, _ = run(capsys, "list", "--config", config)
    assert code == 0 and out.strip() == f"no jobs under file://{tmp_path}/empty/"


def test_list_checkpoints_as_a_table(env, capsys):
    code, out, err = run(capsys, "list", "--config", env.config, "--job-id", JOB)
    assert code == 0 and err == ""
    header, *rows = out.splitlines()
    assert header.split() == ["PIPELINE", "ID", "TYPE", "STATUS", "LOCATION"]
    assert [row.split() for row in rows] == [
        ["1", "1", "checkpoint", "completed", f"file://{env.chk(1, 1)}"],
        ["1", "2", "checkpoint", "completed", f"file://{env.chk(1, 2)}"],
        ["1", "3", "checkpoint", "completed", f"file://{env.chk(1, 3)}"],
        ["1", "7", "savepoint", "completed", f"file://{env.chk(1, 7, savepoint=True)}"],
        ["1", "8", "checkpoint", "incomplete", f"file://{env.chk(1, 8)}"],
        ["2", "3", "checkpoint", "completed", f"file://{env.chk(2, 3)}"],
    ]


def test_list_checkpoints_as_json_for_one_pipeline(env, capsys):
    code, out, _ = run(capsys, "list", "--config", env.config, "--job-id", JOB, "--pipeline", "2", "--json")
    assert code == 0
    assert json.loads(out) == [
        {"pipeline": 2, "checkpoint": 3, "type": "checkpoint", "completed": True, "location": f"file://{env.chk(2, 3)}"}
    ]


def test_list_of_a_job_without_checkpoints_says_so(env, capsys):
    code, out, _ = run(capsys, "list", "--config", env.config, "--job-id", "never-ran")
    assert code == 0 and out.strip() == f"no checkpoints for job never-ran under file://{env.namespace}/"


# ---- inspect --------------------------------------------------------------------------------
def assert_no_state_bytes(out: str) -> None:
    for raw in (SUBTASK_INLINE, COORDINATOR_INLINE, TASK_FILE_STATE, LARGE):
        assert raw.decode() not in out
        assert base64.b64encode(raw).decode() not in out
    assert '"inline"' not in out


def test_inspect_latest_of_a_pipeline(env, capsys):
    code, out, err = run(capsys, "inspect", "--config", env.config, "--job-id", JOB, "--pipeline", "1")
    assert code == 0 and err == ""
    manifest = json.loads(out)
    assert manifest["format"] == "seatunnel-ckpt/checkpoint" and manifest["version"] == 1
    assert (manifest["job_id"], manifest["pipeline_id"], manifest["checkpoint_id"]) == (JOB, 1, 3)  # not savepoint 7
    assert manifest["kind"] == "checkpoint"
    assert (manifest["trigger_ms"], manifest["complete_ms"]) == (1_700_000_000_003, 1_700_000_000_503)
    assert re.fullmatch(r"[0-9a-f]{64}", manifest["sha256"])
    task0, task1 = manifest["subtask_states"]["0"], manifest["subtask_states"]["1"]
    assert task0 == {
        "file": "task-0-0.state",
        "size": len(TASK_FILE_STATE),
        "sha256": StateHandle.for_bytes(TASK_FILE_STATE).sha256,
    }
    assert task1 == {"size": len(SUBTASK_INLINE), "sha256": StateHandle.for_bytes(SUBTASK_INLINE).sha256}
    assert manifest["coordinator_state"]["file"] == "coordinator.state"
    assert_no_state_bytes(out)


def test_inspect_a_given_checkpoint(env, capsys):
    code, out, _ = run(
        capsys, "inspect", "--config", env.config, "--job-id", JOB, "--pipeline", "1", "--checkpoint", "2"
    )
    assert code == 0
    manifest = json.loads(out)
    assert (manifest["checkpoint_id"], manifest["kind"]) == (2, "checkpoint")
    assert_no_state_bytes(out)


def test_inspect_a_savepoint(env, capsys):
    code, out, _ = run(
        capsys, "inspect", "--config", env.config, "--job-id", JOB, "--pipeline", "1", "--checkpoint", "7"
    )
    assert code == 0 and json.loads(out)["kind"] == "savepoint"


def test_inspect_every_pipeline_prints_a_list(env, capsys):
    code, out, _ = run(capsys, "inspect", "--config", env.config, "--job-id", JOB)
    assert code == 0
    assert [(m["pipeline_id"], m["checkpoint_id"]) for m in json.loads(out)] == [(1, 3), (2, 3)]
    assert_no_state_bytes(out)


def test_inspect_never_prints_inlined_coordinator_state(tmp_path, capsys):
    config = write_config(tmp_path, tmp_path / "checkpoint")
    create_storage(load_config(config)).store_checkpoint(PipelineState(JOB, 1, 1, states=COORDINATOR_INLINE))
    code, out, _ = run(capsys, "inspect", "--config", config, "--job-id", JOB)
    assert code == 0 and json.loads(out)["coordinator_state"]["size"] == len(COORDINATOR_INLINE)
    assert_no_state_bytes(out)


def test_inspect_an_unknown_checkpoint_is_one_line(env, capsys):
    code, out, err = run(
        capsys, "inspect", "--config", env.config, "--job-id", JOB, "--pipeline", "1", "--checkpoint", "99"
    )
    assert (code, out) == (2, "")
    assert_one_error_line(err, "--checkpoint", "no completed checkpoint 99", JOB)


def test_inspect_an_in_flight_checkpoint_is_refused(env, capsys):
    code, _, err = run(
        capsys, "inspect", "--config", env.config, "--job-id", JOB, "--pipeline", "1", "--checkpoint", "8"
    )
    assert code == 2
    assert_one_error_line(err, "no completed checkpoint 8")


def test_inspect_a_corrupt_manifest_fails_with_its_path(env, capsys):
    metadata = env.chk(2, 3) / "_metadata"
    flip_a_bit(metadata, offset=40)
    code, out, err = run(capsys, "inspect", "--config", env.config, "--job-id", JOB, "--pipeline", "2")
    assert (code, out) == (1, "")
    assert_one_error_line(err, f"file://{metadata}")


# ---- verify ---------------------------------------------------------------------------------
def test_verify_good_checkpoints(env, capsys):
    code, out, err = run(capsys, "verify", "--config", env.config, "--job-id", JOB)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["pipeline 1 checkpoint 3: ok", "pipeline 2 checkpoint 3: ok"]


def test_verify_detects_a_flipped_bit_in_a_state_file(env, capsys):
    state_file = env.chk(1, 3) / "task-0-0.state"
    flip_a_bit(state_file)
    code, out, _ = run(capsys, "verify", "--config", env.config, "--job-id", JOB)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "pipeline 1 checkpoint 3: DAMAGED"
    assert lines[1].strip() == f"file://{state_file}: sha256 mismatch (corrupted)"
    assert lines[2:] == ["pipeline 2 checkpoint 3: ok"]


def test_verify_detects_a_truncated_metadata(env, capsys):
    metadata = env.chk(2, 3) / "_metadata"
    metadata.write_bytes(metadata.read_bytes()[:60])
    code, out, _ = run(capsys, "verify", "--config", env.config, "--job-id", JOB, "--pipeline", "2")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "pipeline 2 checkpoint 3: DAMAGED"
    assert lines[1].strip().startswith(f"file://{metadata}: ")


def test_verify_detects_a_truncated_state_file(env, capsys):
    coordinator = env.chk(2, 3) / "coordinator.state"
    coordinator.write_bytes(coordinator.read_bytes()[:100])
    code, out, _ = run(capsys, "verify", "--config", env.config, "--job-id", JOB, "--pipeline", "2", "--json")
    assert code == 1
    (result,) = json.loads(out)
    assert (result["pipeline"], result["checkpoint"], result["ok"]) == (2, 3, False)
    assert result["problems"] == [f"file://{coordinator}: size 100 bytes, expected {len(LARGE)} (truncated?)"]


def test_verify_all_checks_older_checkpoints_and_savepoints(env, capsys):
    old_state = env.chk(1, 1) / "task-0-0.state"
    flip_a_bit(old_state)
    # the latest checkpoints are fine, so the default (latest only) passes
    code, _, _ = run(capsys, "verify", "--config", env.config, "--job-id", JOB)
    assert code == 0

    code, out, _ = run(capsys, "verify", "--config", env.config, "--job-id", JOB, "--all")
    assert code == 1
    statuses = [line for line in out.splitlines() if not line.startswith("  ")]
    assert statuses == [
        "pipeline 1 checkpoint 1: DAMAGED",
        "pipeline 1 checkpoint 2: ok",
        "pipeline 1 checkpoint 3: ok",
        "pipeline 1 checkpoint 7: ok",  # the savepoint
        "pipeline 2 checkpoint 3: ok",
    ]
    assert f"file://{old_state}" in out


@pytest.mark.parametrize("unreadable", ["_metadata", "task-0-0.state"])
def test_verify_reports_a_read_error_as_an_error_not_as_damage(env, capsys, monkeypatch, unreadable):
    """An I/O or network error while reading is not evidence of damage: exit 1 with one
    error line saying the checkpoint could not be read, and never "DAMAGED"."""
    from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError
    from airflow_provider_seatunnel_ckpt.storage.fs_local import LocalFileSystem

    original = LocalFileSystem.read

    def flaky_read(self, path, offset=0, length=None):
        if path.endswith("/" + unreadable) and "pipeline-1" in path:
            raise CheckpointStorageError(f"local: cannot read {path}: Input/output error")
        return original(self, path, offset, length)

    monkeypatch.setattr(LocalFileSystem, "read", flaky_read)
    code, out, err = run(capsys, "verify", "--config", env.config, "--job-id", JOB, "--pipeline", "1")
    assert code == 1
    assert "DAMAGED" not in out and "DAMAGED" not in err
    line = assert_one_error_line(
        err, "could not read", "not verified", "Input/output error", "chk-00000000000000000003"
    )
    assert unreadable in line


# ---- delete ---------------------------------------------------------------------------------
def listed(env, capsys, job: str = JOB) -> list[tuple[int, int]]:
    code, out, _ = run(capsys, "list", "--config", env.config, "--job-id", job, "--json")
    assert code == 0
    return [(row["pipeline"], row["checkpoint"]) for row in json.loads(out)]


def test_delete_one_checkpoint(env, capsys):
    code, out, err = run(
        capsys, "delete", "--config", env.config, "--job-id", JOB, "--pipeline", "1", "--checkpoint", "2"
    )
    assert (code, err) == (0, "")
    assert out.strip() == f"deleted checkpoint 2 of job {JOB} pipeline 1"
    assert not env.chk(1, 2).exists()
    assert listed(env, capsys) == [(1, 1), (1, 3), (1, 7), (1, 8), (2, 3)]


def test_delete_a_pipeline(env, capsys):
    code, out, _ = run(capsys, "delete", "--config", env.config, "--job-id", JOB, "--pipeline", "1")
    assert code == 0 and out.strip() == f"deleted all checkpoints of job {JOB} pipeline 1"
    assert not list(env.pipeline_dir(1).glob("*-0*"))  # no checkpoint or savepoint directory left
    assert listed(env, capsys) == [(2, 3)]


def test_delete_a_whole_job_needs_yes(env, capsys):
    code, out, err = run(capsys, "delete", "--config", env.config, "--job-id", JOB)
    assert (code, out) == (2, "")
    assert_one_error_line(err, "--job-id", "refusing to delete every checkpoint", JOB, "--yes")
    assert len(listed(env, capsys)) == 6  # nothing was touched

    code, out, err = run(capsys, "delete", "--config", env.config, "--job-id", JOB, "--yes")
    assert (code, err) == (0, "")
    assert out.strip() == f"deleted job {JOB}"
    assert not (env.namespace / JOB).exists()
    code, out, _ = run(capsys, "list", "--config", env.config)
    assert out.splitlines() == [OTHER_JOB]  # the other job is untouched


def test_delete_a_checkpoint_needs_its_pipeline(env, capsys):
    code, _, err = run(capsys, "delete", "--config", env.config, "--job-id", JOB, "--checkpoint", "2")
    assert code == 2
    assert_one_error_line(err, "--checkpoint", "needs --pipeline")
    assert env.chk(1, 2).exists()


def test_deleting_what_does_not_exist_is_one_line_exit_2(env, capsys):
    code, out, err = run(
        capsys, "delete", "--config", env.config, "--job-id", "no-such-job", "--pipeline", "1", "--checkpoint", "3"
    )
    assert (code, out) == (2, "")
    assert_one_error_line(err, "no-such-job")


# ---- user errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_unknown_job_is_one_line_exit_2(env, capsys, command):
    code, out, err = run(capsys, command, "--config", env.config, "--job-id", "no-such-job")
    assert (code, out) == (2, "")
    assert_one_error_line(err, "--job-id", "no completed checkpoints for job no-such-job", f"file://{env.namespace}/")


@pytest.mark.parametrize("command", ["list", "inspect", "verify", "delete"])
def test_a_job_id_that_would_escape_the_namespace_is_refused(env, capsys, command):
    code, _, err = run(capsys, command, "--config", env.config, "--job-id", "../outside", "--pipeline", "1")
    assert code == 2
    assert_one_error_line(err, "job_id", "'../outside' is not a valid job id")
    assert (env.namespace / JOB).exists()


BAD_CONFIGS = {
    "negative interval": ("checkpoint:\n  interval: -5\n", "checkpoint.interval: "),
    "unknown storage type": (
        "checkpoint:\n  storage:\n    type: floppy\n",
        "checkpoint.storage.type: unknown storage type",
    ),
    "relative namespace": (
        "checkpoint:\n  storage:\n    plugin-config:\n      storage.type: local\n      namespace: ckpt/\n",
        "checkpoint.storage.plugin-config.namespace: ",
    ),
    "yaml syntax error": ("checkpoint:\n  interval: [1,\n", "YAML syntax error"),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
@pytest.mark.parametrize("command", ["list", "inspect", "verify", "delete"])
def test_bad_config_is_one_line_exit_2(tmp_path, capsys, name, command):
    text, expected = BAD_CONFIGS[name]
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    code, out, err = run(capsys, command, "--config", str(config), "--job-id", JOB)
    assert (code, out) == (2, "")
    assert_one_error_line(err, expected)


def test_missing_config_file_is_one_line_exit_2(tmp_path, capsys):
    code, _, err = run(capsys, "list", "--config", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert err.strip() == f"error: {tmp_path}/nope.yaml: file does not exist"


def _closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_storage_is_one_error_line_exit_1_without_traceback(tmp_path):
    """The installed console script, as a user runs it, against a name node that is down."""
    port = _closed_loopback_port()
    config = tmp_path / "seatunnel.yaml"
    config.write_text(
        "seatunnel:\n"
        "  engine:\n"
        "    checkpoint:\n"
        "      storage:\n"
        "        type: hdfs\n"
        "        plugin-config:\n"
        "          storage.type: hdfs\n"
        f"          fs.defaultFS: hdfs://127.0.0.1:{port}\n"
        f"          seatunnel.hadoop.dfs.namenode.http-address: 127.0.0.1:{port}\n"
    )
    script = Path(sys.executable).with_name("seatunnel-ckpt")
    assert script.exists(), f"console script missing: {script}"
    started = time.monotonic()
    result = subprocess.run(
        [str(script), "list", "--config", str(config), "--job-id", JOB],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert time.monotonic() - started < 30
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert errors[0] == result.stderr.strip().splitlines()[-1]
    assert f"127.0.0.1:{port}" in errors[0] and f"/seatunnel/checkpoint/{JOB}" in errors[0]
    # every other line is a retry warning, one line each
    assert all(line.startswith("warning: ") for line in result.stderr.strip().splitlines()[:-1])
