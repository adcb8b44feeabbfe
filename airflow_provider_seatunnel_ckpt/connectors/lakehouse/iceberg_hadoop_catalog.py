"""Iceberg's ``hadoop`` catalog on a local filesystem, for pyiceberg.

The layout is Iceberg Java's HadoopCatalog, so either side can read what the other
wrote: a namespace is a directory under the warehouse, a table is a directory holding
``metadata/``, each commit adds ``metadata/v<N>.metadata.json`` and rewrites
``metadata/version-hint.text`` to hold N.

Commits are optimistic and atomic without a metastore: the new metadata goes to a
temporary file, fsynced, that is then hard-linked to ``v<N+1>.metadata.json`` (and the
directory fsynced: after an OS crash a version is whole or absent). ``link`` refuses an
existing name, so of two writers that started from version N exactly one publishes
N+1; the other gets ``CommitFailedException`` and retries from the new version (Java
relies on ``rename`` refusing an existing target the same way). The version hint is
only a hint: readers also list the metadata directory and take the highest version, so
a writer that dies between the link and the hint loses nothing.

Local warehouses only (``file://`` URLs or paths): object stores have neither ``link``
nor an atomic ``rename``-without-overwrite, so a hadoop catalog there cannot commit
safely.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pyiceberg.catalog import MetastoreCatalog, PropertiesUpdateSummary
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
)
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, StagedTable, Table
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.typedef import EMPTY_DICT, Identifier, Properties
from pyiceberg.utils.config import Config

from ...errors import CheckpointStorageError
from ...storage.fs_local import LocalFileSystem

_VERSION_FILE = re.compile(r"v(\d+)(\.gz)?\.metadata\.json")
_HINT = "version-hint.text"


def _metadata_bytes(metadata: TableMetadata) -> bytes:
    """The metadata file's content, as pyiceberg's ``ToOutputFile.table_metadata`` makes it
    for an uncompressed ``v<N>.metadata.json`` (a missing current snapshot id is left out,
    or written as -1 under pyiceberg's ``legacy-current-snapshot-id`` setting)."""
    legacy = Config().get_bool("legacy-current-snapshot-id")
    return metadata.model_dump_json(exclude_none=not legacy).encode("utf-8")


def local_warehouse(warehouse: str) -> str | None:
    """The directory of a local warehouse (``file://`` URL or path); None for any other scheme."""
    text = warehouse.strip()
    parts = urlsplit(text)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            return None
        path = unquote(parts.path)
    elif parts.scheme and not (len(parts.scheme) == 1 and os.name == "nt"):
        return None
    else:
        path = text
    return os.path.abspath(os.path.expanduser(path)) if path else None


class HadoopCatalog(MetastoreCatalog):
    """A catalog whose only state is the warehouse directory tree."""

    def __init__(self, name: str, **properties: str):
        super().__init__(name, **properties)
        root = local_warehouse(properties.get("warehouse", ""))
        if root is None:
            raise ValueError(
                f"warehouse {properties.get('warehouse')!r}: a hadoop catalog needs a local "
                "directory (file:// or a path)"
            )
        self.root = Path(root)
        #: writes of metadata files and the hint: fsynced, atomic (the checkpoint storage's own)
        self._files = LocalFileSystem()

    # ---- paths ----------------------------------------------------------------------------------
    def _namespace_dir(self, namespace: str | Identifier) -> Path:
        parts = self.identifier_to_tuple(namespace)
        if not parts or any(not p or p in (".", "..") or "/" in p for p in parts):
            raise NoSuchNamespaceError(f"invalid namespace: {namespace!r}")
        return self.root.joinpath(*parts)

    def _table_dir(self, identifier: str | Identifier) -> tuple[Identifier, Path]:
        parts = self.identifier_to_tuple(identifier)
        if len(parts) < 2:
            raise NoSuchTableError(f"invalid table identifier (no namespace): {identifier!r}")
        return parts, self._namespace_dir(parts[:-1]) / parts[-1]

    @staticmethod
    def _url(path: Path) -> str:
        return path.as_uri()

    @staticmethod
    def _versions(metadata_dir: Path) -> dict[int, Path]:
        try:
            names = os.listdir(metadata_dir)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        found: dict[int, Path] = {}
        for name in names:
            if match := _VERSION_FILE.fullmatch(name):
                found.setdefault(int(match.group(1)), metadata_dir / name)
        return found

    def _current_version(self, metadata_dir: Path) -> tuple[int, Path] | None:
        """The newest version. The hint can only lag the listing (a writer died between
        the link and the hint, or the hint is missing), so the listing decides; a hint
        naming a version whose file is gone is ignored."""
        versions = self._versions(metadata_dir)
        if not versions:
            return None
        try:
            hinted = int((metadata_dir / _HINT).read_text().strip())
        except (OSError, ValueError):
            hinted = -1
        version = max(max(versions), hinted if hinted in versions else -1)
        return version, versions[version]

    def _is_table_dir(self, path: Path) -> bool:
        return bool(self._versions(path / "metadata"))

    # ---- tables ---------------------------------------------------------------------------------
    def _load(self, identifier: str | Identifier) -> tuple[Table, int]:
        parts, table_dir = self._table_dir(identifier)
        current = self._current_version(table_dir / "metadata")
        if current is None:
            raise NoSuchTableError(f"Table does not exist: {'.'.join(parts)}")
        version, path = current
        location = self._url(path)
        io = self._load_file_io(location=location)
        metadata = FromInputFile.table_metadata(io.new_input(location))
        return Table(
            identifier=parts,
            metadata=metadata,
            metadata_location=location,
            io=self._load_file_io(metadata.properties, location),
            catalog=self,
        ), version

    def load_table(self, identifier: str | Identifier) -> Table:
        return self._load(identifier)[0]

    def _create_staged_table(
        self,
        identifier: str | Identifier,
        schema: Schema | Any,
        location: str | None = None,
        partition_spec: PartitionSpec = UNPARTITIONED_PARTITION_SPEC,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Properties = EMPTY_DICT,
    ) -> StagedTable:
        parts, table_dir = self._table_dir(identifier)
        # the table's place is its identifier: readers find it by path, as Java's does
        if location and local_warehouse(location) != str(table_dir):
            raise ValueError(f"a hadoop catalog keeps {'.'.join(parts)} at {self._url(table_dir)}, not {location}")
        if self._is_table_dir(table_dir):
            raise TableAlreadyExistsError(f"Table {'.'.join(parts)} already exists")
        from pyiceberg.table import TableProperties

        format_version = int(properties.get(TableProperties.FORMAT_VERSION, TableProperties.DEFAULT_FORMAT_VERSION))
        schema = self._convert_schema_if_needed(schema, format_version)
        metadata = new_table_metadata(
            location=self._url(table_dir),
            schema=schema,
            partition_spec=partition_spec,
            sort_order=sort_order,
            properties=properties,
        )
        metadata_location = self._url(table_dir / "metadata" / "v1.metadata.json")
        return StagedTable(
            identifier=parts,
            metadata=metadata,
            metadata_location=metadata_location,
            io=self._load_file_io(properties, metadata_location),
            catalog=self,
        )

    def create_table(self, identifier: str | Identifier, schema: Schema | Any, *args: Any, **kwargs: Any) -> Table:
        """pyiceberg's ``create_table`` (location, partition_spec, sort_order, properties)."""
        staged = self._create_staged_table(identifier, schema, *args, **kwargs)
        parts, table_dir = self._table_dir(identifier)
        try:
            self._publish(table_dir / "metadata", 0, staged.metadata)
        except CommitFailedException:
            raise TableAlreadyExistsError(f"Table {'.'.join(parts)} already exists") from None
        return self.load_table(parts)

    def commit_table(
        self, table: Table, requirements: tuple[Any, ...], updates: tuple[Any, ...]
    ) -> CommitTableResponse:
        parts, table_dir = self._table_dir(table.name())
        try:
            current, base_version = self._load(parts)
        except NoSuchTableError:
            current, base_version = None, 0
        staged = self._update_and_stage_table(current, parts, requirements, updates)
        if current is not None and staged.metadata == current.metadata:
            return CommitTableResponse(metadata=current.metadata, metadata_location=current.metadata_location)
        location = self._publish(table_dir / "metadata", base_version, staged.metadata)
        if current is not None:
            self._delete_old_metadata(staged.io, current.metadata, staged.metadata)
        return CommitTableResponse(metadata=staged.metadata, metadata_location=location)

    def _publish(self, metadata_dir: Path, base_version: int, metadata: TableMetadata) -> str:
        """Write ``metadata`` as version ``base_version + 1``, unless another writer got
        there first (CommitFailedException). Returns the new metadata file's URL.

        Crash-safe as the checkpoint storage's own create-only writes: the bytes go to a
        temporary file that is fsynced *before* it is hard-linked to ``v<N+1>.metadata.json``,
        then the directory is fsynced. Without the first fsync an OS crash (power loss,
        kernel panic) can keep the link, a metadata change the file systems journal, and
        lose the bytes still in the page cache: the newest version, the one every reader
        takes, empty. Without the second the commit the sink reported (and the engine
        acted on) can vanish."""
        version = base_version + 1
        versions = self._versions(metadata_dir)
        if versions and max(versions) != base_version:
            raise CommitFailedException(
                f"{metadata_dir.parent}: version {max(versions)} was committed while this "
                f"commit was based on version {base_version}"
            )
        final = metadata_dir / f"v{version}.metadata.json"
        try:
            self._files.create_new(str(final), _metadata_bytes(metadata))
        except FileExistsError:
            raise CommitFailedException(
                f"{metadata_dir.parent}: version {version} was committed by another writer"
            ) from None
        self._write_hint(metadata_dir, version)
        return self._url(final)

    def _write_hint(self, metadata_dir: Path, version: int) -> None:
        # Replaced whole (a temporary file, fsynced, renamed over it): readers that trust
        # the hint, as Java's and DuckDB's do, never find it empty or half-written. A
        # failure here is harmless since readers list the directory too.
        try:
            self._files.write_atomic(str(metadata_dir / _HINT), str(version).encode())
        except (OSError, CheckpointStorageError):
            pass

    def register_table(self, identifier: str | Identifier, metadata_location: str, overwrite: bool = False) -> Table:
        raise NotImplementedError("a hadoop catalog cannot register tables (a table is its directory)")

    def drop_table(self, identifier: str | Identifier) -> None:
        parts, table_dir = self._table_dir(identifier)
        if not self._is_table_dir(table_dir):
            raise NoSuchTableError(f"Table does not exist: {'.'.join(parts)}")
        shutil.rmtree(table_dir)

    def rename_table(self, from_identifier: str | Identifier, to_identifier: str | Identifier) -> Table:
        raise NotImplementedError("a hadoop catalog cannot rename tables (Iceberg Java's cannot either)")

    def list_tables(self, namespace: str | Identifier) -> list[Identifier]:
        parts = self.identifier_to_tuple(namespace)
        directory = self._namespace_dir(parts)
        if not directory.is_dir() or self._is_table_dir(directory):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parts)}")
        return sorted(
            parts + (child.name,) for child in directory.iterdir() if child.is_dir() and self._is_table_dir(child)
        )

    # ---- namespaces -----------------------------------------------------------------------------
    def create_namespace(self, namespace: str | Identifier, properties: Properties = EMPTY_DICT) -> None:
        if properties:
            raise ValueError("a hadoop catalog cannot store namespace properties")
        directory = self._namespace_dir(namespace)
        try:
            directory.mkdir(parents=True)
        except FileExistsError:
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {namespace}") from None

    def drop_namespace(self, namespace: str | Identifier) -> None:
        directory = self._namespace_dir(namespace)
        if not directory.is_dir() or self._is_table_dir(directory):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace}")
        if any(directory.iterdir()):
            raise NamespaceNotEmptyError(f"Namespace {namespace} is not empty")
        directory.rmdir()

    def list_namespaces(self, namespace: str | Identifier = ()) -> list[Identifier]:
        parts = self.identifier_to_tuple(namespace) if namespace else ()
        directory = self._namespace_dir(parts) if parts else self.root
        if parts and (not directory.is_dir() or self._is_table_dir(directory)):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parts)}")
        if not directory.is_dir():
            return []
        return sorted(
            parts + (child.name,)
            for child in directory.iterdir()
            if child.is_dir() and not child.name.startswith(".") and not self._is_table_dir(child)
        )

    def load_namespace_properties(self, namespace: str | Identifier) -> Properties:
        directory = self._namespace_dir(namespace)
        if not directory.is_dir() or self._is_table_dir(directory):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace}")
        return {"location": self._url(directory)}

    def update_namespace_properties(
        self, namespace: str | Identifier, removals: set[str] | None = None, updates: Properties = EMPTY_DICT
    ) -> PropertiesUpdateSummary:
        raise NotImplementedError("a hadoop catalog cannot store namespace properties")

    # ---- views (a hadoop catalog has none) ------------------------------------------------------
    def list_views(self, namespace: str | Identifier) -> list[Identifier]:
        return []

    def view_exists(self, identifier: str | Identifier) -> bool:
        return False

    def load_view(self, identifier: str | Identifier) -> Any:
        raise NoSuchViewError(f"a hadoop catalog has no views: {identifier}")

    def register_view(self, identifier: str | Identifier, metadata_location: str) -> Any:
        raise NotImplementedError("a hadoop catalog has no views")

    def drop_view(self, identifier: str | Identifier) -> None:
        raise NoSuchViewError(f"a hadoop catalog has no views: {identifier}")
