"""Schedule traces: the primitive calls a te Schedule received, as position-based data.

``with record_schedules():`` makes every Schedule created inside it keep ``sch.trace``, a
list of ``TraceEntry`` in call order (outside, ``sch.trace`` is None and recording costs
one attribute test per primitive).  An entry names stages by their index in
``sch.stages`` and loop axes by their position in a stage's leaf axes *at the time of the
call*, so a trace can be replayed onto any program whose stages line up, e.g. turned
into auto-scheduler transform steps (which number stages and iterators the same way).

Invariants: only calls that succeed are recorded; a primitive implemented with other
primitives (``tile`` = split, split, reorder) is recorded once, as itself; the schedule's
initial stage names are kept in ``sch.trace_stage_names`` so a reader can check that its
program has the same stages.
"""
from __future__ import annotations

import contextvars
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..te.tensor import Operation, Tensor
from ..tir import expr as E

__all__ = ["TraceEntry", "StageRef", "TensorRef", "LeafRef", "RootRef",
           "record_schedules", "traced"]

_RECORDING: contextvars.ContextVar = contextvars.ContextVar("schedule_trace", default=False)


@dataclass(frozen=True)
class StageRef:
    stage: int


@dataclass(frozen=True)
class TensorRef:
    stage: int
    value_index: int


@dataclass(frozen=True)
class LeafRef:
    """A loop axis: position ``pos`` in the leaf axes of stage ``stage``."""
    stage: int
    pos: int


@dataclass(frozen=True)
class RootRef:
    """A root data axis (``op.axis[index]``) that is no longer a leaf."""
    stage: int
    index: int


@dataclass(frozen=True)
class TraceEntry:
    """``primitive`` called on stage ``stage`` (-1: a Schedule method) with ``args``."""
    primitive: str
    stage: int
    args: tuple
    kwargs: tuple = ()     # sorted (name, encoded value) pairs


@contextmanager
def record_schedules() -> Iterator[None]:
    """Schedules created inside keep a trace of their primitive calls (``sch.trace``)."""
    token = _RECORDING.set(True)
    try:
        yield
    finally:
        _RECORDING.reset(token)


def recording() -> bool:
    return bool(_RECORDING.get())


def _stage_index(sch, stage) -> int:
    for k, st in enumerate(sch.stages):
        if st is stage:
            return k
    return -1


def _encode_iv(sch, iv):
    for k, st in enumerate(sch.stages):
        for p, x in enumerate(st.leaf_iter_vars):
            if x is iv:
                return LeafRef(k, p)
    for k, st in enumerate(sch.stages):
        for p, x in enumerate(getattr(st.op, "axis", ())):
            if x is iv:
                return RootRef(k, p)
    return ("iv", iv.var.name)   # an axis of no stage (a thread axis): kept by name


def _encode(sch, x):
    if isinstance(x, E.IterVar):
        return _encode_iv(sch, x)
    if isinstance(x, E.IntImm):
        return x.value
    if isinstance(x, Tensor):
        st = sch.stage_map.get(x.op)
        return TensorRef(_stage_index(sch, st), x.value_index)
    if isinstance(x, Operation):
        return StageRef(_stage_index(sch, sch.stage_map.get(x)))
    if isinstance(x, (list, tuple)):
        return tuple(_encode(sch, y) for y in x)
    if hasattr(x, "leaf_iter_vars"):     # a Stage
        return StageRef(_stage_index(sch, x))
    return x


def traced(name: str):
    """Decorate a Stage or Schedule primitive so recording schedules log its calls."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            sch = getattr(self, "schedule", self)
            trace = sch.trace
            if trace is None or sch.trace_depth:
                return fn(self, *args, **kwargs)
            stage = -1 if sch is self else _stage_index(sch, self)
            entry = TraceEntry(name, stage, _encode(sch, args),
                               tuple(sorted((k, _encode(sch, v)) for k, v in kwargs.items())))
            sch.trace_depth += 1
            try:
                out = fn(self, *args, **kwargs)
            finally:
                sch.trace_depth -= 1
            trace.append(entry)
            return out
        return wrapper
    return deco
