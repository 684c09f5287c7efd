"""TVM's ``auto_scheduler.load_best_record``: the best record of a workload in a log as
``(MeasureInput, MeasureResult)``, with a State that replays on the recreated task.

Invariants: the task is recreated from the workload key (a registered workload function
or registered DAG tensors) with the record's target and hardware parameters; targets
match as everywhere in autosched (kind and CPU: ``records.selection``, "compatible");
a cheaper record whose steps no longer replay is skipped with a warning; no valid
record gives ``(None, None)``; an unknown workload raises its WorkloadError.
``records.load_best_record`` (stdlib, returns a ``Record``) is the lower-level reader.
"""
from __future__ import annotations

import os
import warnings

from records import Record, RecordReader, target_matches

from .errors import AutoSchedError, InvalidStepError
from .measure.measurer import MeasureInput, MeasureResult
from .steps import serialize
from .task import HardwareParams, SearchTask

__all__ = ["load_best_record"]


def _hardware_params(rec: Record) -> HardwareParams | None:
    try:
        return HardwareParams(*rec.input.hardware_params)
    except (TypeError, ValueError):
        return None       # an odd list (another TVM version): the target's defaults


def load_best_record(log_file, workload_key: str, target=None):
    """``(MeasureInput(task, state), MeasureResult)`` of the cheapest valid record of
    ``workload_key`` in ``log_file`` (for ``target``, when given), or ``(None, None)``."""
    log_file = os.fspath(log_file)
    wanted = None if target is None else str(target)
    valid = sorted((r for r in RecordReader(log_file)
                    if r.is_valid and r.workload_key == workload_key
                    and (wanted is None or target_matches(r.target, wanted, "compatible"))),
                   key=lambda r: r.mean_cost)     # stable: the earliest of equal costs
    tasks: dict = {}
    for rec in valid:
        hw = _hardware_params(rec)
        key = (rec.target, hw)
        if key not in tasks:     # raises WorkloadError for an unknown workload
            tasks[key] = SearchTask(workload_key=workload_key, target=rec.target,
                                    hardware_params=hw)
        task = tasks[key]
        try:
            state = serialize.state_from_record(task, rec)
        except (InvalidStepError, RecursionError) as err:
            warnings.warn(f"load_best_record: a record of {workload_key} in {log_file} no "
                          f"longer applies ({type(err).__name__}: {err}); trying the next "
                          "best", stacklevel=2)
            continue
        r = rec.result
        return (MeasureInput(task, state),
                MeasureResult(list(r.costs), r.error_no, "", r.all_cost, r.timestamp))
    if valid:
        raise AutoSchedError(f"load_best_record: none of the {len(valid)} valid records of "
                             f"workload {workload_key} in {log_file} replays on its task")
    return None, None
