"""Iceberg data-file entries as JSON: computed by a writer, turned into manifest entries
by the driver's committer.

pyiceberg's ``add_files`` reads every file's footer again on the committing process and
cannot place a file in a ``bucket``/``truncate`` partition. So the writer, which has the
footer in memory and knows each file's partition, computes the column statistics the
manifest needs (pyiceberg's own functions, the ones its writes use) and ships them in the
commit info: bounds as base64, field ids as strings; nothing is pickled.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def partition_representation(values: pa.Array) -> pa.Array:
    """Partition values as Iceberg keeps them in a partition tuple: dates as days, times
    and timestamps as microseconds; other types unchanged (JSON-safe after ``as_py``)."""
    kind = values.type
    if pa.types.is_date32(kind):
        return values.cast(pa.int32())
    if pa.types.is_timestamp(kind):
        return values.cast(pa.timestamp("us", tz=kind.tz)).cast(pa.int64())
    if pa.types.is_time64(kind):
        return values.cast(pa.time64("us")).cast(pa.int64())
    if pa.types.is_decimal(kind) or pa.types.is_binary(kind) or pa.types.is_fixed_size_binary(kind):
        raise ValueError(f"partition values of type {kind} are not supported; partition by another column or transform")
    return values


def statistics_of(table_metadata: Any) -> Any:
    """``FileMetaData -> JSON stats`` for files of a table with ``table_metadata``."""
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )

    schema = table_metadata.schema()
    plan = compute_statistics_plan(schema, table_metadata.properties)
    mapping = parquet_path_to_id_mapping(schema)

    def describe(metadata: pq.FileMetaData) -> dict[str, Any]:
        stats = data_file_statistics_from_parquet_metadata(
            parquet_metadata=metadata, stats_columns=plan, parquet_column_mapping=mapping
        ).to_serialized_dict()
        return {name: _encode(value) for name, value in stats.items()}

    return describe


def data_file(
    path_url: str, size: int, partition: Sequence[Any], stats: Mapping[str, Any], spec_id: int, format_version: int
) -> Any:
    """A pyiceberg ``DataFile`` (manifest entry) for a file a writer described."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    arguments = {name: _decode(name, value) for name, value in stats.items()}
    return DataFile.from_args(
        _table_format_version=format_version,
        content=DataFileContent.DATA,
        file_path=path_url,
        file_format=FileFormat.PARQUET,
        partition=Record(*partition),
        file_size_in_bytes=size,
        sort_order_id=None,
        spec_id=spec_id,
        equality_ids=None,
        key_metadata=None,
        **arguments,
    )


def _encode(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v for k, v in value.items()}
    return value


_BYTES_MAPS = ("lower_bounds", "upper_bounds")


def _decode(name: str, value: Any) -> Any:
    if isinstance(value, dict):
        if name in _BYTES_MAPS:
            return {int(k): base64.b64decode(v) for k, v in value.items()}
        return {int(k): v for k, v in value.items()}
    return value
