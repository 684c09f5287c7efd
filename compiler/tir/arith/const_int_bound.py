"""Constant integer bounds of expressions (TVM's ``arith.ConstIntBound``).

Invariants: bounds are inclusive ``(lo, hi)`` pairs, ``None`` meaning unbounded on that
side; only positive divisors are analysed (anything else is unbounded, never wrong).
``BoundAnalyzer`` memoizes per node identity, so one instance serves a whole expression
tree for fixed variable ranges.
"""
from __future__ import annotations

from .. import dtype as dt
from ..functor import Visitor

_SMALL = {"int8": (-128, 127), "int16": (-32768, 32767), "uint8": (0, 255),
          "uint16": (0, 65535), "bool": (0, 1)}
_UNBOUNDED = (None, None)

__all__ = ["BoundAnalyzer", "bound_add", "bound_scale", "const_int_bound"]


def _dtype_bounds(dtype: str) -> tuple:
    b = _SMALL.get(dtype)
    if b is not None:
        return b
    if dtype.startswith("uint"):
        return (0, None)
    return _UNBOUNDED


def bound_add(x, y):
    return None if x is None or y is None else x + y


def bound_scale(b, c: int) -> tuple:
    lo, hi = b
    lo = None if lo is None else lo * c
    hi = None if hi is None else hi * c
    return (lo, hi) if c >= 0 else (hi, lo)


def _min_opt(x, y, default_none_wins: bool):
    if x is None or y is None:
        return None if default_none_wins else (y if x is None else x)
    return min(x, y)


def _max_opt(x, y, default_none_wins: bool):
    if x is None or y is None:
        return None if default_none_wins else (y if x is None else x)
    return max(x, y)


class BoundAnalyzer(Visitor):
    """Inclusive constant bounds of integer expressions under ``ranges`` (memoized)."""

    def __init__(self, ranges: dict):
        super().__init__()
        self.ranges = ranges
        self.memo: dict = {}

    def visit(self, node):
        r = self.memo.get(node)
        if r is None:
            r = super().visit(node)
            self.memo[node] = r
        return r

    def generic_visit(self, node):
        return _dtype_bounds(node.dtype) if hasattr(node, "dtype") else _UNBOUNDED

    def visit_IntImm(self, e):
        return (e.value, e.value)

    def visit_Var(self, v):
        r = self.ranges.get(v)
        return r if r is not None else _dtype_bounds(v.dtype)

    def visit_Add(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (bound_add(a[0], b[0]), bound_add(a[1], b[1]))

    def visit_Sub(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (bound_add(a[0], None if b[1] is None else -b[1]),
                bound_add(a[1], None if b[0] is None else -b[0]))

    def visit_Mul(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is not None and b[0] == b[1]:
            return bound_scale(a, b[0])
        if a[0] is not None and a[0] == a[1]:
            return bound_scale(b, a[0])
        if None not in a and None not in b:
            c = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
            return (min(c), max(c))
        if a[0] is not None and b[0] is not None and a[0] >= 0 and b[0] >= 0:
            return (a[0] * b[0], None)
        return _UNBOUNDED

    def _div(self, e, floor: bool):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is None or b[1] is None or b[0] <= 0:
            return _UNBOUNDED   # only positive divisors are analysed
        if a[0] is not None and a[0] >= 0:
            floor = True        # truncating == flooring for non-negative numerators
        if floor:
            lo = None if a[0] is None else min(a[0] // b[0], a[0] // b[1])
            hi = None if a[1] is None else max(a[1] // b[0], a[1] // b[1])
            return (lo, hi)
        if None in a:
            return _UNBOUNDED
        c = [int(x / y) for x in a for y in b]
        return (min(c), max(c))

    def visit_FloorDiv(self, e):
        return self._div(e, True)

    def visit_Div(self, e):
        if not dt.is_integral(e.dtype):
            return _UNBOUNDED
        return self._div(e, False)

    def visit_FloorMod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is None or b[1] is None or b[0] <= 0:
            return _UNBOUNDED
        if b[0] == b[1] and None not in a and a[0] // b[0] == a[1] // b[0]:
            return (a[0] % b[0], a[1] % b[0])   # the whole range lies in one period
        hi = b[1] - 1
        if a[0] is not None and a[0] >= 0 and a[1] is not None:
            hi = min(hi, a[1])
        return (0, hi)

    def visit_Mod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is None or b[1] is None or b[0] <= 0 or not dt.is_integral(e.dtype):
            return _UNBOUNDED
        m = b[1] - 1
        if a[0] is not None and a[0] >= 0:
            return (0, m if a[1] is None else min(m, a[1]))
        return (-m, m)

    def visit_Min(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (_min_opt(a[0], b[0], True), _min_opt(a[1], b[1], False))

    def visit_Max(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (_max_opt(a[0], b[0], False), _max_opt(a[1], b[1], True))

    def _union(self, x, y):
        a, b = self.visit(x), self.visit(y)
        return (_min_opt(a[0], b[0], True), _max_opt(a[1], b[1], True))

    def visit_Select(self, e):
        return self._union(e.true_value, e.false_value)

    def visit_Call(self, e):
        if e.op == "if_then_else":
            return self._union(e.args[1], e.args[2])
        return self.generic_visit(e)

    def visit_Cast(self, e):
        if not dt.is_integral(e.dtype):
            return _UNBOUNDED
        src = e.value.dtype
        if dt.is_bool(src):
            return (0, 1)
        if not dt.is_integral(src):
            return _dtype_bounds(e.dtype)
        lo, hi = self.visit(e.value)
        tlo, thi = _dtype_bounds(e.dtype)
        # a narrowing cast may wrap: keep the source bounds only when they fit
        if (tlo is not None and (lo is None or lo < tlo)) or \
                (thi is not None and (hi is None or hi > thi)):
            return (tlo, thi)
        return (lo, hi)

    def visit_Let(self, e):
        old = self.ranges.get(e.var)
        self.ranges[e.var] = self.visit(e.value)
        try:
            return self.visit(e.body)
        finally:
            if old is None:
                self.ranges.pop(e.var, None)
            else:
                self.ranges[e.var] = old

    def visit_Broadcast(self, e):
        return self.visit(e.value)

    def visit_Ramp(self, e):
        base, stride = self.visit(e.base), self.visit(e.stride)
        last = bound_scale(stride, e.lanes - 1)
        end = (bound_add(base[0], last[0]), bound_add(base[1], last[1]))
        return (_min_opt(base[0], end[0], True), _max_opt(base[1], end[1], True))


def const_int_bound(expr, var_ranges: dict | None = None) -> tuple:
    """Inclusive ``(lo, hi)`` bounds of an integer expression (``None`` = unbounded).

    ``var_ranges`` maps Var -> inclusive (lo, hi); unknown vars are unbounded (or limited
    by their dtype for narrow and unsigned types).
    """
    return BoundAnalyzer(dict(var_ranges) if var_ranges else {}).visit(expr)


# ------------------------------------------------------------------------ linearity
