"""Storage hooks on Airflow connections (``AIRFLOW_CONN_<ID>`` JSON), against the loopback
protocol servers: moto's S3, the WebHDFS and OSS test servers, and the local disk."""

from __future__ import annotations

import json
import sys
import uuid

import pytest

from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.hooks import (
    CheckpointStorageHook,
    LocalCheckpointHook,
    OssCheckpointHook,
    S3CheckpointHook,
    SeaTunnelCheckpointHook,
    SeaTunnelLocalCheckpointHook,
    SeaTunnelOssCheckpointHook,
    SeaTunnelS3CheckpointHook,
    SeaTunnelWebHdfsCheckpointHook,
    UnsupportedConnectionType,
    WebHdfsCheckpointHook,
    get_checkpoint_hook,
)
from tests.support.airflow_hooks import JOB, assert_masked, connection, exercise


# ---- S3 (moto behind a recording proxy: the session's server, tests/conftest.py) ---------------------
def test_s3_hook_on_an_aws_connection(monkeypatch, s3_server):
    bucket = s3_server.create_bucket(f"ckpt-{uuid.uuid4().hex[:10]}")
    secret = f"s3-secret-{uuid.uuid4().hex}"
    conn_id = connection(
        monkeypatch,
        {
            "conn_type": "aws",
            "login": "AKIATESTKEY",
            "password": secret,
            "extra": {"region_name": "us-east-1", "endpoint_url": s3_server.endpoint_url, "bucket_name": bucket},
        },
    )
    hook = get_checkpoint_hook(
        conn_id, "checkpoint:\n  interval: 2000\n  storage:\n    plugin-config:\n      namespace: /ckpt/\n"
    )
    assert isinstance(hook, S3CheckpointHook)
    assert hook.config.interval == 2000  # settings from the file
    plugin = hook.config.storage.plugin_config
    assert (plugin["s3.bucket"], plugin["namespace"], plugin["fs.s3a.path.style.access"]) == (bucket, "/ckpt/", True)
    assert_masked(secret)
    s3_server.proxy.reset()
    exercise(hook)
    paths = [path for _method, path, _outcome in s3_server.proxy.requests]
    assert paths and all(p.startswith(f"/{bucket}") for p in paths)  # path-style addressing
    assert secret not in repr(hook.storage) and secret not in json.dumps(hook.config.masked())


def test_s3_hook_reads_keys_from_extra_and_the_file_wins_for_the_location(monkeypatch, s3_server):
    bucket = s3_server.create_bucket(f"ckpt-{uuid.uuid4().hex[:10]}")
    conn_id = connection(
        monkeypatch,
        {
            "conn_type": "aws",
            "extra": {
                "aws_access_key_id": "AKIAEXTRA",
                "aws_secret_access_key": "extra-secret-value",
                "endpoint_url": s3_server.endpoint_url,
                "bucket_name": "ignored-bucket",
                "namespace": "/ignored/",
            },
        },
    )
    config = f"""\
checkpoint:
  storage:
    type: hdfs
    plugin-config:
      storage.type: s3
      s3.bucket: s3a://{bucket}
      namespace: /from-file/
      fs.s3a.access.key: FILEKEY
      fs.s3a.secret.key: file-secret
      fs.s3a.session.token: file-token
      fs.s3a.aws.credentials.provider: org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider
"""
    hook = get_checkpoint_hook(conn_id, config)
    plugin = hook.config.storage.plugin_config
    assert plugin["s3.bucket"] == f"s3a://{bucket}" and plugin["namespace"] == "/from-file/"
    assert plugin["fs.s3a.access.key"] == "AKIAEXTRA" and plugin["fs.s3a.secret.key"] == "extra-secret-value"
    assert "fs.s3a.session.token" not in plugin  # connection credentials are never mixed with the file's
    assert plugin["fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    assert_masked("extra-secret-value")
    exercise(hook)


def test_aws_connection_tls_settings_the_spark_nodes_would_not_share_are_refused(monkeypatch):
    conn_id = connection(monkeypatch, {"conn_type": "aws", "extra": {"verify": False}})
    with pytest.raises(ConfigError, match=r"extra\.verify: is not supported .*AWS_CA_BUNDLE"):
        get_checkpoint_hook(conn_id, "checkpoint:\n  storage:\n    plugin-config:\n      s3.bucket: b-1\n").config  # noqa: B018 - reading it raises


def test_s3_connection_test_fails_on_a_missing_bucket_and_leaves_no_probe(monkeypatch, s3_server):
    bucket = s3_server.create_bucket(f"ckpt-{uuid.uuid4().hex[:10]}")
    extra = {"region_name": "us-east-1", "endpoint_url": s3_server.endpoint_url}
    conn = {"conn_type": "seatunnel_checkpoint_aws", "login": "AKIATESTKEY", "password": "secret-probe-1"}
    ok, message = get_checkpoint_hook(
        connection(monkeypatch, {**conn, "extra": {**extra, "bucket_name": bucket}})
    ).test_connection()
    assert ok and "wrote, read and deleted a probe document" in message and "checked from host" in message
    assert s3_server.client().list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    missing = connection(monkeypatch, {**conn, "extra": {**extra, "bucket_name": f"missing-{uuid.uuid4().hex[:8]}"}})
    ok, message = get_checkpoint_hook(missing).test_connection()
    assert not ok and "NoSuchBucket" in message and "secret-probe-1" not in message


@pytest.mark.parametrize("key", ["role_arn", "profile_name"])
def test_without_the_amazon_provider_role_and_profile_name_the_pip_install(monkeypatch, key):
    # the provider's modules made unimportable, as on an install without it
    for module in (
        "airflow.providers.amazon.aws.hooks.base_aws",
        "airflow.providers.amazon.aws.utils.connection_wrapper",
    ):
        monkeypatch.setitem(sys.modules, module, None)
    conn_id = connection(
        monkeypatch, {"conn_type": "aws", "extra": {key: "arn:aws:iam::1:role/x" if key == "role_arn" else "p"}}
    )
    with pytest.raises(ConfigError) as raised:
        get_checkpoint_hook(conn_id, "checkpoint:\n  storage:\n    plugin-config:\n      s3.bucket: b-1\n").config  # noqa: B018 - reading it raises
    message = str(raised.value)
    assert (
        f"extra.{key}" in message and "pip install apache-airflow-providers-amazon" in message and "\n" not in message
    )


# ---- OSS -----------------------------------------------------------------------------------------
def test_oss_hook_on_an_oss_connection(monkeypatch):
    from tests.servers.oss import OssServer

    secret = f"oss-secret-{uuid.uuid4().hex}"
    with OssServer("oss-ak", secret) as server:
        server.create_bucket("ckpt-oss")
        conn_id = connection(
            monkeypatch,
            {
                "conn_type": "oss",
                "extra": {
                    "access_key_id": "oss-ak",
                    "access_key_secret": secret,
                    "region": "cn-hangzhou",
                    "endpoint": server.endpoint,
                    "bucket_name": "ckpt-oss",
                },
            },
        )
        hook = get_checkpoint_hook(conn_id, "checkpoint:\n  storage:\n    plugin-config:\n      namespace: /ckpt/\n")
        assert isinstance(hook, OssCheckpointHook)
        assert_masked(secret)
        exercise(hook)

        wrong = connection(
            monkeypatch,
            {
                "conn_type": "oss",
                "extra": {
                    "access_key_id": "oss-ak",
                    "access_key_secret": "wrong-" + secret,
                    "endpoint": server.endpoint,
                    "bucket_name": "ckpt-oss",
                },
            },
        )
        ok, message = get_checkpoint_hook(wrong).test_connection()
    assert not ok and "SignatureDoesNotMatch" in message and secret not in message


def test_oss_connection_reads_the_alibaba_providers_fields(monkeypatch):
    # the Alibaba provider's OSSHook: schema is the default bucket, auth_type "AK" only
    conn_id = connection(
        monkeypatch,
        {
            "conn_type": "oss",
            "schema": "ckpt-from-schema",
            "extra": {
                "auth_type": "AK",
                "access_key_id": "ak",
                "access_key_secret": "sk-56789",
                "region": "cn-hangzhou",
            },
        },
    )
    assert get_checkpoint_hook(conn_id).config.storage.plugin_config["oss.bucket"] == "ckpt-from-schema"
    sts = connection(monkeypatch, {"conn_type": "oss", "extra": {"auth_type": "STS", "region": "cn-hangzhou"}})
    with pytest.raises(ConfigError, match=r"extra\.auth_type: 'STS' is not supported"):
        get_checkpoint_hook(sts, {"checkpoint": {"storage": {"plugin-config": {"oss.bucket": "b-1"}}}}).config  # noqa: B018 - reading it raises


def test_oss_endpoint_defaults_from_the_region(monkeypatch):
    conn_id = connection(
        monkeypatch, {"conn_type": "oss", "login": "ak", "password": "sk-12345", "extra": {"region": "cn-shanghai"}}
    )
    plugin = get_checkpoint_hook(
        conn_id, {"checkpoint": {"storage": {"plugin-config": {"oss.bucket": "b-1"}}}}
    ).config.storage.plugin_config
    assert plugin["fs.oss.endpoint"] == "https://oss-cn-shanghai.aliyuncs.com"


# ---- HDFS (WebHDFS) ----------------------------------------------------------------------------------
def test_webhdfs_hook_on_a_webhdfs_connection(monkeypatch):
    from tests.servers.webhdfs import WebHdfsServer

    with WebHdfsServer(required_user="etl") as server:
        conn_id = connection(
            monkeypatch, {"conn_type": "webhdfs", "host": "127.0.0.1", "port": server.port, "login": "etl"}
        )
        hook = get_checkpoint_hook(conn_id, "checkpoint:\n  storage:\n    plugin-config:\n      namespace: /ckpt/\n")
        assert isinstance(hook, WebHdfsCheckpointHook)
        exercise(hook)
        assert {r.query.get("user.name") for r in server.requests(role="namenode")} == {"etl"}


def test_webhdfs_hook_fails_over_between_the_hosts_of_an_ha_connection(monkeypatch):
    from tests.servers.webhdfs import Namespace, WebHdfsServer

    shared = Namespace()
    with WebHdfsServer(namespace=shared, standby=True) as nn1, WebHdfsServer(namespace=shared) as nn2:
        conn_id = connection(
            monkeypatch, {"conn_type": "webhdfs", "host": f"127.0.0.1:{nn1.port},127.0.0.1:{nn2.port}"}
        )
        hook = get_checkpoint_hook(conn_id, "checkpoint:\n  storage:\n    plugin-config:\n      namespace: /ckpt/\n")
        assert hook.storage.fs.urls == [nn1.url, nn2.url]
        exercise(hook)
        assert nn1.requests(role="namenode"), "the standby name node was never tried"


def test_webhdfs_connection_maps_kerberos_extras(monkeypatch, tmp_path):
    keytab = tmp_path / "etl.keytab"
    keytab.write_bytes(b"\x05\x02")
    conn_id = connection(
        monkeypatch,
        {
            "conn_type": "webhdfs",
            "host": "nn1.example,nn2.example",
            "port": 9871,
            "extra": {"use_ssl": True, "kerberos_principal": "etl@EXAMPLE.COM", "kerberos_keytab": str(keytab)},
        },
    )
    plugin = get_checkpoint_hook(conn_id).config.storage.plugin_config
    assert plugin["webhdfs.url"] == "https://nn1.example:9871;https://nn2.example:9871"
    assert (plugin["kerberosPrincipal"], plugin["kerberosKeytab"]) == ("etl@EXAMPLE.COM", str(keytab))
    assert plugin["fs.defaultFS"] == "hdfs://nn1.example"


@pytest.mark.parametrize(
    ("fields", "key"),
    [
        ({"password": "pw-basic"}, "password"),
        ({"schema": "gateway/default"}, "schema"),
        ({"extra": {"use_ssl": True, "verify": "/etc/ca.pem"}}, "extra.verify"),
        ({"extra": {"cert": "/c.pem"}}, "extra.cert"),
    ],
)
def test_webhdfs_settings_the_storage_client_cannot_honour_are_refused_by_name(monkeypatch, fields, key):
    conn_id = connection(monkeypatch, {"conn_type": "webhdfs", "host": "nn1.example", **fields})
    with pytest.raises(ConfigError) as raised:
        get_checkpoint_hook(conn_id).config  # noqa: B018 - reading it raises
    assert f"{conn_id!r}.{key}: is not supported" in str(raised.value) and "pw-basic" not in str(raised.value)


# ---- local disk, the provider's own type, and the rules -----------------------------------------------
def test_local_hook_on_an_fs_connection(monkeypatch, tmp_path):
    conn_id = connection(monkeypatch, {"conn_type": "fs", "extra": {"path": str(tmp_path / "ckpt")}})
    hook = get_checkpoint_hook(conn_id)
    assert isinstance(hook, LocalCheckpointHook)
    exercise(hook)
    assert not (tmp_path / "ckpt" / JOB).exists()  # exercise() deleted the job


def test_local_connection_test_checks_the_namespace_on_this_host(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    ok, message = get_checkpoint_hook(
        connection(monkeypatch, {"conn_type": "fs", "extra": {"path": str(blocker / "ckpt")}})
    ).test_connection()
    assert not ok and f"{blocker} is not a writable directory" in message and "not the workers" in message
    ok, message = get_checkpoint_hook(
        connection(monkeypatch, {"conn_type": "fs", "extra": {"path": str(blocker)}})
    ).test_connection()
    assert not ok and "exists but is not a directory" in message
    ok, message = get_checkpoint_hook(
        connection(monkeypatch, {"conn_type": "fs", "extra": {"path": str(tmp_path / "new")}})
    ).test_connection()
    assert ok and "does not exist yet" in message and not (tmp_path / "new").exists()
    (tmp_path / "there").mkdir()
    ok, message = get_checkpoint_hook(
        connection(monkeypatch, {"conn_type": "fs", "extra": {"path": str(tmp_path / "there")}})
    ).test_connection()
    assert ok and "probe document" in message and list((tmp_path / "there").iterdir()) == []


def test_config_file_alone(tmp_path):
    config = tmp_path / "seatunnel.yaml"
    config.write_text(
        f"seatunnel:\n  engine:\n    checkpoint:\n      storage:\n        type: hdfs\n        plugin-config:\n"
        f"          fs.defaultFS: file:///\n          namespace: {tmp_path}/ckpt/\n"
    )
    hook = get_checkpoint_hook(config_file=str(config))
    assert type(hook) is CheckpointStorageHook
    exercise(hook)


def test_seatunnel_connection_carries_a_whole_plugin_config(monkeypatch, s3_server):
    bucket = s3_server.create_bucket(f"ckpt-{uuid.uuid4().hex[:10]}")
    secret = f"st-secret-{uuid.uuid4().hex}"
    plugin_config = {
        "storage.type": "s3",
        "s3.bucket": f"s3a://{bucket}",
        "fs.s3a.endpoint": s3_server.endpoint_url,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": "us-east-1",
    }
    conn_id = connection(
        monkeypatch,
        {
            "conn_type": "seatunnel_checkpoint",
            "login": "AKIAST",
            "password": secret,
            "extra": {"plugin_config": json.dumps(plugin_config), "namespace": "/st/"},
        },
    )
    hook = get_checkpoint_hook(conn_id)
    assert isinstance(hook, SeaTunnelCheckpointHook)
    plugin = hook.config.storage.plugin_config
    assert (plugin["fs.s3a.access.key"], plugin["fs.s3a.secret.key"], plugin["namespace"]) == ("AKIAST", secret, "/st/")
    assert_masked(secret)
    exercise(hook)


def test_a_file_for_another_backend_is_refused(monkeypatch):
    conn_id = connection(monkeypatch, {"conn_type": "aws", "login": "a", "password": "secret-b"})
    file = "checkpoint:\n  storage:\n    plugin-config:\n      storage.type: oss\n      oss.bucket: b-1\n"
    with pytest.raises(ConfigError, match="selects 'oss' storage but connection .* is for 's3' storage"):
        get_checkpoint_hook(conn_id, file).config  # noqa: B018 - reading it raises


def test_unsupported_connection_type_is_a_config_error_naming_the_supported_ones(monkeypatch):
    conn_id = connection(monkeypatch, {"conn_type": "postgres", "host": "db", "password": "pg-secret-1"})
    with pytest.raises(UnsupportedConnectionType) as raised:
        get_checkpoint_hook(conn_id)
    assert isinstance(raised.value, ConfigError)  # what operators turn into AirflowFailException
    assert "'postgres'" in str(raised.value) and "pg-secret-1" not in str(raised.value)
    assert "aws, fs, oss, seatunnel_checkpoint, seatunnel_checkpoint_aws, seatunnel_checkpoint_fs" in str(raised.value)


@pytest.mark.parametrize(
    ("conn_type", "hook_class"),
    [
        ("seatunnel_checkpoint_aws", SeaTunnelS3CheckpointHook),
        ("seatunnel_checkpoint_fs", SeaTunnelLocalCheckpointHook),
        ("seatunnel_checkpoint_oss", SeaTunnelOssCheckpointHook),
        ("seatunnel_checkpoint_webhdfs", SeaTunnelWebHdfsCheckpointHook),
    ],
)
def test_our_connection_types_read_the_fields_of_the_standard_ones(monkeypatch, conn_type, hook_class):
    standard = conn_type.rsplit("_", 1)[1]
    fields = {
        "aws": {"login": "AKIA1", "password": "sk-aws-1", "extra": {"region_name": "eu-west-1", "bucket_name": "b-1"}},
        "fs": {"extra": {"path": "/tmp/ckpt-x"}},
        "oss": {
            "schema": "b-1",
            "extra": {
                "auth_type": "AK",
                "access_key_id": "ak",
                "access_key_secret": "sk-oss-1",
                "region": "cn-hangzhou",
            },
        },
        "webhdfs": {"host": "nn1.example", "login": "etl"},
    }[standard]
    ours = get_checkpoint_hook(connection(monkeypatch, {"conn_type": conn_type, **fields}))
    theirs = get_checkpoint_hook(connection(monkeypatch, {"conn_type": standard, **fields}))
    assert type(ours) is hook_class and isinstance(ours, type(theirs))
    assert ours.config.storage.plugin_config == theirs.config.storage.plugin_config


def test_errors_name_the_key_and_the_sources(monkeypatch):
    conn_id = connection(monkeypatch, {"conn_type": "aws", "login": "a", "password": "secret-c"})
    with pytest.raises(ConfigError) as raised:
        get_checkpoint_hook(conn_id, "checkpoint:\n  interval: 1000\n").config  # noqa: B018 - reading it raises
    assert "s3.bucket" in str(raised.value) and f"connection {conn_id!r}" in str(raised.value)
    assert "secret-c" not in str(raised.value)
