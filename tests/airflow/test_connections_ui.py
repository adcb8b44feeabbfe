"""The checkpoint-storage check as the UI reaches it: the connection types Airflow's
ProvidersManager registers for this provider (the API server's and the workers'), and
the API server's real ``POST /api/v2/connections/test`` route, in process, against the
loopback storage servers."""

from __future__ import annotations

import json
import uuid

import pytest

from airflow_provider_seatunnel_ckpt import PACKAGE_NAME

OUR_TYPES = {
    "seatunnel_checkpoint": "airflow_provider_seatunnel_ckpt.hooks.seatunnel.SeaTunnelCheckpointHook",
    "seatunnel_checkpoint_aws": "airflow_provider_seatunnel_ckpt.hooks.s3.SeaTunnelS3CheckpointHook",
    "seatunnel_checkpoint_webhdfs": "airflow_provider_seatunnel_ckpt.hooks.webhdfs.SeaTunnelWebHdfsCheckpointHook",
    "seatunnel_checkpoint_oss": "airflow_provider_seatunnel_ckpt.hooks.oss.SeaTunnelOssCheckpointHook",
    "seatunnel_checkpoint_fs": "airflow_provider_seatunnel_ckpt.hooks.local.SeaTunnelLocalCheckpointHook",
}


def test_every_storage_connection_type_is_registered_for_the_ui_test_and_no_other_providers_type_is_taken():
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    for manager in (ProvidersManager(), ProvidersManagerTaskRuntime()):  # API server, worker (queued tests)
        for conn_type, hook_class in OUR_TYPES.items():
            info = manager.hooks[conn_type]
            assert (info.hook_class_name, info.package_name, info.connection_testable) == (
                hook_class,
                PACKAGE_NAME,
                True,
            )
            assert info.connection_id_attribute_name == "storage_conn_id"
        for standard in ("aws", "fs", "webhdfs", "oss"):  # still their own providers' (when installed)
            info = manager.hooks.get(standard)
            assert info is None or info.package_name != PACKAGE_NAME


def test_the_storage_type_choice_offers_the_storage_types_and_no_null_and_the_provider_info_validates():
    """The form field as the API server serves it to the UI: an enum of the four storage
    types, without a literal null choice; the provider info as Airflow's schema checks it."""
    import jsonschema
    from airflow.providers_manager import ProvidersManager, _create_provider_info_schema_validator

    from airflow_provider_seatunnel_ckpt import get_provider_info

    _create_provider_info_schema_validator().validate(get_provider_info())
    widgets = ProvidersManager().connection_form_widgets
    schema = widgets["extra__seatunnel_checkpoint__storage_type"].field["schema"]
    assert schema["enum"] == ["local", "hdfs", "s3", "oss"]
    for name, widget in widgets.items():
        if widget.package_name == PACKAGE_NAME:
            jsonschema.Draft7Validator.check_schema(widget.field["schema"])
            assert None not in widget.field["schema"].get("enum", []), name


@pytest.fixture(scope="module")
def api(airflow_db):
    """The API server app (core API) with connection testing enabled, as an admin."""
    import os

    from fastapi.testclient import TestClient

    settings = {
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__API_AUTH__JWT_SECRET": uuid.uuid4().hex * 2,  # 64 bytes, as HS512 wants
    }
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        from airflow.api_fastapi.app import create_app

        with TestClient(create_app("core")) as client:
            token = client.get("/auth/token").json()["access_token"]
            client.headers["Authorization"] = f"Bearer {token}"
            yield client
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def ui_test(api, conn_type: str, **fields) -> tuple[bool, str]:
    body = {"connection_id": f"ui_{uuid.uuid4().hex[:8]}", "conn_type": conn_type, **fields}
    if isinstance(body.get("extra"), dict):
        body["extra"] = json.dumps(body["extra"])
    response = api.post("/api/v2/connections/test", json=body)
    assert response.status_code == 200, response.text
    return response.json()["status"], response.json()["message"]


def test_the_ui_test_of_an_s3_checkpoint_connection_runs_the_storage_check(api, s3_server):
    bucket = s3_server.create_bucket(f"ckpt-ui-{uuid.uuid4().hex[:8]}")
    fields = {
        "login": s3_server.access_key_id,
        "password": s3_server.secret_access_key,
        "extra": {"region_name": "us-east-1", "endpoint_url": s3_server.endpoint_url, "bucket_name": bucket},
    }
    ok, message = ui_test(api, "seatunnel_checkpoint_aws", **fields)
    assert ok and f"probe document in s3://{bucket}/" in message, message
    ok, message = ui_test(
        api, "seatunnel_checkpoint_aws", **{**fields, "extra": {**fields["extra"], "bucket_name": "no-such-bucket-x1"}}
    )
    assert not ok and "NoSuchBucket" in message, message
    _, message = ui_test(api, "aws", **fields)
    assert "probe" not in message  # an aws connection's Test is the Amazon provider's (STS)


def test_the_ui_test_of_an_hdfs_checkpoint_connection_runs_the_storage_check(api):
    from tests.servers.webhdfs import WebHdfsServer

    with WebHdfsServer(required_user="etl") as server:
        fields = {"host": "127.0.0.1", "port": server.port, "login": "etl", "extra": {"namespace": "/ckpt/"}}
        ok, message = ui_test(api, "seatunnel_checkpoint_webhdfs", **fields)
        assert ok and "probe document in webhdfs://" in message, message
        ok, message = ui_test(api, "seatunnel_checkpoint_webhdfs", **{**fields, "login": "intruder"})
        assert not ok, message


def test_the_ui_test_of_a_local_checkpoint_connection_says_which_host_it_checked(api, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    ok, message = ui_test(api, "seatunnel_checkpoint_fs", extra={"path": str(blocker / "ckpt")})
    assert not ok and "cannot be created" in message and "API server" in message, message
    ok, message = ui_test(api, "seatunnel_checkpoint_fs", extra={"path": str(tmp_path / "new" / "ckpt")})
    assert ok and "does not exist yet" in message and "not the workers" in message, message
    assert not (tmp_path / "new").exists()  # a test creates nothing on the API server
