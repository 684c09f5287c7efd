"""TVM's module ``auto_scheduler.search_task``: the search task, the tuning options and the
task-input table, under the module path TVM scripts import them from.

Role: a name only; the definitions live in ``task``, ``tuning`` and ``task_inputs``, and
these are the very same objects (``from tvm.auto_scheduler.search_task import
SearchTask`` ports with ``tvm`` replaced by ``compiler``).
"""
from __future__ import annotations

from .task import HardwareParams, SearchTask, auto_schedule, create_task
from .task_inputs import (
    get_task_input_buffer,
    register_task_input_buffer,
    register_task_input_check_func,
)
from .tuning import TuningOptions

__all__ = ["SearchTask", "TuningOptions", "HardwareParams", "register_task_input_buffer",
           "get_task_input_buffer", "register_task_input_check_func", "create_task",
           "auto_schedule"]
