"""Sensors that wait on checkpoint progress."""

from .checkpoint import CheckpointSensor

__all__ = ["CheckpointSensor"]
