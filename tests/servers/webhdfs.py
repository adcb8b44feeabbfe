"""An in-memory WebHDFS server (name node + data node) for tests. Standard library only.

Written from the public Hadoop "WebHDFS REST API" document. It speaks the protocol a
real cluster speaks, so clients are tested against the protocol, not against a mock of
one client library:

* URLs are ``/webhdfs/v1/<path>?op=<OP>&user.name=<user>&...``; parameter names and the
  ``op`` value are case-insensitive, as in Hadoop.
* ``CREATE`` (PUT), ``APPEND`` (POST) and ``OPEN`` (GET) go through the two-step dance:
  the name node answers ``307 Temporary Redirect`` with a ``Location`` on a *separate*
  data-node listener (its own port), carrying the same query plus
  ``namenoderpcaddress``; the data node moves the bytes. As on a real cluster, the
  overwrite check of ``CREATE`` happens on the data node (it is the data node that
  calls ``create()`` on the name node), a file being written is visible while its bytes
  arrive (readers may see a prefix), and parents are created implicitly.
  ``noredirect=true`` returns ``200 {"Location": ...}`` instead (Hadoop 3).
* ``MKDIRS``, ``RENAME`` (``destination=``; the FileSystem.rename rules: ``{"boolean":
  false}`` when the source is missing, the destination file exists or its parent is
  missing; an existing destination directory receives the source *inside* it),
  ``RENAME`` with ``renameoptions=OVERWRITE`` (Hadoop's ``rename2``, used by its own
  WebHdfsFileSystem client: atomic replace, errors instead of ``false``), ``DELETE``
  (``recursive=``), ``LISTSTATUS``, ``GETFILESTATUS``, ``GETCONTENTSUMMARY``,
  ``GETHOMEDIRECTORY``.
* Errors are ``{"RemoteException": {"exception", "javaClassName", "message"}}`` with the
  statuses of the spec's table: IllegalArgument/UnsupportedOperation 400,
  SecurityException 401, IOException (and its subclasses: FileAlreadyExists,
  AccessControl, Standby, ...) 403, FileNotFound 404, RuntimeException 500.

Test controls on :class:`WebHdfsServer`:

* ``fail_next(n, status, exception=, message=, role=, op=)``: the next matching requests
  fail (``exception=""`` sends a proxy's HTML page instead of a RemoteException);
* ``fail_rate`` (seeded ``random.Random``): that fraction of requests fail with 503;
* ``drop_connection_next(n, role=, op=, after_processing=)``: the connection closes with
  no answer, before or after the request took effect;
* ``standby``: every name-node request gets 403 ``StandbyException``, as from the
  standby of an HA pair; share one :class:`Namespace` between two servers for the pair;
* ``required_user``: other users get 403 ``AccessControlException``, none 401;
* ``support_rename_options=False``: ignore ``renameoptions`` like HttpFS / old releases;
* ``datanode_chunk_delay_s``: a slow data node (partial files stay visible longer);
* ``log`` / ``requests(role, op)``: every request as a :class:`RequestRecord`, logged
  before the answer is sent.
"""

from __future__ import annotations

import json
import posixpath
import random
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

PREFIX = "/webhdfs/v1"
DEFAULT_BLOCK_SIZE = 128 * 1024 * 1024
DEFAULT_REPLICATION = 3
DEFAULT_WEB_USER = "dr.who"  # Hadoop's hadoop.http.staticuser.user

# exception simple name -> (java class name, HTTP status), per the spec's table
EXCEPTIONS: dict[str, tuple[str, int]] = {
    "IllegalArgumentException": ("java.lang.IllegalArgumentException", 400),
    "UnsupportedOperationException": ("java.lang.UnsupportedOperationException", 400),
    "SecurityException": ("java.lang.SecurityException", 401),
    "IOException": ("java.io.IOException", 403),
    "AccessControlException": ("org.apache.hadoop.security.AccessControlException", 403),
    "FileAlreadyExistsException": ("org.apache.hadoop.fs.FileAlreadyExistsException", 403),
    "ParentNotDirectoryException": ("org.apache.hadoop.fs.ParentNotDirectoryException", 403),
    "PathIsNotEmptyDirectoryException": (
        "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException",
        403,
    ),
    "StandbyException": ("org.apache.hadoop.ipc.StandbyException", 403),
    "RetriableException": ("org.apache.hadoop.ipc.RetriableException", 503),
    "FileNotFoundException": ("java.io.FileNotFoundException", 404),
    "RuntimeException": ("java.lang.RuntimeException", 500),
}

NAMENODE_OPS = {
    "GET": {"OPEN", "LISTSTATUS", "GETFILESTATUS", "GETCONTENTSUMMARY", "GETHOMEDIRECTORY"},
    "PUT": {"CREATE", "MKDIRS", "RENAME"},
    "POST": {"APPEND"},
    "DELETE": {"DELETE"},
}
DATANODE_OPS = {"GET": {"OPEN"}, "PUT": {"CREATE"}, "POST": {"APPEND"}}
REDIRECTED_OPS = {"OPEN", "CREATE", "APPEND"}
WRITE_OPS = {"CREATE", "MKDIRS", "RENAME", "APPEND", "DELETE"}


class RemoteError(Exception):
    """A WebHDFS error response: status plus RemoteException body."""

    def __init__(self, exception: str, message: str, status: int | None = None):
        java_class, default_status = EXCEPTIONS.get(exception, (f"java.io.{exception}", 403))
        self.exception = exception
        self.java_class_name = java_class
        self.message = message
        self.status = status if status is not None else default_status
        super().__init__(f"{exception}: {message}")

    def body(self) -> bytes:
        return json.dumps(
            {
                "RemoteException": {
                    "exception": self.exception,
                    "javaClassName": self.java_class_name,
                    "message": self.message,
                }
            }
        ).encode()


# ---- the namespace ---------------------------------------------------------------------
@dataclass
class _Node:
    is_dir: bool
    owner: str
    mtime_ms: int
    permission: str
    file_id: int
    data: bytearray = field(default_factory=bytearray)
    children: dict[str, _Node] = field(default_factory=dict)
    replication: int = DEFAULT_REPLICATION
    block_size: int = DEFAULT_BLOCK_SIZE
    atime_ms: int = 0


class Namespace:
    """The file tree of a name node. Thread-safe; share one between an HA pair."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._next_id = 16385  # HDFS's first inode id after the root
        self.root = _Node(True, "hdfs", _now_ms(), "755", 16385)

    # -- helpers used by the handler; callers hold no lock, each method takes it --
    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _walk(self, path: str) -> tuple[_Node | None, _Node | None, str]:
        """(parent node or None, node or None, last name). Raises on a file in the way."""
        if path == "/":
            return None, self.root, ""
        parts = path.strip("/").split("/")
        node = self.root
        for i, part in enumerate(parts[:-1]):
            child = node.children.get(part)
            if child is None:
                return None, None, parts[-1]
            if not child.is_dir:
                raise RemoteError(
                    "ParentNotDirectoryException",
                    f"/{'/'.join(parts[: i + 1])} (is not a directory)",
                )
            node = child
        return node, node.children.get(parts[-1]), parts[-1]

    def lookup(self, path: str) -> _Node | None:
        with self.lock:
            try:
                return self._walk(path)[1]
            except RemoteError:
                return None

    def _mkdirs_locked(self, path: str, user: str, permission: str = "755") -> _Node:
        node = self.root
        if path == "/":
            return node
        walked = ""
        for part in path.strip("/").split("/"):
            walked += "/" + part
            child = node.children.get(part)
            if child is None:
                child = _Node(True, user, _now_ms(), permission, self._new_id())
                node.children[part] = child
                node.mtime_ms = _now_ms()
            elif not child.is_dir:
                raise RemoteError("ParentNotDirectoryException", f"{walked} (is not a directory)")
            node = child
        return node

    def mkdirs(self, path: str, user: str, permission: str = "755") -> bool:
        with self.lock:
            existing = self._walk(path)[1]
            if existing is not None and not existing.is_dir:
                raise RemoteError("FileAlreadyExistsException", f"Path is not a directory: {path}")
            self._mkdirs_locked(path, user, permission)
            return True

    def create(
        self, path: str, user: str, overwrite: bool, permission: str, replication: int, block_size: int
    ) -> _Node:
        with self.lock:
            if path == "/":
                raise RemoteError("FileAlreadyExistsException", "/ already exists as a directory")
            parent_path, name = posixpath.split(path)
            parent = self._mkdirs_locked(parent_path, user)
            existing = parent.children.get(name)
            if existing is not None:
                if existing.is_dir:
                    raise RemoteError("FileAlreadyExistsException", f"{path} already exists as a directory")
                if not overwrite:
                    raise RemoteError(
                        "FileAlreadyExistsException",
                        f"{path} for client 127.0.0.1 already exists",
                    )
            node = _Node(
                False, user, _now_ms(), permission, self._new_id(), replication=replication, block_size=block_size
            )
            parent.children[name] = node
            parent.mtime_ms = node.mtime_ms
            return node

    def append_chunk(self, node: _Node, chunk: bytes) -> None:
        with self.lock:
            node.data += chunk
            node.mtime_ms = _now_ms()

    def file_for_append(self, path: str) -> _Node:
        with self.lock:
            node = self._walk(path)[1]
            if node is None:
                raise RemoteError("FileNotFoundException", f"Failed to append to non-existent file {path}")
            if node.is_dir:
                raise RemoteError("FileNotFoundException", f"Failed to append to a directory {path}")
            return node

    def file_for_read(self, path: str) -> _Node:
        with self.lock:
            node = self._walk(path)[1]
            if node is None:
                raise RemoteError("FileNotFoundException", f"File does not exist: {path}")
            if node.is_dir:
                raise RemoteError("FileNotFoundException", f"Path is not a file: {path}")
            return node

    def read(self, node: _Node, offset: int, length: int | None) -> bytes:
        with self.lock:
            size = len(node.data)
            if offset > size:
                raise RemoteError("IOException", f"Offset={offset} out of the range [0, {size}]")
            end = size if length is None else min(size, offset + length)
            node.atime_ms = _now_ms()
            return bytes(node.data[offset:end])

    def status(self, path: str) -> dict[str, Any]:
        with self.lock:
            node = self._walk(path)[1]
            if node is None:
                raise RemoteError("FileNotFoundException", f"File does not exist: {path}")
            return _file_status(node, "")

    def list_status(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            node = self._walk(path)[1]
            if node is None:
                raise RemoteError("FileNotFoundException", f"File {path} does not exist.")
            if not node.is_dir:
                return [_file_status(node, "")]
            return [_file_status(node.children[n], n) for n in sorted(node.children)]

    def content_summary(self, path: str) -> dict[str, Any]:
        with self.lock:
            node = self._walk(path)[1]
            if node is None:
                raise RemoteError("FileNotFoundException", f"File does not exist: {path}")
            dirs = files = length = 0
            stack = [node]
            while stack:
                n = stack.pop()
                if n.is_dir:
                    dirs += 1
                    stack.extend(n.children.values())
                else:
                    files += 1
                    length += len(n.data)
            return {
                "directoryCount": dirs,
                "fileCount": files,
                "length": length,
                "quota": -1,
                "spaceConsumed": length * DEFAULT_REPLICATION,
                "spaceQuota": -1,
            }

    def delete(self, path: str, recursive: bool) -> bool:
        with self.lock:
            if path == "/":
                if self.root.children and not recursive:
                    raise RemoteError("PathIsNotEmptyDirectoryException", "`/ is non empty': Directory is not empty")
                return False  # HDFS refuses to delete the root
            try:
                parent, node, name = self._walk(path)
            except RemoteError:
                return False
            if node is None or parent is None:
                return False
            if node.is_dir and node.children and not recursive:
                raise RemoteError(
                    "PathIsNotEmptyDirectoryException",
                    f"`{path} is non empty': Directory is not empty",
                )
            del parent.children[name]
            parent.mtime_ms = _now_ms()
            return True

    def rename(self, src: str, dst: str) -> bool:
        """FileSystem.rename: False instead of errors, into an existing directory."""
        with self.lock:
            if src == "/":
                return False
            try:
                src_parent, src_node, src_name = self._walk(src)
            except RemoteError:
                return False
            if src_node is None or src_parent is None:
                return False
            try:
                dst_parent, dst_node, dst_name = self._walk(dst)
            except RemoteError:
                return False
            if dst_node is not None and dst_node.is_dir:
                dst = posixpath.join(dst, src_name)
                dst_parent, dst_node, dst_name = dst_node, dst_node.children.get(src_name), src_name
            if dst == src:
                return True
            if dst.startswith(src + "/"):
                return False  # destination inside the source
            if dst_parent is None or not dst_parent.is_dir or dst_node is not None:
                return False  # missing parent, or destination exists
            del src_parent.children[src_name]
            dst_parent.children[dst_name] = src_node
            now = _now_ms()
            src_parent.mtime_ms = dst_parent.mtime_ms = now
            return True

    def rename2(self, src: str, dst: str, overwrite: bool) -> None:
        """FileContext.rename (``renameoptions``): errors instead of False; atomic replace."""
        with self.lock:
            src_parent, src_node, src_name = self._walk(src)
            if src_node is None or src_parent is None:
                raise RemoteError("FileNotFoundException", f"rename source {src} is not found.")
            if dst == src:
                raise RemoteError(
                    "FileAlreadyExistsException",
                    f"The source {src} and destination {dst} are the same",
                )
            if dst.startswith(src + "/"):
                raise RemoteError(
                    "IOException",
                    f"Rename destination {dst} is a directory or file under source {src}",
                )
            dst_parent, dst_node, dst_name = self._walk(dst)
            if dst_parent is None or dst == "/":
                raise RemoteError(
                    "FileNotFoundException",
                    f"rename destination parent {posixpath.dirname(dst)} not found.",
                )
            if dst_node is not None:
                if not overwrite:
                    raise RemoteError("FileAlreadyExistsException", f"rename destination {dst} already exists.")
                if dst_node.is_dir != src_node.is_dir:
                    raise RemoteError(
                        "IOException",
                        f"Source {src} and destination {dst} must both be directories"
                        if dst_node.is_dir
                        else f"Source {src} and destination {dst} must both be files",
                    )
                if dst_node.is_dir and dst_node.children:
                    raise RemoteError("IOException", f"rename destination directory is not empty: {dst}")
            del src_parent.children[src_name]
            dst_parent.children[dst_name] = src_node
            now = _now_ms()
            src_parent.mtime_ms = dst_parent.mtime_ms = now

    # -- conveniences for tests --
    def files(self) -> dict[str, bytes]:
        """Every file as {absolute path: content}."""
        out: dict[str, bytes] = {}
        with self.lock:
            stack: list[tuple[str, _Node]] = [("", self.root)]
            while stack:
                prefix, node = stack.pop()
                for name, child in node.children.items():
                    path = f"{prefix}/{name}"
                    if child.is_dir:
                        stack.append((path, child))
                    else:
                        out[path] = bytes(child.data)
        return out

    def put(self, path: str, data: bytes, user: str = "hdfs") -> None:
        node = self.create(path, user, True, "644", DEFAULT_REPLICATION, DEFAULT_BLOCK_SIZE)
        self.append_chunk(node, data)


def _file_status(node: _Node, suffix: str) -> dict[str, Any]:
    return {
        "accessTime": 0 if node.is_dir else node.atime_ms,
        "blockSize": 0 if node.is_dir else node.block_size,
        "childrenNum": len(node.children) if node.is_dir else 0,
        "fileId": node.file_id,
        "group": "supergroup",
        "length": 0 if node.is_dir else len(node.data),
        "modificationTime": node.mtime_ms,
        "owner": node.owner,
        "pathSuffix": suffix,
        "permission": node.permission,
        "replication": 0 if node.is_dir else node.replication,
        "storagePolicy": 0,
        "type": "DIRECTORY" if node.is_dir else "FILE",
    }


def _now_ms() -> int:
    return int(time.time() * 1000)


# ---- HTTP plumbing ---------------------------------------------------------------------
@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it."""

    role: str  #: "namenode" or "datanode"
    port: int
    method: str
    path: str  #: the HDFS path (decoded)
    op: str
    query: dict[str, str]  #: first value of each parameter (names lower-cased)
    target: str  #: the raw request target, query included
    status: int  #: status answered (0 when the connection was dropped)
    fault: str = ""  #: "fail", "drop", "standby" or ""


class _Listener(ThreadingHTTPServer):
    """A ThreadingHTTPServer that tracks its connections so stop() can end them."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default 5 drops SYNs under 16 concurrent clients

    def __init__(self, owner: WebHdfsServer, role: str, host: str):
        self.owner = owner
        self.role = role
        self._conn_lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._conn_threads: set[threading.Thread] = set()
        super().__init__((host, 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(
            target=self._run_request,
            args=(request, client_address),
            daemon=True,
            name=f"webhdfs-{self.role}-conn",
        )
        with self._conn_lock:
            self._conns.add(request)
            self._conn_threads.add(t)
        t.start()

    def _run_request(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._conn_lock:
                self._conns.discard(request)
                self._conn_threads.discard(threading.current_thread())

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away is not a server error worth printing

    def close_connections(self, timeout: float) -> None:
        with self._conn_lock:
            conns = list(self._conns)
            threads = list(self._conn_threads)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))


class _DropConnection(Exception):
    pass


@dataclass(frozen=True)
class _Fault:
    kind: str  # "fail", "drop" or "drop_after"
    role: str | None
    op: str | None
    status: int = 0
    exception: str = ""
    message: str = ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server_version = "Jetty(9.4.test)"
    timeout = 30  # idle keep-alive connections end after this
    server: _Listener
    _body_taken = False
    _pending: dict[str, Any] | None = None
    _drop_answer = False

    def log_message(self, format: str, *args: Any) -> None:  # stdlib name
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # -- body handling --
    def _body_chunks(self) -> Iterator[bytes]:
        """The request body, once; a second call yields nothing."""
        if self._body_taken:
            return
        self._body_taken = True
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size_line = self.rfile.readline(1024)
                if not size_line:
                    raise _DropConnection()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return
                chunk = self.rfile.read(size)
                self.rfile.readline(16)
                if len(chunk) < size:
                    raise _DropConnection()
                yield chunk
        else:
            remaining = int(self.headers.get("Content-Length") or 0)
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 64 * 1024))
                if not chunk:
                    raise _DropConnection()
                remaining -= len(chunk)
                yield chunk

    def _discard_body(self) -> None:
        for _ in self._body_chunks():
            pass

    # -- responses --
    def _send(
        self,
        status: int,
        body: bytes = b"",
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        if self._drop_answer:  # the request took effect; its answer is lost
            self._log(0, "drop")
            self._hang_up()
            return
        self._log(status)  # before answering, so a client never sees an unlogged response
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _send_json(self, obj: Any, status: int = 200) -> None:
        self._send(status, json.dumps(obj).encode())

    def _hang_up(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _log(self, status: int, fault: str = "") -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self.server.owner._record(RequestRecord(status=status, fault=fault, **pending))

    # -- dispatch --
    def _serve(self, method: str) -> None:
        self._body_taken = False
        server = self.server
        owner = server.owner
        split = urlsplit(self.path)
        raw_query = parse_qs(split.query, keep_blank_values=True)
        query_lists = {k.lower(): v for k, v in raw_query.items()}
        query = {k: v[0] for k, v in query_lists.items()}
        op = query.get("op", "").upper()
        hdfs_path = unquote(split.path[len(PREFIX) :]) if split.path.startswith(PREFIX) else ""
        self._pending = dict(
            role=server.role,
            port=server.server_address[1],
            method=method,
            path=hdfs_path or split.path,
            op=op,
            query=query,
            target=self.path,
        )

        fault = owner._take_fault(server.role, op)
        self._drop_answer = fault is not None and fault.kind == "drop_after"
        if fault is not None and fault.kind != "drop_after":
            try:
                self._discard_body()
            except (_DropConnection, OSError, ValueError):
                pass
            if fault.kind == "drop":
                self._log(0, "drop")
                self._hang_up()
                return
            self._log(fault.status, "fail")
            if fault.exception:
                self._send(fault.status, RemoteError(fault.exception, fault.message, fault.status).body())
            else:
                page = f"<html><body><h1>Error {fault.status}</h1>{fault.message}</body></html>"
                self._send(fault.status, page.encode(), "text/html")
            return

        try:
            self._dispatch(method, op, hdfs_path, split.path, query, query_lists)
        except RemoteError as err:
            try:
                self._discard_body()
            except (_DropConnection, OSError, ValueError):
                self.close_connection = True
            self._log(err.status, "standby" if err.exception == "StandbyException" else "")
            self._send(err.status, err.body())
        except _DropConnection:
            self.close_connection = True
        finally:
            self._log(0)  # no answer was sent (the client went away mid-body)

    def _dispatch(
        self,
        method: str,
        op: str,
        hdfs_path: str,
        url_path: str,
        query: dict[str, str],
        query_lists: dict[str, list[str]],
    ) -> int:
        server = self.server
        owner = server.owner
        role = server.role
        if not url_path.startswith(PREFIX + "/") and url_path != PREFIX:
            self._discard_body()
            self._send(404, b"<html><body>Not Found</body></html>", "text/html")
            return 404
        path = _normalize(hdfs_path or "/")
        ops = NAMENODE_OPS if role == "namenode" else DATANODE_OPS
        if not op:
            raise RemoteError("IllegalArgumentException", 'Invalid value for webhdfs parameter "op": null')
        if op not in ops.get(method, set()):
            known = any(op in s for s in NAMENODE_OPS.values())
            if known:
                raise RemoteError(
                    "IllegalArgumentException",
                    f'Invalid value for webhdfs parameter "op": {op} is not a valid {method} operation.',
                )
            raise RemoteError(
                "IllegalArgumentException",
                f'Invalid value for webhdfs parameter "op": No enum constant {method.title()}OpParam.Op.{op}',
            )
        user = owner._authenticate(query_lists)
        if role == "namenode" and owner.standby:
            category = "WRITE" if op in WRITE_OPS else "READ"
            raise RemoteError(
                "StandbyException",
                f"Operation category {category} is not supported in state standby. "
                "Visit https://s.apache.org/sbnn-error",
            )
        ns = owner.namespace
        if role == "datanode":
            return self._datanode(op, path, query, user)

        if op in REDIRECTED_OPS:
            if op == "OPEN":
                ns.file_for_read(path)  # the name node resolves blocks: 404 here
                _int_param(query, "offset", 0)
                _int_param(query, "length", None)
            elif op == "CREATE":
                _bool_param(query, "overwrite", False)
                _int_param(query, "replication", DEFAULT_REPLICATION)
                _int_param(query, "blocksize", DEFAULT_BLOCK_SIZE)
                _perm_param(query, "644")
            self._discard_body()
            dn_query = [(k, v) for k, vs in query_lists.items() for v in vs if k != "noredirect"]
            dn_query.append(("namenoderpcaddress", f"127.0.0.1:{server.server_address[1]}"))
            location = f"{owner.datanode_url}{PREFIX}{quote(path)}?{urlencode(dn_query)}"
            if _bool_param(query, "noredirect", False):
                self._send_json({"Location": location})
                return 200
            self._send(307, b"", "application/octet-stream", {"Location": location})
            return 307

        self._discard_body()
        if op == "GETFILESTATUS":
            self._send_json({"FileStatus": ns.status(path)})
        elif op == "LISTSTATUS":
            self._send_json({"FileStatuses": {"FileStatus": ns.list_status(path)}})
        elif op == "GETCONTENTSUMMARY":
            self._send_json({"ContentSummary": ns.content_summary(path)})
        elif op == "GETHOMEDIRECTORY":
            self._send_json({"Path": f"/user/{user}"})
        elif op == "MKDIRS":
            self._send_json({"boolean": ns.mkdirs(path, user, _perm_param(query, "755"))})
        elif op == "DELETE":
            self._send_json({"boolean": ns.delete(path, _bool_param(query, "recursive", False))})
        elif op == "RENAME":
            dst = query.get("destination")
            if not dst:
                raise RemoteError("IllegalArgumentException", 'Invalid value for webhdfs parameter "destination": null')
            if not dst.startswith("/"):
                raise RemoteError(
                    "IllegalArgumentException",
                    f'Invalid value for webhdfs parameter "destination": {dst} is not an absolute path',
                )
            dst = _normalize(dst)
            options = _rename_options(query.get("renameoptions", ""))
            if options and owner.support_rename_options:
                ns.rename2(path, dst, "OVERWRITE" in options)
                self._send(200, b"", "application/octet-stream")
            else:
                self._send_json({"boolean": ns.rename(path, dst)})
        else:  # pragma: no cover - the op tables above are exhaustive
            raise RemoteError("UnsupportedOperationException", f"{op} is not supported")
        return 200

    def _datanode(self, op: str, path: str, query: dict[str, str], user: str) -> int:
        ns = self.server.owner.namespace
        if op == "CREATE":
            node = ns.create(
                path,
                user,
                _bool_param(query, "overwrite", False),
                _perm_param(query, "644"),
                _int_param(query, "replication", DEFAULT_REPLICATION),
                _int_param(query, "blocksize", DEFAULT_BLOCK_SIZE),
            )
            for chunk in self._body_chunks():  # visible while it grows, as on HDFS
                ns.append_chunk(node, chunk)
                self.server.owner._slow_datanode()
            nn = query.get("namenoderpcaddress", "127.0.0.1")
            self._send(201, b"", "application/octet-stream", {"Location": f"hdfs://{nn}{quote(path)}"})
            return 201
        if op == "APPEND":
            node = ns.file_for_append(path)
            for chunk in self._body_chunks():
                ns.append_chunk(node, chunk)
                self.server.owner._slow_datanode()
            self._send(200, b"", "application/octet-stream")
            return 200
        # OPEN
        self._discard_body()
        node = ns.file_for_read(path)
        data = ns.read(node, _int_param(query, "offset", 0), _int_param(query, "length", None))
        self._send(200, data, "application/octet-stream")
        return 200


def _normalize(path: str) -> str:
    parts = [p for p in path.split("/") if p]
    if any(part in (".", "..") for part in parts):
        raise RemoteError("IllegalArgumentException", f"Invalid path name {path}")
    return "/" + "/".join(parts)


def _bool_param(query: dict[str, str], name: str, default: bool) -> bool:
    value = query.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise RemoteError(
        "IllegalArgumentException",
        f'Invalid value for webhdfs parameter "{name}": Failed to parse "{value}" as a boolean.',
    )


def _int_param(query: dict[str, str], name: str, default: int | None) -> int | None:
    value = query.get(name)
    if value is None or value == "" or value.lower() == "null":
        return default
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise RemoteError(
            "IllegalArgumentException",
            f'Invalid value for webhdfs parameter "{name}": Invalid value: "{value}" '
            "does not belong to the domain [0, 9223372036854775807]",
        )
    return number


def _perm_param(query: dict[str, str], default: str) -> str:
    value = query.get("permission")
    if not value:
        return default
    if not all(c in "01234567" for c in value) or len(value) > 4:
        raise RemoteError(
            "IllegalArgumentException",
            f'Invalid value for webhdfs parameter "permission": Invalid value: "{value}"',
        )
    return value.lstrip("0")[-3:].rjust(3, "0")


def _rename_options(value: str) -> set[str]:
    options = {v.strip().upper() for v in value.split(",") if v.strip()}
    bad = options - {"NONE", "OVERWRITE", "TO_TRASH"}
    if bad:
        raise RemoteError(
            "IllegalArgumentException",
            f'Invalid value for webhdfs parameter "renameoptions": {sorted(bad)[0]}',
        )
    return options - {"NONE"}


# ---- the public server object ----------------------------------------------------------
class WebHdfsServer:
    """A name-node listener plus a data-node listener on two loopback ports.

    ``with WebHdfsServer() as srv: srv.url`` gives ``http://127.0.0.1:PORT``; pass the
    same :class:`Namespace` to two servers to build an HA pair (one ``standby=True``).
    """

    def __init__(
        self,
        *,
        namespace: Namespace | None = None,
        standby: bool = False,
        required_user: str | None = None,
        fail_rate: float = 0.0,
        seed: int = 0,
        support_rename_options: bool = True,
        datanode_chunk_delay_s: float = 0.0,
        host: str = "127.0.0.1",
    ):
        self.namespace = namespace if namespace is not None else Namespace()
        self.standby = standby
        self.required_user = required_user
        self.fail_rate = fail_rate
        self.support_rename_options = support_rename_options
        #: pause after each 64 KiB a data node stores (a slow pipeline: widens the
        #: window in which a file being written is visible with partial content)
        self.datanode_chunk_delay_s = datanode_chunk_delay_s
        self.host = host
        self.log: list[RequestRecord] = []
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        self._listeners: list[_Listener] = []
        self._threads: list[threading.Thread] = []

    # -- lifecycle --
    def start(self) -> WebHdfsServer:
        if self._listeners:
            return self
        self._namenode = _Listener(self, "namenode", self.host)
        self._datanode = _Listener(self, "datanode", self.host)
        self._listeners = [self._namenode, self._datanode]
        for listener in self._listeners:
            t = threading.Thread(
                target=listener.serve_forever,
                kwargs={"poll_interval": 0.02},
                daemon=True,
                name=f"webhdfs-{listener.role}",
            )
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener.shutdown()
            listener.server_close()
            listener.close_connections(timeout=5.0)
        for t in self._threads:
            t.join(5.0)
        self._threads = []

    def __enter__(self) -> WebHdfsServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- addresses --
    @property
    def port(self) -> int:
        return self._namenode.server_address[1]

    @property
    def datanode_port(self) -> int:
        return self._datanode.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def datanode_url(self) -> str:
        return f"http://{self.host}:{self.datanode_port}"

    # -- fault injection --
    def fail_next(
        self,
        n: int,
        status: int = 503,
        *,
        exception: str | None = None,
        message: str | None = None,
        role: str | None = None,
        op: str | None = None,
    ) -> None:
        """The next ``n`` requests (to ``role``/``op`` if given) fail with ``status``.

        The body is a RemoteException named ``exception`` (default: RetriableException
        for 503, RuntimeException for other 5xx, IOException otherwise); ``exception=""``
        sends an HTML page instead, as a proxy in front of the name node would.
        """
        if exception is None:
            exception = (
                "RetriableException" if status == 503 else ("RuntimeException" if status >= 500 else "IOException")
            )
        text = message if message is not None else f"injected failure (HTTP {status})"
        fault = _Fault("fail", role, op and op.upper(), status, exception, text)
        with self._lock:
            self._faults.extend([fault] * n)

    def drop_connection_next(
        self, n: int, *, role: str | None = None, op: str | None = None, after_processing: bool = False
    ) -> None:
        """The next ``n`` requests get no answer: the connection just closes.

        With ``after_processing`` the request takes effect first (the answer is what is
        lost), which is how a client learns whether its retries are idempotent.
        """
        kind = "drop_after" if after_processing else "drop"
        with self._lock:
            self._faults.extend([_Fault(kind, role, op and op.upper())] * n)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self.fail_rate = 0.0

    def _take_fault(self, role: str, op: str) -> _Fault | None:
        with self._lock:
            for i, fault in enumerate(self._faults):
                if fault.role in (None, role) and fault.op in (None, op):
                    del self._faults[i]
                    return fault
            if self.fail_rate and self._random.random() < self.fail_rate:
                return _Fault("fail", None, None, 503, "RetriableException", "injected failure (HTTP 503)")
        return None

    def _slow_datanode(self) -> None:
        if self.datanode_chunk_delay_s:
            time.sleep(self.datanode_chunk_delay_s)

    # -- auth --
    def _authenticate(self, query_lists: dict[str, list[str]]) -> str:
        users = query_lists.get("user.name") or []
        doas = (query_lists.get("doas") or [None])[0]
        if self.required_user is None:
            return doas or (users[0] if users else DEFAULT_WEB_USER)
        if not users:
            raise RemoteError("SecurityException", "Authentication required")
        if any(u != self.required_user for u in users) or (doas and doas != self.required_user):
            who = next((u for u in users if u != self.required_user), doas)
            raise RemoteError(
                "AccessControlException",
                f'Permission denied: user={who}, access=EXECUTE, inode="/":hdfs:supergroup:drwx------',
            )
        return self.required_user

    # -- request log --
    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self.log.append(record)

    def requests(self, role: str | None = None, op: str | None = None) -> list[RequestRecord]:
        with self._lock:
            return [r for r in self.log if (role is None or r.role == role) and (op is None or r.op == op)]

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()
