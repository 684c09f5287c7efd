"""Ansor-style auto-scheduler: sketches, evolutionary search, measurement, records.

Names follow TVM's ``tvm.auto_scheduler``.

Importing this package also makes it reachable as ``compiler.auto_scheduler``, so a TVM
script's ``tvm.auto_scheduler.SearchTask`` works after ``import compiler as tvm``.  The
registration happens here rather than in ``compiler`` because the compiler core must never
import the auto-scheduler (layering rule); a script that names ``auto_scheduler`` has
imported it first.  Submodules are aliased too (``tvm_alias``): ``from
tvm.auto_scheduler.loop_state import State`` gives this package's module, not a copy.
"""
import sys

import compiler

from . import (
    _ffi_api,
    dispatcher,
    feature,
    measure,
    search_policy,
    search_task,
    sparse_inputs,
    tvm_alias,
    utils,
    workload_registry,
)
from .compute_dag import ComputeDAG
from .cost_model.base import RandomModel
from .cost_model.xgb_model import XGBModel
from .dispatch import ApplyHistoryBest, DispatchContext
from .dispatch_sample import ApplyHistoryBestOrSample
from .errors import AutoSchedError, InvalidStepError, RemovedAPIError, WorkloadError
from .layout_rewrite import LayoutRewriteOption, LayoutTransform
from .measure.builder import BuildCutoff, LocalBuilder
from .measure.dask import ClusterError, DaskBuilder, DaskRunner
from .measure.measurer import (
    BuildResult,
    MeasureCallback,
    MeasureInput,
    MeasureResult,
    ProgramMeasurer,
    RecordToFile,
)
from .measure.rpc import LocalRPCMeasureContext, RPCRunner
from .measure.runner import LocalRunner, RunCutoff
from .measure_record import (
    RecordReader,
    load_best_record,
    load_records,
    recover_measure_input,
    save_records,
)
from .relay_integration import extract_tasks, is_auto_scheduler_enabled
from .search.callbacks import PreloadCustomSketchRule, PreloadMeasuredStates, SearchCallback
from .search.policy import EmptyPolicy, SearchParams, SketchPolicy
from .search.sparse_rule import (
    sparse_conv2d_sketch_rule,
    sparse_conv3x3_sketch_rule,
    sparse_dense_sketch_rule,
    sparse_sketch_rules,
)
from .state import State
from .task import HardwareParams, SearchTask, auto_schedule, create_task
from .task_inputs import register_task_input_check_func
from .task_scheduler import (
    LogEstimatedLatency,
    PrintTableInfo,
    TaskScheduler,
    TaskSchedulerCallback,
)
from .tuning import TuneStats, TuningOptions
from .workload import (
    make_workload_key,
    register_workload,
    register_workload_tensors,
    workload_key_to_tensors,
)

__all__ = ["SearchTask", "ComputeDAG", "State", "HardwareParams", "register_workload",
           "make_workload_key", "workload_key_to_tensors", "TuningOptions", "TuneStats",
           "SketchPolicy", "EmptyPolicy", "SearchParams", "RandomModel", "XGBModel", "LocalBuilder",
           "BuildCutoff", "LocalRunner", "RunCutoff", "RPCRunner", "LocalRPCMeasureContext",
           "DaskBuilder", "DaskRunner", "ClusterError",
           "ProgramMeasurer", "RecordToFile", "MeasureCallback", "MeasureInput",
           "MeasureResult", "BuildResult", "load_records", "save_records", "load_best_record",
           "RecordReader", "recover_measure_input", "feature",
           "register_task_input_check_func",
           "AutoSchedError", "InvalidStepError", "WorkloadError", "extract_tasks",
           "is_auto_scheduler_enabled",
           "ApplyHistoryBest", "ApplyHistoryBestOrSample", "DispatchContext",
           "register_workload_tensors",
           "TaskScheduler", "TaskSchedulerCallback", "PrintTableInfo", "LogEstimatedLatency",
           "SearchCallback", "PreloadMeasuredStates", "PreloadCustomSketchRule",
           "sparse_dense_sketch_rule", "sparse_conv2d_sketch_rule", "sparse_conv3x3_sketch_rule",
           "sparse_sketch_rules",
           "LayoutRewriteOption",
           "LayoutTransform", "create_task", "auto_schedule", "RemovedAPIError"]

# TVM spells it ``auto_scheduler.measure.recover_measure_input``; it needs the task
# layer, which sits above the measure package, so the package is given the name here.
measure.recover_measure_input = recover_measure_input  # type: ignore[attr-defined]

# Registered last, once every name above exists (see the module docstring).
tvm_alias.install(sys.modules[__name__])
