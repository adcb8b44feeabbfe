"""Connector registry: a job file's ``plugin_name`` -> source, transform or sink class.

Names are case-insensitive. Built-ins are registered as dotted strings, so a connector's
module (and its dependencies) is imported only when a job uses it; :func:`register_source`
and friends add more (a class or ``"module:Class"``). The transforms live in the package
beside this one (``..transforms``, SeaTunnel's transforms-v2).

:func:`load_source`, :func:`load_transform` and :func:`load_sink` build a connector from
one job-file entry: they put the entry's key in front of the connector's ``ConfigError``
(``source[0].rows``), keep it as ``config_key`` for errors found later on an executor, and
drop SeaTunnel's table-wiring keys, which mean nothing in a linear pipeline.

The built-in names and their classes are ``_registry`` below; what each does:
docs/jobs.md, and docs/seatunnel.md ("Connectors and transforms") for SeaTunnel's.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:  # .api imports pyarrow; the registry is imported without the engine installed
    from .api import Sink, Source, Transform

_PKG = __name__
#: the transforms' package, beside this one (transforms/: SeaTunnel's transforms-v2)
_TRANSFORMS = f"{_PKG.rpartition('.')[0]}.transforms"

#: kind -> lower-case name -> (display name, class or "module:Class")
_registry: dict[str, dict[str, tuple[str, str | type]]] = {
    "source": {
        "sequence": ("Sequence", f"{_PKG}.sequence:SequenceSource"),
        "fakesource": ("FakeSource", f"{_PKG}.fake_source:FakeSource"),
        "file": ("File", f"{_PKG}.file.source:FileSource"),
        "localfile": ("LocalFile", f"{_PKG}.file.local:LocalFileSource"),
        "s3file": ("S3File", f"{_PKG}.file.s3:S3FileSource"),
        "ossfile": ("OssFile", f"{_PKG}.file.oss:OssFileSource"),
        "hdfsfile": ("HdfsFile", f"{_PKG}.file.hdfs:HdfsFileSource"),
        "jdbc": ("Jdbc", f"{_PKG}.jdbc.source:JdbcSource"),
        "iceberg": ("Iceberg", f"{_PKG}.lakehouse.iceberg_source:IcebergSource"),
        "delta": ("Delta", f"{_PKG}.lakehouse.delta_source:DeltaSource"),
        "kafka": ("Kafka", f"{_PKG}.kafka.source:KafkaSource"),
    },
    "transform": {
        "python": ("Python", f"{_TRANSFORMS}.python_function:PythonTransform"),
        "countbykey": ("CountByKey", f"{_TRANSFORMS}.count_by_key:CountByKeyTransform"),
        "select": ("Select", f"{_TRANSFORMS}.select:SelectTransform"),
        "rename": ("Rename", f"{_TRANSFORMS}.rename:RenameTransform"),
        "filter": ("Filter", f"{_TRANSFORMS}.filter:FilterTransform"),
        "sql": ("Sql", f"{_TRANSFORMS}.sql:SqlTransform"),
        "fieldmapper": ("FieldMapper", f"{_TRANSFORMS}.fields:FieldMapperTransform"),
        "copy": ("Copy", f"{_TRANSFORMS}.fields:CopyTransform"),
        "replace": ("Replace", f"{_TRANSFORMS}.fields:ReplaceTransform"),
        "split": ("Split", f"{_TRANSFORMS}.fields:SplitTransform"),
        "jsonpath": ("JsonPath", f"{_TRANSFORMS}.json_path:JsonPathTransform"),
        "filterrowkind": ("FilterRowKind", f"{_TRANSFORMS}.row_kind:FilterRowKindTransform"),
        "rowkindextractor": ("RowKindExtractor", f"{_TRANSFORMS}.row_kind:RowKindExtractorTransform"),
    },
    "sink": {
        "file": ("File", f"{_PKG}.file.sink:FileSink"),
        "localfile": ("LocalFile", f"{_PKG}.file.local:LocalFileSink"),
        "s3file": ("S3File", f"{_PKG}.file.s3:S3FileSink"),
        "ossfile": ("OssFile", f"{_PKG}.file.oss:OssFileSink"),
        "hdfsfile": ("HdfsFile", f"{_PKG}.file.hdfs:HdfsFileSink"),
        "console": ("Console", f"{_PKG}.console:ConsoleSink"),
        "assert": ("Assert", f"{_PKG}.assert_sink:AssertSink"),
        "inmemory": ("InMemory", f"{_PKG}.in_memory:InMemorySink"),
        "jdbc": ("Jdbc", f"{_PKG}.jdbc.sink:JdbcSink"),
        "iceberg": ("Iceberg", f"{_PKG}.lakehouse.iceberg_sink:IcebergSink"),
        "delta": ("Delta", f"{_PKG}.lakehouse.delta_sink:DeltaSink"),
        "kafka": ("Kafka", f"{_PKG}.kafka.sink:KafkaSink"),
    },
}
#: built-in connector family -> the pip extra it needs (:mod:`..extras`); the rest need
#: the engine only. A connector registered by a third party brings its own dependencies.
_EXTRA_OF = {"jdbc": "jdbc", "kafka": "kafka", "iceberg": "iceberg", "delta": "delta", "sql": "sql", "filter": "sql"}
#: kind -> the connector API class a registered class must extend
_BASES = {"source": "Source", "transform": "Transform", "sink": "Sink"}
_lock = threading.Lock()

#: read-only views: lower-case plugin name -> (display name, class or dotted path)
sources: Mapping[str, tuple[str, str | type]] = MappingProxyType(_registry["source"])
transforms: Mapping[str, tuple[str, str | type]] = MappingProxyType(_registry["transform"])
sinks: Mapping[str, tuple[str, str | type]] = MappingProxyType(_registry["sink"])

#: SeaTunnel keys that wire tables together; a linear pipeline ignores them. SeaTunnel's
#: other common option, ``parallelism``, reaches only connectors whose output depends on
#: it (``reads_parallelism_option``: FakeSource's rows per reader); the pipeline runs with
#: ``env.parallelism`` subtasks throughout and job.py warns when an entry asks otherwise.
IGNORED_KEYS = frozenset({"plugin_input", "plugin_output", "source_table_name", "result_table_name"})


def register_source(name: str, target: str | type) -> None:
    _register("source", name, target)


def register_transform(name: str, target: str | type) -> None:
    _register("transform", name, target)


def register_sink(name: str, target: str | type) -> None:
    _register("sink", name, target)


def _register(kind: str, name: str, target: str | type) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a {kind} needs a non-empty plugin name, got {name!r}")
    with _lock:
        _registry[kind][name.strip().lower()] = (name.strip(), target)


def source_class(name: str, key: str = "plugin_name") -> type[Source]:
    return _class("source", name, key)


def transform_class(name: str, key: str = "plugin_name") -> type[Transform]:
    return _class("transform", name, key)


def sink_class(name: str, key: str = "plugin_name") -> type[Sink]:
    return _class("sink", name, key)


def _class(kind: str, name: Any, key: str) -> Any:
    known = ", ".join(sorted(display for display, _ in _registry[kind].values()))
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(key, f"expected the name of a {kind} ({known}), got {name!r}")
    found = _registry[kind].get(name.strip().lower())
    if found is None:
        raise ConfigError(key, f"unknown {kind} {name!r}; known {kind}s: {known}")
    display, target = found
    if isinstance(target, str) and target.startswith((f"{_PKG}.", f"{_TRANSFORMS}.")):
        from ..extras import require

        require(_EXTRA_OF.get(name.strip().lower(), "engine"), f"connector {display}", key)
    if isinstance(target, str):
        module_name, _, attribute = target.partition(":")
        try:
            target = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(key, f"{kind} {display!r} cannot be loaded from {found[1]!r}: {exc}") from exc
    from . import api

    base = _BASES[kind]
    if not (isinstance(target, type) and issubclass(target, getattr(api, base))):
        raise ConfigError(key, f"{kind} {display!r} is registered as {target!r}, which is not a {base}")
    return target


def module_of(kind: str, name: Any) -> str | None:
    """The module that defines the ``kind`` connector called ``name`` (None when unknown),
    without importing it."""
    found = _registry.get(kind, {}).get(str(name).strip().lower()) if isinstance(name, str) else None
    if found is None:
        return None
    target = found[1]
    return target.partition(":")[0] if isinstance(target, str) else target.__module__


def load_source(entry: Mapping[str, Any], key: str = "source[0]") -> Source:
    return _load("source", entry, key)


def load_transform(entry: Mapping[str, Any], key: str = "transform[0]") -> Transform:
    return _load("transform", entry, key)


def load_sink(entry: Mapping[str, Any], key: str = "sink[0]") -> Sink:
    return _load("sink", entry, key)


def _load(kind: str, entry: Mapping[str, Any], key: str) -> Any:
    if not isinstance(entry, Mapping):
        raise ConfigError(key, f"expected a mapping with plugin_name and options, got {type(entry).__name__}")
    if "plugin_name" not in entry:
        raise ConfigError(f"{key}.plugin_name", f"is required (the {kind} to use)")
    cls = _class(kind, entry["plugin_name"], f"{key}.plugin_name")
    options = {k: v for k, v in entry.items() if k != "plugin_name" and k not in IGNORED_KEYS}
    if not getattr(cls, "reads_parallelism_option", False):
        options.pop("parallelism", None)  # SeaTunnel's common option; the job runs one parallelism (job.py)
    if not getattr(cls, "reads_job_mode", False):
        options.pop("job.mode", None)  # the job's env.job.mode, given to every source by job.py
    tables_option = getattr(cls, "tables_option", "tables_configs")
    try:
        if kind == "source" and tables_option in options and getattr(cls, "reads_tables_configs", False):
            from .union import tables_source  # several tables of one connector (SeaTunnel's tables_configs)

            instance = tables_source(cls, options, tables_option)
        else:
            instance = cls(options)
    except ConfigError as err:
        problem = err.problem
        value = options.get(err.key)
        if isinstance(value, str) and "${" in value:  # a variable left unset (jobfile/variables.py)
            problem += "; a variable in it is not set (-i NAME=value, --variables or the environment)"
        raise ConfigError(f"{key}.{err.key}" if err.key else key, problem) from None
    instance.config_key = key
    if getattr(instance, "table_names", None) is not None:  # errors name the table's block
        for index, part in enumerate(instance.sources):
            part.config_key = f"{key}.{tables_option}[{index}]"
    return instance


def load_table_sinks(entry: Mapping[str, Any], key: str, table_names: Sequence[str]) -> list[Sink]:
    """One sink per table of a source of several tables, each built from ``entry`` with
    its table placeholders (``${table_name}``...) filled, as SeaTunnel's multi-table sink
    does (:mod:`.table_placeholders`)."""
    from .table_placeholders import fill_table_placeholders

    entries = [fill_table_placeholders(entry, name) for name in table_names]
    shares = getattr(_class("sink", entry.get("plugin_name"), f"{key}.plugin_name"), "tables_may_share_target", False)
    if not shares and len({repr(sorted(e.items(), key=lambda item: item[0])) for e in entries}) < len(entries):
        raise ConfigError(
            key,
            f"{entry.get('plugin_name')} reads several tables ({', '.join(table_names)}) and its "
            'options are the same for each: name the table in them (path = "/data/${table_name}", '
            'table = "${table_name}"), so that each table is written apart',
        )
    return [load_sink(filled, key) for filled in entries]


def load_sink_of_table(entry: Mapping[str, Any], key: str, source_entry: Mapping[str, Any]) -> Sink:
    """The sink of ``entry`` writing the one table of ``source_entry``: its table
    placeholders (``${table_name}``...) filled with that table, as SeaTunnel fills them."""
    from .table_placeholders import fill_table_placeholders, has_table_placeholder, table_path_of

    if isinstance(entry, Mapping) and has_table_placeholder(entry):
        entry = fill_table_placeholders(entry, table_path_of(source_entry))
    return load_sink(entry, key)


def sink_writes_tables(entry: Mapping[str, Any], key: str = "sink[0]") -> bool:
    """Whether the sink of ``entry`` takes the batches of several tables itself (Assert,
    Console) rather than one sink per table."""
    if not isinstance(entry, Mapping):
        return False
    return bool(getattr(sink_class(entry.get("plugin_name"), f"{key}.plugin_name"), "writes_tables", False))


def __getattr__(name: str) -> Any:
    # imported when used: the registry itself must load without pyarrow (extras.py)
    if name == "SourceUnion":
        from .union import SourceUnion

        return SourceUnion
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SourceUnion",
    "IGNORED_KEYS",
    "load_sink",
    "load_sink_of_table",
    "load_table_sinks",
    "load_source",
    "load_transform",
    "module_of",
    "register_sink",
    "register_source",
    "register_transform",
    "sink_class",
    "sink_writes_tables",
    "sinks",
    "source_class",
    "sources",
    "transform_class",
    "transforms",
]
