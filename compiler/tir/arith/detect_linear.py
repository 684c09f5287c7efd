"""``detect_linear``: an integer expression as ``base + stride * var`` (TVM's
``arith.detect_linear_equation`` for one variable).

Invariants: neither part uses ``var``; both are simplified with the given ranges (or
the caller's Simplifier); anything not affine in ``var`` gives None.
"""
from __future__ import annotations

from .. import dtype as dt
from .. import op as _op
from ..analysis import uses_var
from ..expr import IntImm, Var
from ..functor import Visitor
from .simplify import Simplifier

__all__ = ["detect_linear"]


class _Linear(Visitor):
    """(base, stride) of an expression as an affine function of ``var``, or None."""

    def __init__(self, var: Var):
        super().__init__()
        self.var = var
        self.memo: dict = {}

    def visit(self, node):
        r = self.memo.get(node, self)
        if r is self:
            r = super().visit(node)
            self.memo[node] = r
        return r

    def visit_Var(self, v):
        if v is self.var:
            return IntImm(v.dtype, 0), IntImm(v.dtype, 1)
        return v, IntImm(v.dtype, 0)

    def visit_Add(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is None or b is None:
            return None
        return _op.add(a[0], b[0]), _op.add(a[1], b[1])

    def visit_Sub(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is None or b is None:
            return None
        return _op.sub(a[0], b[0]), _op.sub(a[1], b[1])

    def visit_Mul(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is None or b is None:
            return None
        if type(a[1]) is IntImm and a[1].value == 0:
            return _op.mul(a[0], b[0]), _op.mul(a[0], b[1])
        if type(b[1]) is IntImm and b[1].value == 0:
            return _op.mul(a[0], b[0]), _op.mul(a[1], b[0])
        return None

    def generic_visit(self, node):
        if uses_var(node, self.var):
            return None
        return node, IntImm(node.dtype, 0)


def detect_linear(expr, var: Var, var_ranges: dict | None = None, simplifier=None):
    """``(base, stride)`` with ``expr == base + stride*var``, neither using ``var``; or None.

    Both parts are simplified (with ``var_ranges``, or by ``simplifier`` when given).
    """
    if not dt.is_integral(expr.dtype) or dt.lanes(expr.dtype) != 1:
        return None
    r = _Linear(var).visit(expr)
    if r is None:
        return None
    s = simplifier if simplifier is not None else Simplifier(var_ranges)
    return s.visit(r[0]), s.visit(r[1])
