"""Run a SeaTunnel job file on SeaTunnel's own engine, Zeta, in local mode.

Zeta is SeaTunnel 2.3.8's engine (the newest release of which Maven Central serves the starter
with its connectors):
``scripts/jvm-servers zeta`` resolves the ``zeta`` profile of tests/servers/jvm/pom.xml
and lays it out as a SEATUNNEL_HOME in ``.cache/zeta/home`` (starter/, lib/,
connectors/ with our plugin-mapping.properties). A run starts the JVM as SeaTunnel's
``bin/seatunnel.sh -m local`` does::

    java -Dhazelcast.client.config=... -Dseatunnel.config=... -Dhazelcast.config=...
         -Dlog4j2.configurationFile=... -cp "$SEATUNNEL_HOME/lib/*:starter/seatunnel-starter.jar"
         org.apache.seatunnel.core.starter.seatunnel.SeaTunnelClient --config JOB -m local

Local mode starts a Hazelcast member inside that JVM (on a loopback port of the run's
own, a random cluster name), submits the job to it and exits when the job ends: exit 0
for FINISHED, 1 for a failed job. Each run gets a work directory with its config files
(from the templates in tests/servers/jvm/zeta), its checkpoints and its log.

``python -m bench.peers.zeta [--rows N] [--checkpoint-interval-ms MS]`` runs one
FakeSource -> LocalFile (csv) job and prints its timings as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.peers.process import REPO_ROOT, PeerError, PeerRun, ensure_installed, run_logged

SEATUNNEL_VERSION = "2.3.8"  # tests/servers/jvm/pom.xml, seatunnel.version
HOME = REPO_ROOT / ".cache" / "zeta" / "home"
TEMPLATES = REPO_ROOT / "tests" / "servers" / "jvm" / "zeta"
MAIN_CLASS = "org.apache.seatunnel.core.starter.seatunnel.SeaTunnelClient"
# Hazelcast 5.1 (inside the starter) asks for these on Java 9+ (else a warning and slower paths)
HAZELCAST_JAVA_OPTIONS = [
    "--add-modules",
    "java.se",
    "--add-exports",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.management/sun.management=ALL-UNNAMED",
    "--add-opens",
    "jdk.management/com.sun.management.internal=ALL-UNNAMED",
]
# the file sinks whose ``path`` option is where the rows go
_FILE_SINKS = {"localfile", "hdfsfile", "s3file", "ossfile", "ftpfile", "sftpfile"}


@dataclass
class ZetaRun(PeerRun):
    """A ``PeerRun`` (``wall_s``: the JVM's whole life: start, Hazelcast member, job,
    shutdown; ``exit_code`` 0: the job FINISHED), with ``outputs`` (sink label -> where its
    rows went: a file sink's path, the log for Console) and ``stats`` (SeaTunnel's own "Job
    Statistic Information": start/end time, total_time_s, read/write/failed counts)."""

    outputs: dict[str, str] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


def ensure_home() -> Path:
    """The SEATUNNEL_HOME of Zeta, laid out on first use (``scripts/jvm-servers zeta``:
    about 20 s and 150 MB of Maven Central from an empty cache, then a stamp check)."""
    ensure_installed("zeta")
    return HOME


def java_binary(java: str | os.PathLike | None = None) -> str:
    """``java`` if given (a binary or a JDK's home), else $SEATUNNEL_CKPT_ZETA_JAVA, else the
    ``java`` on PATH. Zeta 2.3.8 runs on Java 17 (docs/testing.md)."""
    chosen = java or os.environ.get("SEATUNNEL_CKPT_ZETA_JAVA")
    if chosen:
        path = Path(chosen)
        if path.is_dir():
            path = path / "bin" / "java"
        return str(path)
    found = shutil.which("java")
    if found is None:
        raise PeerError("Java 17 is required for Zeta (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless)")
    return found


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fill(template: str, values: Mapping[str, str]) -> str:
    text = (TEMPLATES / template).read_text()
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


def _job_with_interval(job_file: Path, interval_ms: int | None) -> str:
    """The job's text, with ``env { checkpoint.interval = MS }`` appended when asked: HOCON
    merges the two env objects and the later value wins. A batch job checkpoints only when
    its env sets checkpoint.interval (Zeta's JobMaster); the engine's
    checkpoint.interval (seatunnel.yaml) is the default of streaming jobs."""
    text = job_file.read_text()
    if interval_ms is not None:
        text += f"\n# added by bench/peers/zeta.py\nenv {{\n  checkpoint.interval = {int(interval_ms)}\n}}\n"
    return text


def sink_outputs(job_file: Path, log: Path, variables: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where each sink of the job writes: ``sink[i] Plugin`` -> a file sink's ``path``, the
    run's log for Console. Read with this project's job file parser; {} if it cannot."""
    try:
        from airflow_provider_seatunnel_ckpt.jobfile.documents import read_job_document

        doc, _, _ = read_job_document(job_file, variables)
    except Exception:
        return {}
    sinks = doc.get("sink") if isinstance(doc, Mapping) else None
    outputs: dict[str, str] = {}
    for i, sink in enumerate(sinks if isinstance(sinks, list) else []):
        if not isinstance(sink, Mapping):
            continue
        name = str(sink.get("plugin_name", "?"))
        if name.lower() in _FILE_SINKS and sink.get("path"):
            outputs[f"sink[{i}] {name}"] = str(sink["path"])
        elif name.lower() == "console":
            outputs[f"sink[{i}] {name}"] = str(log)
        else:
            outputs[f"sink[{i}] {name}"] = ""
    return outputs


_STAT = re.compile(
    r"^(Start Time|End Time|Total Time\(s\)|Total Read Count|Total Write Count|Total Failed Count)\s*:\s*(.+?)\s*$"
)
_STAT_KEYS = {
    "Start Time": "start_time",
    "End Time": "end_time",
    "Total Time(s)": "total_time_s",
    "Total Read Count": "read_count",
    "Total Write Count": "write_count",
    "Total Failed Count": "failed_count",
}


def job_statistics(log: Path) -> dict[str, Any]:
    """SeaTunnel's "Job Statistic Information" block, printed when a job finishes."""
    stats: dict[str, Any] = {}
    with contextlib.suppress(OSError):
        for line in log.read_text(errors="replace").splitlines():
            match = _STAT.match(line.strip())
            if match:
                key, value = _STAT_KEYS[match.group(1)], match.group(2)
                stats[key] = int(value) if value.isdigit() else value
    return stats


@dataclass
class ZetaLaunch:
    """Everything a Zeta run needs, laid out in its work directory, not started yet."""

    command: list[str]
    env: dict[str, str]
    work_dir: Path
    job: Path
    log: Path
    checkpoint_dir: Path


def prepare_job(
    job_file: str | os.PathLike,
    *,
    checkpoint_interval_ms: int | None = 10_000,
    work_dir: str | os.PathLike | None = None,
    variables: Mapping[str, str] | None = None,
    java: str | os.PathLike | None = None,
    heap: str = "1g",
    checkpoint_storage: str = "hdfs",
    extra_java_options: Sequence[str] = (),
    restore_job_id: str | None = None,
    log_name: str = "zeta.log",
) -> ZetaLaunch:
    """Lay out a run of ``job_file`` (see ``run_job``) and build its command.
    ``restore_job_id``: SeaTunnel's ``-r``, restore that job from its latest completed
    checkpoint in the work directory's ``checkpoints/`` (a second launch in the same
    ``work_dir``, with another ``log_name``)."""
    home = ensure_home()
    job_file = Path(job_file).resolve()
    work = Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="zeta-run-"))
    work = work.resolve()
    config = work / "config"
    checkpoints = work / "checkpoints"
    config.mkdir(parents=True, exist_ok=True)
    checkpoints.mkdir(exist_ok=True)
    port = str(free_port())
    values = {
        "PORT": port,
        "CHECKPOINT_INTERVAL_MS": str(int(checkpoint_interval_ms or 10_000)),
        "CHECKPOINT_DIR": str(checkpoints),
        "CHECKPOINT_STORAGE": checkpoint_storage,
    }
    for name in ("seatunnel.yaml", "hazelcast.yaml", "hazelcast-client.yaml", "log4j2.properties"):
        (config / name).write_text(_fill(name, values))
    job = work / "job.conf"
    job.write_text(_job_with_interval(job_file, checkpoint_interval_ms))

    command = [
        java_binary(java),
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        "-Djava.net.preferIPv4Stack=true",
        "-Djava.awt.headless=true",
        *HAZELCAST_JAVA_OPTIONS,
        f"-DSEATUNNEL_HOME={home}",
        f"-Dhazelcast.client.config={config / 'hazelcast-client.yaml'}",
        f"-Dseatunnel.config={config / 'seatunnel.yaml'}",
        f"-Dhazelcast.config={config / 'hazelcast.yaml'}",
        f"-Dlog4j2.configurationFile={config / 'log4j2.properties'}",
        *extra_java_options,
        "-cp",
        f"{home / 'lib'}/*{os.pathsep}{home / 'starter' / 'seatunnel-starter.jar'}",
        MAIN_CLASS,
        "--config",
        str(job),
        "-m",
        "local",
    ]
    if restore_job_id is not None:
        command += ["-r", str(restore_job_id)]
    for key, value in (variables or {}).items():
        command += ["-i", f"{key}={value}"]
    env = dict(os.environ, SEATUNNEL_HOME=str(home))
    return ZetaLaunch(command, env, work, job, work / log_name, checkpoints)


def run_job(
    job_file: str | os.PathLike,
    *,
    checkpoint_interval_ms: int | None = 10_000,
    work_dir: str | os.PathLike | None = None,
    variables: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    java: str | os.PathLike | None = None,
    heap: str = "1g",
    checkpoint_storage: str = "hdfs",
    extra_java_options: Sequence[str] = (),
) -> ZetaRun:
    """Run ``job_file`` on Zeta in local mode and wait for it.

    ``checkpoint_interval_ms``: the engine's interval and, appended to the job's env, the
    job's (None: the job's own, batch jobs then take no checkpoint). ``work_dir`` (default:
    a new temporary directory, kept) gets ``config/``, ``job.conf`` (the job as run),
    ``checkpoints/`` and ``zeta.log`` (the JVM's stdout and stderr). ``variables`` go to
    SeaTunnel's ``-i key=value``. ``checkpoint_storage``: ``hdfs`` (on ``file:///``, as
    SeaTunnel's own seatunnel.yaml) or ``localfile`` (deprecated in SeaTunnel, but free of
    Hadoop's Subject.getSubject call, so it also runs on Java 23+). After ``timeout_s``
    the JVM is killed: ``timed_out`` and exit code -9."""
    launch = prepare_job(
        job_file,
        checkpoint_interval_ms=checkpoint_interval_ms,
        work_dir=work_dir,
        variables=variables,
        java=java,
        heap=heap,
        checkpoint_storage=checkpoint_storage,
        extra_java_options=extra_java_options,
    )
    finished = run_logged(launch.command, cwd=launch.work_dir, env=launch.env, log=launch.log, timeout_s=timeout_s)
    return ZetaRun(
        **finished.run_fields(),
        work_dir=launch.work_dir,
        log=launch.log,
        checkpoint_dir=launch.checkpoint_dir,
        outputs=sink_outputs(launch.job, launch.log, variables),
        stats=job_statistics(launch.log),
        command=launch.command,
    )


FAKE_TO_CSV = """\
env {
  parallelism = 1
  job.mode = "BATCH"
}
source {
  FakeSource {
    result_table_name = "fake"
    row.num = %(rows)d
    split.num = 1
    schema = {
      fields {
        id = "bigint"
        name = "string"
        score = "double"
      }
    }
  }
}
sink {
  LocalFile {
    source_table_name = "fake"
    path = "%(out)s"
    file_format_type = "csv"
  }
}
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="One FakeSource -> LocalFile (csv) job on SeaTunnel's Zeta, timed.")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--checkpoint-interval-ms", type=int, default=10_000)
    parser.add_argument("--work-dir", help="default: a new temporary directory (kept)")
    parser.add_argument("--java", help="a java binary or JDK home (default: $SEATUNNEL_CKPT_ZETA_JAVA, then PATH)")
    parser.add_argument("--checkpoint-storage", choices=("hdfs", "localfile"), default="hdfs")
    args = parser.parse_args(argv)

    started = time.monotonic()
    ensure_home()
    home_s = time.monotonic() - started
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="zeta-run-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    job = work / "fake_to_csv.conf"
    job.write_text(FAKE_TO_CSV % {"rows": args.rows, "out": out})
    run = run_job(
        job,
        checkpoint_interval_ms=args.checkpoint_interval_ms,
        work_dir=work,
        java=args.java,
        checkpoint_storage=args.checkpoint_storage,
    )
    lines = sum(sum(1 for _ in f.open("rb")) for f in out.rglob("*.csv")) if out.exists() else 0
    result = run.as_json()
    result.pop("command")
    result.update(
        seatunnel_version=SEATUNNEL_VERSION,
        rows=args.rows,
        csv_lines=lines,
        rows_per_s=round(lines / run.wall_s) if run.wall_s else None,
        home_check_s=round(home_s, 3),
    )
    print(json.dumps(result, indent=2))
    print(
        f"zeta {SEATUNNEL_VERSION}: exit {run.exit_code}, {lines} csv lines, wall {run.wall_s:.1f} s "
        f"(SeaTunnel's own job time {run.stats.get('total_time_s', '?')} s), log {run.log}",
        file=sys.stderr,
    )
    return run.exit_code


if __name__ == "__main__":
    sys.exit(main())
