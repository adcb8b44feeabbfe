"""A job's checkpoint history: every checkpoint's statistics, every failure, abort and
restore, kept in checkpoint storage beside the checkpoints it outlives.

Retention keeps only a few checkpoints, and their ``_metadata`` goes with them; the
history keeps a compact line for each, bounded by ``checkpoint.history-size``. The
driver records (``HistoryRecorder``, batched, on a thread of its own, never on a
checkpoint's path); the CLI's ``history`` command and the Airflow view read
(``read_history``). Built on storage documents only: no Spark, engine or Airflow here.
"""

from .entries import (
    HISTORY_DIR,
    SUBTASK_COLUMNS,
    CheckpointEntry,
    RestoreEntry,
    SubtaskDetail,
    completed_entry,
    failed_entry,
    restore_entry,
)
from .reader import History, Summary, read_history, summarize
from .recorder import HistoryRecorder

__all__ = [
    "HISTORY_DIR",
    "SUBTASK_COLUMNS",
    "CheckpointEntry",
    "History",
    "HistoryRecorder",
    "RestoreEntry",
    "SubtaskDetail",
    "Summary",
    "completed_entry",
    "failed_entry",
    "read_history",
    "restore_entry",
    "summarize",
]
