"""Canonical simplification of TIR integer expressions (``Simplifier``, ``simplify_expr``).

Invariants:
- ``simplify_expr`` never changes the value of an expression for the given variable ranges;
  it returns the *same object* when nothing simplifies (passes rely on identity to stay
  cheap).  Within one ``Simplifier`` every node is simplified once (memo by identity).
- Signed integer sums are kept in one canonical form: terms in order of first appearance,
  positive terms first, then subtracted ones, the constant last (``i*32 + j - k + 4``).
  Terms are collected by structural key, so two equal subtrees cancel even when they are
  different objects.
- Float expressions are never reassociated: only constants are folded and ``x+0``,
  ``x-0``, ``x*1``, ``x/1`` are dropped.  Unsigned integers get only constant folding.
- Ranges are inclusive ``(lo, hi)`` pairs; ``None`` means unbounded on that side.
"""
from __future__ import annotations

from math import gcd

from .. import dtype as dt
from .. import op as _op
from ..analysis import new_key_memo
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Mul,
    Not,
    Ramp,
    Select,
    Sub,
    Var,
)
from ..functor import Mutator
from .const_int_bound import BoundAnalyzer, bound_add, bound_scale

__all__ = ["simplify_expr", "Simplifier"]

_SIGNED = frozenset(("int8", "int16", "int32", "int64"))


# ------------------------------------------------------------------------ simplifier
def _ival(e):
    return e.value if type(e) is IntImm else None


class Simplifier(Mutator):
    """Simplifies expressions under a mutable set of variable ranges.

    Passes keep one instance per function and call ``bind``/``unbind`` as they enter and
    leave loops; the memo is dropped only when a variable is re-bound to a different range
    (the same Var object may be the loop variable of two sibling loops).
    """

    def __init__(self, var_ranges: dict | None = None):
        super().__init__()
        self.ranges: dict = dict(var_ranges) if var_ranges else {}
        self.seen: dict = dict(self.ranges)
        self.memo: dict = {}
        self.bounds = BoundAnalyzer(self.ranges)
        self.keys = new_key_memo()
        self.lins: dict = {}

    # -------------------------------------------------------------- scope handling
    def bind(self, var: Var, rng: tuple) -> None:
        old = self.seen.get(var)
        if old is not None and old != rng:
            self.memo.clear()
            self.bounds.memo.clear()
        self.seen[var] = rng
        self.ranges[var] = rng
        self.bounds.memo.pop(var, None)

    def unbind(self, var: Var) -> None:
        self.ranges.pop(var, None)

    def bound(self, e) -> tuple:
        return self.bounds.visit(e)

    def visit(self, node):
        if type(node) is tuple:
            return self.visit_tuple(node)
        r = self.memo.get(node)
        if r is None:
            r = super().visit(node)
            self.memo[node] = r
            if r is not node:
                self.memo.setdefault(r, r)   # results are already simplified
        return r

    # -------------------------------------------------------------- leaves
    def visit_Var(self, v):
        r = self.ranges.get(v)
        if r is not None and r[0] is not None and r[0] == r[1] and v.dtype in _SIGNED:
            return IntImm(v.dtype, r[0])   # a loop of extent 1 pins its variable
        return v

    def visit_IntImm(self, e):
        return e

    def visit_FloatImm(self, e):
        return e

    # -------------------------------------------------------------- linear forms
    def lin(self, x) -> tuple:
        """``x`` (already simplified, signed int) as ({key: (coef, term)}, const)."""
        r = self.lins.get(x)
        if r is not None:
            return r
        t = type(x)
        if t is IntImm:
            r = ({}, x.value)
        elif t is Add:
            r = _merge(self.lin(x.a), self.lin(x.b), 1)
        elif t is Sub:
            r = _merge(self.lin(x.a), self.lin(x.b), -1)
        elif t is Mul and type(x.b) is IntImm:
            r = _scale_lin(self.lin(x.a), x.b.value)
        elif t is Mul and type(x.a) is IntImm:
            r = _scale_lin(self.lin(x.b), x.a.value)
        else:
            r = ({self.keys.visit(x): (1, x)}, 0)
        self.lins[x] = r
        return r

    def lin_bound(self, form) -> tuple:
        terms, c = form
        lo = hi = c
        for coef, t in terms.values():
            tl, th = bound_scale(self.bounds.visit(t), coef)
            lo = bound_add(lo, tl)
            hi = bound_add(hi, th)
        return lo, hi

    def build(self, form, dtype: str, like=None):
        """Expression of a linear form; returns ``like`` if it has the same structure."""
        terms, c = form
        acc = None
        neg = []
        for coef, t in terms.values():
            if coef > 0:
                m = t if coef == 1 else Mul(t, IntImm(dtype, coef))
                acc = m if acc is None else Add(acc, m)
            elif coef < 0:
                neg.append((coef, t))
        if acc is None:
            if c != 0 or not neg:
                acc, c = IntImm(dtype, c), 0
            else:
                coef, t = neg.pop(0)
                acc = Mul(t, IntImm(dtype, coef))
        for coef, t in neg:
            acc = Sub(acc, t if coef == -1 else Mul(t, IntImm(dtype, -coef)))
        if c > 0:
            acc = Add(acc, IntImm(dtype, c))
        elif c < 0:
            acc = Sub(acc, IntImm(dtype, -c))
        if like is not None and _same_skeleton(acc, like):
            return like
        return acc

    def _canon(self, e, form):
        if len(form[0]) > 1:
            form = self._fold_divmod(form)
        r = self.build(form, e.dtype, e)
        self.lins.setdefault(r, form)
        return r

    def _fold_divmod(self, form):
        """``floordiv(x, c)*c*k + floormod(x, c)*k`` -> ``x*k`` (undoes fused-axis splits)."""
        terms, const = form
        for key, (coef, t) in list(terms.items()):
            if type(t) is not FloorMod or type(t.b) is not IntImm or key not in terms:
                continue
            dkey = self.keys.visit(FloorDiv(t.a, t.b))
            other = terms.get(dkey)
            if other is None or other[0] != coef * t.b.value:
                continue
            terms = dict(terms)
            del terms[key], terms[dkey]
            terms, const = _merge((terms, const), _scale_lin(self.lin(t.a), coef), 1)
        return terms, const

    # -------------------------------------------------------------- + - *
    def visit_Add(self, e):
        if e.dtype in _SIGNED:
            return self._canon(e, self._sum_form(e))
        a, b = self.visit(e.a), self.visit(e.b)
        r = self._vector_arith(e, a, b)
        return _rebuild(e, a, b, _op.add) if r is None else r

    def visit_Sub(self, e):
        if e.dtype in _SIGNED:
            return self._canon(e, self._sum_form(e))
        a, b = self.visit(e.a), self.visit(e.b)
        r = self._vector_arith(e, a, b)
        return _rebuild(e, a, b, _op.sub) if r is None else r

    def visit_Mul(self, e):
        if e.dtype in _SIGNED and (type(e.a) is IntImm or type(e.b) is IntImm):
            return self._canon(e, self._sum_form(e))
        a, b = self.visit(e.a), self.visit(e.b)
        if e.dtype in _SIGNED:
            if type(b) is IntImm:
                return self._canon(e, _scale_lin(self.lin(a), b.value))
            if type(a) is IntImm:
                return self._canon(e, _scale_lin(self.lin(b), a.value))
            return e if a is e.a and b is e.b else Mul(a, b)
        r = self._vector_arith(e, a, b)
        return _rebuild(e, a, b, _op.mul) if r is None else r

    def _sum_form(self, e):
        """Linear form of a whole (unsimplified) sum tree; only its leaves are simplified.

        Building the canonical expression once at the root keeps long index sums linear
        in their number of terms instead of re-canonicalizing every partial sum.
        """
        t = type(e)
        if t is Add:
            return _merge(self._sum_form(e.a), self._sum_form(e.b), 1)
        if t is Sub:
            return _merge(self._sum_form(e.a), self._sum_form(e.b), -1)
        if t is Mul and type(e.b) is IntImm:
            return _scale_lin(self._sum_form(e.a), e.b.value)
        if t is Mul and type(e.a) is IntImm:
            return _scale_lin(self._sum_form(e.b), e.a.value)
        if t is IntImm:
            return {}, e.value
        return self.lin(self.visit(e))

    def _vector_arith(self, e, a, b):
        """Ramp/Broadcast algebra for integer vectors (what the vectorizer produces)."""
        ta, tb = type(a), type(b)
        if (ta is not Ramp and ta is not Broadcast) or (tb is not Ramp and tb is not Broadcast):
            return None
        if not dt.is_int(e.dtype):
            return None
        t = type(e)
        n = a.lanes
        if ta is Broadcast and tb is Broadcast:
            return Broadcast(self.visit(t(a.value, b.value)), n)
        if t is Mul:
            if ta is Ramp and tb is Broadcast:
                return self._ramp(self.visit(Mul(a.base, b.value)),
                                  self.visit(Mul(a.stride, b.value)), n)
            if ta is Broadcast and tb is Ramp:
                return self._ramp(self.visit(Mul(a.value, b.base)),
                                  self.visit(Mul(a.value, b.stride)), n)
            return None
        ab, as_ = (a.base, a.stride) if ta is Ramp else (a.value, IntImm(a.value.dtype, 0))
        bb, bs = (b.base, b.stride) if tb is Ramp else (b.value, IntImm(b.value.dtype, 0))
        return self._ramp(self.visit(t(ab, bb)), self.visit(t(as_, bs)), n)

    def _ramp(self, base, stride, lanes):
        return Broadcast(base, lanes) if _ival(stride) == 0 else Ramp(base, stride, lanes)

    # -------------------------------------------------------------- division
    def visit_FloorDiv(self, e):
        return self._division(e, True, True)

    def visit_FloorMod(self, e):
        return self._division(e, False, True)

    def visit_Div(self, e):
        return self._division(e, True, False)

    def visit_Mod(self, e):
        return self._division(e, False, False)

    def _division(self, e, is_div: bool, floor: bool):
        a, b = self.visit(e.a), self.visit(e.b)
        c = _ival(b)
        if e.dtype not in _SIGNED or c is None or c <= 0:
            r = self._vector_division(e, a, b, is_div)
            return _rebuild(e, a, b, _DIV_OPS[(is_div, floor)]) if r is None else r
        if not floor and (_ival(a) is None) and (self.bound(a)[0] is None or self.bound(a)[0] < 0):
            return _rebuild(e, a, b, _DIV_OPS[(is_div, floor)])   # truncation != flooring
        if _ival(a) is not None:
            va = a.value
            return IntImm(e.dtype, (va // c if is_div else va % c) if floor or va >= 0 else
                          (int(va / c) if is_div else va - c * int(va / c)))
        if c == 1:
            return a if is_div else IntImm(e.dtype, 0)
        r = self._floor_rules(a, c, is_div)
        if r is None:
            cls = FloorDiv if is_div else FloorMod
            return e if (type(e) is cls and a is e.a and b is e.b) else cls(a, b)
        if self.keys.visit(r) == self.keys.visit(e):
            return e
        return r

    def _floor_rules(self, a, c: int, is_div: bool):
        """floordiv/floormod(a, c) for c > 0, or None when no rule applies."""
        dtype = a.dtype
        ta = type(a)
        if ta is FloorDiv and is_div and _ival(a.b) is not None and a.b.value > 0:
            return self.visit(FloorDiv(a.a, IntImm(dtype, a.b.value * c)))
        if ta is FloorMod and not is_div and _ival(a.b) is not None and a.b.value % c == 0:
            return self.visit(FloorMod(a.a, IntImm(dtype, c)))
        terms, k = self.lin(a)
        outer, inner = {}, {}
        for key, (coef, t) in terms.items():
            if coef % c == 0:
                outer[key] = (coef // c, t)
            else:
                inner[key] = (coef, t)
        q, r = divmod(k, c)
        lo, hi = self.lin_bound((inner, r))
        if lo is not None and hi is not None and lo // c == hi // c:
            d = lo // c   # the remainder part stays within one multiple of c
            if is_div:
                return self.build((outer, q + d), dtype)
            return self.build((inner, r - c * d), dtype)
        if not outer and q == 0 and k == r:
            return self._gcd_rule(inner, r, c, is_div, dtype)
        rest = self.build((inner, r), dtype)
        if is_div:
            part = self._gcd_rule(inner, r, c, True, dtype)
            if part is None:
                part = FloorDiv(rest, IntImm(dtype, c))
            outer[self.keys.visit(part)] = (1, part)
            return self.build((outer, q), dtype)
        part = self._gcd_rule(inner, r, c, False, dtype)
        return FloorMod(rest, IntImm(dtype, c)) if part is None else part

    def _gcd_rule(self, inner: dict, r: int, c: int, is_div: bool, dtype: str):
        """floordiv(x*d*m + y, c) -> floordiv(x*m, c/d) when d | c and 0 <= y < d."""
        cands = sorted({gcd(abs(coef), c) for coef, _ in inner.values()}, reverse=True)
        for d in cands:
            if d <= 1 or d == c:
                continue
            big = {k: (coef // d, t) for k, (coef, t) in inner.items() if coef % d == 0}
            small = {k: v for k, v in inner.items() if k not in big}
            lo, hi = self.lin_bound((small, r))
            if lo is None or hi is None or lo < 0 or hi >= d:
                continue
            x = self.build((big, 0), dtype)
            if is_div:
                return self.visit(FloorDiv(x, IntImm(dtype, c // d)))
            m = self.visit(FloorMod(x, IntImm(dtype, c // d)))
            return self.visit(Add(Mul(m, IntImm(dtype, d)), self.build((small, r), dtype)))
        return None

    def _vector_division(self, e, a, b, is_div: bool):
        """floordiv/floormod(Ramp(base, s, n), c) when all lanes share one quotient."""
        if type(a) is not Ramp or type(b) is not Broadcast or type(e) not in (FloorDiv, FloorMod):
            return None
        c, s = _ival(b.value), _ival(a.stride)
        if c is None or s is None or c <= 0 or s < 0 or a.base.dtype not in _SIGNED:
            return None
        terms, k = self.lin(a.base)
        outer = {key: (coef // c, t) for key, (coef, t) in terms.items() if coef % c == 0}
        inner = {key: v for key, v in terms.items() if key not in outer}
        q, r = divmod(k, c)
        lo, hi = self.lin_bound((inner, r))
        if lo is None or hi is None or lo < 0 or hi + s * (a.lanes - 1) >= c:
            return None
        if is_div:
            return Broadcast(self.build((outer, q), a.base.dtype), a.lanes)
        return Ramp(self.build((inner, r), a.base.dtype), a.stride, a.lanes)

    # -------------------------------------------------------------- min / max / compare
    def _int_diff(self, a, b):
        return self.lin_bound(_merge(self.lin(a), self.lin(b), -1))

    def visit_Min(self, e):
        return self._minmax(e, True)

    def visit_Max(self, e):
        return self._minmax(e, False)

    def _minmax(self, e, is_min: bool):
        a, b = self.visit(e.a), self.visit(e.b)
        if e.dtype not in _SIGNED or _ival(a) is not None and _ival(b) is not None:
            return _rebuild(e, a, b, _op.min_ if is_min else _op.max_)
        lo, hi = self._int_diff(a, b)
        if hi is not None and hi <= 0:
            return a if is_min else b
        if lo is not None and lo >= 0:
            return b if is_min else a
        if type(a) is type(e) and _ival(a.b) is not None and _ival(b) is not None:
            v = min(a.b.value, b.value) if is_min else max(a.b.value, b.value)
            return type(e)(a.a, IntImm(e.dtype, v))   # nested constant bounds merge
        return e if a is e.a and b is e.b else type(e)(a, b)

    def _compare(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a.dtype in _SIGNED:
            lo, hi = self._int_diff(a, b)
            res = _decide(type(e), lo, hi)
            if res is not None:
                return IntImm("bool", res)
            r = self._normalize_cmp(type(e), a, b)
            if r is not None:
                return r
        elif type(a) is FloatImm and type(b) is FloatImm:
            return _op.cmp(type(e), a, b)
        return e if a is e.a and b is e.b else type(e)(a, b)

    visit_LT = visit_LE = visit_GT = visit_GE = visit_EQ = visit_NE = _compare

    def _normalize_cmp(self, cls, a, b):
        """``x*g + c1 < c2`` -> ``x < ceil((c2 - c1)/g)`` (terms left, constant right).

        Returns the new comparison, or None when ``a <cls> b`` is already in that form.
        """
        if type(b) is IntImm:
            (terms, k), c, flipped = self.lin(a), b.value, False
        elif type(a) is IntImm:
            (terms, k), c, flipped = self.lin(b), a.value, True
            cls = _FLIP[cls]
        else:
            return None
        c -= k
        g = 0
        for coef, _ in terms.values():
            g = gcd(g, coef)
        if not terms:
            return None
        if k == 0 and g == 1 and not flipped:
            return self._drop_floordiv(cls, terms, c, a.dtype)
        if g > 1:
            if cls is EQ or cls is NE:
                if c % g:
                    return IntImm("bool", 0 if cls is EQ else 1)
                c //= g
            else:
                c = -((-c) // g) if cls is LT or cls is GE else c // g
            terms = {key: (coef // g, t) for key, (coef, t) in terms.items()}
        dtype = b.dtype if flipped else a.dtype
        r = self._drop_floordiv(cls, terms, c, dtype)
        return cls(self.build((terms, 0), dtype), IntImm(dtype, c)) if r is None else r

    def _drop_floordiv(self, cls, terms: dict, c: int, dtype: str):
        """``x // d < c`` -> ``x < c*d`` (and the LE/GT/GE variants), or None."""
        if len(terms) != 1 or cls is EQ or cls is NE:
            return None
        (coef, t), = terms.values()
        d = _ival(t.b) if type(t) is FloorDiv else None
        if coef != 1 or d is None or d <= 0:
            return None
        bound = c * d if cls is LT or cls is GE else (c + 1) * d - 1
        return self.visit(cls(t.a, IntImm(dtype, bound)))

    # -------------------------------------------------------------- logic / select / misc
    def visit_And(self, e):
        return _rebuild(e, self.visit(e.a), self.visit(e.b), _op.logical_and)

    def visit_Or(self, e):
        return _rebuild(e, self.visit(e.a), self.visit(e.b), _op.logical_or)

    def visit_Not(self, e):
        a = self.visit(e.a)
        if type(a) is IntImm:
            return IntImm("bool", 0 if a.value else 1)
        if type(a) is Not:
            return a.a
        neg = _NEGATE.get(type(a))
        if neg is not None and a.a.dtype in _SIGNED:    # not for floats: NaN compares false
            return neg(a.a, a.b)
        return e if a is e.a else Not(a)

    def visit_Select(self, e):
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        cv = _ival(c.value) if type(c) is Broadcast else _ival(c)
        if cv is not None:
            return t if cv else f
        if t is f or self.keys.visit(t) == self.keys.visit(f):
            return t
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return Select(c, t, f)

    def visit_Call(self, e):
        args = self.visit_tuple(e.args)
        if e.op == "if_then_else":
            c = args[0]
            cv = _ival(c.value) if type(c) is Broadcast else _ival(c)
            if cv is not None:
                return args[1] if cv else args[2]
        return e if args is e.args else Call(e.dtype, e.op, args)

    def visit_Cast(self, e):
        v = self.visit(e.value)
        if v.dtype == e.dtype:
            return v
        if type(v) is IntImm or type(v) is FloatImm:
            return _op.cast(e.dtype, v)
        return e if v is e.value else Cast(e.dtype, v)

    def visit_Let(self, e):
        v = self.visit(e.value)
        if dt.is_integral(v.dtype) and dt.lanes(v.dtype) == 1:
            self.bind(e.var, self.bound(v))
        body = self.visit(e.body)
        if v is e.value and body is e.body:
            return e
        return Let(e.var, v, body)

    def visit_BufferLoad(self, e):
        idx = self.visit_tuple(e.indices)
        return e if idx is e.indices else BufferLoad(e.buffer, idx)

    def visit_Broadcast(self, e):
        v = self.visit(e.value)
        return e if v is e.value else Broadcast(v, e.lanes)

    def visit_Ramp(self, e):
        base, stride = self.visit(e.base), self.visit(e.stride)
        if _ival(stride) == 0:
            return Broadcast(base, e.lanes)
        return e if base is e.base and stride is e.stride else Ramp(base, stride, e.lanes)


_NEGATE = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}
_FLIP = {LT: GT, LE: GE, GT: LT, GE: LE, EQ: EQ, NE: NE}   # a < b  <=>  b > a
_DIV_OPS = {(True, True): _op.floordiv, (False, True): _op.floormod,
            (True, False): _op.div, (False, False): _op.truncmod}


def _decide(cls, lo, hi):
    """Truth value of ``d <cls> 0`` for d in [lo, hi], or None when undecided."""
    if cls is LT:
        return 1 if hi is not None and hi < 0 else (0 if lo is not None and lo >= 0 else None)
    if cls is LE:
        return 1 if hi is not None and hi <= 0 else (0 if lo is not None and lo > 0 else None)
    if cls is GT:
        return 1 if lo is not None and lo > 0 else (0 if hi is not None and hi <= 0 else None)
    if cls is GE:
        return 1 if lo is not None and lo >= 0 else (0 if hi is not None and hi < 0 else None)
    if lo is not None and lo == hi == 0:
        return 1 if cls is EQ else 0
    if (lo is not None and lo > 0) or (hi is not None and hi < 0):
        return 0 if cls is EQ else 1
    return None


def _same_skeleton(x, y) -> bool:
    """``x`` (freshly built from terms of ``y``) has the same structure as ``y``.

    Only the Add/Sub/Mul/IntImm skeleton is compared; terms must be identical objects.
    A false negative only costs a rebuilt node, never a wrong result.
    """
    if x is y:
        return True
    t = type(x)
    if t is not type(y):
        return False
    if t is IntImm:
        return x.value == y.value and x.dtype == y.dtype
    if t is Add or t is Sub or t is Mul:
        return _same_skeleton(x.a, y.a) and _same_skeleton(x.b, y.b)
    return False


def _merge(x: tuple, y: tuple, sign: int) -> tuple:
    terms = dict(x[0])
    for k, (coef, t) in y[0].items():
        old = terms.get(k)
        c = coef * sign + (old[0] if old is not None else 0)
        if c == 0:
            terms.pop(k, None)
        else:
            terms[k] = (c, old[1] if old is not None else t)
    return terms, x[1] + sign * y[1]


def _scale_lin(x: tuple, c: int) -> tuple:
    if c == 0:
        return {}, 0
    return {k: (coef * c, t) for k, (coef, t) in x[0].items()}, x[1] * c


def _rebuild(e, a, b, fn):
    """``fn(a, b)`` (which folds constants), or ``e`` itself when nothing changed."""
    r = fn(a, b)
    if type(r) is type(e) and r.a is e.a and r.b is e.b:
        return e
    return r


def simplify_expr(expr, var_ranges: dict | None = None):
    """Canonical simplification of ``expr`` (see the module docstring).

    ``var_ranges`` maps Var -> inclusive (lo, hi).  Returns ``expr`` itself when nothing
    could be simplified.
    """
    return Simplifier(var_ranges).visit(expr)
