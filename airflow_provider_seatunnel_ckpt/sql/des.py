"""SeaTunnel's ``des_encrypt(password, text)`` and ``des_decrypt(password, text)`` SQL
functions (its built-in ``DesEncrypt``/``DesDecrypt`` UDFs, ``DESUtil``): DES in CBC mode
with PKCS#5 padding, the key the password's first 8 bytes (UTF-8), the IV ``12345678``,
the cipher text in base64. As in SeaTunnel, a password shorter than 8 characters fails the
query, and a text that cannot be decrypted (or encrypted) comes back unchanged.

DES is long broken: these exist so SeaTunnel's jobs that call them run, not to protect
data. The cipher is ``cryptography``'s (always installed: Airflow and oss2 require it).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable
from typing import Any

import pyarrow as pa

log = logging.getLogger(__name__)

NAMES = ("des_encrypt", "des_decrypt")
_IV = b"12345678"


def _cipher(password: str) -> Any:
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    try:  # cryptography >= 43 keeps the DES family among its "decrepit" algorithms
        from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    except ImportError:  # pragma: no cover - older releases
        from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES

    if len(password) < 8:
        raise ValueError("des_encrypt/des_decrypt: the password must have at least 8 characters")
    # Triple DES with its three keys equal is single DES (Java's DESKeySpec reads the first 8 bytes)
    return Cipher(TripleDES(password.encode("utf-8")[:8] * 3), modes.CBC(_IV))


def encrypt(password: str, text: str) -> str:
    from cryptography.hazmat.primitives import padding

    padder = padding.PKCS7(64).padder()
    encryptor = _cipher(password).encryptor()
    data = padder.update(text.encode("utf-8")) + padder.finalize()
    return base64.b64encode(encryptor.update(data) + encryptor.finalize()).decode("ascii")


def decrypt(password: str, text: str) -> str:
    from cryptography.hazmat.primitives import padding

    decryptor = _cipher(password).decryptor()
    try:
        data = decryptor.update(base64.b64decode(text.encode("utf-8"), validate=True)) + decryptor.finalize()
        unpadder = padding.PKCS7(64).unpadder()
        return (unpadder.update(data) + unpadder.finalize()).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        log.warning("des_decrypt: the text is not DES cipher text for this password; it is returned unchanged")
        return text


def _vectorised(function: Callable[[str, str], str]) -> Callable[[pa.Array, pa.Array], pa.Array]:
    def call(passwords: pa.Array, texts: pa.Array) -> pa.Array:
        return pa.array(
            [
                None if p is None or t is None else function(p, t)
                for p, t in zip(passwords.to_pylist(), texts.to_pylist())
            ],
            pa.string(),
        )

    return call


def install(connection: Any, query: str) -> None:
    """Register the two functions on ``connection`` when ``query`` calls them."""
    lowered = query.lower()
    for name, function in zip(NAMES, (encrypt, decrypt)):
        if name in lowered:
            connection.create_function(
                name,
                _vectorised(function),
                ["VARCHAR", "VARCHAR"],
                "VARCHAR",
                type="arrow",
                null_handling="special",
                side_effects=False,
            )
