"""Spark's start beside the checks and the claim (engine/spark_start.py): the JVM's output
held until the run goes ahead, then written in order; dropped for a refused run."""

from __future__ import annotations

import os
import threading

import pytest

from airflow_provider_seatunnel_ckpt.engine.spark_start import HeldOutput


def _piped(held: HeldOutput) -> int:
    """A pipe pumped by ``held``, as the JVM's stderr is; returns its write end."""
    read_fd, write_fd = os.pipe()
    held._pump_thread = threading.Thread(target=held._pump, args=(os.fdopen(read_fd, "rb"),), daemon=True)
    held._pump_thread.start()
    return write_fd


def test_lines_are_held_until_the_run_goes_ahead_then_written_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    held = HeldOutput()
    write_fd = _piped(held)
    os.write(write_fd, b"WARNING: Using incubator modules\nSetting default log level\n")
    threading.Event().wait(0.2)  # the pump has read them
    assert capsys.readouterr().err == ""
    held.release()
    os.write(write_fd, b"a later line\n")
    os.close(write_fd)
    held.drain()
    assert capsys.readouterr().err == "WARNING: Using incubator modules\nSetting default log level\na later line\n"


def test_a_refused_run_drops_what_the_jvm_printed(capsys: pytest.CaptureFixture[str]) -> None:
    held = HeldOutput()
    write_fd = _piped(held)
    os.write(write_fd, b"Using Spark's default log4j profile\n")
    held.drop()
    os.write(write_fd, b"more of Spark\n")
    os.close(write_fd)
    held.drain()
    held.release()  # too late: dropped stays dropped
    assert capsys.readouterr().err == ""
