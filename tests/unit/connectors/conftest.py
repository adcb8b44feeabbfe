from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, Source, iter_batches
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem


@pytest.fixture(params=["local", "memory"])
def base_url(request, tmp_path) -> Iterator[str]:
    """A fresh, empty directory URL on the local or the memory file system."""
    if request.param == "local":
        yield f"file://{tmp_path}/data"
    else:
        store = f"t-{uuid.uuid4().hex[:8]}"
        yield f"memory://{store}/data"
        MemoryFileSystem(store).delete("/", recursive=True)


def read_all(source: Source, parallelism: int = 1, batch_size: int = 65_536) -> list:
    """Every split of every subtask from the beginning, as one list of ``id`` values."""
    from airflow_provider_seatunnel_ckpt.connectors.api import assign_splits

    splits = source.splits(parallelism)
    ids: list = []
    for subtask in range(parallelism):
        for split in assign_splits(splits, parallelism, subtask):
            reader = source.create_reader(split, None, ReaderContext(subtask, parallelism, batch_size))
            for batch in iter_batches(reader):
                ids.extend(batch.column("id").to_pylist())
            reader.close()
    return ids
