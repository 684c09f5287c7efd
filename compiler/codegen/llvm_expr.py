"""Emission of TIR arithmetic, logic, cast and vector-construction expressions.

Role: a mixin of ``FunctionEmitter``; each ``_e_<node>`` method appends the
instructions computing one node and returns its operand text (``%t12`` or a literal).
Invariants:
- the LLVM type of a returned operand is always ``ltype(node.dtype)``;
- operands whose lane counts differ (a scalar next to a vector) are broadcast here,
  so the emitted IR is well typed even for loosely built TIR;
- float a*b+c (scalar or vector, either operand order, and the two subtraction forms)
  becomes ``llvm.fmuladd``: LLVM never fuses a plain fmul/fadd pair without the
  ``contract`` flag, and the FMA units are where the kernels' throughput comes from;
- signed int32/int64 add/sub/mul carry ``nsw`` (index arithmetic: lets LLVM fold the
  sign extension of GEP indices); narrower ints wrap as numpy does;
- FloorDiv/FloorMod round toward -inf; positive constant divisors get a short
  sequence (shift/and for powers of two).
"""
from __future__ import annotations

from functools import cache

from ..errors import CodegenError
from ..tir import dtype as dt
from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Or,
    Sub,
)
from .llvm_builder import EmitterBase
from .llvm_types import index_mask, intrinsic_suffix, ltype, scalar_lit, splat_lit, vector_lit

_MISSING = object()

# comparison node -> (float predicate, signed predicate, unsigned predicate)
_CMP = {EQ: ("oeq", "eq", "eq"), NE: ("une", "ne", "ne"), LT: ("olt", "slt", "ult"),
        LE: ("ole", "sle", "ule"), GT: ("ogt", "sgt", "ugt"), GE: ("oge", "sge", "uge")}


@cache
def _kind(dtype: str) -> str:
    """'f' float, 's' signed int, 'u' unsigned int or bool."""
    base = dt.element_of(dtype)
    if base[0] == "f":
        return "f"
    return "s" if base[0] == "i" else "u"


_SAME_AS_A = frozenset([Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max, And, Or])


def fast_dtype(e) -> str:
    """``e.dtype`` without the recursive property calls down the left operand chain
    (index expressions are deep left spines, and this runs for every binary node)."""
    while type(e) in _SAME_AS_A:
        e = e.a
    return e.dtype


def const_value(e):
    """Python value of an IntImm/FloatImm, else None."""
    t = type(e)
    return e.value if t is IntImm or t is FloatImm else None


class ExprMixin(EmitterBase):
    """Arithmetic/logic/cast/vector expression emitters."""

    # ---------------------------------------------------------------- entry points
    def expr(self, e) -> str:
        fn = self._EXPR.get(type(e))
        if fn is None:
            raise CodegenError(f"codegen: cannot generate code for expression {e} "
                               f"({type(e).__name__}); expected a lowered, flattened TIR "
                               "expression (no ProducerLoad/Reduce)")
        return fn(self, e)

    def expr_as(self, e, dtype: str) -> str:
        """Emit ``e`` and broadcast it if ``dtype`` has more lanes."""
        v = self.expr(e)
        ed = self.dtype_of(e)
        if ed != dtype:
            v = self.coerce(v, ed, dtype)
        return v

    def coerce(self, v: str, src: str, dst: str) -> str:
        sl, dl = dt.lanes(src), dt.lanes(dst)
        if sl == dl:
            return self.cast_value(v, src, dst)
        if sl == 1:
            return self.broadcast(self.cast_value(v, src, dt.element_of(dst)),
                                  dt.element_of(dst), dl)
        raise CodegenError(f"codegen: cannot use a value of dtype {src} where {dst} "
                           "is expected (lane counts differ)")

    def dtype_of(self, e) -> str:
        """``e.dtype``, memoized for binary nodes: their dtype property walks the whole
        left operand chain, which would make long chains (unrolled sums) quadratic."""
        if type(e) not in _SAME_AS_A:
            return e.dtype
        memo = self.mod.dtypes
        path = []
        d = None
        while type(e) in _SAME_AS_A:
            d = memo.get(e)
            if d is not None:
                break
            path.append(e)
            e = e.a
        if d is None:
            d = e.dtype
        for x in path:
            memo[x] = d
        return d

    def _operands(self, e) -> tuple:
        """Both operands of a binary node at a common dtype."""
        da, db = self.dtype_of(e.a), self.dtype_of(e.b)
        if da == db:
            return self.expr(e.a), self.expr(e.b), da
        d = da if dt.lanes(da) >= dt.lanes(db) else db
        return self.expr_as(e.a, d), self.expr_as(e.b, d), d

    # ---------------------------------------------------------------- leaves
    def _e_var(self, e) -> str:
        v = self.lookup(e)
        if v is None:
            raise CodegenError(f"codegen: variable {e.name!r} ({e.dtype}) is used outside "
                               "the scope that defines it; expected a loop, let or "
                               "buffer variable bound above its use")
        return v

    def _e_imm(self, e) -> str:
        return scalar_lit(e.dtype, e.value)

    def _e_string(self, e) -> str:
        raise CodegenError(f"codegen: string constant {e.value!r} cannot be compiled; "
                           "expected numeric expressions only")

    # ---------------------------------------------------------------- arithmetic
    def _arith(self, e, fop: str, sop: str, uop: str) -> str:
        a, b, d = self._operands(e)
        k = _kind(d)
        op = fop if k == "f" else (sop if k == "s" else uop)
        if op == sop and sop.endswith(" nsw") and dt.bits(d) < 32:
            op = sop[:-4]   # int8/int16 arithmetic wraps like numpy
        return self.op(f"{op} {ltype(d)} {a}, {b}")

    def fmuladd(self, a: str, b: str, c: str, d: str) -> str:
        t = ltype(d)
        fn = self.mod.intrinsic(f"llvm.fmuladd.{intrinsic_suffix(d)}", t, (t, t, t))
        return self.op(f"call {t} {fn}({t} {a}, {t} {b}, {t} {c})")

    def _e_add(self, e) -> str:
        d = self.dtype_of(e)
        if _kind(d) == "f":
            x, y = e.a, e.b
            if type(x) is Mul and self.dtype_of(x) == d:
                return self.fmuladd(self.expr_as(x.a, d), self.expr_as(x.b, d),
                                    self.expr_as(y, d), d)
            if type(y) is Mul and self.dtype_of(y) == d:
                return self.fmuladd(self.expr_as(y.a, d), self.expr_as(y.b, d),
                                    self.expr_as(x, d), d)
        return self._arith(e, "fadd", "add nsw", "add")

    def _e_sub(self, e) -> str:
        d = self.dtype_of(e)
        if _kind(d) == "f":
            x, y = e.a, e.b
            t = ltype(d)
            if type(x) is Mul and self.dtype_of(x) == d:      # a*b - c = fmuladd(a, b, -c)
                a, b = self.expr_as(x.a, d), self.expr_as(x.b, d)
                c = self.op(f"fneg {t} {self.expr_as(y, d)}")
                return self.fmuladd(a, b, c, d)
            if type(y) is Mul and self.dtype_of(y) == d:      # c - a*b = fmuladd(-a, b, c)
                c = self.expr_as(x, d)
                a = self.op(f"fneg {t} {self.expr_as(y.a, d)}")
                return self.fmuladd(a, self.expr_as(y.b, d), c, d)
        return self._arith(e, "fsub", "sub nsw", "sub")

    def _e_mul(self, e) -> str:
        return self._arith(e, "fmul", "mul nsw", "mul")

    def _e_div(self, e) -> str:
        return self._divmod(e, True, lambda a, b, d, c: self._binop(a, b, d, "fdiv", "sdiv",
                                                                     "udiv"))

    def _e_mod(self, e) -> str:
        return self._divmod(e, False, lambda a, b, d, c: self._binop(a, b, d, "frem", "srem",
                                                                      "urem"))

    def _e_floordiv(self, e) -> str:
        return self._divmod(e, True, self._floordiv)

    def _e_floormod(self, e) -> str:
        return self._divmod(e, False, self._floormod)

    def _binop(self, a: str, b: str, d: str, fop: str, sop: str, uop: str) -> str:
        k = _kind(d)
        return self.op(f"{fop if k == 'f' else (sop if k == 's' else uop)} {ltype(d)} {a}, {b}")

    def _divmod(self, e, is_div: bool, emit) -> str:
        """Integer division or modulo that never traps, defined as numpy's.

        ``x // 0`` and ``x % 0`` give 0 (a hardware divide by zero kills the process with
        SIGFPE), and a signed ``x // -1`` gives ``-x`` wrapping (``INT_MIN / -1`` traps
        too).  Only a divisor that is not a constant other than 0 and -1 pays for the
        guard: index arithmetic divides by positive constants.
        """
        a, b, d = self._operands(e)
        k = _kind(d)
        c = _int_const(e.b)
        if k == "f" or (c is not None and c != 0 and (k == "u" or c != -1)):
            return emit(a, b, d, c if c is not None and c > 0 else None)
        t, bt = ltype(d), ltype(dt.with_lanes("bool", dt.lanes(d)))
        zero = splat_lit(d, 0)
        is_zero = self.op(f"icmp eq {t} {b}, {zero}")
        bad, is_m1 = is_zero, None
        if k == "s":
            is_m1 = self.op(f"icmp eq {t} {b}, {splat_lit(d, -1)}")
            bad = self.op(f"or {bt} {is_zero}, {is_m1}")
        safe = self.op(f"select {bt} {bad}, {t} {splat_lit(d, 1)}, {t} {b}")
        r = emit(a, safe, d, None)
        if is_m1 is not None:
            alt = self.op(f"sub {t} {zero}, {a}") if is_div else zero
            r = self.op(f"select {bt} {is_m1}, {t} {alt}, {t} {r}")
        return self.op(f"select {bt} {is_zero}, {t} {zero}, {t} {r}")

    def _floordiv(self, a: str, b: str, d: str, c) -> str:
        k, t = _kind(d), ltype(d)
        if k == "f":
            q = self.op(f"fdiv {t} {a}, {b}")
            return self.call_unary("llvm.floor", q, d)
        if k == "u":
            return self.op(f"udiv {t} {a}, {b}")
        if c is not None and c & (c - 1) == 0:
            return self.op(f"ashr {t} {a}, {splat_lit(d, c.bit_length() - 1)}")
        q = self.op(f"sdiv {t} {a}, {b}")
        r = self.op(f"srem {t} {a}, {b}")
        adj = self._floor_adjust(r, b, d, c)
        one = self.op(f"zext {ltype(dt.with_lanes('bool', dt.lanes(d)))} {adj} to {t}")
        return self.op(f"sub {t} {q}, {one}")

    def _floormod(self, a: str, b: str, d: str, c) -> str:
        k, t = _kind(d), ltype(d)
        if k == "f":
            q = self.call_unary("llvm.floor", self.op(f"fdiv {t} {a}, {b}"), d)
            return self.op(f"fsub {t} {a}, {self.op(f'fmul {t} {q}, {b}')}")
        if k == "u":
            return self.op(f"urem {t} {a}, {b}")
        if c is not None and c & (c - 1) == 0:   # two's complement: a & (2^k - 1)
            return self.op(f"and {t} {a}, {splat_lit(d, c - 1)}")
        r = self.op(f"srem {t} {a}, {b}")
        adj = self._floor_adjust(r, b, d, c)
        rb = self.op(f"add {t} {r}, {b}")
        return self.op(f"select {ltype(dt.with_lanes('bool', dt.lanes(d)))} {adj}, "
                       f"{t} {rb}, {t} {r}")

    def _floor_adjust(self, r: str, b: str, d: str, positive) -> str:
        """i1 (per lane): the truncated result must move one step toward -inf."""
        t = ltype(d)
        zero = splat_lit(d, 0)
        if positive is not None:           # b > 0: adjust iff r < 0
            return self.op(f"icmp slt {t} {r}, {zero}")
        nz = self.op(f"icmp ne {t} {r}, {zero}")
        sx = self.op(f"xor {t} {r}, {b}")  # signs of r and b differ
        neg = self.op(f"icmp slt {t} {sx}, {zero}")
        return self.op(f"and {ltype(dt.with_lanes('bool', dt.lanes(d)))} {nz}, {neg}")

    def _minmax(self, e, fp: str, sp: str, up: str) -> str:
        a, b, d = self._operands(e)
        k, t = _kind(d), ltype(d)
        if k == "f":
            c = self.op(f"fcmp {fp} {t} {a}, {b}")
        else:
            c = self.op(f"icmp {sp if k == 's' else up} {t} {a}, {b}")
        return self.op(f"select {ltype(dt.with_lanes('bool', dt.lanes(d)))} {c}, "
                       f"{t} {a}, {t} {b}")

    def _e_min(self, e) -> str:
        return self._minmax(e, "olt", "slt", "ult")

    def _e_max(self, e) -> str:
        return self._minmax(e, "ogt", "sgt", "ugt")

    # ---------------------------------------------------------------- logic
    def _e_cmp(self, e) -> str:
        a, b, d = self._operands(e)
        fp, sp, up = _CMP[type(e)]
        k, t = _kind(d), ltype(d)
        if k == "f":
            return self.op(f"fcmp {fp} {t} {a}, {b}")
        if dt.element_of(d) == "handle":
            return self.op(f"icmp {up} ptr {a}, {b}")
        return self.op(f"icmp {sp if k == 's' else up} {t} {a}, {b}")

    def _e_and(self, e) -> str:
        a, b, d = self._operands(e)
        return self.op(f"and {ltype(d)} {a}, {b}")

    def _e_or(self, e) -> str:
        a, b, d = self._operands(e)
        return self.op(f"or {ltype(d)} {a}, {b}")

    def _e_not(self, e) -> str:
        d = e.dtype
        a = self.expr(e.a)
        if not dt.is_bool(d):
            raise CodegenError(f"codegen: Not of {e.a} with dtype {d}; expected a bool")
        return self.op(f"xor {ltype(d)} {a}, {splat_lit(d, True)}")

    def _e_select(self, e) -> str:
        cd = e.condition.dtype
        n = max(dt.lanes(e.dtype), dt.lanes(e.false_value.dtype), dt.lanes(cd))
        d = dt.with_lanes(e.dtype, n)
        if dt.lanes(cd) not in (1, n):
            raise CodegenError(f"codegen: Select condition of dtype {cd} does not match "
                               f"values of dtype {d}")
        c = self.expr(e.condition)
        x, y = self.expr_as(e.true_value, d), self.expr_as(e.false_value, d)
        return self.op(f"select {ltype(cd)} {c}, {ltype(d)} {x}, {ltype(d)} {y}")

    # ---------------------------------------------------------------- casts
    def _e_cast(self, e) -> str:
        return self.coerce(self.expr(e.value), self.dtype_of(e.value), e.dtype)

    def cast_value(self, v: str, src: str, dst: str) -> str:
        """Convert operand ``v`` between dtypes with the same number of lanes."""
        if src == dst:
            return v
        sb, db = dt.element_of(src), dt.element_of(dst)
        st, tt = ltype(src), ltype(dst)
        if st == tt:                       # int32 <-> uint32 etc.: same bits
            return v
        sk = _kind(src)
        if db == "bool":
            if sk == "f":
                return self.op(f"fcmp une {st} {v}, {splat_lit(src, 0.0)}")
            return self.op(f"icmp ne {st} {v}, {splat_lit(src, 0)}")
        if sb == "bool":
            return self.op(f"{'uitofp' if _kind(dst) == 'f' else 'zext'} {st} {v} to {tt}")
        if "handle" in (sb, db):
            raise CodegenError(f"codegen: cannot cast {src} to {dst}")
        if sk == "f" and _kind(dst) == "f":
            if dt.bits(sb) == 64 and dt.bits(db) == 16:
                # LLVM lowers double -> half to a libgcc call (__truncdfhf2) the JIT cannot
                # resolve; go through float (double rounding: off by one ulp of half only
                # for doubles within 2^-24 relative of a half-way point)
                mid = dt.with_lanes("float32", dt.lanes(src))
                return self.cast_value(self.cast_value(v, src, mid), mid, dst)
            op = "fpext" if dt.bits(db) > dt.bits(sb) else "fptrunc"
        elif sk == "f":
            op = "fptosi" if _kind(dst) == "s" else "fptoui"
        elif _kind(dst) == "f":
            op = "sitofp" if sk == "s" else "uitofp"
        elif dt.bits(db) < dt.bits(sb):
            op = "trunc"
        else:
            op = "sext" if sk == "s" else "zext"
        return self.op(f"{op} {st} {v} to {tt}")

    # ---------------------------------------------------------------- vectors
    def broadcast(self, v: str, scalar_dtype: str, lanes: int) -> str:
        """Splat scalar operand ``v`` to ``lanes`` lanes."""
        vd = dt.with_lanes(scalar_dtype, lanes)
        t, s = ltype(vd), ltype(scalar_dtype)
        one = self.op(f"insertelement {t} poison, {s} {v}, i64 0")
        return self.op(f"shufflevector {t} {one}, {t} poison, <{lanes} x i32> zeroinitializer")

    def _e_broadcast(self, e) -> str:
        if dt.lanes(e.value.dtype) != 1:
            raise CodegenError(f"codegen: Broadcast of vector {e.value} ({e.value.dtype}); "
                               "expected a scalar value")
        c = const_value(e.value)
        if c is not None:
            return splat_lit(e.dtype, c)
        return self.broadcast(self.expr(e.value), e.value.dtype, e.lanes)

    def _e_ramp(self, e) -> str:
        d, n = e.base.dtype, e.lanes
        vd = dt.with_lanes(d, n)
        if dt.lanes(d) != 1:
            raise CodegenError(f"codegen: Ramp with vector base {e.base}; expected a scalar")
        b, s = const_value(e.base), const_value(e.stride)
        if b is not None and s is not None:
            return vector_lit(vd, [b + s * k for k in range(n)])
        f = _kind(d) == "f"
        add = "fadd" if f else ("add nsw" if _kind(d) == "s" and dt.bits(d) >= 32 else "add")
        if s is not None:
            offs = vector_lit(vd, [s * k for k in range(n)])
        else:
            sv = self.broadcast(self.expr_as(e.stride, d), d, n)
            mul = "fmul" if f else "mul"
            offs = self.op(f"{mul} {ltype(vd)} {sv}, {vector_lit(vd, range(n))}")
        base = self.broadcast(self.expr(e.base), d, n)
        return self.op(f"{add} {ltype(vd)} {base}, {offs}")

    def _e_shuffle(self, e) -> str:
        idx = tuple(int(i.value) if isinstance(i, IntImm) else int(i) for i in e.indices)
        vecs = e.vectors
        d = e.dtype
        if len(vecs) == 1 and dt.lanes(vecs[0].dtype) > 1 and len(idx) > 1:
            t = ltype(vecs[0].dtype)
            return self.op(f"shufflevector {t} {self.expr(vecs[0])}, {t} poison, "
                           f"{index_mask(idx)}")
        if (len(vecs) == 2 and vecs[0].dtype == vecs[1].dtype and len(idx) > 1
                and dt.lanes(vecs[0].dtype) > 1):
            t = ltype(vecs[0].dtype)
            return self.op(f"shufflevector {t} {self.expr(vecs[0])}, {t} "
                           f"{self.expr(vecs[1])}, {index_mask(idx)}")
        lanes: list = []   # (operand, dtype, lane) of every input lane, in concatenation order
        for v in vecs:
            op = self.expr(v)
            lanes.extend((op, v.dtype, k) for k in range(dt.lanes(v.dtype)))
        out = "poison"
        for pos, j in enumerate(idx):
            if not 0 <= j < len(lanes):
                raise CodegenError(f"codegen: Shuffle index {j} out of range 0..{len(lanes)}")
            x = self.extract(*lanes[j])
            if len(idx) == 1:
                return x
            out = self.op(f"insertelement {ltype(d)} {out}, {ltype(dt.element_of(d))} {x}, "
                          f"i64 {pos}")
        return out

    def extract(self, v: str, dtype: str, lane: int) -> str:
        """Lane ``lane`` of operand ``v`` (a scalar is its own lane 0)."""
        if dt.lanes(dtype) == 1:
            return v
        return self.op(f"extractelement {ltype(dtype)} {v}, i64 {lane}")

    def _e_let(self, e) -> str:
        v = self.expr(e.value)
        old = self.vars.get(e.var, _MISSING)
        self.vars[e.var] = v
        try:
            return self.expr(e.body)
        finally:
            if old is _MISSING:
                del self.vars[e.var]
            else:
                self.vars[e.var] = old

    def call_unary(self, name: str, v: str, d: str) -> str:
        t = ltype(d)
        fn = self.mod.intrinsic(f"{name}.{intrinsic_suffix(d)}", t, (t,))
        return self.op(f"call {t} {fn}({t} {v})")


def _int_const(e):
    """The value of an integer constant (or splat of one), else None."""
    if type(e) is Broadcast:
        e = e.value
    v = const_value(e)
    return v if type(e) is IntImm else None

