"""The messages the docs' Troubleshooting sections quote are messages the code prints.

Convention (docs/airflow.md, "Troubleshooting"): in a table's first column, text in
backticks is a message as printed, ``...`` standing for what varies (names, values, and
parts another function adds, such as the key before a ``ConfigError``'s problem). Each
piece between ``...`` must be found in one string literal of the package, its
placeholders (f-string fields, ``%s``) counting as ``...``. The few messages other
software prints are listed below with where they come from, and checked there.
"""

from __future__ import annotations

import errno
import os
import re
import sysconfig
from pathlib import Path

from tests.support.literals import literal_pieces

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(sysconfig.get_paths()["purelib"])

#: messages of other software the tables quote, and the source text that prints them
FOREIGN = {
    # SparkSubmitHook._resolve_connection, when the Spark connection is missing
    "Could not load connection string spark_default, defaulting to yarn": lambda: (
        "Could not load connection string %s, defaulting to %s"
        in (SITE / "airflow/providers/apache/spark/hooks/spark_submit.py").read_text()
    ),
    # Python's FileNotFoundError when spark-submit is not on PATH
    "No such file or directory: 'spark-submit'": lambda: os.strerror(errno.ENOENT) == "No such file or directory",
    # S3's error codes, as the S3 API (and moto, the tests' S3) answers them
    "SignatureDoesNotMatch": lambda: "SignatureDoesNotMatch" in (SITE / "moto/s3/exceptions.py").read_text(),
    "AccessDenied": lambda: '"AccessDenied"' in (SITE / "moto/s3/exceptions.py").read_text(),
}


def troubleshooting_messages() -> list[tuple[str, str]]:
    """(page, message) for every backticked text in the first column of a table in a
    Troubleshooting section of README.md or docs/*.md."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for section in re.split(r"\n(?=#+ )", page.read_text()):
            if not re.match(r"#+ [^\n]*Troubleshooting", section):
                continue
            for line in section.splitlines():
                cells = line.split(" | ")
                if line.startswith("| ") and len(cells) > 1 and not set(line) <= set("|- "):
                    found += [(page.name, text) for text in re.findall(r"`([^`]+)`", cells[0][2:])]
    return found


def test_every_message_the_troubleshooting_tables_quote_is_printed_by_the_code():
    messages = troubleshooting_messages()
    assert len(messages) >= 10, messages  # the table was found and read
    pieces = literal_pieces()
    missing = []
    for page, message in messages:
        if message in FOREIGN:
            if not FOREIGN[message]():
                missing.append((page, message, "no longer printed by the software it comes from"))
            continue
        for fragment in message.split("..."):
            fragment = fragment.strip(" :;,.")
            if fragment and not any(fragment in piece for piece in pieces):
                missing.append((page, message, fragment))
    assert not missing, missing


def test_a_message_the_code_no_longer_prints_is_caught():
    """The check itself: the entry this test was written for, and a reworded message."""
    pieces = literal_pieces()
    for stale in ("extra.role_arn: is not supported", "restore='latest' but there is no checkpoint at all"):
        assert not all(any(fragment.strip(" :;,.") in piece for piece in pieces) for fragment in stale.split("..."))
