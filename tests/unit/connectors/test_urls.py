from __future__ import annotations

import io

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.storage.fs_local import LocalFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_oss import OssFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_s3 import S3FileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_webhdfs import WebHdfsFileSystem
from airflow_provider_seatunnel_ckpt.storage.urls import RangeFile, filesystem_for_url, is_storage_option


@pytest.mark.parametrize(
    "url, root",
    [
        ("/abs/dir/", "/abs/dir"),
        ("/abs//dir", "/abs/dir"),
        ("file:///abs/dir/", "/abs/dir"),
        ("file:/abs/dir", "/abs/dir"),
        ("file://localhost/abs", "/abs"),
        ("file:///", "/"),
    ],
)
def test_local_urls(url, root):
    fs, got = filesystem_for_url(url, {})
    assert isinstance(fs, LocalFileSystem)
    assert got == root


def test_s3_url_takes_bucket_from_url_and_passes_options():
    fs, root = filesystem_for_url(
        "s3a://my-bucket/some/prefix/",
        {
            "fs.s3a.endpoint": "http://127.0.0.1:9000",
            "fs.s3a.path.style.access": True,
            "fs.s3a.access.key": "a",
            "fs.s3a.secret.key": "b",
        },
    )
    assert isinstance(fs, S3FileSystem)
    assert (fs.bucket, root, fs.endpoint_url) == ("my-bucket", "/some/prefix", "http://127.0.0.1:9000")
    assert fs.path_style is True
    fs, root = filesystem_for_url("s3://my-bucket", {})
    assert (fs.bucket, root) == ("my-bucket", "/")


def test_oss_url():
    fs, root = filesystem_for_url(
        "oss://my-bucket/out",
        {"fs.oss.endpoint": "oss-cn-hangzhou.aliyuncs.com", "fs.oss.accessKeyId": "id", "fs.oss.accessKeySecret": "s"},
    )
    assert isinstance(fs, OssFileSystem)
    assert (fs.bucket, root) == ("my-bucket", "/out")


def test_hdfs_url_defaults_to_port_9870_and_options_override():
    fs, root = filesystem_for_url("hdfs://namenode:8020/warehouse/t/", {})
    assert isinstance(fs, WebHdfsFileSystem)
    assert (fs.urls, root) == (["http://namenode:9870"], "/warehouse/t")
    fs, _ = filesystem_for_url(
        "hdfs://namenode:8020/x", {"seatunnel.hadoop.dfs.namenode.http-address": "nn-http:50070", "hdfs.user": "etl"}
    )
    assert (fs.urls, fs.user) == (["http://nn-http:50070"], "etl")


def test_memory_url():
    fs, root = filesystem_for_url("memory://store-a/p/q/", {})
    assert isinstance(fs, MemoryFileSystem)
    assert (fs.store_name, root) == ("store-a", "/p/q")


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("", "expected a URL"),
        ("relative/dir", "not an absolute path or URL"),
        ("ftp://host/x", "unsupported scheme 'ftp'"),
        ("s3:///prefix", "has no bucket"),
        ("hdfs:///x", "has no name node"),
        ("memory:///x", "has no store name"),
        ("file://otherhost/x", "remote host"),
        ("s3://bucket/a/../b", "'..'"),
        ("s3://bucket/x?versionId=1", "query"),
        ("s3://user:secret@bucket/x", "credentials"),
        ("hdfs://nn:notaport/x", "not a valid URL"),
    ],
)
def test_bad_urls_name_the_key_and_expected_forms(url, fragment):
    with pytest.raises(ConfigError) as err:
        filesystem_for_url(url, {}, key="sink[0].path")
    assert err.value.key == "sink[0].path"
    assert fragment in err.value.problem


def test_bad_url_lists_expected_forms():
    with pytest.raises(ConfigError, match=r"s3://bucket/prefix/.*hdfs://namenode:8020/path/"):
        filesystem_for_url("gopher://x/y", {})


def test_option_errors_are_reported_under_the_entry():
    with pytest.raises(ConfigError) as err:
        filesystem_for_url("hdfs://nn:8020/x", {"webhdfs.timeout": "soon"}, key="source[1].path")
    assert err.value.key == "source[1].webhdfs.timeout"
    with pytest.raises(ConfigError) as err:
        filesystem_for_url("s3://ab/x", {}, key="source[1].path")  # bucket too short: the URL's fault
    assert err.value.key == "source[1].path"


def test_option_conflicting_with_url_is_rejected():
    with pytest.raises(ConfigError) as err:
        filesystem_for_url("s3://bucket-a/x", {"s3.bucket": "bucket-b"}, key="path")
    assert err.value.key == "s3.bucket" and "disagrees" in err.value.problem
    filesystem_for_url("s3://bucket-a/x", {"s3.bucket": "s3a://bucket-a"})  # same bucket: fine


def test_is_storage_option():
    assert is_storage_option("fs.s3a.endpoint") and is_storage_option("kerberosPrincipal")
    assert is_storage_option("seatunnel.hadoop.dfs.replication")
    assert not is_storage_option("format") and not is_storage_option("path")


# ---- RangeFile ------------------------------------------------------------------------------
@pytest.fixture
def range_file():
    fs = MemoryFileSystem("rangefile-test")
    fs.write_atomic("/f.bin", bytes(range(256)) * 4)
    yield RangeFile(fs, "/f.bin")
    fs.delete("/", recursive=True)


def test_range_file_read_seek_tell(range_file):
    f = range_file
    assert (f.size, f.readable(), f.seekable(), f.writable()) == (1024, True, True, False)
    assert f.read(3) == b"\x00\x01\x02" and f.tell() == 3
    assert f.seek(-2, io.SEEK_END) == 1022 and f.read(10) == b"\xfe\xff"
    assert f.read(10) == b"" and f.tell() == 1024
    f.seek(256)
    f.seek(1, io.SEEK_CUR)
    buf = bytearray(4)
    assert f.readinto(buf) == 4 and bytes(buf) == b"\x01\x02\x03\x04"
    f.seek(1000)
    assert f.read() == (bytes(range(256)) * 4)[1000:]
    assert f.requests == 4 and f.bytes_read == 3 + 2 + 4 + 24  # a read at the end asks nothing
    with pytest.raises(OSError):
        f.seek(-1)
    f.close()
    with pytest.raises(ValueError):
        f.read(1)


def test_range_file_through_pyarrow_python_file(range_file):
    pf = pa.PythonFile(range_file, mode="r")
    assert pf.size() == 1024
    assert pf.read_at(4, 510) == b"\xfe\xff\x00\x01"


def test_range_file_missing_path():
    with pytest.raises(FileNotFoundError):
        RangeFile(MemoryFileSystem("rangefile-missing"), "/nope")
