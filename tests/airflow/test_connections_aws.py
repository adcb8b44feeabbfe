"""``aws`` connections read through the Amazon provider's session factory, against moto's
server with IAM enforcement on: a role's credentials, a profile's, and what the Spark job
is handed. moto checks every signature and policy here, so a write that succeeds was made
with credentials that are allowed to make it."""

from __future__ import annotations

import json
import urllib.request
import uuid

import pytest

from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.hooks import S3CheckpointHook, get_checkpoint_hook
from airflow_provider_seatunnel_ckpt.storage import PipelineState, create_storage
from tests.support.airflow_hooks import JOB, assert_masked, connection, exercise

pytest.importorskip("airflow.providers.amazon", reason="apache-airflow-providers-amazon is in the test extra")

CONFIG = "checkpoint:\n  storage:\n    plugin-config:\n      namespace: /ckpt/\n"
S3_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
ASSUME_ONLY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}]}


def _moto_auth(server, count: str) -> None:
    """moto's own switch (``/moto-api/reset-auth``): IAM checks from the next request on."""
    request = urllib.request.Request(
        f"{server.direct_url}/moto-api/reset-auth",
        data=count.encode(),
        method="POST",
        headers={"Content-Type": "text/plain"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


@pytest.fixture(scope="module")
def iam(s3_server):
    """A user that may only assume a role, the role (S3 allowed), a user whose keys sit in an
    AWS profile (S3 allowed), and a bucket; then moto enforces IAM until the module ends."""
    iam_client = s3_server.client("iam")
    suffix = uuid.uuid4().hex[:8]
    base = f"ckpt-base-{suffix}"
    iam_client.create_user(UserName=base)
    iam_client.put_user_policy(UserName=base, PolicyName="assume", PolicyDocument=json.dumps(ASSUME_ONLY))
    base_key = iam_client.create_access_key(UserName=base)["AccessKey"]
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
    }
    role = iam_client.create_role(RoleName=f"ckpt-writer-{suffix}", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    iam_client.put_role_policy(RoleName=role["RoleName"], PolicyName="s3", PolicyDocument=json.dumps(S3_ALL))
    profile_user = f"ckpt-profile-{suffix}"
    iam_client.create_user(UserName=profile_user)
    iam_client.put_user_policy(UserName=profile_user, PolicyName="s3", PolicyDocument=json.dumps(S3_ALL))
    profile_key = iam_client.create_access_key(UserName=profile_user)["AccessKey"]
    bucket = s3_server.create_bucket(f"ckpt-iam-{suffix}")
    _moto_auth(s3_server, "0")
    try:
        yield {"base": base_key, "role_arn": role["Arn"], "profile": profile_key, "bucket": bucket}
    finally:
        _moto_auth(s3_server, "inf")


def _role_connection(monkeypatch, s3_server, iam, **extra) -> str:
    return connection(
        monkeypatch,
        {
            "conn_type": "aws",
            "login": iam["base"]["AccessKeyId"],
            "password": iam["base"]["SecretAccessKey"],
            "extra": {
                "region_name": "us-east-1",
                "endpoint_url": s3_server.endpoint_url,
                # the provider never sends AssumeRole to the global endpoint_url
                "service_config": {"sts": {"endpoint_url": s3_server.direct_url}, "s3": {"bucket_name": iam["bucket"]}},
                **extra,
            },
        },
    )


def test_a_role_arn_connection_writes_checkpoints_through_the_assumed_role(monkeypatch, s3_server, iam):
    base_only = _role_connection(monkeypatch, s3_server, iam)
    ok, message = get_checkpoint_hook(base_only, CONFIG).test_connection()
    assert not ok and "AccessDenied" in message  # the base user may not touch S3 itself

    conn_id = _role_connection(
        monkeypatch, s3_server, iam, role_arn=iam["role_arn"], assume_role_kwargs={"RoleSessionName": "ckpt-test"}
    )
    hook = get_checkpoint_hook(conn_id, CONFIG)
    assert isinstance(hook, S3CheckpointHook) and hook.uses_provider_session
    assert hook.aws_session.get_credentials().method == "sts-assume-role"
    exercise(hook)  # every operation, signed with the role's refreshable credentials
    hook.get_conn().store_checkpoint(PipelineState(job_id=JOB, pipeline_id=1, checkpoint_id=7, states=b"x"))

    # what the Spark job gets: that moment's role credentials, enough on their own
    document = hook.effective_config_document()
    plugin = document["seatunnel"]["engine"]["checkpoint"]["storage"]["plugin-config"]
    assert plugin["fs.s3a.access.key"] != iam["base"]["AccessKeyId"] and plugin["fs.s3a.session.token"]
    assert plugin["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert_masked(plugin["fs.s3a.secret.key"], plugin["fs.s3a.session.token"])
    spark_side = create_storage(load_config(document))
    assert spark_side.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).checkpoint_id == 7
    spark_side.delete_checkpoint(JOB)

    for secret in (iam["base"]["SecretAccessKey"], plugin["fs.s3a.secret.key"], plugin["fs.s3a.session.token"]):
        assert secret not in json.dumps(hook.config.masked()) and secret not in repr(hook.storage)


def test_assumed_role_credentials_refresh_through_sts(monkeypatch, s3_server, iam):
    # 900 s, the shortest role session, is inside botocore's 15-minute refresh window: every
    # use of the credentials assumes the role again, as a long-lived hook does near expiry
    conn_id = _role_connection(
        monkeypatch, s3_server, iam, role_arn=iam["role_arn"], assume_role_kwargs={"DurationSeconds": 900}
    )
    hook = get_checkpoint_hook(conn_id, CONFIG)
    credentials = hook.aws_session.get_credentials()
    first = credentials.get_frozen_credentials().access_key
    ok, message = hook.test_connection()
    assert ok, message
    assert credentials.get_frozen_credentials().access_key != first


def test_a_profile_name_connection_uses_the_profile_from_the_aws_config_file(monkeypatch, tmp_path, s3_server, iam):
    config = tmp_path / "aws-config"
    config.write_text(
        "[profile ckpt]\n"
        f"aws_access_key_id = {iam['profile']['AccessKeyId']}\n"
        f"aws_secret_access_key = {iam['profile']['SecretAccessKey']}\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    conn_id = connection(
        monkeypatch,
        {
            "conn_type": "aws",
            "extra": {
                "profile_name": "ckpt",
                "region_name": "us-east-1",
                "endpoint_url": s3_server.endpoint_url,
                "bucket_name": iam["bucket"],
            },
        },
    )
    hook = get_checkpoint_hook(conn_id, CONFIG)
    exercise(hook)  # moto accepts only the profile user's keys for S3
    plugin = hook.effective_config_document()["seatunnel"]["engine"]["checkpoint"]["storage"]["plugin-config"]
    assert plugin["fs.s3a.access.key"] == iam["profile"]["AccessKeyId"]
    assert plugin["fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    assert_masked(iam["profile"]["SecretAccessKey"])


def test_a_wrong_secret_fails_the_connection_test_without_echoing_it(monkeypatch, s3_server, iam):
    secret = "wrong-" + uuid.uuid4().hex
    conn_id = connection(
        monkeypatch,
        {
            "conn_type": "aws",
            "login": iam["profile"]["AccessKeyId"],
            "password": secret,
            "extra": {"region_name": "us-east-1", "endpoint_url": s3_server.endpoint_url, "bucket_name": iam["bucket"]},
        },
    )
    ok, message = get_checkpoint_hook(conn_id, CONFIG).test_connection()
    assert not ok and "SignatureDoesNotMatch" in message and secret not in message
