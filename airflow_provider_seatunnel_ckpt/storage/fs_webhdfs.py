"""HDFS over WebHDFS (the ``hdfs`` package): SeaTunnel's ``storage.type: hdfs``.

Pure Python, so the same code runs in Airflow workers, on the Spark driver and on
executors, with no Hadoop jars or JVM client. ``WebHdfsFileSystem.from_plugin_config``
reads SeaTunnel's ``plugin-config`` (the name node addresses: storage/webhdfs_config.py).
Writes go to a hidden temp file renamed onto the target; transient errors (and standby
name nodes, once every one was tried) are retried; one client per thread and process;
Kerberos tickets are renewed per process (storage/kerberos.py).

Keys, HA, Kerberos and the client's behaviour: docs/storage.md, "HDFS" (and "Guarantees,
and how each is kept" for the atomic and create-only writes).
"""

from __future__ import annotations

import errno
import getpass
import json
import logging
import os
import posixpath
import re
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

from ..errors import BackendMissing, CheckpointStorageError, ConfigError
from .filesystem import Bytes, FileInfo, FileSystem
from .kerberos import KerberosTicketRenewer
from .retry import (
    DEFAULT_ATTEMPTS,
    DEFAULT_INITIAL_WAIT_S,
    DEFAULT_MAX_WAIT_S,
    TRANSIENT_HTTP_STATUSES,
    is_transient_network_error,
)
from .webhdfs_config import HadoopConf, config_get, parse_urls, urls_from_plugin_config

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0

#: Java exception names that mean "try again (maybe on another name node)"
TRANSIENT_REMOTE_EXCEPTIONS = frozenset(
    {"StandbyException", "RetriableException", "SafeModeException", "ObserverRetryOnActiveException"}
)

_TEMP_NAME = re.compile(r"^\..+\.tmp-[0-9a-f]{16}$")
_SECRET_PARAM = re.compile(r"(?i)\b(delegation|token|password|secret|signature)=([^&\s\"']+)")


class _HttpFailure(Exception):
    """A non-2xx WebHDFS answer: status plus the RemoteException it carried, if any."""

    def __init__(self, status: int, exception: str | None, message: str | None):
        self.status = status
        self.exception = exception
        self.message = message
        super().__init__(f"HTTP {status} {exception or ''}".strip())

    @property
    def transient(self) -> bool:
        return self.status in TRANSIENT_HTTP_STATUSES or self.exception in TRANSIENT_REMOTE_EXCEPTIONS

    @property
    def not_found(self) -> bool:
        return self.exception == "FileNotFoundException"

    @property
    def path_missing(self) -> bool:
        """Nothing at the path: not found, or a file where a parent directory should be
        (Hadoop's name node says so as an AccessControlException ending in "(is not a
        directory)" for a path below a file; other servers as ParentNotDirectoryException)."""
        if self.exception == "AccessControlException":
            return _first_line(self.message).endswith("(is not a directory)")
        return self.exception in ("FileNotFoundException", "ParentNotDirectoryException")


def _first_line(message: str | None) -> str:
    """A RemoteException's message without the Java stack trace some servers append
    (a DataNode's StandbyException does): errors here are one line."""
    return (message or "").partition("\n")[0].rstrip()


def _failure(res: Any) -> _HttpFailure:
    exception = message = None
    try:
        remote = res.json()["RemoteException"]
        exception = remote.get("exception") or None
        message = remote.get("message") or None
    except Exception:  # not a WebHDFS error body (proxy page, empty body, ...)
        pass
    return _HttpFailure(res.status_code, exception, message)


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, _HttpFailure):
        return exc.transient
    try:
        from hdfs.util import HdfsError
    except ImportError:  # the hdfs extra is missing: no client raised this
        HdfsError = ()
    if isinstance(exc, HdfsError):  # raised by the client after trying every name node
        return getattr(exc, "exception", None) in TRANSIENT_REMOTE_EXCEPTIONS
    import requests

    if isinstance(exc, requests.exceptions.SSLError):
        return False  # a certificate problem does not heal by itself
    if isinstance(exc, (requests.exceptions.ChunkedEncodingError, _ShortRead)):
        return True  # the connection broke in the middle of a body
    try:  # the same, seen through response.raw (urllib3's own errors)
        from urllib3 import exceptions as u3e

        if isinstance(exc, (u3e.ProtocolError, u3e.ReadTimeoutError)):
            return True
    except ImportError:  # pragma: no cover - urllib3 comes with requests
        pass
    return is_transient_network_error(exc)


class _ShortRead(Exception):
    pass


def _scrub(text: str) -> str:
    return _SECRET_PARAM.sub(lambda m: f"{m.group(1)}=***", text)


def _default_user() -> str:
    return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()


# ---- per-process Kerberos renewers -----------------------------------------------------
_RENEWERS: dict[tuple[str, str, str | None, int], KerberosTicketRenewer] = {}
_RENEWERS_LOCK = threading.Lock()


def _renewer_for(principal: str, keytab: str, krb5_conf: str | None) -> KerberosTicketRenewer:
    """One renewer per principal, keytab and process: one ``kinit`` however many instances."""
    key = (principal, keytab, krb5_conf, os.getpid())
    with _RENEWERS_LOCK:
        renewer = _RENEWERS.get(key)
        if renewer is None:
            renewer = _RENEWERS[key] = KerberosTicketRenewer(principal, keytab, krb5_conf=krb5_conf)
        return renewer


# ---- the file system -------------------------------------------------------------------
class WebHdfsFileSystem(FileSystem):
    """HDFS through WebHDFS; several ``urls`` = the name nodes of an HA pair (or more)."""

    backend = "hdfs"
    extra = "hdfs"
    title = "HDFS"

    def __init__(
        self,
        urls: str | Sequence[str],
        user: str | None = None,
        kerberos_principal: str | None = None,
        kerberos_keytab: str | None = None,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT_S,
        *,
        retry_attempts: int = DEFAULT_ATTEMPTS,
        retry_initial_wait_s: float = DEFAULT_INITIAL_WAIT_S,
        retry_max_wait_s: float = DEFAULT_MAX_WAIT_S,
        kerberos_krb5_conf: str | None = None,
        kerberos_renewer: KerberosTicketRenewer | None = None,
    ):
        self.urls = parse_urls(urls, "urls")
        #: the order new clients ask the name nodes in: a name node found to be a standby
        #: by a DataNode's answer goes last (:meth:`_ask_last`)
        self._name_node_order = list(self.urls)
        self.user = user or None
        if bool(kerberos_principal) != bool(kerberos_keytab):
            missing = "kerberos_keytab" if kerberos_principal else "kerberos_principal"
            raise ConfigError(missing, "Kerberos needs both a principal and a keytab")
        self.kerberos_principal = kerberos_principal or None
        self.kerberos_keytab = kerberos_keytab or None
        self.kerberos_krb5_conf = kerberos_krb5_conf or None
        if isinstance(timeout, (int, float)) and timeout <= 0:
            raise ConfigError("timeout", f"must be > 0 seconds, got {timeout}")
        self.timeout = timeout
        if retry_attempts < 1:
            raise ConfigError("retry_attempts", f"must be >= 1, got {retry_attempts}")
        self.retry_attempts = retry_attempts
        self.retry_initial_wait_s = retry_initial_wait_s
        self.retry_max_wait_s = retry_max_wait_s
        #: optional explicit renewer (tests, custom kinit); default: one per process
        self.kerberos_renewer = kerberos_renewer
        self._local = threading.local()

    # ---- construction -----------------------------------------------------------
    @classmethod
    def from_plugin_config(cls, plugin_config: Mapping[str, Any]) -> WebHdfsFileSystem:
        """Build from SeaTunnel ``plugin-config`` keys (docs/storage.md, "HDFS")."""
        cfg = {str(k): v for k, v in plugin_config.items()}
        storage_type = config_get(cfg, "storage.type")
        if storage_type is not None and storage_type.lower() != "hdfs":
            raise ConfigError("plugin-config.storage.type", f"is {storage_type!r}; the WebHDFS backend serves 'hdfs'")
        urls = urls_from_plugin_config(cfg)
        user = config_get(cfg, "hdfs.user") or HadoopConf(cfg).get("hadoop.user.name")
        principal = config_get(cfg, "kerberosPrincipal")
        keytab = config_get(cfg, "kerberosKeytab")
        keytab_path = config_get(cfg, "kerberosKeytabFilePath")
        if keytab and keytab_path and keytab != keytab_path:
            raise ConfigError(
                "plugin-config.kerberosKeytabFilePath",
                f"{keytab_path!r} differs from kerberosKeytab {keytab!r}; set only one",
            )
        keytab = keytab or keytab_path
        if principal and not keytab:
            raise ConfigError("plugin-config.kerberosKeytab", "is required when kerberosPrincipal is set")
        if keytab and not principal:
            raise ConfigError("plugin-config.kerberosPrincipal", "is required when kerberosKeytab is set")
        timeout: float = DEFAULT_TIMEOUT_S
        raw_timeout = cfg.get("webhdfs.timeout")
        if raw_timeout is not None:
            try:
                timeout = float(raw_timeout)
            except (TypeError, ValueError):
                raise ConfigError("plugin-config.webhdfs.timeout", f"{raw_timeout!r} is not a number") from None
            if timeout <= 0:
                raise ConfigError("plugin-config.webhdfs.timeout", f"must be > 0 seconds, got {raw_timeout!r}")
        return cls(
            urls,
            user=user,
            kerberos_principal=principal,
            kerberos_keytab=keytab,
            timeout=timeout,
            kerberos_krb5_conf=config_get(cfg, "krb5Path") if principal else None,
        )

    def __repr__(self) -> str:
        auth = f"kerberos_principal={self.kerberos_principal!r}" if self.kerberos_principal else f"user={self.user!r}"
        return f"WebHdfsFileSystem(urls={self.urls!r}, {auth})"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_local"]  # clients and sessions stay in the process that made them
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def describe(self, path: str) -> str:
        hosts = ",".join(urlsplit(u).netloc for u in self.urls)
        return f"webhdfs://{hosts}{path}"

    # ---- clients ----------------------------------------------------------------
    def _client(self) -> Any:
        local = self._local
        pid = os.getpid()
        client = getattr(local, "client", None)
        if client is None or getattr(local, "pid", None) != pid:
            client = self._new_client()
            local.client, local.pid = client, pid
        return client

    def _new_client(self) -> Any:
        self.require_client()
        import requests

        url = ";".join(self._name_node_order)
        session = requests.Session()
        if self.kerberos_principal:
            try:
                from hdfs.ext.kerberos import KerberosClient
            except ImportError as exc:
                raise BackendMissing(
                    "hdfs: Kerberos is configured but its client library is missing; "
                    "install airflow-provider-seatunnel-ckpt[kerberos]"
                ) from exc
            if self.kerberos_krb5_conf:
                # GSSAPI reads krb5.conf from the process environment, as the JVM reads
                # java.security.krb5.conf; an explicit KRB5_CONFIG wins.
                current = os.environ.setdefault("KRB5_CONFIG", self.kerberos_krb5_conf)
                if current != self.kerberos_krb5_conf:
                    log.warning(
                        "KRB5_CONFIG=%s is set; krb5Path %s is used for kinit only", current, self.kerberos_krb5_conf
                    )
            return KerberosClient(url, mutual_auth="OPTIONAL", timeout=self.timeout, session=session)
        from hdfs import InsecureClient

        return InsecureClient(url, user=self.user or _default_user(), timeout=self.timeout, session=session)

    def _renewer(self) -> KerberosTicketRenewer | None:
        if not self.kerberos_principal:
            return None
        if self.kerberos_renewer is not None:
            return self.kerberos_renewer
        assert self.kerberos_keytab is not None
        return _renewer_for(self.kerberos_principal, self.kerberos_keytab, self.kerberos_krb5_conf)

    # ---- the retry/error wrapper --------------------------------------------------
    def _call(self, op: str, path: str, fn: Callable[[Any], T]) -> T:
        """Run ``fn(client)`` with retries; map failures to the FileSystem contract."""
        renewer = self._renewer()

        def attempt() -> T:
            client = self._client()
            if renewer is not None:
                renewer.ensure_fresh()
            return fn(client)

        what = f"hdfs {op} {self.describe(path)}"
        return self._with_retries(op, path, attempt, is_transient=_is_transient, what=what, to_error=self._error)

    def _error(self, op: str, path: str, exc: BaseException) -> CheckpointStorageError:
        retried = _is_transient(exc) and self.retry_attempts > 1
        if isinstance(exc, _HttpFailure):
            what = f"HTTP {exc.status}"
            if exc.exception:
                what = f"{exc.exception} (HTTP {exc.status})"
            elif exc.status == 404:
                what += " without a WebHDFS error body (is the URL a WebHDFS name node?)"
            if exc.status == 401:
                what += ", authentication failed"
            reason = f"{what}: {_first_line(exc.message)}" if exc.message else what
        elif (remote := getattr(exc, "exception", None)) in TRANSIENT_REMOTE_EXCEPTIONS:
            tried = "the name node" if len(self.urls) == 1 else f"all {len(self.urls)} name nodes"
            reason = f"{remote} from {tried}: {_first_line(getattr(exc, 'message', ''))}"
        elif type(exc).__name__ == "HdfsError":
            message = str(exc)
            if message.startswith("Authentication failure"):  # the client's text for HTTP 401
                reason = "authentication failed (HTTP 401); check the Kerberos ticket or the user"
            else:
                reason = f"{remote}: {message}" if remote else message
        else:
            reason = f"{type(exc).__name__} talking to the name node"
        if retried:
            reason += f", after {self.retry_attempts} attempts"
        return CheckpointStorageError(_scrub(f"hdfs: cannot {op} {self.describe(path)}: {reason}"))

    # ---- primitives -------------------------------------------------------------
    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        path = _checked(path)
        if offset < 0 or (length is not None and length < 0):
            raise ValueError(f"offset and length must be >= 0, got {offset} and {length}")

        def do(client: Any) -> bytes:
            params: dict[str, Any] = {"offset": offset} if offset else {}
            if length is not None:
                params["length"] = length
            res = client._open(path, strict=False, **params)
            try:
                if res.status_code >= 400:
                    failure = _failure(res)
                    if failure.path_missing:
                        raise FileNotFoundError(errno.ENOENT, "hdfs: no such file", self.describe(path))
                    if offset and not failure.transient and self._at_or_past_end(client, path, offset):
                        return b""  # HDFS refuses offsets past the end; the contract reads nothing
                    raise failure
                expected = res.headers.get("content-length")
                encoded = res.headers.get("content-encoding") not in (None, "", "identity")
                if encoded:
                    return res.content  # requests decodes it
                # The body straight off the (streamed) response: one read of Content-Length
                # bytes into one buffer, instead of requests' 10 KiB chunks joined at the end.
                data = res.raw.read()
                if expected is not None and expected.isdigit() and int(expected) != len(data):
                    raise _ShortRead(f"got {len(data)} of {expected} bytes")
                return data
            finally:
                res.close()

        return self._call("read", path, do)

    def write_atomic(self, path: str, data: Bytes) -> None:
        self._write_via_temp(path, data, "write", self._replace)

    def _write_via_temp(self, path: str, data: Bytes, op: str, publish: Callable[[str, str], T]) -> T:
        """``data`` into a hidden temp file, then ``publish(tmp, path)``; the temp file
        is removed when either fails."""
        path = _checked(path)
        if path == "/":
            raise ValueError("hdfs: cannot write to /")
        parent, name = posixpath.split(path)
        tmp = posixpath.join(parent, f".{name}.tmp-{secrets.token_hex(8)}")
        reached_datanode: list[bool] = []
        try:
            # ``data`` as it is (a state joined from its pieces is a bytearray): requests and
            # urllib3 send any buffer without copying it, and a copy of a checkpoint's state
            # doubles its memory and adds a pass over it (bench/checkpoint_latency_bench.py)
            self._call(op, path, lambda client: self._create(client, tmp, data, reached_datanode))
            return publish(tmp, path)
        except BaseException:
            if reached_datanode:  # a temp file may exist; otherwise nothing to clean up
                self._discard(tmp)
            raise

    def _create_new(self, path: str, data: Bytes) -> None:
        """The data in a hidden temp file, then one classic RENAME onto ``path``: the
        name node checks and renames in one operation, so of several creators exactly
        one wins; the others' renames answer false."""
        path = _checked(path)
        temps: list[str] = []

        def rename(tmp: str, target: str) -> Any:
            temps.append(tmp)
            return self._call("create", target, lambda c: self._rename(c, tmp, target, overwrite=False))

        renamed = self._write_via_temp(path, data, "create", rename)
        tmp = temps[0]
        if renamed is None:  # pragma: no cover - only rename2 answers without a boolean
            raise CheckpointStorageError(f"hdfs: cannot create {self.describe(path)}: RENAME gave no answer")
        if renamed:
            target = self.info(path)
            if target is not None and target.is_dir:  # tmp went *into* that directory
                self._discard(posixpath.join(path, posixpath.basename(tmp)))
                raise CheckpointStorageError(f"hdfs: cannot create {self.describe(path)}: is a directory")
            return
        if self.info(tmp) is None:
            if self._is_file(path):
                return  # tmp is gone because it *is* the target: an earlier attempt's answer was lost
            raise CheckpointStorageError(
                f"hdfs: cannot create {self.describe(path)}: temp file {tmp} vanished before rename"
            )
        # tmp is still there, so its directory is: the rename was refused because path exists
        self._discard(tmp)
        raise FileExistsError(errno.EEXIST, "hdfs: already exists", self.describe(path))

    def list_dir(self, path: str) -> list[FileInfo]:
        path = _checked(path)

        def do(client: Any) -> list[FileInfo]:
            res = client._list_status(path, strict=False)
            if res.status_code >= 400:
                failure = _failure(res)
                if failure.path_missing:
                    return []
                raise failure
            statuses = res.json()["FileStatuses"]["FileStatus"]
            result = []
            for st in statuses:
                suffix = st.get("pathSuffix", "")
                if not suffix:  # LISTSTATUS of a file lists the file itself: no children
                    return []
                if _TEMP_NAME.match(suffix):
                    continue
                result.append(_info(posixpath.join(path, suffix), st))
            result.sort(key=lambda i: i.path)
            return result

        return self._call("list", path, do)

    def delete(self, path: str, recursive: bool = False) -> None:
        path = _checked(path)

        def do(client: Any) -> None:
            res = client._delete(path, strict=False, recursive="true" if recursive else "false")
            if res.status_code >= 400:
                failure = _failure(res)
                if failure.path_missing:
                    return
                if failure.exception == "PathIsNotEmptyDirectoryException":
                    raise CheckpointStorageError(
                        f"hdfs: cannot delete {self.describe(path)}: non-empty directory (use recursive=True)"
                    )
                raise failure
            # {"boolean": false} = nothing was there: fine

        self._call("delete", path, do)

    def info(self, path: str) -> FileInfo | None:
        path = _checked(path)

        def do(client: Any) -> FileInfo | None:
            res = client._get_file_status(path, strict=False)
            if res.status_code >= 400:
                failure = _failure(res)
                if failure.path_missing:
                    return None
                raise failure
            return _info(path, res.json()["FileStatus"])

        return self._call("stat", path, do)

    @staticmethod
    def _at_or_past_end(client: Any, path: str, offset: int) -> bool:
        """Whether ``path`` is a file no longer than ``offset`` (one GETFILESTATUS)."""
        res = client._get_file_status(path, strict=False)
        if res.status_code >= 400:
            return False  # let the caller report the original error
        status = res.json()["FileStatus"]
        return status.get("type") == "FILE" and offset >= int(status.get("length", 0))

    # ---- write helpers ----------------------------------------------------------
    def _create(self, client: Any, tmp: str, payload: Bytes, reached_datanode: list[bool]) -> None:
        """CREATE in two steps: the name node redirects, the data node takes the bytes."""
        res = client._create(tmp, strict=False, overwrite="true")
        try:
            location = res.headers.get("location")
            if res.status_code >= 400:
                raise _failure(res)
        finally:
            res.close()
        if not location:
            raise _HttpFailure(res.status_code, None, "CREATE answered without a redirect Location")
        reached_datanode.append(True)
        name_node = res.url
        res = client._request(method="PUT", url=urljoin(res.url, location), data=payload)
        try:
            failure = _failure(res) if res.status_code >= 400 else None
        finally:
            res.close()
        if failure is not None:
            if failure.exception == "StandbyException":
                # A standby name node (an HA pair after a failover) redirects a CREATE all
                # the same, and the DataNode refuses it: the client never sees the standby's
                # own refusal that makes it try the next name node. Ask that one last; the
                # retry (StandbyException is transient) then goes to the others.
                self._ask_last(name_node)
            raise failure

    def _ask_last(self, url: str) -> None:
        """New clients of this process ask the name node at ``url`` after the others."""
        netloc = urlsplit(url).netloc
        order = self._name_node_order
        self._name_node_order = [u for u in order if urlsplit(u).netloc != netloc] + [
            u for u in order if urlsplit(u).netloc == netloc
        ]
        self._local.client = None  # this thread's next attempt makes a client in that order

    def _rename(self, client: Any, src: str, dst: str, overwrite: bool) -> bool | None:
        """RENAME; True/False for the classic answer, None for a rename2 (options) success."""
        params = {"renameoptions": "OVERWRITE"} if overwrite else {}
        res = client._rename(src, strict=False, destination=dst, **params)
        if res.status_code >= 400:
            raise _failure(res)
        try:
            body = json.loads(res.content or b"null")
        except ValueError:
            body = None
        if isinstance(body, dict) and "boolean" in body:
            return bool(body["boolean"])
        return None

    def _replace(self, tmp: str, path: str) -> None:
        try:
            outcome = self._call("write", path, lambda c: self._rename(c, tmp, path, overwrite=True))
        except CheckpointStorageError as exc:
            cause = exc.__cause__
            if isinstance(cause, _HttpFailure) and cause.not_found and self._landed(tmp, path):
                return  # an earlier attempt renamed it; its answer was lost
            raise
        if outcome is None:
            return  # rename2 replaced the target atomically
        if outcome and self._is_file(path):
            return  # the server ignored renameoptions; the target did not exist
        if outcome:  # the target is a directory and tmp was moved into it
            self._discard(posixpath.join(path, posixpath.basename(tmp)))
            raise CheckpointStorageError(f"hdfs: cannot write {self.describe(path)}: is a directory")
        # Classic rename (renameoptions ignored) refused: the target exists, or an
        # earlier attempt already moved tmp and only its answer was lost.
        for _ in range(3):
            if self.info(tmp) is None:
                if self._is_file(path):
                    return  # tmp is gone because it *is* the target now
                raise CheckpointStorageError(
                    f"hdfs: cannot write {self.describe(path)}: temp file {tmp} vanished before rename"
                )
            target = self.info(path)
            if target is not None and target.is_dir:
                raise CheckpointStorageError(f"hdfs: cannot write {self.describe(path)}: is a directory")
            if target is not None:
                self.delete(path)
            if self._call("write", path, lambda c: self._rename(c, tmp, path, overwrite=False)):
                return
        raise CheckpointStorageError(
            f"hdfs: cannot write {self.describe(path)}: the target kept reappearing (concurrent writer?)"
        )

    def _landed(self, tmp: str, path: str) -> bool:
        return self.info(tmp) is None and self._is_file(path)

    def _is_file(self, path: str) -> bool:
        target = self.info(path)
        return target is not None and not target.is_dir

    def _discard(self, tmp: str) -> None:
        """Best-effort removal of a temp file after a failed write (one try, no retries)."""
        try:
            self._client()._delete(tmp, strict=False, recursive="false").close()
        except Exception:  # the write already failed; keep its error, not this one
            log.debug("could not remove temp file %s", self.describe(tmp), exc_info=True)


def _info(path: str, status: Mapping[str, Any]) -> FileInfo:
    is_dir = status.get("type") == "DIRECTORY"
    mtime = status.get("modificationTime")
    return FileInfo(
        path=path,
        size=0 if is_dir else int(status.get("length", 0)),
        is_dir=is_dir,
        mtime=mtime / 1000.0 if isinstance(mtime, (int, float)) else None,
    )


def _checked(path: str) -> str:
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"hdfs: path must be absolute, got {path!r}")
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"hdfs: path must not contain '.' or '..', got {path!r}")
    return "/" + "/".join(parts)
