"""Small helpers shared by the passes (no pass lives here).

Invariants: the canonical no-op statement is ``Evaluate(IntImm("int32", 0))`` (what
``tir.stmt.seq`` returns for an empty sequence); ``is_noop`` recognises every statement
the passes treat as doing nothing.
"""
from __future__ import annotations

from ..tir.expr import FloatImm, IntImm, StringImm
from ..tir.stmt import Evaluate, SeqStmt

NOOP = Evaluate(IntImm("int32", 0))


def is_noop(s) -> bool:
    """Evaluate of a constant, or an empty sequence."""
    t = type(s)
    if t is Evaluate:
        return type(s.value) in (IntImm, FloatImm, StringImm)
    return t is SeqStmt and not s.seq


def const_int(e):
    """Python int of an IntImm, else None."""
    return e.value if type(e) is IntImm else None


def loop_range(simplifier, loop_min, extent) -> tuple:
    """Inclusive (lo, hi) range of a loop variable from its (simplified) min and extent."""
    lo, hi = simplifier.bound(loop_min)
    _, ext_hi = simplifier.bound(extent)
    if hi is not None and ext_hi is not None:
        hi = hi + ext_hi - 1
    else:
        hi = None
    return lo, hi
