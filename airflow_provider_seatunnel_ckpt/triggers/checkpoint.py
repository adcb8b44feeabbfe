"""``CheckpointTrigger``: wait for a checkpoint in the triggerer, without holding a worker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import cached_property
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ..hooks import CheckpointStorageHook, get_checkpoint_hook


class CheckpointTrigger(BaseTrigger):
    """Fires when the job's final checkpoint exists (``wait_for_final``), or when a
    completed checkpoint newer than ``newer_than`` (any, when None) does.

    Runs on the triggerer, which may be another host than the worker: ``config_file`` is
    what :class:`~airflow_provider_seatunnel_ckpt.sensors.CheckpointSensor` read on the
    worker (the file's text), and ``storage_conn_id`` is resolved here, so credentials
    come from the connection rather than from these kwargs.

    Every storage call runs in a worker thread (``asyncio.to_thread``), so a slow
    object store never blocks the triggerer's event loop. Events:
    ``{"status": "success", "job_id": .., "checkpoint": {summary}}`` or
    ``{"status": "error", "job_id": .., "message": ..}``.
    """

    def __init__(
        self,
        job_id: str,
        config_file: str | None = None,
        storage_conn_id: str | None = None,
        newer_than: int | None = None,
        wait_for_final: bool = False,
        poke_interval: float = 30.0,
    ):
        super().__init__()
        self.job_id = job_id
        self.config_file = config_file
        self.storage_conn_id = storage_conn_id
        self.newer_than = newer_than
        self.wait_for_final = wait_for_final
        self.poke_interval = poke_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "job_id": self.job_id,
                "config_file": self.config_file,
                "storage_conn_id": self.storage_conn_id,
                "newer_than": self.newer_than,
                "wait_for_final": self.wait_for_final,
                "poke_interval": self.poke_interval,
            },
        )

    @cached_property
    def hook(self) -> CheckpointStorageHook:
        return get_checkpoint_hook(self.storage_conn_id, self.config_file)

    def _check(self) -> dict[str, Any] | None:
        return self.hook.check_checkpoint(self.job_id, self.newer_than, self.wait_for_final)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            while True:
                found = await asyncio.to_thread(self._check)
                if found is not None:
                    yield TriggerEvent({"status": "success", "job_id": self.job_id, "checkpoint": found})
                    return
                what = "the final checkpoint" if self.wait_for_final else f"a checkpoint newer than {self.newer_than}"
                self.log.info("job %s: waiting for %s; next check in %ss", self.job_id, what, self.poke_interval)
                await asyncio.sleep(self.poke_interval)
        except Exception as err:  # reported to the task, which fails
            yield TriggerEvent({"status": "error", "job_id": self.job_id, "message": f"{type(err).__name__}: {err}"})
