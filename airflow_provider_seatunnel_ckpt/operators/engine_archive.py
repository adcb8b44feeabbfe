"""The engine as a ``--py-files`` archive for spark-submit.

The Spark driver and executors need the engine, the job-file model, the storage plugins
and the config loader, and nothing of Airflow: the archive holds exactly ``config``,
``errors``, ``extras``, ``storage``, ``history``, ``jobfile``, ``engine``, ``connectors``,
``transforms``, ``sql``, ``examples`` and ``cli_base`` (the command line's errors and exit codes, which
``engine/spark_app.py`` uses), so a cluster needs only pyspark, pyarrow and the storage
clients (boto3, oss2, hdfs).

It is built once per content: the file name carries the sha256 of every shipped source
file, so an upgraded package gets a new archive and an unchanged one is reused. The
cache directory is private to the user (created 0700; refused if anyone else can
write to it, since its archives are executed).
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import zipfile
from pathlib import Path

import airflow_provider_seatunnel_ckpt as package

PACKAGE = package.__name__
#: what the Spark side imports: modules and packages relative to the package root
SHIPPED = (
    "__init__.py",
    "cli_base.py",
    "config.py",
    "errors.py",
    "extras.py",
    "storage",
    "history",
    "jobfile",
    "engine",
    "connectors",
    "transforms",
    "sql",
    "examples",
)
CACHE_ENV = "SEATUNNEL_CKPT_CACHE_DIR"

#: zip entries get a fixed timestamp so the archive depends on content alone
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


def package_root() -> Path:
    return Path(package.__file__).resolve().parent


def shipped_files(root: Path | None = None) -> list[tuple[str, Path]]:
    """(archive name, source path) of every file that goes into the archive, sorted."""
    root = root or package_root()
    files: list[tuple[str, Path]] = []
    for name in SHIPPED:
        path = root / name
        if path.is_file():
            files.append((f"{PACKAGE}/{name}", path))
        elif path.is_dir():
            for source in sorted(path.rglob("*.py")):
                if "__pycache__" in source.parts:
                    continue
                files.append((f"{PACKAGE}/{source.relative_to(root).as_posix()}", source))
        else:
            raise FileNotFoundError(f"{path}: part of the engine archive is missing from the installed package")
    return sorted(files)


def content_digest(files: list[tuple[str, Path]]) -> str:
    digest = hashlib.sha256()
    for name, source in files:
        data = source.read_bytes()
        digest.update(name.encode("utf-8") + b"\0" + str(len(data)).encode("ascii") + b"\0" + data)
    return digest.hexdigest()


def cache_dir() -> Path:
    """``$SEATUNNEL_CKPT_CACHE_DIR``, else ``<tmp>/seatunnel-ckpt-<uid>``; private to the user."""
    configured = os.environ.get(CACHE_ENV)
    directory = Path(configured) if configured else Path(tempfile.gettempdir()) / f"seatunnel-ckpt-{os.getuid()}"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise PermissionError(
            f"{directory}: the engine archive cache must be a directory owned by this user and writable "
            f"by no one else (set {CACHE_ENV} to a private directory)"
        )
    return directory


def engine_archive(directory: Path | None = None) -> Path:
    """The path of the engine archive for the installed code, built if missing."""
    files = shipped_files()
    digest = content_digest(files)
    directory = directory or cache_dir()
    target = directory / f"seatunnel-ckpt-engine-{package.__version__}-{digest[:20]}.zip"
    if target.is_file():
        return target
    fd, tmp = tempfile.mkstemp(prefix=".engine-", suffix=".zip.tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, source in files:
                entry = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
                entry.compress_type = zipfile.ZIP_DEFLATED
                entry.external_attr = 0o644 << 16
                archive.writestr(entry, source.read_bytes())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)  # atomic: concurrent builders write identical content
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
