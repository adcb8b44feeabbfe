"""Operators: submit a checkpointed PySpark job, and recover a failed one."""

from .recovery import CheckpointRecoveryOperator
from .spark_submit import CheckpointedSparkSubmitOperator, default_job_id

__all__ = ["CheckpointRecoveryOperator", "CheckpointedSparkSubmitOperator", "default_job_id"]
