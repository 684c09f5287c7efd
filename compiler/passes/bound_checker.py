"""``instrument_bound_checkers``: check every buffer index at run time (opt-in).

TVM's ``tir.instrument_bound_checkers``.  Enabled by
``PassContext(config={"tir.instrument_bound_checkers": True})``; it runs last in the
pipeline, on flattened (one index per access) and vectorized code.

Every statement that evaluates expressions (a store, a let binding, a branch condition,
an evaluate) is wrapped so it runs only when each buffer access it makes is in bounds;
otherwise the kernel reports ``IndexError`` naming the buffer through its status word
(``tir.report_oob``) and skips the statement, and the runtime raises.  An access on the
taken branch of an ``if_then_else`` is checked only where that branch is taken (the
padding of a convolution reads out of range on the other branch, and never executes
it).  A vector access is in bounds when all its lanes are (``tir.all_lanes``).

Not checked: accesses whose index or guard uses a variable bound by a ``Let``
expression inside the statement (the check is hoisted out of the Let's scope).
"""
from __future__ import annotations

from math import prod

from ..tir import dtype as dt
from ..tir.analysis import free_vars
from ..tir.expr import GE, LT, And, Broadcast, Call, IntImm, Not, Or, PrimExpr, StringImm
from ..tir.functor import Mutator, Visitor, transform_func
from ..tir.stmt import Evaluate, IfThenElse, LetStmt, PrimFunc

__all__ = ["instrument_bound_checkers"]


def instrument_bound_checkers(func: PrimFunc) -> PrimFunc:
    return transform_func(func, _Instrument())


class _Instrument(Mutator):
    def visit_BufferStore(self, s):
        checks = _collect(s.value, None) + [(s.buffer, s.indices[0], None)]
        return _wrap(s, checks)

    def visit_LetStmt(self, s):
        body = self.visit(s.body)
        s = s if body is s.body else LetStmt(s.var, s.value, body)
        return _wrap(s, _collect(s.value, None))

    def visit_IfThenElse(self, s):
        then = self.visit(s.then_case)
        other = None if s.else_case is None else self.visit(s.else_case)
        if then is not s.then_case or other is not s.else_case:
            s = IfThenElse(s.condition, then, other)
        return _wrap(s, _collect(s.condition, None))

    def visit_Evaluate(self, s):
        return _wrap(s, _collect(s.value, None))


def _collect(e, guard) -> list:
    """``(buffer, index, guard)`` of every load ``e`` evaluates; ``guard`` is the
    condition under which it runs (None: always)."""
    v = _Loads(guard)
    v.visit(e)
    return v.out


class _Loads(Visitor):
    def __init__(self, guard):
        super().__init__()
        self.guard, self.let_vars, self.out = guard, set(), []

    def visit_BufferLoad(self, e):
        idx = e.indices[0]
        self.visit(idx)
        used = set(free_vars(idx))
        if self.guard is not None:
            used |= set(free_vars(self.guard))
        if not used & self.let_vars:
            self.out.append((e.buffer, idx, self.guard))

    def visit_Call(self, e):
        if e.op != "if_then_else":
            return self.generic_visit(e)
        c, a, b = e.args
        self.visit(c)
        outer = self.guard
        for branch, cond in ((a, c), (b, Not(c))):
            self.guard = _and(outer, cond)
            self.visit(branch)
        self.guard = outer

    def visit_Let(self, e):
        self.visit(e.value)
        self.let_vars.add(e.var)
        self.visit(e.body)
        self.let_vars.discard(e.var)


def _and(a, b):
    return b if a is None else And(a, b)


def _in_bounds(buf, idx, guard):
    lanes = dt.lanes(idx.dtype)
    base = dt.element_of(idx.dtype)
    size = prod(x.value for x in buf.shape)

    def c(v):
        k = IntImm(base, v)
        return k if lanes == 1 else Broadcast(k, lanes)

    ok: PrimExpr = And(GE(idx, c(0)), LT(idx, c(size)))
    if guard is not None:
        g = guard
        if dt.lanes(g.dtype) != dt.lanes(ok.dtype):
            g = Broadcast(g, lanes)
        ok = Or(Not(g), ok)
    if dt.lanes(ok.dtype) > 1:
        ok = Call("bool", "tir.all_lanes", (ok,))
    return ok, size


def _wrap(stmt, checks):
    for buf, idx, guard in reversed(checks):
        if not all(type(x) is IntImm for x in buf.shape):
            continue
        ok, size = _in_bounds(buf, idx, guard)
        report = Evaluate(Call("int32", "tir.report_oob",
                               (StringImm(buf.name), IntImm("int64", size))))
        stmt = IfThenElse(ok, stmt, report)
    return stmt
