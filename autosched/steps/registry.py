"""The 14 transform steps as data: registry, record decoding and application.

``apply_step(state, step)`` is the only way steps enter a State: it applies the step to
the State (raising InvalidStepError when it does not apply) and appends it to the
history, so ``transform_steps`` always replays to the same state.
"""
from __future__ import annotations

from dataclasses import fields

from compiler.errors import CompilerError
from compiler.schedule.dependent import dependent_extent_violation

from ..errors import InvalidStepError
from ..extents import bound_tensors
from .compute import (
    CacheReadStep,
    CacheWriteStep,
    ComputeAtStep,
    ComputeInlineStep,
    ComputeRootStep,
    RfactorStep,
    scope_violation,
)
from .loop import (
    AnnotationStep,
    FollowFusedSplitStep,
    FollowSplitStep,
    FuseStep,
    PragmaStep,
    ReorderStep,
    SplitStep,
    StorageAlignStep,
)

STEP_CLASSES = {c.CODE: c for c in (
    AnnotationStep, FuseStep, PragmaStep, ReorderStep, SplitStep, FollowSplitStep,
    FollowFusedSplitStep, StorageAlignStep, ComputeAtStep, ComputeInlineStep, ComputeRootStep,
    CacheReadStep, CacheWriteStep, RfactorStep)}

# steps whose replay needs the list of earlier steps
FOLLOW_STEPS = (FollowSplitStep, FollowFusedSplitStep)


def apply_step(state, step):
    """Apply ``step`` to ``state`` in place and record it; returns the step's result."""
    res = step.apply_to_state(state)
    state.transform_steps.append(step)
    state.invalidate()
    return res


def check_state(state) -> None:
    """Raise InvalidStepError if ``state`` as a whole cannot be lowered.

    Steps are checked one at a time when applied; what only the whole sequence decides
    is checked here: every attached stage must be computed inside the loops of all its
    readers (a sequence may attach a producer before moving its reader into place, so
    this cannot be checked per step).  A state that passes replays and lowers.
    """
    msg = scope_violation(state)
    if msg is None and has_dependent_extents(state.dag):
        # a reduce loop whose extent is read from a tensor must stay inside the loops it
        # reads (sparse kernels only: their states are replayed for the check)
        msg = dependent_extent_violation(state.dag.replay(state.transform_steps,
                                                          readonly=True))
    if msg is not None:
        raise InvalidStepError(f"invalid state: {msg}")


def has_dependent_extents(dag) -> bool:
    """Whether some loop extent of ``dag`` is read from a tensor (memoized on it)."""
    got = getattr(dag, "_dependent_extents", None)
    if got is None:
        got = bool(bound_tensors(dag.ops))
        dag._dependent_extents = got
    return got


def apply_to_schedule(step, sch, steps) -> None:
    try:
        if isinstance(step, FOLLOW_STEPS):
            step.apply_to_schedule(sch, steps)
        else:
            step.apply_to_schedule(sch)
    except CompilerError as err:   # a step the te schedule refuses does not apply
        raise InvalidStepError(f"{step.CODE}: {err} (step {step.to_record()})") from None
    except IndexError:
        raise InvalidStepError(f"{step.CODE}: stage or iterator id out of range (step "
                               f"{step.to_record()})") from None


def _ints(x, what, code):
    if not isinstance(x, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool)
                                          for v in x):
        raise InvalidStepError(f"{code}: {what} must be a list of ints, got {x!r}")
    return tuple(x)


def step_from_record(rec) -> object:
    """Decode one record list such as ["SP", 2, 0, 512, [8, 8], 1] into a step."""
    if not isinstance(rec, (list, tuple)) or not rec or rec[0] not in STEP_CLASSES:
        raise InvalidStepError(f"unknown step record {rec!r}; expected one of "
                               f"{sorted(STEP_CLASSES)}")
    code, f = rec[0], list(rec[1:])
    n_fields = len(fields(STEP_CLASSES[code]))
    if len(f) != n_fields:
        raise InvalidStepError(f"malformed {code} step record {rec!r}: expected {n_fields} "
                               f"fields, got {len(f)}")
    try:
        if code == "SP":
            lengths = tuple(None if (v is None or v == 0) else v for v in f[3])
            return SplitStep(f[0], f[1], f[2] if f[2] else None, lengths, bool(f[4]))
        if code == "FU":
            return FuseStep(f[0], _ints(f[1], "fused ids", code))
        if code == "RE":
            return ReorderStep(f[0], _ints(f[1], "order", code))
        if code == "FFSP":
            return FollowFusedSplitStep(f[0], f[1], _ints(f[2], "src steps", code), f[3],
                                        bool(f[4]))
        if code == "CHR":
            return CacheReadStep(f[0], f[1], _ints(f[2], "readers", code))
        step = STEP_CLASSES[code](*f)
    except (IndexError, TypeError) as err:
        raise InvalidStepError(f"malformed {code} step record {rec!r}: {err}") from None
    return step


__all__ = ["STEP_CLASSES", "apply_step", "check_state", "apply_to_schedule", "step_from_record",
           "AnnotationStep", "FuseStep", "PragmaStep", "ReorderStep", "SplitStep",
           "FollowSplitStep", "FollowFusedSplitStep", "StorageAlignStep", "ComputeAtStep",
           "ComputeInlineStep", "ComputeRootStep", "CacheReadStep", "CacheWriteStep",
           "RfactorStep"]
