"""Several sources read as one: the union of their splits.

Two uses. The engine reads a job's several sources this way (each split id says its
source: ``1/range-000``). And one source entry with SeaTunnel's ``tables_configs`` is
several tables of one connector (:func:`tables_source`): one source per table, whose
batches carry their table's name in the Arrow schema's metadata (:func:`table_of`), so a
sink that writes several tables (``Assert`` with per-table rules) tells them apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..errors import ConfigError
from .api import KINDS, TABLE_KEY, Dataset, JsonValue, ReaderContext, Source, SourceReader, Split, close_all


class SourceUnion(Source):
    plugin_name = "sources"

    def __init__(self, sources: Sequence[Source], table_names: Sequence[str] | None = None):
        super().__init__({})
        self.sources = list(sources)
        #: one per source when the sources are the tables of one entry (tables_configs)
        self.table_names = list(table_names) if table_names is not None else None
        self.reads_splits_together = any(s.reads_splits_together for s in self.sources)
        intervals = [s.discovery_interval_s for s in self.sources if s.discovery_interval_s]
        self.discovery_interval_s = min(intervals) if intervals else None
        self.change_rows = tuple(k for k in KINDS if any(k in s.change_rows for s in self.sources))

    @staticmethod
    def origin(split: Split) -> int:
        """The index of the source that ``split`` belongs to."""
        return int(split.spec["source"])

    @staticmethod
    def _wrap(index: int, split: Split) -> Split:
        return Split(
            f"{index}/{split.split_id}", {"source": index, "split_id": split.split_id, "spec": dict(split.spec)}
        )

    @staticmethod
    def _unwrap(split: Split) -> Split:
        return Split(split.spec["split_id"], split.spec["spec"])

    def splits(self, parallelism: int) -> list[Split]:
        return [self._wrap(i, split) for i, source in enumerate(self.sources) for split in source.splits(parallelism)]

    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        index = self.origin(split)
        reader = self.sources[index].create_reader(self._unwrap(split), position, context)
        return reader if self.table_names is None else _TaggingReader(reader, self.table_names[index])

    def discover_splits(self, known: Sequence[Split]) -> list[Split]:
        found = []
        for i, source in enumerate(self.sources):
            mine = [self._unwrap(s) for s in known if self.origin(s) == i]
            found += [self._wrap(i, split) for split in source.discover_splits(mine)]
        return found

    def datasets(self) -> list[Dataset]:
        return [dataset for source in self.sources for dataset in source.datasets()]

    def preflight(self) -> None:
        for source in self.sources:
            source.preflight()

    def checkpoint_completed(self, positions: Mapping[str, JsonValue]) -> None:
        for i, source in enumerate(self.sources):
            prefix = f"{i}/"
            mine = {split_id[len(prefix) :]: p for split_id, p in positions.items() if split_id.startswith(prefix)}
            if mine:
                source.checkpoint_completed(mine)

    def close(self) -> None:
        close_all(self.sources)

    def produced_schema(self) -> pa.Schema | None:
        return None  # the tables' schemas differ; a sink of several tables checks each itself


class _TaggingReader(SourceReader):
    def __init__(self, inner: SourceReader, table: str):
        self.inner = inner
        self.metadata = {TABLE_KEY: table.encode()}

    def read_batch(self) -> pa.RecordBatch | None:
        batch = self.inner.read_batch()
        if batch is None:
            return None
        return batch.replace_schema_metadata({**(batch.schema.metadata or {}), **self.metadata})

    def position(self) -> JsonValue:
        return self.inner.position()

    def close(self) -> None:
        self.inner.close()


def tables_source(
    build: Callable[[Mapping[str, Any]], Source], options: Mapping[str, Any], key: str = "tables_configs"
) -> SourceUnion:
    """One source per entry of ``options[key]`` (each entry's options over the shared
    ones), named by ``build.table_name(entry)`` (by default its ``schema.table``), as
    SeaTunnel's multi-table sources: ``tables_configs``, Kafka's ``table_list``."""
    tables = options[key]
    if not isinstance(tables, list) or not tables or not all(isinstance(t, Mapping) for t in tables):
        raise ConfigError(key, "expected a list of table blocks, each with its own options and schema")
    shared = {k: v for k, v in options.items() if k != key}
    name_of = getattr(build, "table_name", _schema_table)
    sources, names = [], []
    for index, table in enumerate(tables):
        where = f"{key}[{index}]"
        name, name_key = name_of(table)
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{where}.{name_key}", "is required: the name that tells the tables apart")
        if name.strip() in names:
            raise ConfigError(f"{where}.{name_key}", f"table {name.strip()!r} is named twice")
        try:
            sources.append(build({**shared, **table}))
        except ConfigError as err:
            raise ConfigError(f"{where}.{err.key}" if err.key else where, err.problem) from None
        names.append(name.strip())
    share = getattr(build, "tables_built", None)  # e.g. Kafka: the tables read through one consumer
    if share is not None:
        share(sources)
    return SourceUnion(sources, names)


def _schema_table(table: Mapping[str, Any]) -> tuple[Any, str]:
    schema = table.get("schema")
    return (schema.get("table") if isinstance(schema, Mapping) else None), "schema.table"
