"""Pass ``vectorize_loops``: loops of kind "vectorized" become explicit vector code.

For a loop ``for v in vectorized(min, min+N)`` the loop variable is replaced by
``Ramp(min, 1, N)``.  Loads and stores whose (flattened) index is affine in ``v`` get a
``Ramp(base, stride, N)`` index; loop-invariant scalars stay scalar and are Broadcast
where they meet vector operands.  Integer Ramp/Broadcast arithmetic is folded by the
simplifier so indices computed through lets or casts still end up as Ramps.

A load whose index is not affine in ``v`` becomes a gather (a vector index that is not
a Ramp).  Fallback (the loop becomes a plain serial loop, correctness first) whenever
the body contains something we cannot express lane-wise: a store whose index is not a
Ramp with a non-zero constant stride (an index that does not depend on ``v`` is a
reduction over the lanes or a repeated scalar side effect; a scatter could collide), a
branch or nested loop bound that depends on ``v``, an Allocate, an Evaluate of a vector
value, or vectors of another width already inside.
Nested serial loops whose bounds do not depend on ``v`` are kept, their bodies vectorized.

Invariants: a vectorized loop is assumed free of loop-carried dependences (the schedule
only vectorizes spatial axes; reductions hit the fallback above).  A loop of N <= 8
lanes is one vector.  A longer one is cut into vectors of a power-of-two width: of the
largest power of two dividing N (at most 64) when that is 8 or more, so 24 lanes are 3
vectors of 8 and 48 are 3 of 16; else vectors of 8 and one tail vector of the remaining
N % 8 lanes (a scalar iteration when 1 is left), so 58 lanes are 7 vectors of 8 and 2
lanes, 20 are 2 of 8 and 4.  The chunks run in a loop, unrolled when it covers at most
64 lanes (a register tile keeps its accumulators in registers), else serial.  (LLVM
compiles a vector whose width is not a power of two poorly: a 4 x 24 register tile as
<24 x float> ran 5-9x slower than 4 x 16, and as three <8 x float> as fast; cutting
widths without a factor of 8 into vectors of their largest power-of-two factor made 58
lanes 29 vectors of 2, which an 8-lane main part with a 2-lane tail runs 1.9x faster.)
``if_then_else`` with a scalar condition keeps it scalar (only the taken branch is
evaluated); with a vector condition it stays a vector Call for the code generator to
handle lane-safely.
"""
from __future__ import annotations

from ..tir import dtype as dt
from ..tir.analysis import uses_var
from ..tir.arith import Simplifier, detect_linear
from ..tir.calls import EXTERN, PURE_EXTERN
from ..tir.expr import (
    Add,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Mul,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Sub,
    Var,
)
from ..tir.functor import Mutator, transform_func
from ..tir.stmt import (
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    seq,
)
from .common import loop_range
from .simplify import make_replacer

__all__ = ["vectorize_loops", "MAX_LANES"]

MAX_LANES = 64
# up to this many lanes a vector stays whole: one AVX2 register of float32, which LLVM
# widens cheaply (6 lanes as <6 x float> ran faster than as three <2 x float>); longer
# loops without a factor of 8 are vectors of this width and one tail vector
SMALL_LANES = 8
_INT_ALGEBRA = (Add, Sub, Mul, FloorDiv, FloorMod)


class _Unsupported(Exception):
    """Raised inside a loop body that cannot be vectorized; the loop stays serial."""


def _lanes(e) -> int:
    return dt.lanes(e.dtype)


def _chunks(n: int) -> tuple:
    """(lanes, count, tail) a vectorized loop of ``n`` iterations is cut into: ``count``
    vectors of ``lanes`` then one vector of ``tail`` lanes (0: none; 1: a scalar
    iteration).  ``n`` itself when it is at most SMALL_LANES; else the largest power of
    two dividing ``n`` (<= MAX_LANES) when that is at least SMALL_LANES; else vectors of
    SMALL_LANES and the remainder."""
    if n <= SMALL_LANES:
        return n, 1, 0
    pow2 = min(n & -n, MAX_LANES)
    if pow2 >= SMALL_LANES:
        return pow2, n // pow2, 0
    return SMALL_LANES, n // SMALL_LANES, n % SMALL_LANES


class _Vectorizer(Mutator):
    """Rewrites one loop body with ``var`` := Ramp(base, 1, lanes)."""

    def __init__(self, var: Var, base: PrimExpr, lanes: int, simp: Simplifier):
        super().__init__()
        self.var = var
        self.base = base
        self.lanes = lanes
        self.ramp = Ramp(base, IntImm(var.dtype, 1), lanes)
        self.vec_vars: dict = {var: self.ramp}   # scalar Var -> vector replacement
        self.simp = simp                         # knows the enclosing loop ranges

    # -------------------------------------------------------------- helpers
    def widen(self, e):
        """Broadcast a scalar to the vector width; reject vectors of another width."""
        n = _lanes(e)
        if n == self.lanes:
            return e
        if n != 1:
            raise _Unsupported(f"vector of {n} lanes inside a {self.lanes}-lane loop")
        return Broadcast(e, self.lanes)

    def vector_index(self, idx):
        """A vector index for ``idx`` (which depends on the loop var), or _Unsupported."""
        if not uses_var(idx, self.vec_vars.keys() - {self.var}):
            lin = detect_linear(idx, self.var, simplifier=self.simp)
            if lin is not None:
                base, stride = lin
                if type(stride) is IntImm and stride.value == 0:
                    return Broadcast(base, self.lanes)
                start = self.simp.visit(Add(base, Mul(stride, self.base)))
                return Ramp(start, stride, self.lanes)
        v = self.visit(idx)
        if _lanes(v) == 1:
            return Broadcast(v, self.lanes)
        # Ramp, Broadcast, or any other vector index: a gather for loads (the code
        # generator emits llvm.masked.gather); stores reject non-Ramp indices.
        return self.widen(v)

    def access(self, indices: tuple) -> tuple:
        """(new indices, is_vector) for a load/store; scalar indices are left untouched."""
        if not uses_var(indices, self.vec_vars):
            return indices, False
        if len(indices) != 1:
            raise _Unsupported("multi-dimensional vector access (run flatten_buffers first)")
        return (self.vector_index(indices[0]),), True

    # -------------------------------------------------------------- expressions
    def visit_Var(self, v):
        return self.vec_vars.get(v, v)

    def visit_IntImm(self, e):
        return e

    def visit_FloatImm(self, e):
        return e

    def _binary(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b:
            return e
        if _lanes(a) == 1 and _lanes(b) == 1:
            return type(e)(a, b)
        r = type(e)(self.widen(a), self.widen(b))
        if type(e) in _INT_ALGEBRA and dt.is_int(r.dtype):
            return self.simp.visit(r)      # Ramp/Broadcast algebra keeps indices affine
        return r

    visit_Add = visit_Sub = visit_Mul = visit_Div = visit_Mod = _binary
    visit_FloorDiv = visit_FloorMod = visit_Min = visit_Max = _binary
    visit_EQ = visit_NE = visit_LT = visit_LE = visit_GT = visit_GE = _binary
    visit_And = visit_Or = _binary

    def visit_Not(self, e):
        a = self.visit(e.a)
        return e if a is e.a else Not(a)

    def visit_Select(self, e):
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        if _lanes(c) == 1 and _lanes(t) == 1 and _lanes(f) == 1:
            return Select(c, t, f)
        return Select(self.widen(c), self.widen(t), self.widen(f))

    def visit_Cast(self, e):
        v = self.visit(e.value)
        if v is e.value:
            return e
        if _lanes(v) == 1:
            return Cast(e.dtype, v)
        if type(v) is Broadcast:
            return Broadcast(Cast(e.dtype, v.value), v.lanes)
        return Cast(dt.with_lanes(e.dtype, _lanes(v)), v)

    def visit_Call(self, e):
        args = self.visit_tuple(e.args)
        if args is e.args:
            return e
        if all(_lanes(a) == 1 for a in args):
            return Call(e.dtype, e.op, args)
        if e.op == "if_then_else" and _lanes(args[0]) == 1:
            args = (args[0], self.widen(args[1]), self.widen(args[2]))
        elif e.op in (EXTERN, PURE_EXTERN):     # args[0] names the C function
            args = (args[0],) + tuple(self.widen(a) for a in args[1:])
        else:
            args = tuple(self.widen(a) for a in args)
        return Call(dt.with_lanes(e.dtype, self.lanes), e.op, args)

    def visit_Let(self, e):
        v = self.visit(e.value)
        if _lanes(v) == 1:
            body = self.visit(e.body)
            return e if v is e.value and body is e.body else Let(e.var, v, body)
        nv = Var(e.var.name, v.dtype)
        self.vec_vars[e.var] = nv
        return Let(nv, v, self.visit(e.body))

    def visit_BufferLoad(self, e):
        idx, vec = self.access(e.indices)
        if not vec:
            return e
        if type(idx[0]) is Broadcast:
            return Broadcast(BufferLoad(e.buffer, (idx[0].value,)), self.lanes)
        return BufferLoad(e.buffer, idx)

    def generic_visit(self, node):
        r = super().generic_visit(node)
        if r is not node and isinstance(node, PrimExpr):
            raise _Unsupported(f"cannot vectorize {type(node).__name__}")
        return r

    # -------------------------------------------------------------- statements
    def visit_BufferStore(self, s):
        idx, vec = self.access(s.indices)
        r = idx[0]
        if not vec or type(r) is not Ramp or type(r.stride) is not IntImm or r.stride.value == 0:
            # Lanes would collide on one address, or the index is invariant: the store
            # must run once per iteration, in order.
            raise _Unsupported(f"store to {s.buffer.name} not affine in the vector lane")
        return BufferStore(s.buffer, self.widen(self.visit(s.value)), idx)

    def visit_IfThenElse(self, s):
        c = self.visit(s.condition)
        if _lanes(c) != 1:
            raise _Unsupported("branch condition depends on the vector lane")
        then = self.visit(s.then_case)
        other = None if s.else_case is None else self.visit(s.else_case)
        if c is s.condition and then is s.then_case and other is s.else_case:
            return s
        return IfThenElse(c, then, other)

    def visit_For(self, s):
        mn, ext = self.visit(s.min), self.visit(s.extent)
        if _lanes(mn) != 1 or _lanes(ext) != 1:
            raise _Unsupported("inner loop bounds depend on the vector lane")
        body = self.visit(s.body)
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return For(s.loop_var, mn, ext, s.kind, body, s.annotations)

    def visit_LetStmt(self, s):
        v = self.visit(s.value)
        if _lanes(v) == 1:
            body = self.visit(s.body)
            return s if v is s.value and body is s.body else LetStmt(s.var, v, body)
        nv = Var(s.var.name, v.dtype)
        self.vec_vars[s.var] = nv
        return LetStmt(nv, v, self.visit(s.body))

    def visit_Allocate(self, s):
        raise _Unsupported(f"allocation of {s.buffer.name} inside a vectorized loop")

    def visit_Evaluate(self, s):
        v = self.visit(s.value)
        if _lanes(v) != 1:
            raise _Unsupported("evaluated expression depends on the vector lane")
        return s if v is s.value else Evaluate(v)

    def visit_AttrStmt(self, s):
        if isinstance(s.value, PrimExpr) and uses_var(s.value, self.vec_vars):
            raise _Unsupported(f"attribute {s.key} depends on the vector lane")
        body = self.visit(s.body)
        return s if body is s.body else AttrStmt(s.node, s.key, s.value, body)


def _serial(loop: For, body) -> For:
    return For(loop.loop_var, loop.min, loop.extent, ForKind.SERIAL, body, loop.annotations)


def vectorize_one(loop: For, body, simplifier: Simplifier | None = None) -> object:
    """Vector code for a vectorized loop whose (already processed) body is ``body``.

    ``simplifier`` carries the ranges of the enclosing loops (used for the vector indices).
    """
    simp = simplifier if simplifier is not None else Simplifier()
    n = loop.extent.value if type(loop.extent) is IntImm else None
    if n is None or n <= 1 or dt.lanes(loop.loop_var.dtype) != 1:
        return _serial(loop, body)
    lanes, count, tail = _chunks(n)
    var = loop.loop_var
    try:
        if count == 1 and not tail:
            return _Vectorizer(var, loop.min, n, simp).visit(body)
        parts = [_vector_chunks(loop, body, lanes, count, simp)]
        if tail:
            base = simp.visit(Add(loop.min, IntImm(var.dtype, lanes * count)))
            parts.append(_Vectorizer(var, base, tail, simp).visit(body) if tail > 1 else
                         make_replacer(body, var, simp)(base))
        return seq(*parts)
    except _Unsupported:
        return _serial(loop, body)


def _vector_chunks(loop: For, body, lanes: int, count: int, simp: Simplifier):
    """``count`` vectors of ``lanes`` from the loop's start: one vector statement, or a
    loop over them -- unrolled when the loop is at most MAX_LANES long (the chunks of a
    register tile keep their accumulators in registers), else serial."""
    var = loop.loop_var
    if count == 1:
        return _Vectorizer(var, loop.min, lanes, simp).visit(body)
    outer = Var(var.name + "_outer", var.dtype)
    simp.bind(outer, (0, count - 1))
    base = simp.visit(Add(loop.min, Mul(outer, IntImm(var.dtype, lanes))))
    inner = _Vectorizer(var, base, lanes, simp).visit(body)
    kind = ForKind.UNROLLED if lanes * count <= MAX_LANES else ForKind.SERIAL
    return For(outer, IntImm(var.dtype, 0), IntImm(var.dtype, count), kind, inner,
               loop.annotations)


class _LoopFinder(Mutator):
    """Finds vectorized loops, innermost first, tracking the ranges of enclosing loops."""

    def __init__(self):
        super().__init__()
        self.simp = Simplifier()

    def visit_For(self, s):
        self.simp.bind(s.loop_var, loop_range(self.simp, s.min, s.extent))
        body = self.visit(s.body)
        self.simp.unbind(s.loop_var)
        if s.kind == ForKind.VECTORIZED:
            return vectorize_one(s, body, self.simp)
        return s if body is s.body else For(s.loop_var, s.min, s.extent, s.kind, body,
                                            s.annotations)

    def visit_LetStmt(self, s):
        if dt.is_integral(s.value.dtype) and dt.lanes(s.value.dtype) == 1:
            self.simp.bind(s.var, self.simp.bound(s.value))
        return self.generic_visit(s)

    def visit(self, node):
        if isinstance(node, PrimExpr):
            return node      # expressions hold no loops
        return super().visit(node)


def vectorize_loops(func: PrimFunc) -> PrimFunc:
    """Turn every "vectorized" loop into Ramp/Broadcast vector code (or a serial loop)."""
    return transform_func(func, _LoopFinder())

