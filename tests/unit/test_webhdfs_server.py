"""The in-memory WebHDFS server, driven by the real ``hdfs`` client and by raw HTTP.

If the server drifts from the protocol, the WebHDFS backend's tests prove nothing, so
these pin the behaviour the spec describes: the two-step redirects to a separate data
node, the FileSystem.rename rules, the RemoteException error format, HA standby answers.
"""

from __future__ import annotations

import socket
import threading
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from hdfs import InsecureClient
from hdfs.util import HdfsError

from tests.servers.webhdfs import Namespace, WebHdfsServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def srv():
    with WebHdfsServer() as server:
        yield server


@pytest.fixture
def client(srv):
    return InsecureClient(srv.url, user="alice")


def raw(srv, method, path, **params):
    params.setdefault("user.name", "alice")
    return requests.request(method, f"{srv.url}/webhdfs/v1{path}", params=params, allow_redirects=False, timeout=10)


def read_all(client, path, **kwargs):
    with client.read(path, **kwargs) as reader:
        return reader.read()


# ---- CREATE / OPEN / APPEND and the redirect dance ---------------------------------------
def test_create_redirects_to_a_separate_datanode_port(srv, client):
    client.write("/d/f.bin", data=b"payload")

    nn_create, dn_create = srv.requests(op="CREATE")
    assert (nn_create.role, nn_create.method, nn_create.status) == ("namenode", "PUT", 307)
    assert (dn_create.role, dn_create.method, dn_create.status) == ("datanode", "PUT", 201)
    assert nn_create.port == srv.port
    assert dn_create.port == srv.datanode_port != srv.port
    assert dn_create.query["user.name"] == "alice"
    assert srv.namespace.files() == {"/d/f.bin": b"payload"}


def test_create_location_header_carries_the_query(srv):
    res = raw(srv, "PUT", "/x/y", op="CREATE", overwrite="true", replication="2")
    assert res.status_code == 307
    loc = urlsplit(res.headers["Location"])
    assert loc.port == srv.datanode_port
    assert loc.path == "/webhdfs/v1/x/y"
    query = parse_qs(loc.query)
    assert query["op"] == ["CREATE"]
    assert query["overwrite"] == ["true"]
    assert query["replication"] == ["2"]
    assert query["user.name"] == ["alice"]
    # the name node step alone creates nothing
    assert srv.namespace.lookup("/x/y") is None
    done = requests.put(res.headers["Location"], data=b"abc", timeout=10)
    assert done.status_code == 201
    assert srv.namespace.files() == {"/x/y": b"abc"}


def test_create_makes_parents_and_sets_owner(client, srv):
    client.write("/a/b/c/file", data=b"1")
    status = client.status("/a/b")
    assert status["type"] == "DIRECTORY"
    assert client.status("/a/b/c/file")["owner"] == "alice"


def test_overwrite_false_conflicts_and_true_replaces(client, srv):
    client.write("/f", data=b"old")
    with pytest.raises(HdfsError) as info:
        client.write("/f", data=b"new", overwrite=False)
    assert info.value.exception == "FileAlreadyExistsException"
    dn = srv.requests(role="datanode", op="CREATE")[-1]
    assert dn.status == 403  # checked where a real cluster checks it: on the data node
    assert read_all(client, "/f") == b"old"

    client.write("/f", data=b"new", overwrite=True)
    assert read_all(client, "/f") == b"new"


def test_create_over_a_directory_fails(client):
    client.makedirs("/dir")
    with pytest.raises(HdfsError) as info:
        client.write("/dir", data=b"x", overwrite=True)
    assert info.value.exception == "FileAlreadyExistsException"


def test_create_under_a_file_fails_with_parent_not_directory(client):
    client.write("/file", data=b"x")
    with pytest.raises(HdfsError) as info:
        client.write("/file/child", data=b"y")
    assert info.value.exception == "ParentNotDirectoryException"


def test_append(client, srv):
    client.write("/log", data=b"one,")
    client.write("/log", data=b"two", append=True)
    assert read_all(client, "/log") == b"one,two"
    appends = srv.requests(op="APPEND")
    assert [(r.role, r.method, r.status) for r in appends] == [
        ("namenode", "POST", 307),
        ("datanode", "POST", 200),
    ]
    with pytest.raises(HdfsError) as info:
        client.write("/missing", data=b"x", append=True)
    assert info.value.exception == "FileNotFoundException"


def test_open_honours_offset_and_length(client, srv):
    client.write("/data", data=b"0123456789")
    assert read_all(client, "/data", offset=3) == b"3456789"
    assert read_all(client, "/data", offset=2, length=4) == b"2345"
    assert read_all(client, "/data", offset=8, length=100) == b"89"
    assert read_all(client, "/data", offset=10) == b""
    opens = srv.requests(op="OPEN")
    assert {r.role for r in opens} == {"namenode", "datanode"}
    assert all(r.status == 307 for r in opens if r.role == "namenode")


def test_open_errors(client, srv):
    client.write("/data", data=b"abc")
    with pytest.raises(HdfsError) as info:
        read_all(client, "/data", offset=4)
    assert info.value.exception == "IOException"
    res = raw(srv, "GET", "/data", op="OPEN", offset="-1")
    assert res.status_code == 400
    assert res.json()["RemoteException"]["exception"] == "IllegalArgumentException"
    res = raw(srv, "GET", "/nope", op="OPEN")
    assert res.status_code == 404  # the name node answers, no redirect
    client.makedirs("/dir")
    res = raw(srv, "GET", "/dir", op="OPEN")
    assert res.status_code == 404
    assert "not a file" in res.json()["RemoteException"]["message"]


def test_streamed_upload_is_visible_while_it_grows(client, srv):
    """As on HDFS, a file being written shows a prefix: why writers need temp+rename."""
    first_sent = threading.Event()
    release = threading.Event()

    def body():
        yield b"x" * 1000
        first_sent.set()
        release.wait(10)
        yield b"y" * 1000

    writer = threading.Thread(target=lambda: client.write("/growing", data=body()))
    writer.start()
    try:
        assert first_sent.wait(10)
        seen = None
        for _ in range(200):
            node = srv.namespace.lookup("/growing")
            if node is not None and len(node.data) == 1000:
                seen = InsecureClient(srv.url, user="bob").status("/growing")["length"]
                break
            threading.Event().wait(0.01)
        assert seen == 1000
    finally:
        release.set()
        writer.join(10)
    assert read_all(client, "/growing") == b"x" * 1000 + b"y" * 1000


# ---- RENAME ---------------------------------------------------------------------------
def test_rename_to_a_new_name(client):
    client.write("/a/f", data=b"1")
    client.rename("/a/f", "/a/g")
    assert client.list("/a") == ["g"]


def test_rename_returns_false_for_missing_source_existing_target_missing_parent(client, srv):
    client.write("/f", data=b"1")
    client.write("/g", data=b"2")
    assert raw(srv, "PUT", "/missing", op="RENAME", destination="/h").json() == {"boolean": False}
    assert raw(srv, "PUT", "/f", op="RENAME", destination="/g").json() == {"boolean": False}
    assert raw(srv, "PUT", "/f", op="RENAME", destination="/no/parent").json() == {"boolean": False}
    assert srv.namespace.files() == {"/f": b"1", "/g": b"2"}
    with pytest.raises(HdfsError, match="Unable to rename"):
        client.rename("/f", "/g")


def test_rename_onto_an_existing_directory_moves_into_it(client, srv):
    client.write("/f", data=b"1")
    client.makedirs("/dir")
    client.rename("/f", "/dir")
    assert srv.namespace.files() == {"/dir/f": b"1"}
    # ... unless the directory already has an entry of that name
    client.write("/f", data=b"2")
    assert raw(srv, "PUT", "/f", op="RENAME", destination="/dir").json() == {"boolean": False}


def test_rename_a_directory_into_itself_is_refused(client, srv):
    client.makedirs("/d/sub")
    assert raw(srv, "PUT", "/d", op="RENAME", destination="/d/sub/x").json() == {"boolean": False}
    client.rename("/d", "/e")
    assert client.status("/e/sub")["type"] == "DIRECTORY"


def test_rename_requires_an_absolute_destination(srv):
    srv.namespace.put("/f", b"1")
    res = raw(srv, "PUT", "/f", op="RENAME", destination="relative")
    assert res.status_code == 400
    assert res.json()["RemoteException"]["exception"] == "IllegalArgumentException"


def test_rename_with_overwrite_option_replaces_atomically(srv):
    srv.namespace.put("/tmp1", b"new")
    srv.namespace.put("/target", b"old")
    res = raw(srv, "PUT", "/tmp1", op="RENAME", destination="/target", renameoptions="OVERWRITE")
    assert res.status_code == 200
    assert srv.namespace.files() == {"/target": b"new"}
    # rename2 reports errors instead of false
    res = raw(srv, "PUT", "/missing", op="RENAME", destination="/x", renameoptions="OVERWRITE")
    assert res.status_code == 404
    srv.namespace.put("/f", b"1")
    srv.namespace.mkdirs("/dir", "alice")
    res = raw(srv, "PUT", "/f", op="RENAME", destination="/dir", renameoptions="OVERWRITE")
    assert res.status_code == 403
    assert "must both be directories" in res.json()["RemoteException"]["message"]
    res = raw(srv, "PUT", "/f", op="RENAME", destination="/target", renameoptions="NONE")
    assert res.json() == {"boolean": False}  # NONE = the classic rename


def test_server_without_rename_options_ignores_them(srv):
    srv.support_rename_options = False
    srv.namespace.put("/a", b"1")
    srv.namespace.put("/b", b"2")
    res = raw(srv, "PUT", "/a", op="RENAME", destination="/b", renameoptions="OVERWRITE")
    assert res.json() == {"boolean": False}


# ---- DELETE / LISTSTATUS / GETFILESTATUS / MKDIRS -----------------------------------------
def test_delete(client, srv):
    client.write("/d/f", data=b"1")
    assert client.delete("/missing") is False
    with pytest.raises(HdfsError) as info:
        client.delete("/d")
    assert info.value.exception == "PathIsNotEmptyDirectoryException"
    assert srv.requests(op="DELETE")[-1].status == 403
    assert client.delete("/d/f") is True
    assert client.delete("/d") is True  # empty now: no recursive needed
    client.write("/e/g/h", data=b"1")
    assert client.delete("/e", recursive=True) is True
    assert srv.namespace.files() == {}


def test_liststatus(client, srv):
    client.write("/dir/b", data=b"22")
    client.write("/dir/a", data=b"1")
    client.makedirs("/dir/sub")
    statuses = client.list("/dir", status=True)
    assert [name for name, _ in statuses] == ["a", "b", "sub"]
    a, b, sub = (s for _, s in statuses)
    assert (a["type"], a["length"], a["pathSuffix"]) == ("FILE", 1, "a")
    assert (b["type"], b["length"]) == ("FILE", 2)
    assert (sub["type"], sub["length"]) == ("DIRECTORY", 0)
    for key in (
        "modificationTime",
        "accessTime",
        "owner",
        "group",
        "permission",
        "replication",
        "blockSize",
        "fileId",
        "childrenNum",
    ):
        assert key in a
    # a file lists itself with an empty suffix
    res = raw(srv, "GET", "/dir/a", op="LISTSTATUS").json()
    assert [s["pathSuffix"] for s in res["FileStatuses"]["FileStatus"]] == [""]


def test_missing_path_errors_have_the_remote_exception_shape(srv):
    res = raw(srv, "GET", "/x", op="LISTSTATUS")
    assert res.status_code == 404
    assert res.headers["Content-Type"].startswith("application/json")
    assert res.json() == {
        "RemoteException": {
            "exception": "FileNotFoundException",
            "javaClassName": "java.io.FileNotFoundException",
            "message": "File /x does not exist.",
        }
    }
    res = raw(srv, "GET", "/x", op="GETFILESTATUS")
    assert res.status_code == 404
    assert res.json()["RemoteException"]["message"] == "File does not exist: /x"


def test_getfilestatus_contentsummary_homedir(client, srv):
    client.write("/s/a", data=b"123")
    client.write("/s/t/b", data=b"45")
    assert client.status("/s")["type"] == "DIRECTORY"
    assert client.status("/s/a")["length"] == 3
    assert client.status("/missing", strict=False) is None
    summary = client.content("/s")
    assert (summary["directoryCount"], summary["fileCount"], summary["length"]) == (2, 2, 5)
    assert raw(srv, "GET", "/", op="GETHOMEDIRECTORY").json() == {"Path": "/user/alice"}


def test_mkdirs(client, srv):
    client.makedirs("/m/n/o")
    assert client.status("/m/n")["type"] == "DIRECTORY"
    client.makedirs("/m/n/o")  # idempotent
    client.write("/file", data=b"x")
    res = raw(srv, "PUT", "/file", op="MKDIRS")
    assert res.status_code == 403
    res = raw(srv, "PUT", "/file/below", op="MKDIRS")
    assert res.json()["RemoteException"]["exception"] == "ParentNotDirectoryException"


def test_bad_requests(srv):
    res = raw(srv, "GET", "/", op="FROBNICATE")
    assert res.status_code == 400
    assert res.json()["RemoteException"]["exception"] == "IllegalArgumentException"
    res = raw(srv, "GET", "/", op="MKDIRS")  # a PUT operation sent as GET
    assert res.status_code == 400
    res = raw(srv, "DELETE", "/", op="DELETE", recursive="maybe")
    assert res.status_code == 400
    res = requests.get(f"{srv.url}/not-webhdfs", timeout=10)
    assert res.status_code == 404
    res = raw(srv, "GET", "/", op="liststatus")  # op values are case-insensitive
    assert res.status_code == 200


# ---- authentication -----------------------------------------------------------------------
def test_required_user():
    with WebHdfsServer(required_user="alice") as srv:
        InsecureClient(srv.url, user="alice").write("/f", data=b"1")
        with pytest.raises(HdfsError) as info:
            InsecureClient(srv.url, user="bob").status("/f")
        assert info.value.exception == "AccessControlException"
        assert srv.log[-1].status == 403
        res = requests.get(f"{srv.url}/webhdfs/v1/f", params={"op": "GETFILESTATUS"}, timeout=10)
        assert res.status_code == 401
        assert res.json()["RemoteException"]["exception"] == "SecurityException"


# ---- HA -------------------------------------------------------------------------------------
def test_standby_answers_every_request_with_standby_exception():
    with WebHdfsServer(standby=True) as srv:
        res = raw(srv, "GET", "/", op="LISTSTATUS")
        assert res.status_code == 403
        assert res.json()["RemoteException"]["exception"] == "StandbyException"
        assert res.json()["RemoteException"]["javaClassName"] == "org.apache.hadoop.ipc.StandbyException"
        assert srv.log[-1].fault == "standby"


def test_ha_client_fails_over_from_standby_to_active():
    ns = Namespace()
    with WebHdfsServer(namespace=ns, standby=True) as nn1, WebHdfsServer(namespace=ns) as nn2:
        client = InsecureClient(f"{nn1.url};{nn2.url}", user="alice")
        client.write("/f", data=b"1")
        assert [r.status for r in nn1.log] == [403]
        assert nn2.requests(op="CREATE")[0].status == 307

        # fail-over: the roles swap, the shared namespace keeps the data
        nn1.standby, nn2.standby = False, True
        assert read_all(client, "/f") == b"1"
        assert nn2.log[-1].fault == "standby"
        assert nn1.requests(role="namenode", op="OPEN")[-1].status == 307
        assert nn1.requests(role="datanode", op="OPEN")[-1].status == 200

        # both standby: the client gives up with the StandbyException
        nn1.standby = True
        with pytest.raises(HdfsError) as info:
            client.status("/f")
        assert info.value.exception == "StandbyException"


# ---- fault injection ---------------------------------------------------------------------
def test_fail_next(client, srv):
    srv.namespace.put("/f", b"1")
    srv.fail_next(2, status=503)
    for _ in range(2):
        res = raw(srv, "GET", "/f", op="GETFILESTATUS")
        assert res.status_code == 503
        assert res.json()["RemoteException"]["exception"] == "RetriableException"
    assert raw(srv, "GET", "/f", op="GETFILESTATUS").status_code == 200
    assert [r.fault for r in srv.log] == ["fail", "fail", ""]

    srv.fail_next(1, status=500, exception="", message="proxy error")
    res = raw(srv, "GET", "/f", op="GETFILESTATUS")
    assert res.status_code == 500
    assert "proxy error" in res.text and res.headers["Content-Type"] == "text/html"


def test_fail_next_for_the_datanode_only(client, srv):
    srv.fail_next(1, status=500, role="datanode")
    with pytest.raises(HdfsError):
        client.write("/f", data=b"1")
    assert [(r.role, r.status) for r in srv.requests(op="CREATE")] == [
        ("namenode", 307),
        ("datanode", 500),
    ]
    client.write("/f", data=b"1", overwrite=True)
    assert srv.namespace.files() == {"/f": b"1"}


def test_drop_connection_next(client, srv):
    srv.drop_connection_next(1)
    with pytest.raises(requests.exceptions.ConnectionError):
        client.list("/")
    assert srv.log[-1].fault == "drop" and srv.log[-1].status == 0
    assert client.list("/") == []


def test_drop_after_processing_and_op_filters(client, srv):
    srv.drop_connection_next(1, op="MKDIRS", after_processing=True)
    srv.fail_next(1, status=500, op="GETFILESTATUS")
    assert client.list("/") == []  # LISTSTATUS is not affected
    with pytest.raises(requests.exceptions.ConnectionError):
        client.makedirs("/made")
    assert srv.namespace.lookup("/made") is not None  # it happened; only the answer was lost
    with pytest.raises(HdfsError):
        client.status("/made")
    assert client.status("/made")["type"] == "DIRECTORY"
    assert [(r.op, r.fault) for r in srv.log] == [
        ("LISTSTATUS", ""),
        ("MKDIRS", "drop"),
        ("GETFILESTATUS", "fail"),
        ("GETFILESTATUS", ""),
    ]


def test_fail_rate_is_seeded():
    def pattern(seed):
        with WebHdfsServer(fail_rate=0.5, seed=seed) as srv:
            for _ in range(30):
                raw(srv, "GET", "/", op="GETFILESTATUS")
            return [r.fault == "fail" for r in srv.log]

    first = pattern(7)
    assert first == pattern(7)
    assert 5 <= sum(first) <= 25


def test_concurrent_clients(srv):
    def work(i):
        c = InsecureClient(srv.url, user="alice")
        c.write(f"/c/{i}", data=str(i).encode())
        return read_all(c, f"/c/{i}")

    results = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, work(i))) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == {i: str(i).encode() for i in range(12)}


# ---- lifecycle ------------------------------------------------------------------------
def test_stop_frees_both_ports():
    srv = WebHdfsServer().start()
    ports = (srv.port, srv.datanode_port)
    session = requests.Session()  # keeps an idle keep-alive connection open
    session.get(f"{srv.url}/webhdfs/v1/", params={"op": "LISTSTATUS"}, timeout=10)
    srv.stop()
    for port in ports:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        with socket.socket() as s:  # and the port can be bound again
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
    assert not [t for t in threading.enumerate() if t.name.startswith("webhdfs-")]
