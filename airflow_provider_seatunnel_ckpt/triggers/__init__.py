"""Triggers for deferrable sensors."""

from .checkpoint import CheckpointTrigger

__all__ = ["CheckpointTrigger"]
