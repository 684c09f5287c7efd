"""Schedules: stages, loop transformations, bound inference and lowering to TIR."""
from .schedule import Schedule, Stage, create_schedule

__all__ = ["Schedule", "Stage", "create_schedule"]
