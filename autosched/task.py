"""SearchTask and HardwareParams: what to tune, for which machine.

A task is identified by its workload key and target string; both go into every record.
``HardwareParams`` defaults to the host (cores from the target, AVX2/AVX-512 vector
width from the CPU features) and is stored in records as TVM's 8-number list.
"""
from __future__ import annotations

from dataclasses import astuple, dataclass

from compiler.target import Target, parse_target

from . import tuning as _tuning
from .checks import check_fields
from .compute_dag import ComputeDAG
from .errors import RemovedAPIError, WorkloadError
from .layout_rewrite import LayoutRewriteOption, as_option
from .task_inputs import (
    TaskInputError,
    as_input_array,
    check_task_inputs,
    get_task_input_buffer,
    register_task_input_buffer,
)
from .workload import make_workload_key, workload_key_to_tensors


@dataclass(frozen=True)
class HardwareParams:
    num_cores: int
    vector_unit_bytes: int
    cache_line_bytes: int = 64
    max_shared_memory_per_block: int = 0
    max_local_memory_per_block: int = 0
    max_threads_per_block: int = 0
    max_vthread_extent: int = 0
    warp_size: int = 0

    def __post_init__(self):
        check_fields(self, ("num_cores", "vector_unit_bytes", "cache_line_bytes"), 1,
                     integer=True)
        check_fields(self, ("max_shared_memory_per_block", "max_local_memory_per_block",
                            "max_threads_per_block", "max_vthread_extent", "warp_size"), 0,
                     integer=True)

    @staticmethod
    def for_target(target: Target) -> HardwareParams:
        return HardwareParams(target.num_cores, target.vector_bits // 8)

    def to_list(self) -> list:
        return list(astuple(self))


class SearchTask:
    """``SearchTask(func=..., args=..., target=...)`` or ``SearchTask(workload_key=...)``."""

    def __init__(self, func=None, args=(), compute_dag=None, workload_key=None,
                 target="llvm", hardware_params=None, desc="", layout_rewrite_option=None,
                 task_inputs=None, task_inputs_overwrite: bool = False,
                 task_inputs_save_to_file: bool = False):
        if workload_key is None:
            if func is None:
                raise WorkloadError("SearchTask needs func=... (with args) or workload_key=...")
            workload_key = make_workload_key(func, args)
        self.workload_key = workload_key
        if compute_dag is None:
            compute_dag = ComputeDAG(workload_key_to_tensors(workload_key))
        self.compute_dag = compute_dag
        self.target = parse_target(target)
        self.hardware_params = hardware_params or HardwareParams.for_target(self.target)
        self.desc = desc
        # what candidates are built and measured with (TVM's default on CPUs: the kernel
        # reads a pre-transformed weight, see layout_rewrite.py)
        self.layout_rewrite_option = (LayoutRewriteOption.get_target_default(self.target)
                                      if layout_rewrite_option is None
                                      else as_option(layout_rewrite_option))
        # placeholders measured with given data instead of random inputs (task_inputs.py)
        self.task_input_names: tuple = ()
        if task_inputs:
            self._register_inputs(task_inputs, task_inputs_overwrite, task_inputs_save_to_file)

    def _register_inputs(self, task_inputs, overwrite: bool, save_to_file: bool) -> None:
        if isinstance(task_inputs, (list, tuple)):
            # TVM's list form: names of buffers registered earlier (under this task's
            # workload key or "default"); the data must be there now
            given = {str(name): get_task_input_buffer(self.workload_key, str(name))
                     for name in task_inputs}
            check_task_inputs(self.compute_dag.tensors, given)
            self.task_input_names = tuple(given)
            return
        if not isinstance(task_inputs, dict):
            raise TaskInputError(f"SearchTask task_inputs={type(task_inputs).__name__}: "
                                 "expected a dict {placeholder name: array} or a list of "
                                 "registered names")
        given = {name: as_input_array(data, f"task input {name!r}")
                 for name, data in task_inputs.items()}
        check_task_inputs(self.compute_dag.tensors, given)
        for name, arr in given.items():
            register_task_input_buffer(self.workload_key, name, arr, overwrite, save_to_file)
        self.task_input_names = tuple(given)

    def __repr__(self):
        return f"SearchTask({self.workload_key}, target={self.target})"

    # -------------------------------------------------------------- tuning API (TVM's)
    def tune(self, tuning_options, search_policy=None):
        """Run the search; returns the TuneStats of the run.  As TVM, an existing log is
        reused only when asked: ``search_policy=SketchPolicy(task,
        init_search_callbacks=[PreloadMeasuredStates(log)])``."""
        return _tuning.tune(self, tuning_options, search_policy)

    def apply_best(self, log_file: str, include_compatible: bool = True,
                   layout_rewrite_option=None):
        """(schedule, tensors) of the best record for this task in ``log_file``.

        As TVM's, the default layout rewrite on CPUs is INSERT_TRANSFORM_STAGE: the
        function keeps the workload's arguments and transforms its weights itself.
        ``include_compatible=False`` takes only records of exactly this target string.
        """
        if layout_rewrite_option is None:
            layout_rewrite_option = LayoutRewriteOption.get_target_default(
                self.target, in_relay_integration=True)
        return _tuning.apply_best(self, log_file, as_option(layout_rewrite_option),
                                  include_compatible)

    def print_best(self, log_file: str, print_mode: str = "schedule") -> str:
        """The best schedule in ``log_file`` as schedule-API Python code (``print_mode``
        "schedule"; TVM's "cuda" raises ValueError: CUDA is not supported)."""
        return _tuning.print_best(self, log_file, print_mode)


_UPGRADE = ("make the task with auto_scheduler.SearchTask(func=..., args=..., target=...) "
            "and tune it with task.tune(auto_scheduler.TuningOptions(...)); TVM removed "
            "this API in its pull request 7028")


def create_task(func, args, target, target_host=None, hardware_params=None):
    """TVM's removed ``auto_scheduler.create_task``: raises, naming its replacement (old
    scripts fail with the upgrade path instead of an AttributeError)."""
    raise RemovedAPIError(f"auto_scheduler.create_task is removed: {_UPGRADE}")


def auto_schedule(task, search_policy=None, tuning_options=None):
    """TVM's removed ``auto_scheduler.auto_schedule``: raises, as ``create_task``."""
    raise RemovedAPIError(f"auto_scheduler.auto_schedule is removed: {_UPGRADE}")
