"""The default schedule as a State: a task's default (topi) schedule, turned into steps.

The search measures this state first and breeds from it, so a tuning run starts from
the schedule the compiler would use anyway instead of having to rediscover it (Ansor
starts from random samples only; on depthwise convolutions and softmax a 64-trial run
then ended well below the default).  The default schedule is built with the compiler's
schedule trace on (``compiler.schedule.trace``) and each recorded primitive becomes the
transform step that replays it: stage and iterator numbers are the same in a te
Schedule and a State.

Invariants: ``default_state(task)`` is either None (no default registered, its program
has other stages than the task's DAG, or it uses a primitive no step expresses, e.g.
``bind``) or a State whose steps replay, lower and compute the default schedule's loop
nest; it never raises for a schedule it cannot express.  Results are cached per
workload key, target and whether the task rewrites layouts.

A task that rewrites layouts (TVM's default on CPUs) starts from the default written for
rewritten weights when its workload function registered one (topi's dense: the packed
panel kernel, its weight stored as ``dense_pack``'s (N/nr, K, nr) by the rewrite), and
only when the rewrite really applies to that state; else from the plain default.
"""
from __future__ import annotations

from compiler.schedule.trace import LeafRef, StageRef, TensorRef, record_schedules

from .defaults import default_schedule_maker, layout_free_schedule_maker
from .errors import InvalidStepError
from .layout_rewrite import LayoutRewriteOption
from .state import ANN_PARALLEL, ANN_UNROLL, ANN_VECTORIZE
from .steps import registry as R
from .steps.compute import (
    CacheReadStep,
    CacheWriteStep,
    ComputeAtStep,
    ComputeInlineStep,
    ComputeRootStep,
    RfactorStep,
)
from .steps.loop import AnnotationStep, FuseStep, PragmaStep, ReorderStep, SplitStep

__all__ = ["default_state", "state_from_trace", "is_default_program"]

_ANN = {"parallel": ANN_PARALLEL, "vectorize": ANN_VECTORIZE, "unroll": ANN_UNROLL}
# positional parameter names of the traced primitives (after self)
_PARAMS = {
    "split": ("parent", "factor", "nparts"),
    "tile": ("x_parent", "y_parent", "x_factor", "y_factor"),
    "pragma": ("iv", "key", "value"),
    "cache_read": ("tensor", "scope", "readers"),
    "cache_write": ("tensor", "scope"),
    "rfactor": ("tensor", "axis", "factor_axis"),
    "compute_at": ("parent", "scope"),
}
_CACHE: dict = {}


def _bind(entry) -> dict:
    names = _PARAMS.get(entry.primitive, ())
    out = dict(zip(names, entry.args))
    out.update(dict(entry.kwargs))
    return out


def _leaf(ref, sid: int, what: str) -> int:
    if not isinstance(ref, LeafRef) or ref.stage != sid:
        raise InvalidStepError(f"default schedule: {what} on stage {sid} names {ref!r}, not "
                               "a loop axis of that stage")
    return ref.pos


def _tensor(ref, what: str) -> int:
    if not isinstance(ref, TensorRef) or ref.stage < 0:
        raise InvalidStepError(f"default schedule: {what} of {ref!r}: expected one tensor")
    return ref.stage


def _split(state, sid: int, pos: int, factor, nparts) -> list:
    it = state.stages[sid].iters[pos]
    if factor is not None:
        step = SplitStep(sid, pos, it.extent, (int(factor),), True)
    else:
        step = SplitStep(sid, pos, it.extent, (int(nparts),), False)
    return R.apply_step(state, step)


def _reorder(state, sid: int, positions: list) -> None:
    order = list(range(len(state.stages[sid].iters)))
    for slot, p in zip(sorted(positions), positions):
        order[slot] = p
    if order != sorted(order):
        R.apply_step(state, ReorderStep(sid, tuple(order)))


def _tile(state, sid: int, a: dict) -> None:
    px = _leaf(a["x_parent"], sid, "tile")
    py = _leaf(a["y_parent"], sid, "tile")
    xo, xi = _split(state, sid, px, a["x_factor"], None)
    py = py + 1 if py > px else py
    yo, yi = _split(state, sid, py, a["y_factor"], None)
    if px > py:       # the second split moved x's loops
        xo, xi = xo + 1, xi + 1
    _reorder(state, sid, [xo, yo, xi, yi])


def _apply_stage_entry(state, e, a: dict) -> None:
    sid, prim = e.stage, e.primitive
    if prim == "split":
        _split(state, sid, _leaf(a["parent"], sid, prim), a.get("factor"), a.get("nparts"))
    elif prim == "tile":
        _tile(state, sid, a)
    elif prim == "fuse":
        refs = e.args[0] if len(e.args) == 1 and isinstance(e.args[0], tuple) else e.args
        R.apply_step(state, FuseStep(sid, tuple(_leaf(r, sid, prim) for r in refs)))
    elif prim == "reorder":
        refs = e.args[0] if len(e.args) == 1 and isinstance(e.args[0], tuple) else e.args
        _reorder(state, sid, [_leaf(r, sid, prim) for r in refs])
    elif prim in _ANN:
        R.apply_step(state, AnnotationStep(sid, _leaf(e.args[0], sid, prim), _ANN[prim]))
    elif prim == "pragma":
        if a["key"] == "auto_unroll_max_step":
            R.apply_step(state, PragmaStep(sid, _leaf(a["iv"], sid, prim),
                                           f"auto_unroll_max_step${int(a['value'])}"))
        # unroll_explicit goes with auto_unroll_max_step in a PragmaStep's replay
    elif prim == "compute_at":
        parent = a["parent"]
        if not isinstance(parent, StageRef):
            raise InvalidStepError(f"default schedule: compute_at target {parent!r}")
        pos = _leaf(a["scope"], parent.stage, prim)
        R.apply_step(state, ComputeAtStep(sid, parent.stage, pos))
    elif prim == "compute_inline":
        R.apply_step(state, ComputeInlineStep(sid))
    elif prim == "compute_root":
        R.apply_step(state, ComputeRootStep(sid))
    else:   # bind, set_scope, storage_align on a split axis, ...: no step for it
        raise InvalidStepError(f"default schedule: {prim} has no transform step")


def _apply_entry(state, e) -> None:
    a = _bind(e)
    if e.stage >= 0:
        _apply_stage_entry(state, e, a)
    elif e.primitive == "cache_read":
        readers = a["readers"] if isinstance(a["readers"], tuple) else (a["readers"],)
        ids = tuple(r.stage for r in readers if isinstance(r, (StageRef, TensorRef)))
        R.apply_step(state, CacheReadStep(_tensor(a["tensor"], "cache_read"), a["scope"], ids))
    elif e.primitive == "cache_write":
        R.apply_step(state, CacheWriteStep(_tensor(a["tensor"], "cache_write"), a["scope"]))
    elif e.primitive == "rfactor":
        sid = _tensor(a["tensor"], "rfactor")
        R.apply_step(state, RfactorStep(sid, _leaf(a["axis"], sid, "rfactor"),
                                        int(a.get("factor_axis", 0))))
    else:
        raise InvalidStepError(f"default schedule: {e.primitive} has no transform step")


def state_from_trace(init_state, sch):
    """Replay the trace of the recorded schedule ``sch`` onto a copy of ``init_state``.

    Raises InvalidStepError when the programs differ or a call has no step."""
    names = [st.op.name for st in init_state.stages]
    if getattr(sch, "trace", None) is None:
        raise InvalidStepError("default schedule: the schedule was not recorded")
    if sch.trace_stage_names != names:
        raise InvalidStepError(f"default schedule: its stages {sch.trace_stage_names} are "
                               f"not the task's {names}")
    state = init_state.copy()
    for e in sch.trace:
        _apply_entry(state, e)
    final = [st.op.name for st in sch.stages]
    if [st.op.name for st in state.stages] != final or any(
            len(a.iters) != len(b.leaf_iter_vars)
            for a, b in zip(state.stages, sch.stages) if not a.is_placeholder):
        raise InvalidStepError("default schedule: the replayed state does not match it")
    R.check_state(state)
    return state


def default_state(task):
    """The task's default schedule as a State, or None when it has none as steps."""
    rewrites = _rewrites(task)
    key = (task.workload_key, str(task.target), rewrites)
    if key not in _CACHE:
        _CACHE[key] = _build(task, rewrites)
    st = _CACHE[key]
    return None if st is None else st.copy()


def _build(task, rewrites: bool):
    """The layout-free variant when the task rewrites layouts and the variant's state
    really has its weight rewritten; else the plain default (or None)."""
    if rewrites:
        state = _traced(task, layout_free_schedule_maker(task.workload_key))
        if state is not None and task.compute_dag.layout_transforms(state):
            return state
    return _traced(task, default_schedule_maker(task.workload_key))


def _traced(task, make):
    if make is None:
        return None
    try:
        with record_schedules():
            sch, _tensors = make()
        return state_from_trace(task.compute_dag.init_state(), sch)
    except Exception:  # noqa: BLE001 - a default we cannot express only loses the seed
        return None


def is_default_program(task, state) -> bool:
    """``state`` is the task's default state and builds the plain default schedule's
    program: no weight rewritten (the layout-free default with a rewritten weight is
    another program, and its speed is its own)."""
    dflt = default_state(task)
    return dflt is not None and str(dflt) == str(state) and \
        not (_rewrites(task) and task.compute_dag.layout_transforms(state))


def _rewrites(task) -> bool:
    """Whether ``task`` rewrites the layouts of its layout-free weights."""
    return task.layout_rewrite_option != LayoutRewriteOption.NO_REWRITE
