"""`seatunnel-ckpt validate`: effective config as JSON with secrets masked; bad input
is one line on stderr with exit code 2 and no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.cli import main

FIXTURES = Path(__file__).parent.parent / "fixtures"
SEEDS = sorted(FIXTURES.glob("seed00*.yaml"))


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
def test_validate_accepts_every_seed_example(seed, capsys):
    assert main(["validate", str(seed)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["storage"]["type"] == "hdfs" and out["storage"]["max-retained"] == 3
    text = json.dumps(out)
    for secret in ("your-secret-key",):
        assert secret not in text


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "seatunnel.yaml"
    path.write_text(text)
    return str(path)


BAD_INPUTS = {
    "negative interval": ("checkpoint:\n  interval: -1\n", "checkpoint.interval: "),
    "zero timeout": ("checkpoint:\n  timeout: 0\n", "checkpoint.timeout: "),
    "wrong type": ("checkpoint:\n  max-concurrent: many\n", "checkpoint.max-concurrent: "),
    "max-retained below one": ("checkpoint:\n  storage:\n    max-retained: 0\n", "checkpoint.storage.max-retained: "),
    "negative tolerable-failure": ("checkpoint:\n  tolerable-failure: -2\n", "checkpoint.tolerable-failure: "),
    "unknown storage type": (
        "checkpoint:\n  storage:\n    type: floppy\n",
        "checkpoint.storage.type: unknown storage type",
    ),
    "hdfs without defaultFS": (
        "checkpoint:\n  storage:\n    plugin-config:\n      storage.type: hdfs\n",
        "checkpoint.storage.plugin-config.fs.defaultFS: required",
    ),
    "s3 without bucket": (
        "checkpoint:\n  storage:\n    plugin-config:\n      storage.type: s3\n",
        "checkpoint.storage.plugin-config.s3.bucket: ",
    ),
    "oss without bucket": (
        "checkpoint:\n  storage:\n    plugin-config:\n      storage.type: oss\n      fs.oss.endpoint: oss-cn-hangzhou.aliyuncs.com\n",
        "checkpoint.storage.plugin-config.oss.bucket: ",
    ),
    "yaml syntax error": ("checkpoint:\n  interval: [1,\n", "YAML syntax error at line"),
    "empty file": ("", ": is empty"),
    "duplicate key": ("checkpoint:\n  interval: 1\n  interval: 2\n", "duplicate key 'interval'"),
    "not a mapping": ("- just\n- a list\n", "expected a mapping at the top level"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_validate_bad_input_is_one_line_exit_2(name, tmp_path, capsys):
    text, expected = BAD_INPUTS[name]
    assert main(["validate", _write(tmp_path, text)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: ") and expected in lines[0]


def test_validate_missing_file(capsys):
    assert main(["validate", "/definitely/not/here.yaml"]) == 2
    assert capsys.readouterr().err.strip() == "error: /definitely/not/here.yaml: file does not exist"


def test_validate_prints_warnings_on_stderr_and_still_succeeds(capsys):
    assert main(["validate", str(FIXTURES / "seed001_hdfs_kerberos.yaml")]) == 0
    err = capsys.readouterr().err
    assert "warning: seatunnel.engine.checkpoint.storage.plugin-config.// if you used kerberos" in err


def test_console_script_has_no_traceback_for_user_errors(tmp_path):
    """The installed entry point, as a user runs it."""
    script = Path(sys.executable).with_name("seatunnel-ckpt")
    bad = _write(tmp_path, "checkpoint:\n  interval: nope\n")
    result = subprocess.run([str(script), "validate", bad], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().startswith("error: checkpoint.interval: ")
    module = subprocess.run(
        [sys.executable, "-m", "airflow_provider_seatunnel_ckpt", "validate", str(FIXTURES / "seed000_localfile.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert module.returncode == 0 and json.loads(module.stdout)["interval"] == 6000


def test_usage_errors_exit_2_with_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["validate"])
    assert exit_info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def _outcome(run, argv, capsys):
    try:
        code = run(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    "argv",
    [
        ["job.yaml", "--check"],  # checked, wiring printed, nothing run
        ["job.yaml", "--check", "--restore"],  # usage error: one line naming `seatunnel-ckpt run --help`
        ["missing.yaml", "--check"],  # user error: one line, exit 2
        ["--help"],
    ],
    ids=["check", "usage-error", "missing-job-file", "help"],
)
def test_the_spark_submit_application_is_seatunnel_ckpt_run(argv, tmp_path, monkeypatch, capsys):
    """engine/spark_app.py runs ``run`` without cli.py: same output, same exit code."""
    from airflow_provider_seatunnel_ckpt.engine import spark_app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yaml").write_text(
        "source:\n  - plugin_name: Sequence\n    rows: 10\nsink:\n  - plugin_name: Console\n"
    )
    expected = _outcome(lambda a: main(["run", *a]), argv, capsys)
    assert expected[0] in (0, 2) and (expected[1] or expected[2])
    assert _outcome(spark_app.main, argv, capsys) == expected
