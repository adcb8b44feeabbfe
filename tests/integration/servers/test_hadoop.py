"""The Hadoop mini clusters (tests/servers/hadoop.py) are real and usable from Python."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
from hdfs import InsecureClient

from tests.servers import spnego


def _path() -> str:
    return f"/smoke/{uuid.uuid4().hex[:8]}"


def test_webhdfs_create_read_list(hdfs_cluster: Any) -> None:
    client = InsecureClient(hdfs_cluster.webhdfs_url, user="tester")
    base = _path()
    client.write(f"{base}/a.txt", data=b"hello hdfs")
    client.write(f"{base}/b.txt", data=b"x" * 100_000)
    with client.read(f"{base}/a.txt") as reader:
        assert reader.read() == b"hello hdfs"
    assert client.list(base) == ["a.txt", "b.txt"]
    status = client.status(f"{base}/b.txt")
    assert (status["length"], status["owner"], status["type"]) == (100_000, "tester", "FILE")
    # plain HTTP: the NameNode's own answer, not a client library's idea of it
    answer = requests.get(
        f"{hdfs_cluster.webhdfs_url}/webhdfs/v1{base}",
        params={"op": "GETCONTENTSUMMARY", "user.name": "tester"},
        timeout=30,
    )
    assert answer.json()["ContentSummary"]["length"] == 100_010


def test_ha_cluster_answers_through_the_active_namenode(hdfs_ha_cluster: Any) -> None:
    cluster = hdfs_ha_cluster
    assert [nn["state"] for nn in cluster.namenodes] == ["active", "standby"]
    standby = requests.get(
        f"{cluster.webhdfs_urls[1]}/webhdfs/v1/", params={"op": "LISTSTATUS", "user.name": "tester"}, timeout=30
    )
    assert standby.status_code == 403
    assert standby.json()["RemoteException"]["exception"] == "StandbyException"
    base = _path()
    InsecureClient(cluster.webhdfs_url, user="tester").write(f"{base}/before", data=b"1")
    cluster.failover()
    try:
        assert [nn["state"] for nn in cluster.namenodes] == ["standby", "active"]
        # a client must follow the active NameNode: a CREATE sent to the standby one is
        # redirected all the same, and fails at the DataNode (StandbyException)
        client = InsecureClient(cluster.webhdfs_url, user="tester")
        assert cluster.webhdfs_url == cluster.webhdfs_urls[1]
        client.write(f"{base}/after", data=b"2")
        assert sorted(client.list(base)) == ["after", "before"]
        with client.read(f"{base}/before") as reader:
            assert reader.read() == b"1"
        old_active = requests.get(
            f"{cluster.webhdfs_urls[0]}/webhdfs/v1/", params={"op": "LISTSTATUS", "user.name": "tester"}, timeout=30
        )
        assert old_active.status_code == 403
    finally:
        cluster.failover()  # nn1 active again for the tests after this one
    assert cluster.active_namenode["id"] == "nn1"


def test_kerberos_cluster_refuses_unauthenticated_requests(hdfs_kerberos_cluster: Any) -> None:
    url = f"{hdfs_kerberos_cluster.webhdfs_url}/webhdfs/v1/"
    answer = requests.get(url, params={"op": "LISTSTATUS", "user.name": "hdfs"}, timeout=30)
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == "Negotiate"


@pytest.mark.skipif(not spnego.available(), reason="no MIT GSSAPI library (libgssapi_krb5.so.2) on this machine")
def test_kerberos_cluster_accepts_a_kinit_ticket(hdfs_kerberos_cluster: Any, tmp_path: Path) -> None:
    cluster = hdfs_kerberos_cluster
    krb = cluster.kerberos
    ccache = cluster.kinit(tmp_path / "ccache")
    # the SPNEGO principal is HTTP/localhost: address the NameNode by that name
    base_url = f"http://localhost:{cluster.active_namenode['http_port']}/webhdfs/v1"

    def negotiate() -> dict[str, str]:
        return {
            "Authorization": "Negotiate "
            + spnego.negotiate_token("localhost", ccache=ccache, krb5_conf=krb["krb5_conf"])
        }

    listing = requests.get(f"{base_url}/", params={"op": "LISTSTATUS"}, headers=negotiate(), timeout=30)
    assert listing.status_code == 200, listing.text
    assert "hadoop.auth" in listing.cookies
    # a write: the NameNode redirects to the DataNode with a delegation token in the URL
    path = _path()
    redirect = requests.put(
        f"{base_url}{path}", params={"op": "CREATE"}, headers=negotiate(), allow_redirects=False, timeout=30
    )
    assert redirect.status_code == 307, redirect.text
    assert "delegation=" in redirect.headers["Location"]
    created = requests.put(redirect.headers["Location"], data=b"secured bytes", timeout=30)
    assert created.status_code == 201, created.text
    status = requests.get(f"{base_url}{path}", params={"op": "GETFILESTATUS"}, headers=negotiate(), timeout=30)
    assert status.json()["FileStatus"]["owner"] == "client"  # the ticket's principal, mapped
    read = requests.get(f"{base_url}{path}", params={"op": "OPEN"}, headers=negotiate(), timeout=30)
    assert read.content == b"secured bytes"


def test_yarn_resource_manager_lists_its_node(yarn_cluster: Any) -> None:
    info = requests.get(f"{yarn_cluster.rm_webapp_url}/ws/v1/cluster/info", timeout=30).json()["clusterInfo"]
    assert (info["state"], info["haState"]) == ("STARTED", "ACTIVE")
    assert info["hadoopVersion"] == "3.5.0"
    nodes = requests.get(f"{yarn_cluster.rm_webapp_url}/ws/v1/cluster/nodes", timeout=30).json()["nodes"]["node"]
    assert [node["state"] for node in nodes] == ["RUNNING"]
    # the conf dir a YARN client (spark-submit --master yarn) would point HADOOP_CONF_DIR at
    yarn_site = (Path(yarn_cluster.conf_dir) / "yarn-site.xml").read_text()
    assert yarn_cluster.yarn["rm_address"] in yarn_site
    assert yarn_cluster.fs_default in (Path(yarn_cluster.conf_dir) / "core-site.xml").read_text()
