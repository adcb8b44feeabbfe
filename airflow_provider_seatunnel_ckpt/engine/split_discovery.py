"""Live split discovery: ask the source for new splits at a fixed interval, on a thread
of its own (a discovery is a round trip to the source system and must not hold up the
driver's checkpoint loop), and hand what it finds to a callback.

Flink's ``KafkaSourceEnumerator`` does the same with ``partition.discovery.interval.ms``;
SeaTunnel names the option ``partition-discovery.interval-millis``. A failed discovery is
logged and tried again at the next interval: the job keeps reading what it has.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence

from ..connectors.api import Source, Split

log = logging.getLogger(__name__)


class SplitDiscovery:
    def __init__(
        self, source: Source, known: Sequence[Split], interval_s: float, on_found: Callable[[list[Split]], None]
    ):
        if interval_s <= 0:
            raise ValueError(f"discovery interval must be > 0 s, got {interval_s}")
        self.source = source
        self.interval_s = interval_s
        self._known = list(known)
        self._on_found = on_found
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="split-discovery", daemon=True)
        self._last_error: str | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop without waiting long: a discovery under way against a slow cluster
        finishes on its own (daemon thread) and what it finds is not reported."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)

    def discover_once(self) -> list[Split]:
        """One discovery: the splits not seen before (remembered from now on)."""
        found = list(self.source.discover_splits(self._known))  # its contract: none of ``known``
        self._known.extend(found)
        return found

    def _run(self) -> None:
        while not self._stopped.wait(self.interval_s):
            try:
                found = self.discover_once()
            except Exception as err:
                if str(err) != self._last_error:  # say it once, not every interval
                    log.warning("split discovery failed (tried again every %g s): %s", self.interval_s, err)
                self._last_error = str(err)
                continue
            self._last_error = None
            if found and not self._stopped.is_set():
                self._on_found(found)


def split_names(split_ids: Iterable[str], shown: int = 5) -> str:
    """``a, b, c, d, e ...``: the first few ids of a list that may be long."""
    ids = list(split_ids)
    return ", ".join(ids[:shown]) + (" ..." if len(ids) > shown else "")
