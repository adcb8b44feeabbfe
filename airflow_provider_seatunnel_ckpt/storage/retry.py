"""One retry policy for every storage backend.

Transient failures (HTTP 5xx, throttling, connection resets, timeouts) are retried with
bounded exponential backoff and jitter; anything else fails on the first attempt, so a
wrong password or a missing bucket is reported at once instead of after a minute of
pointless retries. Backends only decide *which* errors are transient.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import tenacity

log = logging.getLogger(__name__)

T = TypeVar("T")

#: attempts in all (first try included); total wait stays under ~10 s.
DEFAULT_ATTEMPTS = 6
DEFAULT_INITIAL_WAIT_S = 0.1
DEFAULT_MAX_WAIT_S = 3.0

TRANSIENT_HTTP_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def call_with_retries(
    fn: Callable[[], T],
    *,
    is_transient: Callable[[BaseException], bool],
    what: str,
    attempts: int = DEFAULT_ATTEMPTS,
    initial_wait_s: float = DEFAULT_INITIAL_WAIT_S,
    max_wait_s: float = DEFAULT_MAX_WAIT_S,
) -> T:
    """Run ``fn``; retry it while it raises errors ``is_transient`` accepts.

    ``what`` describes the operation for the log line (backend, bucket/host, path;
    never credentials). The last error is re-raised unchanged so the caller can map
    it to a ``CheckpointStorageError`` with its own context.
    """

    def _log_retry(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "%s failed (attempt %d of %d, retrying): %s",
            what,
            state.attempt_number,
            attempts,
            type(exc).__name__,
        )

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_random_exponential(multiplier=initial_wait_s, max=max_wait_s),
        before_sleep=_log_retry,
        reraise=True,
    )
    return retrying(fn)


def is_transient_network_error(exc: BaseException) -> bool:
    """Connection-level failures every HTTP-based backend treats as transient."""
    import socket

    if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout)):
        return True
    try:  # requests: the hdfs and oss extras' HTTP client (boto3 wraps urllib3 itself)
        import requests

        if isinstance(exc, (requests.ConnectionError, requests.Timeout)):
            return True
    except ImportError:  # pragma: no cover - Airflow brings requests; without it, no requests error
        pass
    return False
