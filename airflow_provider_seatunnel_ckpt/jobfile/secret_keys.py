"""Which keys of a document hold credentials, and a copy of it with their values masked.

One rule for every document: a job file's options (an unset ``${NAME}`` in one is an
error, not a warning), seatunnel.yaml's ``plugin-config`` (masked wherever it is shown)
and the Airflow connections the hooks read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Keys whose values are credentials. Matched case-insensitively anywhere in the key,
# so ``fs.s3a.secret.key``, ``fs.oss.accessKeySecret``, ``password`` and
# ``fs.s3a.session.token`` are all masked. ``...credentials.provider`` names a class,
# not a credential, and stays visible.
_SECRET_KEY_RE = re.compile(r"secret|password|passwd|token|keytab[._-]?(contents|base64|data)", re.I)
MASK = "***"


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY_RE.search(key)) and not key.lower().endswith(".provider")


def mask_secrets(value: Any) -> Any:
    """A copy of ``value`` with every secret-looking key's value replaced by ``***``."""
    if isinstance(value, Mapping):
        return {
            k: (MASK if isinstance(k, str) and is_secret_key(k) and v is not None else mask_secrets(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [mask_secrets(v) for v in value]
    return value
