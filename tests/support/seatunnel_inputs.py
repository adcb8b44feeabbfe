"""The input files SeaTunnel's ``LocalFileIT.java`` lays out in its container before its
LocalFile source jobs run, built here from its test resources (the directory
``connector-file-local-e2e/src/test/resources`` of a SeaTunnel tree, or its copy in
tests/fixtures/seatunnel/connector-file-local-e2e) at the same absolute paths under a root
directory: plain copies, archives of them (entries named as ``convertToZipFile`` and its
tar twins name them: ``Random.nextInt() + name + "_" + millis + suffix``) and lzop files.
``bench/seatunnel_differential.py`` runs SeaTunnel's jobs on these inputs on both engines."""

from __future__ import annotations

import functools
import io
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

#: plain copies: path in LocalFileIT's container -> its resource
COPIES = {
    "/seatunnel/read/json/name=tyrantlucifer/hobby=coding/e2e.json": "json/e2e.json",
    "/seatunnel/read/text/name=tyrantlucifer/hobby=coding/e2e.txt": "text/e2e.txt",
    "/seatunnel/read/text_delimiter/e2e.txt": "text/e2e_delimiter.txt",
    "/seatunnel/read/text_time_format/e2e.txt": "text/e2e_time_format.txt",
    "/seatunnel/read/orc/name=tyrantlucifer/hobby=coding/e2e.orc": "orc/e2e.orc",
    "/seatunnel/read/orc_cast/e2e.orc": "orc/orc_for_cast.orc",
    "/seatunnel/read/parquet/name=tyrantlucifer/hobby=coding/e2e.parquet": "parquet/e2e.parquet",
    "/seatunnel/read/encoding/json/e2e_gbk.json": "json/e2e_gbk.json",
    "/seatunnel/read/encoding/text/e2e_gbk.txt": "text/e2e_gbk.txt",
    "/seatunnel/read/excel/name=tyrantlucifer/hobby=coding/e2e.xlsx": "excel/e2e.xlsx",
    "/seatunnel/read/excel/name=tyrantlucifer/hobby=coding/e2e.xls": "excel/e2e.xls",
    "/seatunnel/read/excel_filter/name=tyrantlucifer/hobby=coding/e2e_filter.xlsx": "excel/e2e.xlsx",
    "/seatunnel/read/xml/e2e.xml": "xml/e2e.xml",
    "/seatunnel/read/binary/cat.png": "binary/cat.png",
}

#: archives: path in the container -> (kind, resource, copies)
ARCHIVES = {
    "/seatunnel/read/zip/txt/single/e2e-txt.zip": ("zip", "text/e2e.txt", 1),
    "/seatunnel/read/zip/txt/multifile/multiZip.zip": ("zip", "text/e2e.txt", 2),
    "/seatunnel/read/tar/txt/single/e2e-txt.tar": ("tar", "text/e2e.txt", 1),
    "/seatunnel/read/tar/txt/multifile/multiTar.tar": ("tar", "text/e2e.txt", 2),
    "/seatunnel/read/tar_gz/txt/single/e2e-txt.tar.gz": ("tar_gz", "text/e2e.txt", 1),
    "/seatunnel/read/tar_gz/txt/multifile/multiTarGz.tar.gz": ("tar_gz", "text/e2e.txt", 2),
    "/seatunnel/read/zip/json/single/e2e-json.zip": ("zip", "json/e2e.json", 1),
    "/seatunnel/read/zip/json/multifile/multiJson.zip": ("zip", "json/e2e.json", 2),
    "/seatunnel/read/zip/excel/single/e2e-xlsx.zip": ("zip", "excel/e2e.xlsx", 1),
    "/seatunnel/read/zip/excel/multifile/multiZip.zip": ("zip", "excel/e2e.xlsx", 2),
    "/seatunnel/read/zip/xml/single/e2e-xml.zip": ("zip", "xml/e2e.xml", 1),
    "/seatunnel/read/lzo_text/e2e.txt": ("lzo", "text/e2e.txt", 1),
    "/seatunnel/read/lzo_json/e2e.json": ("lzo", "json/e2e.json", 1),
}

#: directories LocalFileIT makes empty (``mkdir -p``): a job reading one reads no rows
EMPTY_DIRS = ("/tmp/fake_empty",)

_RANDOMS = (1804289383, -846930886)  # the entries' Random.nextInt() prefixes, fixed here


def archive(kind: str, name: str, data: bytes, copies: int) -> bytes:
    """``copies`` entries of ``data`` (a file called ``name``) in a ``kind`` archive."""
    stem, _, suffix = Path(name).name.partition(".")
    entries = [(f"{_RANDOMS[i]}{stem}_{1732800000000 + i}.{suffix}", data) for i in range(copies)]
    out = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zipped:
            for entry, content in entries:
                zipped.writestr(entry, content)
    elif kind == "lzo":
        from airflow_provider_seatunnel_ckpt.connectors.file.codecs import LzopWriter

        kept = _KeptBytes()
        writer = LzopWriter(kept)
        writer.write(data)
        writer.close()
        return kept.getvalue()
    else:
        with tarfile.open(fileobj=out, mode="w:gz" if kind == "tar_gz" else "w") as tarred:
            for entry, content in entries:
                info = tarfile.TarInfo(entry)
                info.size = len(content)
                tarred.addfile(info, io.BytesIO(content))
    return out.getvalue()


class _KeptBytes(io.BytesIO):
    def close(self) -> None:  # the bytes stay readable after the writer closes its stream
        pass


def layout(resources: Path) -> dict[str, Callable[[], bytes]]:
    """Every input: path in the container -> its bytes, built when asked."""
    built: dict[str, Callable[[], bytes]] = {
        where: functools.partial(_copy, resources / name) for where, name in COPIES.items()
    }
    for where, (kind, name, copies) in ARCHIVES.items():
        built[where] = functools.partial(_archived, kind, resources / name, copies)
    return built


def _copy(path: Path) -> bytes:
    return path.read_bytes()


def _archived(kind: str, path: Path, copies: int) -> bytes:
    return archive(kind, path.name, path.read_bytes(), copies)


def lay_out(root: Path, resources: Path, wanted: Callable[[str], bool] = lambda where: True) -> list[str]:
    """Write the inputs ``wanted`` picks (by container path) under ``root``; their paths."""
    written = []
    for where in EMPTY_DIRS:
        (root / where.lstrip("/")).mkdir(parents=True, exist_ok=True)
        written.append(where)
    for where, build in layout(resources).items():
        if not wanted(where) or not (resources / _resource(where)).exists():
            continue
        target = root / where.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(build())
        written.append(where)
    return written


def _resource(where: str) -> str:
    return COPIES[where] if where in COPIES else ARCHIVES[where][1]
