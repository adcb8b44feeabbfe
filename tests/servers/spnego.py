"""SPNEGO (HTTP ``Authorization: Negotiate``) for tests, through the machine's own MIT
GSSAPI library (``libgssapi_krb5.so.2``) by ctypes: no Python Kerberos package
(requests-gssapi, pykerberos) is installed here, and their builds need krb5's headers.

    token = negotiate_token("localhost", ccache=path, krb5_conf=path)
    requests.get(url, headers={"Authorization": f"Negotiate {token}"})

The credentials come from a ticket cache a ``kinit`` wrote (MIT's, or servers.Kinit's);
the service ticket for ``HTTP/<host>`` is asked from the KDC by the library, as curl's or
a browser's ``--negotiate`` does. ``available()`` says whether the library is there.
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import os
import threading

GSS_C_MUTUAL_FLAG = 2
GSS_C_SEQUENCE_FLAG = 8
GSS_S_COMPLETE, GSS_S_CONTINUE_NEEDED = 0, 1
_SPNEGO_OID = b"\x2b\x06\x01\x05\x05\x02"  # 1.3.6.1.5.5.2
_lock = threading.Lock()  # KRB5CCNAME / KRB5_CONFIG are process-wide


class _Buffer(ctypes.Structure):
    _fields_ = [("length", ctypes.c_size_t), ("value", ctypes.c_void_p)]


class _Oid(ctypes.Structure):
    _fields_ = [("length", ctypes.c_uint32), ("elements", ctypes.c_void_p)]


def _library() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("gssapi_krb5") or "libgssapi_krb5.so.2"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def available() -> bool:
    return _library() is not None


class GssError(RuntimeError):
    pass


def _status_text(lib: ctypes.CDLL, code: int, kind: int) -> str:
    minor, context, buf = ctypes.c_uint32(), ctypes.c_uint32(0), _Buffer()
    texts = []
    while True:
        lib.gss_display_status(ctypes.byref(minor), code, kind, None, ctypes.byref(context), ctypes.byref(buf))
        texts.append(ctypes.string_at(buf.value, buf.length).decode(errors="replace"))
        lib.gss_release_buffer(ctypes.byref(minor), ctypes.byref(buf))
        if not context.value:
            return "; ".join(texts)


def negotiate_token(
    host: str, *, ccache: str | os.PathLike, krb5_conf: str | os.PathLike, service: str = "HTTP"
) -> str:
    """The base64 SPNEGO token to send as ``Authorization: Negotiate <token>`` to ``host``."""
    lib = _library()
    if lib is None:
        raise GssError("libgssapi_krb5.so.2 not found (Debian/Ubuntu: apt-get install libgssapi-krb5-2)")
    with _lock:
        saved = {k: os.environ.get(k) for k in ("KRB5CCNAME", "KRB5_CONFIG")}
        os.environ["KRB5CCNAME"] = f"FILE:{ccache}"
        os.environ["KRB5_CONFIG"] = str(krb5_conf)
        try:
            return _init_context(lib, f"{service}@{host}")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _init_context(lib: ctypes.CDLL, target: str) -> str:
    minor = ctypes.c_uint32()
    name = ctypes.c_void_p()
    name_buf = ctypes.create_string_buffer(target.encode())
    buf = _Buffer(len(target), ctypes.cast(name_buf, ctypes.c_void_p))
    hostbased = ctypes.c_void_p.in_dll(lib, "GSS_C_NT_HOSTBASED_SERVICE")
    major = lib.gss_import_name(ctypes.byref(minor), ctypes.byref(buf), hostbased, ctypes.byref(name))
    if major:
        raise GssError(f"gss_import_name({target}): {_status_text(lib, minor.value, 2)}")
    spnego_elements = ctypes.create_string_buffer(_SPNEGO_OID, len(_SPNEGO_OID))
    mech = _Oid(len(_SPNEGO_OID), ctypes.cast(spnego_elements, ctypes.c_void_p))
    context, out = ctypes.c_void_p(), _Buffer()
    try:
        major = lib.gss_init_sec_context(
            ctypes.byref(minor),
            None,
            ctypes.byref(context),
            name,
            ctypes.byref(mech),
            GSS_C_MUTUAL_FLAG | GSS_C_SEQUENCE_FLAG,
            0,
            None,
            None,
            None,
            ctypes.byref(out),
            None,
            None,
        )
        if major not in (GSS_S_COMPLETE, GSS_S_CONTINUE_NEEDED):
            raise GssError(
                f"gss_init_sec_context({target}): {_status_text(lib, major, 1)}: {_status_text(lib, minor.value, 2)}"
            )
        return base64.b64encode(ctypes.string_at(out.value, out.length)).decode()
    finally:
        lib.gss_release_buffer(ctypes.byref(minor), ctypes.byref(out))
        if context.value:
            lib.gss_delete_sec_context(ctypes.byref(minor), ctypes.byref(context), None)
        lib.gss_release_name(ctypes.byref(minor), ctypes.byref(name))
