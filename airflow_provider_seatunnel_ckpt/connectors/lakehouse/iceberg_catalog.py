"""Reaching an Iceberg table through pyiceberg: the options the Iceberg source and sink
share (SeaTunnel's ``catalog_name``, ``namespace``, ``table``, ``iceberg.catalog.config``
and the warehouse's storage options), with one-line errors."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from tenacity import (
    Retrying,
    retry_if_not_exception_type,
    stop_after_attempt,
    wait_random,
)

from ...errors import ConfigError, ConnectorError
from ..api import Dataset
from ..datasets import iceberg_dataset
from ..options import REQUIRED, Option, Parsed
from .common import TableLocation, reason, s3_properties, storage_of

_CATALOG_LOCK = threading.Lock()


def _catalog_config(config: Any) -> dict[str, str]:
    if not isinstance(config, Mapping) or not config:
        raise ConfigError(
            "iceberg.catalog.config",
            "is required: the catalog's properties, e.g. "
            "{type: sql, uri: 'sqlite:////path/catalog.db', warehouse: 'file:///path'}",
        )
    return {str(k): str(v) for k, v in config.items()}


#: options of every Iceberg connector
TABLE_OPTIONS = (
    Option("catalog_name", "str", "the catalog's name", "default"),
    Option("namespace", "str", "the table's namespace (database)", REQUIRED),
    Option("table", "str", "the table's name", REQUIRED),
    Option(
        "iceberg.catalog.config",
        "value",
        "the catalog's pyiceberg properties (type, uri, warehouse...)",
        REQUIRED,
        convert=_catalog_config,
    ),
    Option(
        "case_sensitive",
        "bool",
        "column names match in case",
        True,
        convert=lambda value: str(True if value is None else value).lower() != "false",
    ),
)


class IcebergTableAccess:
    """Mixed into the Iceberg source and sink: the catalog, the table, its location."""

    def read_table_options(self, opts: Parsed) -> None:
        self.catalog_name: str = opts["catalog_name"]
        self.namespace: str = opts["namespace"]
        self.table_name: str = opts["table"]
        self.identifier = f"{self.namespace}.{self.table_name}"
        self.catalog_config: dict[str, str] = opts["iceberg.catalog.config"]
        #: SeaTunnel's ``type = hadoop``: our own catalog over a local warehouse (.iceberg_hadoop_catalog)
        self.hadoop_catalog = self.catalog_config.get("type", "").strip().lower() == "hadoop"
        if self.hadoop_catalog:
            from .iceberg_hadoop_catalog import local_warehouse

            warehouse = self.catalog_config.get("warehouse", "")
            if not warehouse or local_warehouse(warehouse) is None:
                # commits there would not be atomic: object stores cannot refuse an existing name
                raise ConfigError(
                    "iceberg.catalog.config.warehouse",
                    f"{warehouse or 'missing'}: a hadoop catalog needs a local warehouse (file:// or a "
                    'path); elsewhere use a SQL catalog: {type = sql, uri = "sqlite:////path/catalog.db", '
                    f'warehouse = "{warehouse or "s3://bucket/warehouse"}"}}, or REST, Hive or Glue',
                )
        self.case_sensitive: bool = opts["case_sensitive"]
        self.storage_options = storage_of(opts.raw)
        self._catalog: Any = None

    def describe(self) -> str:
        return f"Iceberg table {self.identifier} in catalog {self.catalog_name!r}"

    def datasets(self) -> list[Dataset]:
        return [iceberg_dataset(self.catalog_name, self.namespace, self.table_name)]

    def catalog(self) -> Any:
        with _CATALOG_LOCK:
            if self._catalog is None:
                self._catalog = self._open_catalog()
        return self._catalog

    def _open_catalog(self) -> Any:
        from pyiceberg.catalog import load_catalog

        properties = {**s3_properties(self.storage_options), **self.catalog_config}
        if self.hadoop_catalog:
            from .iceberg_hadoop_catalog import HadoopCatalog

            properties.pop("type")
            return HadoopCatalog(self.catalog_name, **properties)
        _make_sqlite_directory(properties)
        # A SQL catalog creates its own tables when first opened: subtasks opening a new
        # catalog at once race on that ("table iceberg_tables already exists"); again works.
        retrying = Retrying(
            stop=stop_after_attempt(4),
            wait=wait_random(0.05, 0.3),
            reraise=True,
            retry=retry_if_not_exception_type(ValueError),
        )
        try:
            return retrying(load_catalog, self.catalog_name, **properties)
        except ValueError as err:  # an unknown type, a malformed property
            raise ConfigError("iceberg.catalog.config", f"catalog {self.catalog_name!r}: {err}") from None
        except Exception as err:
            raise ConnectorError(f"cannot open catalog {self.catalog_name!r}: {reason(err)}") from None

    def load_table(self) -> Any | None:
        """The table, or None when it (or its namespace) does not exist."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        try:
            return self.catalog().load_table(self.identifier)
        except (NoSuchTableError, NoSuchNamespaceError):
            return None
        except ConfigError:
            raise
        except Exception as err:
            raise ConnectorError(f"cannot load {self.describe()}: {reason(err)}") from None

    def location_of(self, table: Any) -> TableLocation:
        return TableLocation.of(table.location(), self.storage_options, key="iceberg.catalog.config.warehouse")


def _make_sqlite_directory(properties: Mapping[str, str]) -> None:
    """A SQL catalog in a sqlite file: make the file's directory (sqlite makes the file)."""
    uri = properties.get("uri", "")
    if properties.get("type", "").lower() == "sql" and uri.startswith("sqlite:///") and uri != "sqlite:///:memory:":
        os.makedirs(os.path.dirname(uri[len("sqlite:///") :]) or ".", exist_ok=True)
