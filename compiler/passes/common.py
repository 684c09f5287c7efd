"""Small helpers shared by the passes (no pass lives here).

Invariants: the canonical no-op statement is ``Evaluate(IntImm("int32", 0))`` (what
``tir.stmt.seq`` returns for an empty sequence); ``is_noop`` recognises every statement
the passes treat as doing nothing.
"""
from __future__ import annotations

from ..tir.expr import FloatImm, IntImm, StringImm
from ..tir.stmt import Evaluate, IfThenElse, SeqStmt

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


def fold_if_then_else(s: IfThenElse, cond, visit, negate=None):
    """``s`` rebuilt around its (already simplified) condition ``cond``, children visited.

    A constant condition keeps only the taken branch (a missing else is a no-op); a no-op
    else branch is dropped; with ``negate`` (cond -> simplified not cond), a no-op then
    branch turns ``if c: pass else: B`` into ``if not c: B``.  Returns ``s`` itself when
    nothing changed.
    """
    if type(cond) is IntImm:
        if cond.value:
            return visit(s.then_case)
        return NOOP if s.else_case is None else visit(s.else_case)
    then = visit(s.then_case)
    other = None if s.else_case is None else visit(s.else_case)
    if other is not None and is_noop(other):
        other = None
    if negate is not None and is_noop(then):
        return NOOP if other is None else IfThenElse(negate(cond), other, None)
    if cond is s.condition and then is s.then_case and other is s.else_case:
        return s
    return IfThenElse(cond, then, other)


def rebuild_seq(s: SeqStmt, visit):
    """``s`` with each statement visited: nested sequences flattened, no-ops dropped,
    ``s`` itself when nothing changed, NOOP when nothing is left."""
    out: list = []
    changed = False
    for x in s.seq:
        y = visit(x)
        changed |= y is not x
        if is_noop(y):
            changed = True
        elif type(y) is SeqStmt:
            out.extend(y.seq)
            changed = True
        else:
            out.append(y)
    if not changed:
        return s
    if not out:
        return NOOP
    return out[0] if len(out) == 1 else SeqStmt(tuple(out))
