"""A Python transform whose first attempt of subtask 0 fails on its first batch (a task retry under spark-submit)."""

import pyarrow as pa


def fail_once(batch: pa.RecordBatch) -> pa.RecordBatch:
    from pyspark import TaskContext

    task = TaskContext.get()
    if task is not None and task.partitionId() == 0 and task.attemptNumber() == 0:
        raise RuntimeError("the first attempt of subtask 0 fails")
    return batch
