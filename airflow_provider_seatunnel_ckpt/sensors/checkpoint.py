"""``CheckpointSensor``: wait for a completed (or the final) checkpoint of a job."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from ..errors import ConfigError
from ..hooks import CheckpointStorageHook, get_checkpoint_hook
from ..jobfile.documents import load_document
from ..jobfile.secret_keys import mask_secrets
from ..triggers.checkpoint import CheckpointTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context


class CheckpointSensor(BaseSensorOperator):
    """Wait until job ``job_id`` has a completed checkpoint with an id above ``newer_than``
    (any completed checkpoint when None), or, with ``wait_for_final=True``, until the job
    finished and its final checkpoint is committed.

    Works in ``poke`` and ``reschedule`` modes; with ``deferrable=True`` it checks once
    and then waits in the triggerer (:class:`CheckpointTrigger`). Its XCom return value
    is the checkpoint's summary (id, kind, location, statistics).

    :param job_id: templated, e.g. ``"{{ ti.xcom_pull(task_ids='etl', key='job_id') }}"``
    :param config_file: ``seatunnel.yaml`` path or text (templated)
    :param storage_conn_id: checkpoint storage connection
    :param newer_than: a checkpoint id (templated; int or digits)
    :param wait_for_final: wait for the job's final checkpoint instead
    :param deferrable: wait in the triggerer (default ``[operators] default_deferrable``)
    """

    template_fields: Sequence[str] = ("job_id", "config_file", "newer_than")
    ui_color = "#e0f2fe"

    def __init__(
        self,
        *,
        job_id: str,
        config_file: str | None = None,
        storage_conn_id: str | None = None,
        newer_than: int | str | None = None,
        wait_for_final: bool = False,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job_id = job_id
        self.config_file = config_file
        self.storage_conn_id = storage_conn_id
        self.newer_than = newer_than
        self.wait_for_final = wait_for_final
        self.deferrable = deferrable

    def _config_file(self) -> str | None:
        """A path as given, or next to the DAG file when relative and found there."""
        value = self.config_file
        if value is None or "\n" in str(value) or Path(str(value)).is_absolute():
            return value
        folder = getattr(getattr(self, "dag", None), "folder", None)
        if folder and (Path(folder) / str(value)).exists():
            return str(Path(folder) / str(value))
        return value

    def _config_for_trigger(self) -> str | None:
        """The config file's text, read here on the worker: the triggerer may run on another
        host, without the DAG folder. Credentials belong in the connection, which the
        triggerer resolves itself from ``storage_conn_id``. A file that holds credentials
        is handed over as its path instead: trigger kwargs are stored in the metadata DB,
        encrypted only when a Fernet key is configured."""
        value = self._config_file()
        if value is None or "\n" in str(value):
            return value
        path = Path(str(value)).expanduser()
        if not path.is_file():
            return value  # the first poke already reported it; keep the error where it is
        text = path.read_text(encoding="utf-8")
        try:
            document, _, _ = load_document(text)
        except ConfigError:
            return str(path)
        if mask_secrets(document) != document:
            self.log.warning(
                "%s holds credentials, so the triggerer gets its path, not its content, and must be able to "
                "read it there; put the credentials in the connection (storage_conn_id) to defer from any host",
                path,
            )
            return str(path)
        return text

    def _newer_than(self) -> int | None:
        if self.newer_than in (None, "", "None"):
            return None
        try:
            return int(self.newer_than)
        except (TypeError, ValueError):
            raise AirflowException(f"newer_than must be a checkpoint id, got {self.newer_than!r}") from None

    @cached_property
    def hook(self) -> CheckpointStorageHook:
        return get_checkpoint_hook(self.storage_conn_id, self._config_file())

    def poke(self, context: Context) -> PokeReturnValue:
        try:
            found = self.hook.check_checkpoint(str(self.job_id), self._newer_than(), self.wait_for_final)
        except ConfigError as err:  # a wrong connection type or config: no poke or retry fixes it
            raise AirflowFailException(f"job {self.job_id}: {err}") from None
        if found is None:
            what = "its final checkpoint" if self.wait_for_final else f"a checkpoint newer than {self._newer_than()}"
            self.log.info("job %s: no %s yet in %s", self.job_id, what, self.hook.describe(str(self.job_id)))
            return PokeReturnValue(is_done=False)
        self.log.info(
            "job %s: checkpoint %s (%s) at %s", self.job_id, found["checkpoint_id"], found["kind"], found["location"]
        )
        return PokeReturnValue(is_done=True, xcom_value=found)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        self.defer(
            trigger=CheckpointTrigger(
                job_id=str(self.job_id),
                config_file=self._config_for_trigger(),
                storage_conn_id=self.storage_conn_id,
                newer_than=self._newer_than(),
                wait_for_final=self.wait_for_final,
                poke_interval=float(self.poke_interval),
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout) if self.timeout is not None else None,
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        if not event or event.get("status") != "success":
            message = (event or {}).get("message", "the trigger ended without an event")
            raise AirflowException(f"job {self.job_id}: waiting for a checkpoint failed: {message}")
        checkpoint = event["checkpoint"]
        self.log.info(
            "job %s: checkpoint %s (%s) at %s",
            self.job_id,
            checkpoint["checkpoint_id"],
            checkpoint["kind"],
            checkpoint["location"],
        )
        return checkpoint
