"""Docs that run (issue #50): every fenced block of README.md and docs/*.md is executed or
validated here, by its language, and every error line the docs quote is one the code
prints.

* ``python``: run in a temporary directory, with the files it reads written there first
  (SETUP); what it prints is the plain block right after it, when the page shows one. A
  block that cannot run here is compiled and its imports resolved instead, and says why
  in COMPILE_ONLY; the blocks tests/airflow/test_docs.py runs are left to it
  (COVERED_ELSEWHERE).
* ``yaml``: parsed; a ``seatunnel.yaml`` (a ``seatunnel:`` or ``checkpoint:`` document) is
  loaded by ``load_config``, a job file (``env``/``source``/``transform``/``sink``) by
  ``load_job`` and ``check_job``, what ``seatunnel-ckpt run --check`` does; a fragment of a
  job file is completed by what FRAGMENTS adds, so that it is checked in a whole job.
* ``hocon``: SeaTunnel's job files: read and checked the same way.
* ``json``, ``toml``: parsed (JSON_FRAGMENTS: the excerpts of a larger document).
* ``bash``, ``console``: their shell text parses (``bash -n``), and every ``seatunnel-ckpt``
  command in them is accepted by the CLI's own argument parser. A console session is
  replayed (the files and checkpoints it names made first) and prints what the page
  shows; NOT_REPLAYED says why for the others.
* error and warning lines (``error: ...`` in a console, bash or plain block, or in
  backticks in prose): printed by the package, by test_troubleshooting.py's convention
  (``...`` and ``<placeholder>`` stand for what varies), extended to quotes of real output
  whose values were filled in: see :func:`printed_by_the_code`.
* untagged blocks are text (diagrams, layouts, output): none may start like a command.

Blocks are found by page and a short fingerprint of their text, never by position, so
edits elsewhere in a page do not move a table entry onto another block; an entry whose
block is gone fails :func:`test_every_table_entry_names_one_block`.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import io
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.literals import literal_pieces

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    end: int = 0  # the line of the closing fence

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.language or 'text'}"


def fenced_blocks() -> list[Block]:
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        index = 0
        while index < len(lines):
            opening = re.match(r"\s*(`{3,}|~{3,})\s*([\w+-]*)", lines[index])
            if not opening:
                index += 1
                continue
            fence, start, body = opening.group(1), index, []
            indent = len(lines[index]) - len(lines[index].lstrip())
            index += 1
            while index < len(lines) and not lines[index].strip().startswith(fence):
                body.append(lines[index][indent:] if lines[index][:indent].isspace() else lines[index])
                index += 1
            rel = str(page.relative_to(ROOT))
            found.append(Block(rel, start + 1, opening.group(2), "\n".join(body) + "\n", index + 1))
            index += 1
    return found


BLOCKS = fenced_blocks()


def blocks(language: str) -> list[Block]:
    return [block for block in BLOCKS if block.language == language]


def the_block(page: str, fingerprint: str) -> Block:
    matches = [block for block in BLOCKS if block.page == page and fingerprint in block.text]
    assert len(matches) == 1, f"{page}: {len(matches)} blocks hold {fingerprint!r}, the table expects one"
    return matches[0]


def output_after(block: Block) -> Block | None:
    """The plain block right after ``block`` (nothing but blank lines between): the
    output the page shows for it."""
    lines = (ROOT / block.page).read_text().splitlines()
    following = [other for other in BLOCKS if other.page == block.page and other.line > block.end]
    if not following or following[0].language:
        return None
    between = lines[block.end : following[0].line - 1]
    return following[0] if all(not line.strip() for line in between) else None


def entry(block: Block, table: dict[tuple[str, str], Any]) -> Any:
    for (page, fingerprint), value in table.items():
        if page == block.page and fingerprint in block.text:
            return value
    return None


# ----------------------------------------------------------------------------- tables

#: python blocks another test runs already (running them here too would be a second copy):
#: the test that does; an empty fingerprint is every python block of the page
COVERED_ELSEWHERE: dict[tuple[str, str], str] = {
    # executed in order in one namespace, with the page's connections exported, their
    # DAGs' tasks and the hook's answers checked
    ("docs/airflow.md", ""): "tests/airflow/test_docs.py::test_every_python_example_runs",
    # built, and its trigger rules run through a failed and a recovered job
    (
        "README.md",
        "from airflow.sdk import DAG",
    ): "tests/airflow/test_docs.py::test_readme_dag_ends_in_success_after_a_recovery",
}


def covered_elsewhere(block: Block) -> str | None:
    return entry(block, COVERED_ELSEWHERE) if block.language == "python" else None


#: storage.md's seatunnel.yaml, the one its Python examples and command-line session use
#: (its namespace under /tmp, which the tests move into their own directory)
STORAGE_CONFIG = ("docs/storage.md", "namespace: /tmp/seatunnel-demo/checkpoint/")


def flip_a_bit_of_checkpoint_5(tmp: Path) -> None:
    """storage.md: "After flipping a bit in the _metadata of checkpoint 5": its first."""
    metadata = tmp / "seatunnel-demo/checkpoint/orders-etl/pipeline-1/chk-00000000000000000005/_metadata"
    data = bytearray(metadata.read_bytes())
    data[0] ^= 1
    metadata.write_bytes(bytes(data))


@dataclass(frozen=True)
class Setup:
    """What a python block or a console session needs around it: files in its directory
    (``{tmp}`` is the test's directory), blocks of the same page to run before it (python
    blocks, console sessions: their fingerprints), where it runs."""

    files: dict[str, str | tuple[str, str]]  # name: text, or (page, fingerprint) of a block
    before: tuple[str, ...] = ()
    import_path: str = ""  # a directory (under tmp) put on sys.path
    then: Callable[[Path], None] | None = None  # after the blocks before it: what the page did
    cwd: str = ""  # the directory (under tmp) it runs in, and its files are written to


#: every block run here that reads files or follows another block (python blocks, yaml
#: read by a plugin, console sessions): what it needs
SETUP: dict[tuple[str, str], Setup] = {
    # load_config("seatunnel.yaml"): README and history.md name no particular one
    ("README.md", 'cfg = load_config("seatunnel.yaml")'): Setup({"seatunnel.yaml": STORAGE_CONFIG}),
    ("docs/history.md", "read_history("): Setup({"seatunnel.yaml": STORAGE_CONFIG}),
    ("docs/storage.md", "cfg = load_config"): Setup({"seatunnel.yaml": STORAGE_CONFIG}),
    ("docs/storage.md", "for checkpoint_id in range(1, 6)"): Setup({"seatunnel.yaml": STORAGE_CONFIG}),
    # the checkpoints of the session's script (the block after it), one of them damaged
    ("docs/storage.md", "logging.basicConfig"): Setup(
        {"seatunnel.yaml": STORAGE_CONFIG},
        before=("for checkpoint_id in range(1, 6)",),
        then=flip_a_bit_of_checkpoint_5,
    ),
    # the plugin example: its module importable (src/ layout, as its pyproject says), its
    # seatunnel.yaml (the page's, the database moved into the temporary directory)
    ("docs/storage.md", "print(storage_types())\nstorage = create_storage"): Setup(
        {
            "src/seatunnel_ckpt_sqlite/__init__.py": ("docs/storage.md", "class SqliteStorageFactory"),
            "seatunnel.yaml": ("docs/storage.md", "        type: sqlite\n"),
        },
        before=('register_storage("sqlite"',),
        import_path="src",
    ),
    # the plugin's seatunnel.yaml: validated by the plugin, registered as the page does
    ("docs/storage.md", "        type: sqlite\n"): Setup(
        {"src/seatunnel_ckpt_sqlite/__init__.py": ("docs/storage.md", "class SqliteStorageFactory")},
        before=('register_storage("sqlite"',),
        import_path="src",
    ),
    # console sessions: the files they name, the checkpoints they look at
    ("docs/configuration.md", "$ seatunnel-ckpt validate tests/fixtures/seed000_localfile.yaml"): Setup(
        {
            "tests/fixtures/seed000_localfile.yaml": (ROOT / "tests/fixtures/seed000_localfile.yaml").read_text(),
            # not shown on the page: an interval of -5, as the error says
            "bad.yaml": "seatunnel:\n  engine:\n    checkpoint:\n      interval: -5\n",
        }
    ),
    ("docs/jobs.md", "$ seatunnel-ckpt run --check orders.conf"): Setup(
        {"orders.conf": ("docs/seatunnel.md", 'LocalFile { plugin_input = "big"')}
    ),
    ("docs/storage.md", "$ seatunnel-ckpt validate localfile.yaml"): Setup(
        {"localfile.yaml": ("docs/storage.md", "        type: localfile\n")}
    ),
    ("docs/storage.md", "--job-id ../etc"): Setup({"seatunnel.yaml": STORAGE_CONFIG}),
    ("docs/storage.md", "$ seatunnel-ckpt list --config seatunnel.yaml\nclicks\norders-etl"): Setup(
        {"seatunnel.yaml": STORAGE_CONFIG}, before=("for checkpoint_id in range(1, 6)",), cwd="seatunnel-demo"
    ),
    ("docs/storage.md", "$ seatunnel-ckpt inspect --config seatunnel.yaml --job-id orders-etl --pipeline 2\n"): Setup(
        {"seatunnel.yaml": STORAGE_CONFIG}, before=("for checkpoint_id in range(1, 6)",), cwd="seatunnel-demo"
    ),
    ("docs/storage.md", "$ truncate -s 5000"): Setup(
        {"seatunnel.yaml": STORAGE_CONFIG}, before=("for checkpoint_id in range(1, 6)",), cwd="seatunnel-demo"
    ),
    # after the damage the session before it did
    ("docs/storage.md", "$ seatunnel-ckpt delete --config"): Setup(
        {"seatunnel.yaml": STORAGE_CONFIG},
        before=("for checkpoint_id in range(1, 6)", "$ truncate -s 5000"),
        cwd="seatunnel-demo",
    ),
    ("docs/storage.md", "$ seatunnel-ckpt validate s3_minio.yaml"): Setup(
        {"s3_minio.yaml": ("docs/storage.md", "fs.s3a.endpoint: http://minio.internal:9000")}
    ),
    ("docs/storage.md", "sqlite:///tmp/plugdemo/run/checkpoints.db/seatunnel/checkpoint/orders-etl"): Setup(
        {
            "src/seatunnel_ckpt_sqlite/__init__.py": ("docs/storage.md", "class SqliteStorageFactory"),
            "seatunnel.yaml": ("docs/storage.md", "        type: sqlite\n"),
        },
        before=('register_storage("sqlite"', "print(storage_types())\nstorage = create_storage"),
        import_path="src",
    ),
    ("docs/storage.md", 'register_storage("sqlite"'): Setup(
        {"src/seatunnel_ckpt_sqlite/__init__.py": ("docs/storage.md", "class SqliteStorageFactory")},
        import_path="src",
    ),
}

#: python blocks only compiled, their imports resolved: why running them is not possible here
COMPILE_ONLY: dict[tuple[str, str], str] = {
    # the plugin's module: importing it defines classes and runs nothing; its behaviour is
    # run by the two blocks that use it (SETUP puts it on sys.path)
    ("docs/storage.md", "class SqliteStorageFactory"): "a module, run through the blocks that import it",
}

#: a job file's variables, as a run is given them (-i name=value or the environment)
VARIABLES = {
    "PG_URL": "postgresql://127.0.0.1:5432/shop",
    "PG_USER": "shop",
    "PG_PASSWORD": "secret",
    "KAFKA_USER": "user",
    "KAFKA_PASSWORD": "secret",
    "S3_KEY": "key",
    "S3_SECRET": "secret",
}

#: text a reader replaces before use: Jinja the operator renders before the job runs, and
#: the docs' ``...`` for what is the reader's own
FILLED_IN = {
    ("docs/airflow.md", "# dags/jobs/daily.yaml"): {"{{ ds }}": "2026-12-01"},
    ("docs/lakehouse.md", "postgresql+psycopg://..."): {
        "postgresql+psycopg://...": "postgresql+psycopg://lake@db/catalog"
    },
}

SEQUENCE = {"plugin_name": "Sequence", "rows": 10}
CONSOLE = {"plugin_name": "Console"}

#: excerpts of a job file: what completes each into a job, so that it is checked whole
FRAGMENTS: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("docs/kafka.md", 'topic: "orders-.*"'): lambda doc: {**doc, "sink": [CONSOLE]},
    ("docs/kafka.md", "semantics: AT_LEAST_ONCE"): lambda doc: {
        "source": [{**SEQUENCE, "plugin_output": "orders"}],
        "transform": [{"plugin_name": "Sql", "query": "select id, 'c' || id::varchar as customer from orders"}],
        **doc,
    },
    ("docs/kafka.md", "semantics: EXACTLY_ONCE"): lambda doc: {"source": [SEQUENCE], **doc},
    # a list of sinks (the page's sentence above it says so)
    ("docs/lakehouse.md", "  - plugin_name: Iceberg\n    namespace: analytics"): lambda doc: {
        "source": [SEQUENCE],
        "sink": doc,
    },
    ("docs/lakehouse.md", "- plugin_name: Delta\n    path:"): lambda doc: {
        **doc,
        "sink": [{**CONSOLE, "plugin_input": ["iceberg_events", "delta_events"]}],
    },
    # HOCON excerpts: completed as text, in SeaTunnel's syntax
    ("docs/seatunnel.md", "split.num = 4"): lambda text: text + "sink { Console {} }\n",
    ("docs/seatunnel.md", "rule_type = MIN_LENGTH"): lambda text: (
        "source { FakeSource { row.num = 200, string.length = 6,"
        " schema = { fields { id = bigint, name = string } } } }\n" + text
    ),
    ("docs/seatunnel.md", "JsonPath {"): lambda text: (
        'source { FakeSource { plugin_output = "events", row.num = 3,'
        " schema = { fields { payload = string } } } }\n" + text + 'sink { Console { plugin_input = "parsed" } }\n'
    ),
    ("docs/lakehouse.md", "iceberg.catalog.config = {"): lambda text: (
        "source { FakeSource { row.num = 3, schema = { fields { id = bigint } } } }\n"
        'sink { Iceberg { catalog_name = "seatunnel", namespace = "db", table = "t"\n' + text + "} }\n"
    ),
}

#: job files whose check needs a live system: loaded (parsed, wired, every option read)
#: but not bound to their tables, which ``check_job`` reads from the system
LIVE_SYSTEM = {
    (
        "docs/lakehouse.md",
        "postgresql+psycopg://...",
    ): "the Iceberg sink reads its table's schema from the catalog (PostgreSQL)",
}

#: JSON excerpts (one member of a larger object): parsed inside braces
JSON_FRAGMENTS = {
    ("docs/airflow.md", '"seatunnelCheckpoint"'): "a facet of an OpenLineage run event",
    ("docs/architecture.md", '"statistics": {'): "one member of a checkpoint's _metadata header",
}

#: yaml that is neither a seatunnel.yaml nor a job file: parsed only (none today)
YAML_OTHER: dict[tuple[str, str], str] = {}


# ----------------------------------------------------------------------------- python


def written(text: str | tuple[str, str], tmp: Path) -> str:
    if isinstance(text, tuple):
        block = the_block(*text)
        text = block.text
        if block.language == "yaml":  # the paths the page chose under /tmp: moved into tmp
            text = text.replace(" /tmp/", f" {tmp}/")
            for path in re.findall(r"sqlite\.path: (\S+)", text):  # the plugin's database's directory
                Path(path).parent.mkdir(parents=True, exist_ok=True)
    return text.replace("{tmp}", str(tmp))


@pytest.fixture
def registries() -> Iterator[None]:
    """The storage and connector registries as they were: blocks register plugins."""
    from airflow_provider_seatunnel_ckpt import connectors
    from airflow_provider_seatunnel_ckpt.storage import registry

    storage, kinds = dict(registry._registry), {kind: dict(names) for kind, names in connectors._registry.items()}
    conflicts, discovered = dict(registry._conflicts), registry._discovered
    modules = set(sys.modules)
    yield
    registry._registry.clear()
    registry._registry.update(storage)
    registry._conflicts.clear()
    registry._conflicts.update(conflicts)
    registry._discovered = discovered  # entry points found during the test: found again
    for kind, names in kinds.items():
        connectors._registry[kind].clear()
        connectors._registry[kind].update(names)
    for name in set(sys.modules) - modules:
        if name.startswith("seatunnel_ckpt_sqlite"):
            del sys.modules[name]


@contextlib.contextmanager
def package_logging_restored(fresh: bool = False) -> Iterator[None]:
    """The package logger's handlers, level and propagation as they were, afterwards (the
    CLI sets them up for a process, and other tests run it in this one); with ``fresh``,
    as a new process has them meanwhile: no handler, propagating to the root."""
    package_log = logging.getLogger("airflow_provider_seatunnel_ckpt")
    saved = package_log.handlers[:], package_log.level, package_log.propagate
    if fresh:
        package_log.handlers[:], package_log.level, package_log.propagate = [], logging.NOTSET, True
    try:
        yield
    finally:
        package_log.handlers[:], package_log.level, package_log.propagate = saved


def run_python(block: Block) -> str:
    """Run the block as a script (in the current directory): what it prints, with what it
    logs in the format its ``logging.basicConfig`` asks for (pytest's own handlers on the
    root logger make that call a no-op here)."""
    out = io.StringIO()
    handler = None
    if logged := re.search(r"logging\.basicConfig\(format=\"([^\"]+)\"\)", block.text):
        handler = logging.StreamHandler(out)
        handler.setFormatter(logging.Formatter(logged.group(1)))
        logging.getLogger().addHandler(handler)
    try:
        with package_logging_restored(fresh=True), contextlib.redirect_stdout(out):
            exec(compile(block.text, block.id, "exec"), {"__name__": "__main__"})  # our own docs
    finally:
        if handler is not None:
            logging.getLogger().removeHandler(handler)
    return out.getvalue()


def imports_resolve(block: Block) -> None:
    """Compiled, and every module it imports (and every name it imports from one) exists."""
    compile(block.text, block.id, "exec")
    for node in ast.walk(ast.parse(block.text, block.id)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), (
                    f"{block.id}: {node.module} has no {alias.name}"
                )


PYTHON = [block for block in blocks("python") if not covered_elsewhere(block)]


@pytest.mark.parametrize("block", PYTHON, ids=[block.id for block in PYTHON])
def test_python_block_runs(block, tmp_path, monkeypatch, registries):
    if entry(block, COMPILE_ONLY) is not None:
        imports_resolve(block)
        return
    prepare(block, tmp_path, monkeypatch)
    printed = run_python(block).replace(f"{tmp_path}/", "/tmp/")  # where the page's paths were
    if (shown := output_after(block)) is not None:
        assert printed.splitlines() == shown.text.splitlines(), f"{block.id} prints, unlike {shown.id}:\n{printed}"


def prepare(block: Block, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The block's SETUP: its files written to ``tmp``, its working directory, the blocks
    it follows run."""
    setup = entry(block, SETUP) or Setup({})
    home = tmp / setup.cwd
    for name, text in setup.files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(written(text, tmp))
    if setup.import_path:
        monkeypatch.syspath_prepend(str(home / setup.import_path))
    monkeypatch.chdir(home)
    for fingerprint in setup.before:
        earlier = the_block(block.page, fingerprint)
        run_python(earlier) if earlier.language == "python" else replay(earlier)
    if setup.then is not None:
        setup.then(tmp)


# ----------------------------------------------------------------------------- yaml, hocon


def check_job_file(doc: Any, block: Block) -> None:
    """What ``seatunnel-ckpt run --check`` does with a job file (or, for LIVE_SYSTEM, what
    a run checks before it contacts a system)."""
    from airflow_provider_seatunnel_ckpt.engine.job_check import check_job
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    job = load_job(doc, VARIABLES)
    if entry(block, LIVE_SYSTEM) is None:
        lines = check_job(job)
        assert lines[-1].startswith("ok: "), lines


def under(tmp: Path, text: str) -> str:
    """The job's paths under /tmp moved into the test's directory: checking a job opens
    its local catalogs (an Iceberg catalog database is created when missing)."""
    return text.replace("/tmp/", f"{tmp}/")


def is_job(doc: Any) -> bool:
    return isinstance(doc, dict) and bool({"env", "source", "transform", "sink"} & set(doc))


def validate_yaml(block: Block, tmp: Path) -> None:
    """The block validated by what reads it: the checkpoint configuration's loader, the
    job-file check, or (YAML_OTHER) only parsed."""
    from airflow_provider_seatunnel_ckpt.config import load_config

    text = block.text
    for template, value in (entry(block, FILLED_IN) or {}).items():
        text = text.replace(template, value)
    doc = yaml.safe_load(text)
    if (complete := entry(block, FRAGMENTS)) is not None:
        doc = complete(doc)
    if isinstance(doc, dict) and ({"seatunnel", "checkpoint"} & set(doc)):
        load_config(text)
    elif is_job(doc):
        check_job_file(yaml.safe_load(under(tmp, json.dumps(doc))), block)
    else:
        assert entry(block, YAML_OTHER), (
            f"{block.id}: neither a seatunnel.yaml nor a job file; say what it is in YAML_OTHER"
        )


def heredocs(block: Block) -> list[tuple[str, str]]:
    """(file name, text) of every ``cat > name <<'END'`` in a shell block."""
    return [(name, body) for name, _, body in re.findall(r"cat > (\S+) <<'?(\w+)'?\n(.*?)\n\2\n", block.text, re.S)]


YAML = blocks("yaml") + [
    Block(block.page, block.line, "yaml", body + "\n")
    for block in blocks("bash")
    for name, body in heredocs(block)
    if name.endswith((".yaml", ".yml"))
]


@pytest.mark.parametrize("block", YAML, ids=[block.id for block in YAML])
def test_yaml_block_is_valid(block, tmp_path, monkeypatch, registries):
    prepare(block, tmp_path, monkeypatch)
    validate_yaml(block, tmp_path)


HOCON = blocks("hocon")


@pytest.mark.parametrize("block", HOCON, ids=[block.id for block in HOCON])
def test_hocon_block_is_a_valid_job(block, tmp_path):
    from airflow_provider_seatunnel_ckpt.jobfile.hocon import parse_hocon

    text = block.text
    if (complete := entry(block, FRAGMENTS)) is not None:
        parse_hocon(text, block.id)  # the excerpt itself parses
        text = complete(text)
    check_job_file(under(tmp_path, text), block)


def test_json_and_toml_blocks_parse():
    for block in blocks("json"):
        json.loads("{" + block.text + "}" if entry(block, JSON_FRAGMENTS) else block.text)
    for block in blocks("toml"):
        tomllib.loads(block.text)
    assert len(blocks("json")) + len(blocks("toml")) >= 3


def test_the_plugin_pyproject_registers_the_plugin_the_page_writes(tmp_path, monkeypatch, registries):
    """storage.md's plugin distribution: its entry point is in the group the registry
    reads, and names the factory class of the page's module, which builds a storage."""
    from airflow_provider_seatunnel_ckpt.storage import registry

    project = tomllib.loads(the_block("docs/storage.md", 'name = "seatunnel-ckpt-sqlite"').text)
    (entry_points,) = project["project"]["entry-points"].values()
    assert list(project["project"]["entry-points"]) == [registry.ENTRY_POINT_GROUP]
    module = tmp_path / "seatunnel_ckpt_sqlite/__init__.py"
    module.parent.mkdir()
    module.write_text(the_block("docs/storage.md", "class SqliteStorageFactory").text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, target in entry_points.items():
        registry.register_storage(name, target)
        storage = registry.get_factory(name).create({"sqlite.path": str(tmp_path / "c.db")})
        assert storage.list_jobs() == []  # an empty database, opened


# ----------------------------------------------------------------------------- shell


def shell_commands(block: Block) -> list[str]:
    """The commands of a bash block, or the ``$ `` lines of a console transcript (with
    their ``\\`` continuations)."""
    if block.language == "bash":
        text = block.text
    else:
        text, taking = "", False
        for line in block.text.splitlines():
            if line.startswith("$ "):
                text, taking = text + line[2:] + "\n", line.endswith("\\")
            elif taking:
                text, taking = text + line + "\n", line.endswith("\\")
    return [line for line in text.replace("\\\n", " ").splitlines() if line.strip()]


SHELL = blocks("bash") + blocks("console")


def test_every_shell_block_parses():
    for block in SHELL:
        # <placeholders> are for the reader to fill in: a word to the shell
        text = "\n".join(shell_commands(block))
        text = re.sub(r"<[\w .-]+>", "PLACEHOLDER", text)
        result = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, f"{block.id}: {result.stderr}"
    assert len(SHELL) >= 40


def command_words(text: str) -> list[list[str]]:
    """The simple commands of shell text, as words: split at newlines (outside quotes),
    ``;``, ``&&``, ``||`` and ``|``, comments dropped, ``<placeholders>`` as one word,
    here-documents' text left out (it is a file's, checked as one: see YAML)."""
    text = re.sub(r"(<<-?'?(\w+)'?)\n.*?\n\2\n", r"\1\n", text, flags=re.S)
    # a ";" after each newline: shlex's comments swallow the newline that ends them
    lexer = shlex.shlex(
        re.sub(r"<[\w .-]+>", "PLACEHOLDER", text).replace("\n", "\n;"), posix=True, punctuation_chars=";&|"
    )
    lexer.whitespace_split, lexer.commenters = True, "#"
    commands, words = [], []
    tokens = list(lexer)
    for token in tokens:
        if set(token) <= set(";&|"):
            commands, words = commands + [words] if words else commands, []
        else:
            words.append(token)
    return [*commands, words] if words else commands


def without_redirections(words: list[str]) -> list[str]:
    """``> file``, ``2>&1``...: the shell's, not the command's arguments."""
    kept, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif re.fullmatch(r"\d*(>>?|<)(&\d+)?", word):
            skip = not word.endswith(tuple("0123456789"))
        else:
            kept.append(word)
    return kept


def seatunnel_ckpt_commands() -> list[tuple[Block, list[str]]]:
    found = []
    for block in SHELL:
        for words in command_words("\n".join(shell_commands(block))):
            while words and re.fullmatch(r"\w+=.*", words[0], re.S):  # VAR=value before the command
                words = words[1:]
            if words and Path(words[0]).name == "seatunnel-ckpt":
                found.append((block, without_redirections(words[1:])))
    return found


def test_every_seatunnel_ckpt_command_shown_is_one_the_cli_accepts(capsys):
    from airflow_provider_seatunnel_ckpt.cli import build_parser

    commands = seatunnel_ckpt_commands()
    assert len(commands) >= 20
    parser = build_parser()
    for block, argv in commands:
        # [--pipeline 1]: optional parts of a synopsis, shown in brackets
        argv = [word.strip("[]") for word in argv]
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{block.id}: seatunnel-ckpt {shlex.join(argv)}: {capsys.readouterr().err}")


def test_every_file_and_module_a_command_names_exists():
    """The repository's scripts the commands run, the Python files and modules they hand
    to python, the tests they hand to pytest and the programs under .venv/bin/."""
    missing, checked = [], 0
    for block in SHELL:
        for words in command_words("\n".join(shell_commands(block))):
            while words and re.fullmatch(r"\w+=.*", words[0], re.S):  # VAR=value before the command
                words = words[1:]
            if not words:
                continue
            program, rest = words[0], words[1:]
            named: list[tuple[str, bool]] = []  # (what, found)
            if program.startswith("scripts/") or (program == "source" and rest and rest[0].startswith("scripts/")):
                script = ROOT / (rest[0] if program == "source" else program)
                named.append(
                    (
                        str(script.relative_to(ROOT)),
                        script.is_file() and (program == "source" or os.access(script, os.X_OK)),
                    )
                )
            elif program.startswith(".venv/bin/"):
                named.append((program, (Path(sys.executable).parent / Path(program).name).exists()))
            if Path(program).name in ("python", "python3") and rest:
                if rest[0] == "-m" and len(rest) > 1:
                    named.append((f"python -m {rest[1]}", importlib.util.find_spec(rest[1]) is not None))
                    if rest[1] == "pytest":
                        named += [
                            (word, (ROOT / word.split("::")[0]).exists()) for word in rest if word.startswith("tests/")
                        ]
                elif rest[0].endswith(".py"):
                    named.append((rest[0], (ROOT / rest[0]).is_file()))
            checked += len(named)
            missing += [f"{block.id}: {what}" for what, found in named if not found]
    assert not missing, missing
    assert checked >= 15, checked


# ----------------------------------------------------------------------------- console sessions


@dataclass(frozen=True)
class Step:
    command: str
    shown: list[str]  # the lines the page shows after it


def steps(block: Block) -> list[Step]:
    found: list[Step] = []
    continued = False
    for line in block.text.splitlines():
        if line.startswith("$ ") or continued:
            command = line[2:] if line.startswith("$ ") and not continued else line
            if continued:
                found[-1] = Step(found[-1].command + "\n" + command, [])
            else:
                found.append(Step(command, []))
            continued = line.endswith("\\")
        else:
            found[-1].shown.append(line)
    return found


def run_cli(argv: list[str]) -> tuple[int, str]:
    """``seatunnel-ckpt`` in this process (a second each as a process): exit code, and
    stdout and stderr as the terminal shows them, interleaved."""
    from airflow_provider_seatunnel_ckpt.cli import main

    out = io.StringIO()
    redirect = "> /dev/null" if ">" in argv else None
    argv = without_redirections(argv)
    try:
        with package_logging_restored(fresh=True), contextlib.redirect_stderr(out):
            with contextlib.redirect_stdout(io.StringIO() if redirect else out):
                code = main(argv)
    except SystemExit as stopped:  # the parser's errors
        code = int(stopped.code or 0)
    return code, out.getvalue()


def replay(block: Block) -> list[tuple[Step, list[str]]]:
    """Run a console session's commands in the current directory: each step with the
    lines it printed. ``cat FILE`` shows a file the session uses: it is written as shown."""
    done = []
    for step in steps(block):
        command = step.command.replace("\\\n", " ")
        status = command.endswith('; echo "exit $?"')
        command = command.removesuffix('; echo "exit $?"')
        words = shlex.split(command)
        if words[0] == "cat" and len(words) == 2:
            Path(words[1]).write_text("\n".join(step.shown) + "\n")
            code, printed = 0, "\n".join(step.shown) + "\n"
        elif words[0] == "seatunnel-ckpt":
            code, printed = run_cli(words[1:])
        else:  # a file damaged on purpose (truncate, a bit flipped by python3 -c)
            result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60)
            code, printed = result.returncode, result.stdout + result.stderr
        lines = printed.splitlines() + ([f"exit {code}"] if status else [])
        done.append((step, lines))
    return done


def same(printed: list[str], shown: list[str], varying: re.Pattern[str] | None = None) -> bool:
    """Lines alike, a shown line ``...`` standing for any number of lines, and a line
    ``varying`` matches only up to the end of that match (its value changes every run)."""
    if not shown:
        return not printed
    if shown[0].strip() == "...":
        return any(same(printed[skip:], shown[1:], varying) for skip in range(len(printed) + 1))
    if not printed:
        return False
    head = varying.match(shown[0]) if varying else None
    alike = printed[0].startswith(head.group(0)) if head else printed[0] == shown[0]
    return alike and same(printed[1:], shown[1:], varying)


#: sessions printing values that change every run: the lines that hold them (as a regex
#: matching the line up to the value)
VARYING: dict[tuple[str, str], re.Pattern[str]] = {
    # the times the checkpoint was taken, and the manifest's checksum, over them
    (
        "docs/storage.md",
        "$ seatunnel-ckpt inspect --config seatunnel.yaml --job-id orders-etl --pipeline 2\n",
    ): re.compile(r'^  "(complete_ms|trigger_ms|sha256)": '),
}


#: console sessions not replayed here, and why
NOT_REPLAYED = {
    ("docs/airflow.md", "airflow dags test example_fail_and_recover"): (
        "runs a Spark job through Airflow: tests/airflow/test_example_dags.py runs that DAG"
    ),
    ("docs/storage.md", "Input/output error"): "needs a disk that fails to read (EIO)",
    (
        "docs/storage.md",
        "$ cat down.yaml",
    ): "needs nothing listening on 127.0.0.1:9870, where the HDFS servers other tests start may be",
    ("docs/storage.md", "$ pip install ./seatunnel-ckpt-sqlite"): (
        "installs a distribution; the plugin is imported from its source instead (SETUP)"
    ),
}

CONSOLE_BLOCKS = blocks("console")


@pytest.mark.parametrize("block", CONSOLE_BLOCKS, ids=[block.id for block in CONSOLE_BLOCKS])
def test_console_session_prints_what_the_page_shows(block, tmp_path, monkeypatch, registries):
    if entry(block, NOT_REPLAYED) is not None:
        return
    prepare(block, tmp_path, monkeypatch)
    for step, printed in replay(block):
        printed = [line.replace(f"{tmp_path}/", "/tmp/") for line in printed]
        assert same(printed, step.shown, entry(block, VARYING)), (
            f"{block.id}: $ {step.command}\nprinted:\n" + "\n".join(printed)
        )


# ----------------------------------------------------------------------------- messages


def pydantic_says() -> str:
    from pydantic import BaseModel, Field, ValidationError

    class Interval(BaseModel):
        interval: int = Field(gt=0)

    try:
        Interval(interval=-5)
    except ValidationError as err:
        message = str(err.errors()[0]["msg"])
        return message[0].lower() + message[1:]  # as config.py lowers its first letter
    raise AssertionError("pydantic accepted -5 for a field > 0")


def duckdb_says() -> str:
    import duckdb

    try:
        duckdb.sql("select idd from (select 1 as id) as t").fetchall()
    except duckdb.Error as err:
        return str(err).replace("\n", "; ")  # the one-line error joins its lines with "; "
    raise AssertionError("DuckDB found a column that is not there")


#: parts of quoted messages other software writes (the package adds the key before them),
#: and the check that it still writes them so: then matched as "..."
FOREIGN: dict[str, Callable[[], bool]] = {
    # a pydantic validation message (config.py's keys are checked by pydantic)
    "input should be greater than 0": lambda: pydantic_says() == "input should be greater than 0",
    # DuckDB's binder, running a Sql transform's query against the source's columns
    'Binder Error: Referenced column "idd" not found in FROM clause!; Candidate bindings: "id"': lambda: (
        duckdb_says() == 'Binder Error: Referenced column "idd" not found in FROM clause!; Candidate bindings: "id"'
    ),
}

#: values in quoted messages that read as prose: what they are
PROSE_VALUES = {
    # a '// comment' line pasted into YAML becomes a key: the message names that key
    "// if you used kerberos": "the key a pasted comment of storage.md's Kerberos example makes",
}

#: a quoted message: ``error:``/``warning:`` lines, and log lines as the docs' logging
#: format prints them (``WARNING <logger>: <message>``)
MESSAGE_LINE = re.compile(r"^\s*(?:(?:error|warning): |(?:WARNING|ERROR) airflow_provider_seatunnel_ckpt[\w.]*: )(.*)")


#: a quote in prose that is a message of the package although it has no ``error:``: prose
#: with a placeholder (``...``, ``<name>``, or J, N, M, K, ID for a job, a number, an id), or
#: beginning as the package's messages begin (the key or the job they are about)
MESSAGE_SHAPE = re.compile(
    r"(\.\.\.|<[^<>\s][^<>]*>|\b(J|N|M|K|ID)\b)|^(job |sink\[|source\[|transform\[|connection |storage |stop-with-savepoint)"
)


def quoted_messages() -> list[tuple[str, str, bool]]:
    """(where, message, whole line?) for every error or warning line of a console, bash or
    plain block, and every message quoted in backticks in prose, but for the rows of the
    Troubleshooting tables, which test_troubleshooting.py checks. A quote in prose may
    start and end anywhere in a message; a line of output is a whole one."""
    found = []
    for block in BLOCKS:
        if block.language in ("console", "bash", ""):
            for line in block.text.splitlines():
                if match := MESSAGE_LINE.match(line):
                    found.append((block.id, match.group(1), True))
    for page in PAGES:
        prose = re.sub(r"^\s*(`{3,}).*?^\s*\1", "", page.read_text(), flags=re.S | re.M)
        prose = re.sub(r"\n#+ [^\n]*Troubleshooting.*?(?=\n#+ |\Z)", "", prose, flags=re.S)
        for match in re.finditer(r"(?<!`)`([^`]+)`(?!`)", prose):
            text = re.sub(r"\s*\n\s*", " ", match.group(1))
            if text.startswith(("error: ", "warning: ")):
                found.append((str(page.relative_to(ROOT)), text.split(": ", 1)[1], False))
            elif PROSE.search(text) and MESSAGE_SHAPE.search(text):
                found.append((str(page.relative_to(ROOT)), text, False))
    return found


PLACEHOLDER = re.compile(r"\.\.\.|…|<[^<>\s][^<>]*>")
#: two lowercase words in a row: prose, which a value (a name, number, path) is not
PROSE = re.compile(r"(?<![\w./'-])[a-z]{2,} [a-z]{2,}(?![\w/'-])")


@dataclass(frozen=True)
class Literals:
    """The package's string literals, split at their placeholders, ready for matching."""

    whole: frozenset[str]  # pieces a rendered message holds whole, between two values
    lengths: tuple[int, ...]
    joined: str  # every piece, NUL-separated: a substring of it lies within one piece

    @classmethod
    def of(cls, pieces: set[str]) -> Literals:
        # a short word ("at", "no") as a whole literal is too common to vouch for a sentence
        whole = frozenset(piece for piece in pieces if len(piece) >= 4 and re.search(r"[A-Za-z]", piece))
        return cls(whole, tuple(sorted({len(piece) for piece in whole})), "\0".join(pieces))

    def longest_within_a_piece(self, text: str, from_end: bool = False) -> int:
        """The longest start (or end) of ``text`` that lies within one piece."""
        low, high = 0, len(text)  # the starts and ends of a substring are substrings: bisect
        while low < high:
            mid = (low + high + 1) // 2
            part = text[len(text) - mid :] if from_end else text[:mid]
            low, high = (mid, high) if part in self.joined else (low, mid - 1)
        return low


def printed_by_the_code(message: str, literals: Literals, whole_line: bool = True) -> list[str]:
    """The parts of ``message`` the package does not print: [] when it does.

    test_troubleshooting.py's convention: a message is split at ``...`` (and here also at
    ``<placeholder>``), and its static text comes from the string literals of the package,
    f-string fields counting as placeholders. A quote of real output has the fields filled
    in, so each fragment is read as whole literal pieces (the text between two fields, as
    the code writes it) with values between them; next to a ``...`` a fragment may start
    or end inside a piece. The reading with the fewest letters left over is taken, and
    what is left over, the values, must not be prose: a sentence reworded in the docs or
    in the code leaves words no piece holds. Not ``whole_line`` (a quote in prose), the
    message may also start and end inside a piece."""
    missing = []
    fragments = PLACEHOLDER.split(message)
    for index, fragment in enumerate(fragments):
        size = len(fragment)
        # cost[i]: fewest letters outside pieces in fragment[:i], reading it as segments;
        # the last segment is fragment[begin[i]:i], a piece (or part of one) unless is_gap[i]
        cost, begin, is_gap = [0] + [size + 1] * size, [0] * (size + 1), [False] * (size + 1)
        if index > 0 or not whole_line:  # after a placeholder: may begin inside a piece
            for end in range(1, literals.longest_within_a_piece(fragment) + 1):
                cost[end] = 0
        open_end = index < len(fragments) - 1 or not whole_line
        tail = size - literals.longest_within_a_piece(fragment, from_end=True) if open_end else size
        for pos in range(size):
            if pos >= tail and cost[pos] < cost[size]:  # before a placeholder: may end inside a piece
                cost[size], begin[size], is_gap[size] = cost[pos], pos, False
            if cost[pos] + fragment[pos].isalpha() < cost[pos + 1]:
                cost[pos + 1], begin[pos + 1], is_gap[pos + 1] = cost[pos] + fragment[pos].isalpha(), pos, True
            for length in literals.lengths:
                if pos + length > size:
                    break
                if cost[pos] < cost[pos + length] and fragment[pos : pos + length] in literals.whole:
                    cost[pos + length], begin[pos + length], is_gap[pos + length] = cost[pos], pos, False
        gaps, gap, pos = [], "", size
        while pos > 0:
            if is_gap[pos]:
                gap = fragment[begin[pos] : pos] + gap
            else:
                gaps.append(gap)
                gap = ""
            pos = begin[pos]
        gaps.append(gap)
        missing += [gap.strip() for gap in gaps if PROSE.search(gap)]
    return missing


@pytest.fixture(scope="module")
def literals() -> Literals:
    return Literals.of(literal_pieces())


def test_every_quoted_error_is_printed_by_the_code(literals):
    # a page's own example code (storage.md's plugin) prints messages the page quotes
    example_code = {
        page: Literals.of(literal_pieces([block.text for block in blocks("python") if block.page == page]))
        for page in {block.page for block in BLOCKS}
    }
    messages = quoted_messages()
    assert len(messages) >= 40, messages
    missing = []
    for where, message, whole_line in messages:
        for part, still_printed in FOREIGN.items():
            if part in message:
                assert still_printed(), f"{where}: {part!r} is no longer what the software that prints it says"
                message = message.replace(part, "...")
        for value in PROSE_VALUES:
            message = message.replace(value, "...")
        page = where.split(":")[0]
        gaps = printed_by_the_code(message, literals, whole_line)
        if gaps and printed_by_the_code(message, example_code[page], whole_line):
            missing.append((where, message, gaps))
    assert not missing, "\n".join(map(str, missing))


def test_a_reworded_or_invented_message_is_caught(literals):
    """The check itself: a real message passes with its values filled in; the same with
    its words changed, and test_troubleshooting.py's stale entries, do not."""
    real = "source[0].rows: must be >= 0, got -5"
    assert printed_by_the_code(real, literals) == []
    for stale in (
        "source[0].rows: should not be negative, got -5",
        "restore='latest' but there is no checkpoint at all",
        "job nightly failed: the sink exploded while writing",
    ):
        assert printed_by_the_code(stale, literals), stale
    # a quote in prose may stop mid-message, but not say what the code does not
    assert printed_by_the_code("fenced checkpoint N of attempt M, which may still be running", literals, False) == []
    assert printed_by_the_code("fenced checkpoint N of attempt M, which might still run", literals, False)


# ----------------------------------------------------------------------------- the rest

#: the first words of a command: a plain block starting so is code without a language
COMMAND_START = re.compile(
    r"^(\$ |\.venv/|scripts/|seatunnel-ckpt |spark-submit|python |pip |airflow |export |source |cat |mkdir |--)"
)


#: plain blocks that are command synopses (UPPERCASE words are values, [brackets]
#: optional): each line, with its values filled in, is checked by the CLI's parser
SYNOPSES = {("docs/storage.md", "seatunnel-ckpt list    --config"): "the storage commands' options"}


def test_synopses_name_options_the_cli_has(capsys):
    from airflow_provider_seatunnel_ckpt.cli import build_parser

    for page, fingerprint in SYNOPSES:
        block = the_block(page, fingerprint)
        for line in block.text.splitlines():
            argv = [re.sub(r"^[A-Z]+$", "1", word.strip("[]")) for word in shlex.split(line)[1:]]
            try:
                build_parser().parse_args(argv)
            except SystemExit:
                pytest.fail(f"{block.id}: {line}: {capsys.readouterr().err}")


def test_plain_blocks_are_text():
    plain = blocks("")
    assert plain, "no plain block found: the fence parser is broken"
    code = [block.id for block in plain if COMMAND_START.match(block.text) and not entry(block, SYNOPSES)]
    assert not code, f"code blocks without a language (tag them bash, console, yaml...): {code}"


def test_every_block_is_of_a_known_language():
    known = {"python", "yaml", "hocon", "json", "toml", "bash", "console", ""}
    assert {block.language for block in BLOCKS} <= known, {block.id for block in BLOCKS if block.language not in known}


def test_every_table_entry_names_one_block():
    for table in (
        SETUP,
        COMPILE_ONLY,
        FILLED_IN,
        FRAGMENTS,
        LIVE_SYSTEM,
        JSON_FRAGMENTS,
        YAML_OTHER,
        SYNOPSES,
        NOT_REPLAYED,
        VARYING,
    ):
        for page, fingerprint in table:
            the_block(page, fingerprint)
        # a block two entries of one table fit would get the first silently
        for block in BLOCKS:
            fitting = [key for key in table if key[0] == block.page and key[1] in block.text]
            assert len(fitting) <= 1, f"{block.id} fits {fitting}: make the fingerprints tell them apart"
    for setup in SETUP.values():
        for text in setup.files.values():
            if isinstance(text, tuple):
                the_block(*text)
    for (page, fingerprint), value in COVERED_ELSEWHERE.items():
        if fingerprint:
            the_block(page, fingerprint)
        test_file, _, test_name = value.partition("::")
        assert f"def {test_name}(" in (ROOT / test_file).read_text(), value
