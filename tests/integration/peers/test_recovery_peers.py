"""The peers benchmark's recovery measurement on a small job (bench/peers_bench.py
``--recovery``, bench/peers/recovery.py), for our side and Zeta: the coordinating process
is SIGKILLed once the job has committed output, the engine restores the job from its latest
checkpoint, a newly committed row follows, and the restored run ends with every id once.

Not in CI: four engine starts (two Spark drivers, two Zeta JVMs) take one to three minutes
on 2 busy cores. Opt in with ``SEATUNNEL_CKPT_PEERS_RECOVERY=1``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import peers_bench
from bench.peers import zeta

pytestmark = [
    pytest.mark.peers,
    pytest.mark.skipif(
        os.environ.get("SEATUNNEL_CKPT_PEERS_RECOVERY") != "1",
        reason="minutes of engine starts: set SEATUNNEL_CKPT_PEERS_RECOVERY=1 (docs/testing.md, Peers)",
    ),
]

#: FakeSource splits per reader, about one a second: the job outlasts the kill
SPLITS = 15


@pytest.mark.parametrize("engine", ["ours", "zeta"])
def test_killed_coordinator_restores_and_commits_every_id_once(engine: str, tmp_path: Path) -> None:
    if engine == "zeta":
        zeta.ensure_home()
    result = peers_bench.RECOVERERS[engine](tmp_path, SPLITS)
    assert result["restored_exit_code"] == 0, result
    assert 0 < result["rows_committed_at_kill"] < result["expected_rows"], result
    assert 0 < result["recovery_s"] < 300, result
    assert result["exactly_once"], result
    assert result["committed_rows"] == peers_bench.PARALLELISM * SPLITS * peers_bench.SPLIT_ROWS
