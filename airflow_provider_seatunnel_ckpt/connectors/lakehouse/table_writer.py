"""The sink writer both table sinks use: open the table at the first batch (creating it
when the save mode says so), fit every batch to its schema, write data files, report them
at the barrier, and delete the ones never reported when the attempt ends."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...errors import ConfigError
from ..api import JsonValue, SinkWriter
from ..options import option_key
from .common import TableLocation, data_file_infos
from .datafiles import DataFileWriter
from .schema import check_compatible, conform


def check_table_accepts(sink: Any, schema: pa.Schema, key: str) -> None:
    """The driver's check that the job's output fits the sink's table, if it exists yet
    (``Sink.accepts``); the writers repeat it against the table they open."""
    table = sink.load_table()
    if table is not None:
        check_compatible(schema, sink.table_schema(table), sink.describe(), key=key)


class TableWriter(SinkWriter):
    """Subclasses say how to reach the table (``load_table``/``create_table`` on the sink)
    and how to lay out its files (``files_for``)."""

    plugin = "Table"
    #: the option that names the table, in errors (``table``, ``path``)
    table_option = "table"

    def __init__(self, sink: Any, job_id: str, subtask: int, attempt: int):
        self.sink = sink
        self.job_id = job_id
        self.subtask = subtask
        self.attempt = attempt
        self._files: DataFileWriter | None = None
        self._target: pa.Schema | None = None
        self._location: TableLocation | None = None

    def files_for(self, table: Any, location: TableLocation) -> DataFileWriter:
        raise NotImplementedError

    def _open(self, schema: pa.Schema) -> DataFileWriter:
        key = option_key(self.sink, self.table_option)
        table = self.sink.load_table()
        if table is None:
            if not self.sink.create_missing:
                raise ConfigError(
                    key, f"{self.sink.describe()} does not exist (schema_save_mode: ERROR_WHEN_SCHEMA_NOT_EXIST)"
                )
            table = self.sink.create_table(schema)
        self._target = self.sink.table_schema(table)
        check_compatible(schema, self._target, self.sink.describe(), key=key)
        self._location = self.sink.location_of(table)
        return self.files_for(table, self._location)

    def write(self, batch: pa.RecordBatch) -> None:
        if self._files is None:
            self._files = self._open(batch.schema)
        assert self._target is not None
        self._files.write(conform(batch, self._target))

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        if self._files is None:
            return None
        assert self._location is not None
        return data_file_infos(checkpoint_id, self._files.flush(), self._location)

    def close(self) -> None:
        if self._files is not None:
            self._files.abort()  # files written but never handed to a checkpoint
            self._files = None
