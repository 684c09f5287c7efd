"""Conversion between tuning data (task, state, result) and ``records.Record``.

Steps are written with TVM's record codes; reading a record back gives the step objects,
and ``state_from_record`` replays them onto the task's initial state (raising
InvalidStepError when a record no longer applies, e.g. after the workload changed).
"""
from __future__ import annotations

import time

from records import MeasureInputRecord, MeasureResultRecord, Record

from .registry import apply_step, step_from_record


def encode_record(inp, res, seed=None) -> Record:
    task, state = inp.task, inp.state
    mi = MeasureInputRecord(task.workload_key, str(task.target), task.hardware_params.to_list(),
                            layout_rewrite_option=int(getattr(task, "layout_rewrite_option", 0)),
                            steps=tuple(s.to_record() for s in state.transform_steps), seed=seed,
                            task_input_names=tuple(getattr(task, "task_input_names", ())))
    return Record(mi, encode_result(res))


def encode_result(res) -> MeasureResultRecord:
    """The record part of a MeasureResult (no costs: a failure's cost)."""
    costs = [float(c) for c in res.costs] or [1e10]
    return MeasureResultRecord(tuple(costs), int(res.error_no), float(res.all_cost),
                               float(res.timestamp or time.time()))


def decode_steps(record: Record) -> list:
    return [step_from_record(list(_thaw(s))) for s in record.input.steps]


def _thaw(x):
    return [_thaw(v) for v in x] if isinstance(x, (list, tuple)) else x


def state_from_record(task, record: Record):
    """Replay a record's steps on ``task``'s initial state."""
    state = task.compute_dag.init_state()
    for step in decode_steps(record):
        apply_step(state, step)
    return state
