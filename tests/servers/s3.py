"""A loopback S3 for tests: moto's ThreadedMotoServer, optionally behind a fault proxy.

moto has no fault injection, so ``FaultProxy`` is a tiny stdlib HTTP/1.1 reverse proxy
(127.0.0.1 only) that forwards each request unchanged (method, path, every header,
including ``Host``, and the body bytes, so SigV4 signatures stay valid) unless told to
fail it::

    with S3Server(proxy=True) as s3:
        s3.create_bucket("ckpt")
        fs = s3.filesystem("ckpt", retry_initial_wait_s=0.01)
        s3.proxy.fail_next(2, status=503)      # the next two requests get a 503
        s3.proxy.drop_connection_next(1)       # the next one is read, then the socket reset
        s3.proxy.fail_next(4, when=lambda method, path: "partNumber=2" in path)
        s3.proxy.fail_rate(1.0)                # every request fails until reset()

The proxy is generic HTTP, so other HTTP backends' tests can put it in front of their
server too. moto keeps its state per process, shared by every server in it: tests use
distinct bucket names.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import random
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ACCESS_KEY_ID = "testing"
SECRET_ACCESS_KEY = "testing"
REGION = "us-east-1"

_ERROR_CODES = {
    400: "BadRequest",
    403: "AccessDenied",
    404: "NoSuchKey",
    408: "RequestTimeout",
    429: "TooManyRequests",
    500: "InternalError",
    502: "BadGateway",
    503: "SlowDown",
    504: "GatewayTimeout",
}
#: ``when(method, path_with_query)`` picks the requests a fault applies to
Matcher = Callable[[str, str], bool]


@dataclass(frozen=True)
class _Rule:
    action: str  # "fail", "drop" or "forward-drop"
    status: int
    when: Matcher | None
    code: str | None


_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}


class FaultProxy:
    """Reverse proxy on 127.0.0.1 that forwards requests verbatim or injects faults."""

    def __init__(self, upstream_host: str, upstream_port: int):
        self.upstream = (upstream_host, upstream_port)
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []  # one per request to fail or drop, first match wins
        self._fail_rate = 0.0
        self._fail_rate_status = 503
        self._random = random.Random(0)
        self.requests: list[tuple[str, str, str]] = []  # (method, path, outcome)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- fault control ----------------------------------------------------------------
    def fail_next(self, n: int, status: int = 503, when: Matcher | None = None, code: str | None = None) -> None:
        """Answer the next ``n`` requests (that ``when(method, path)`` accepts) with
        ``status`` and an S3-style error body whose ``<Code>`` is ``code`` (default:
        the usual one for the status, e.g. SlowDown for 503)."""
        with self._lock:
            self._rules.extend(_Rule("fail", status, when, code) for _ in range(n))

    def fail_rate(self, rate: float, status: int = 503, seed: int = 0) -> None:
        """Fail this fraction of requests (1.0: all of them) until ``reset()``."""
        with self._lock:
            self._fail_rate, self._fail_rate_status = rate, status
            self._random = random.Random(seed)

    def drop_connection_next(self, n: int, when: Matcher | None = None, after_forward: bool = False) -> None:
        """Reset the connection instead of answering the next ``n`` requests. With
        ``after_forward`` the request reaches the server first, so it takes effect but
        the client never learns it did (a reply lost in transit)."""
        with self._lock:
            action = "forward-drop" if after_forward else "drop"
            self._rules.extend(_Rule(action, 0, when, None) for _ in range(n))

    def reset(self) -> None:
        """Forward everything again and forget the request log."""
        with self._lock:
            self._rules.clear()
            self._fail_rate = 0.0
            self.requests.clear()

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _decide(self, method: str, path: str) -> tuple[str, int, str | None]:
        with self._lock:
            outcome: tuple[str, int, str | None] = ("forward", 0, None)
            for i, rule in enumerate(self._rules):
                if rule.when is None or rule.when(method, path):
                    del self._rules[i]
                    outcome = (rule.action, rule.status, rule.code)
                    break
            else:
                if self._fail_rate and self._random.random() < self._fail_rate:
                    outcome = ("fail", self._fail_rate_status, None)
            self.requests.append((method, path, outcome[0]))
            return outcome

    # ---- lifecycle --------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(_ProxyHandler):
            owner = proxy

        self._server = _QuietHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _QuietHTTPServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client resetting an idle keep-alive connection is not a server error.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real thing
    #: headers and body go out as separate writes: without TCP_NODELAY, Nagle plus the
    #: client's delayed ACK stall every small response by ~40 ms
    disable_nagle_algorithm = True
    owner: FaultProxy
    _upstream: http.client.HTTPConnection | None = None

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def finish(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
        super().finish()

    def _proxy(self) -> None:
        body = self._read_body()
        action, status, code = self.owner._decide(self.command, self.path)
        if action == "forward-drop":
            with contextlib.suppress(OSError):
                self._forward(body)
            action = "drop"
        if action == "drop":
            # RST instead of FIN, like a crashed load balancer
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if action == "fail":
            self._send(status, "Injected", [("Content-Type", "application/xml")], _error_body(status, code))
            return
        try:
            status, reason, headers, payload = self._forward(body)
        except OSError as exc:  # upstream gone
            self._upstream = None
            self._send(502, "Bad Gateway", [], f"proxy: upstream failed: {exc}".encode())
            return
        self._send(status, reason, headers, payload)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = do_OPTIONS = _proxy

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = bytearray()
            while True:  # keep the chunk framing: it is forwarded as is
                line = self.rfile.readline()
                raw += line
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:  # trailers, then an empty line
                        trailer = self.rfile.readline()
                        raw += trailer
                        if trailer in (b"\r\n", b"\n", b""):
                            return bytes(raw)
                raw += self.rfile.read(size + 2)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        if self._upstream is None:
            self._upstream = http.client.HTTPConnection(*self.owner.upstream, timeout=60)
        conn = self._upstream
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():  # Host included, unchanged
                conn.putheader(name, value)
            conn.endheaders(body or None)
            response = conn.getresponse()
            payload = response.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            self._upstream = None
            raise OSError("upstream connection failed") from None
        headers = response.getheaders()
        if self.command == "HEAD":  # keep the upstream Content-Length of the (absent) body
            headers = [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP - {"content-length"}]
        if response.will_close:
            conn.close()
            self._upstream = None
        return response.status, response.reason, headers, payload

    def _send(self, status: int, reason: str, headers: list[tuple[str, str]], payload: bytes) -> None:
        self.send_response_only(status, reason)
        has_length = False
        for name, value in headers:
            if name.lower() == "content-length" and self.command == "HEAD":
                has_length = True
            elif name.lower() in _HOP_BY_HOP:
                continue
            self.send_header(name, value)
        if not has_length:
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD" and payload:
            self.wfile.write(payload)


def _error_body(status: int, code: str | None = None) -> bytes:
    code = code or _ERROR_CODES.get(status, "InjectedFault")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>fault injected by the test proxy</Message>"
        "<RequestId>proxy</RequestId></Error>"
    ).encode()


class S3Server:
    """moto's S3 on 127.0.0.1 (free port), with a ``FaultProxy`` in front when ``proxy``."""

    access_key_id = ACCESS_KEY_ID
    secret_access_key = SECRET_ACCESS_KEY
    region = REGION

    def __init__(self, proxy: bool = False, own_process: bool = False):
        self._want_proxy = proxy
        self._own_process = own_process
        self._moto: Any = None
        self._process: subprocess.Popen[bytes] | None = None
        self.proxy: FaultProxy | None = None
        self.direct_url = ""

    def start(self) -> S3Server:
        if self._own_process:
            host, port = self._start_process()
        else:
            from moto.server import ThreadedMotoServer

            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
            self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            self._moto.start()
            host, port = self._moto.get_host_and_port()
        self.direct_url = f"http://{host}:{port}"
        if self._want_proxy:
            self.proxy = FaultProxy(host, port).start()
        return self

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
            self._process = None

    def _start_process(self) -> tuple[str, int]:
        """moto in a child process: for clients that hold the GIL while they wait for the
        server (delta-rs's Rust calls), which would freeze a server thread in this process."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self._process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return "127.0.0.1", port
            if self._process.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("moto's server did not start")

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def endpoint_url(self) -> str:
        """Where clients should connect: the proxy when there is one."""
        return self.proxy.url if self.proxy is not None else self.direct_url

    def client(self, service: str = "s3", **config: Any) -> Any:
        """A plain boto3 client talking straight to moto (setup, assertions, baselines)."""
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            service,
            endpoint_url=self.direct_url,
            region_name=self.region,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            config=Config(**config) if config else None,
        )

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def filesystem(self, bucket: str, **overrides: Any) -> Any:
        """An ``S3FileSystem`` for ``bucket`` through ``endpoint_url``; kwargs override."""
        from airflow_provider_seatunnel_ckpt.storage.fs_s3 import S3FileSystem

        kwargs: dict[str, Any] = {
            "endpoint_url": self.endpoint_url,
            "region": self.region,
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "path_style": True,
        }
        kwargs.update(overrides)
        return S3FileSystem(bucket, **kwargs)

    @contextlib.contextmanager
    def iam_auth(self, user: str = "ckpt-writer") -> Iterator[tuple[str, str]]:
        """Make moto check signatures and IAM permissions; yield a valid (key id, secret).

        Inside the block the default ``testing`` credentials are rejected
        (InvalidAccessKeyId), as is a wrong secret (SignatureDoesNotMatch).
        """
        import requests

        iam = self.client("iam")
        with contextlib.suppress(iam.exceptions.EntityAlreadyExistsException):
            iam.create_user(UserName=user)
            iam.put_user_policy(
                UserName=user,
                PolicyName="s3-all",
                PolicyDocument=json.dumps(
                    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
                ),
            )
        key = iam.create_access_key(UserName=user)["AccessKey"]
        previous = requests.post(f"{self.direct_url}/moto-api/reset-auth", data=b"0", timeout=10).json()
        try:
            yield key["AccessKeyId"], key["SecretAccessKey"]
        finally:
            requests.post(
                f"{self.direct_url}/moto-api/reset-auth",
                data=str(previous["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"]).encode(),
                timeout=10,
            )
            # moto allows two keys per user: free this one for the next test
            iam.delete_access_key(UserName=user, AccessKeyId=key["AccessKeyId"])
