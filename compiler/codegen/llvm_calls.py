"""Emission of intrinsic calls (``tir.op.INTRINSICS``), including ``if_then_else``.

Role: a mixin of ``FunctionEmitter``.  Invariants:
- sqrt/fabs/floor/ceil/trunc/fma map to the LLVM intrinsics of the same name, round
  to ``llvm.roundeven`` (numpy rounds half to even), rsqrt to ``1/sqrt``;
- exp/log/tanh/sigmoid/erf come from ``compiler.codegen.mathlib`` (our polynomial
  kernels: vectorized ``llvm.exp`` would become scalar libm calls); a vector width the
  library rejects is computed lane by lane with its scalar kernel; float16 is computed
  in float32;
- pow calls libm ``pow``/``powf``, one call per lane for vectors; ``reinterpret`` is a
  bitcast;
- packed calls and C extern calls are emitted by ``llvm_packed``;
- ``if_then_else`` evaluates only the taken branch: a scalar condition branches and
  joins with a phi; a vector condition tests all-true / all-false on the mask bits and
  evaluates lane by lane otherwise; but when one side only reads memory through
  vector loads and the other side cannot fault, both are computed as vectors, the
  loads masked by the condition (``llvm.masked.load``/``gather``: masked-off lanes are
  never read) and joined with a select -- the padding pattern of convolutions.
"""
from __future__ import annotations

from ..errors import CodegenError, CompilerError
from ..tir import dtype as dt
from ..tir.calls import EXTERN, MAKE_ARRAY, PACKED, PURE_EXTERN
from ..tir.expr import Broadcast, BufferLoad, Call, Div, FloorDiv, FloorMod, Mod, PrimExpr, Var
from .llvm_builder import EmitterBase
from .llvm_expr import const_value, fast_dtype
from .llvm_lanes import lane_expr
from .llvm_packed import emit_extern_call, emit_packed_call
from .llvm_types import intrinsic_suffix, ltype, splat_lit

_LLVM_UNARY = {"sqrt": "llvm.sqrt", "fabs": "llvm.fabs", "floor": "llvm.floor",
               "ceil": "llvm.ceil", "trunc": "llvm.trunc", "round": "llvm.roundeven"}
MATH_FUNCS = ("exp", "log", "tanh", "sigmoid", "erf")
_INT_DIVS = (Div, Mod, FloorDiv, FloorMod)


def _children(x):
    for name in type(x).__dataclass_fields__:
        v = getattr(x, name)
        if isinstance(v, PrimExpr):
            yield v
        elif isinstance(v, tuple):
            yield from (y for y in v if isinstance(y, PrimExpr))


def _speculation(e, lanes: int) -> str:
    """How ``e`` may be evaluated on lanes whose result is discarded:
    "safe" (no memory reads, no control flow, no integer division by a variable),
    "masked" (also reads memory, but only through ``lanes``-wide vector loads, which
    can be masked), or "unsafe"."""
    kind = "safe"
    stack = [e]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is BufferLoad:
            if dt.lanes(x.dtype) != lanes or type(x.indices[0]) is Broadcast:
                return "unsafe"
            kind = "masked"
        elif t is Call and x.op == "if_then_else":
            return "unsafe"
        elif t in _INT_DIVS and not dt.is_float(fast_dtype(x)) and not _nonzero_const(x.b):
            return "unsafe"
        stack.extend(_children(x))
    return kind


def _nonzero_const(e) -> bool:
    if type(e) is Broadcast:
        e = e.value
    v = const_value(e)
    return v is not None and v != 0


class CallMixin(EmitterBase):
    """Intrinsic calls."""

    def _e_call(self, e) -> str:
        op, d, args = e.op, e.dtype, e.args
        if op == "if_then_else":
            return self._if_then_else(e)
        if op == "likely":
            return self.expr(args[0])
        if op == "tir.all_lanes":       # bound checker: every lane of a bool vector
            return self._all_lanes(args[0])
        if op == PACKED:
            return emit_packed_call(self, e)
        if op in (EXTERN, PURE_EXTERN):
            return emit_extern_call(self, e)
        if op == MAKE_ARRAY:
            raise CodegenError(f"codegen: {e} is only valid as an argument of call_packed")
        if op == "tir.report_oob":      # bound checker: name the buffer, skip the access
            name, size = args[0].value, args[1].value
            self.report("IndexError", f"kernel {self.root!r}: index out of bounds of buffer "
                                      f"{name!r} (size {size})")
            return "0"
        if op == "reinterpret":         # same width and lanes (checked by tir.reinterpret)
            src = self.dtype_of(args[0])
            return self.op(f"bitcast {ltype(src)} {self.expr(args[0])} to {ltype(d)}")
        if not dt.is_float(d):
            raise CodegenError(f"codegen: intrinsic {op!r} with dtype {d}; expected a "
                               "float dtype")
        if op in _LLVM_UNARY:
            return self.call_unary(_LLVM_UNARY[op], self.expr_as(args[0], d), d)
        if op == "rsqrt":
            s = self.call_unary("llvm.sqrt", self.expr_as(args[0], d), d)
            return self.op(f"fdiv {ltype(d)} {splat_lit(d, 1.0)}, {s}")
        if op == "fma":
            t = ltype(d)
            a, b, c = (self.expr_as(x, d) for x in args)
            fn = self.mod.intrinsic(f"llvm.fma.{intrinsic_suffix(d)}", t, (t, t, t))
            return self.op(f"call {t} {fn}({t} {a}, {t} {b}, {t} {c})")
        if op == "pow":
            return self._pow(self.expr_as(args[0], d), self.expr_as(args[1], d), d)
        if op in MATH_FUNCS:
            return self.math(op, self.expr_as(args[0], d), d)
        raise CodegenError(f"codegen: unknown intrinsic {op!r} in {e}; expected one of "
                           f"{sorted(list(_LLVM_UNARY) + list(MATH_FUNCS))} or "
                           "rsqrt/fma/pow/likely/if_then_else")

    def _all_lanes(self, e) -> str:
        v = self.expr(e)
        n = dt.lanes(self.dtype_of(e))
        if n == 1:
            return v
        fn = self.mod.intrinsic(f"llvm.vector.reduce.and.v{n}i1", "i1", (f"<{n} x i1>",))
        return self.op(f"call i1 {fn}(<{n} x i1> {v})")

    # ---------------------------------------------------------------- math
    def math(self, name: str, v: str, d: str) -> str:
        base, n = dt.parse(d)
        if base == "float16":   # no half kernels: compute in float32
            wide = dt.with_lanes("float32", n)
            r = self.math(name, self.cast_value(v, d, wide), wide)
            return self.cast_value(r, wide, d)
        try:
            sym = self.mod.math_function(name, d)
        except CodegenError:
            raise
        except (CompilerError, ValueError, KeyError) as exc:
            if n == 1:
                raise CodegenError(f"codegen: mathlib has no {name} for {d}: {exc}") from None
            return self._per_lane(lambda x: self.math(name, x, base), (v,), d)
        t = ltype(d)
        return self.op(f"call {t} {sym}({t} {v})")

    def _pow(self, a: str, b: str, d: str) -> str:
        base, n = dt.parse(d)
        if n > 1:
            return self._per_lane(lambda x, y: self._pow(x, y, base), (a, b), d)
        if base == "float16":
            a32, b32 = (self.cast_value(x, d, "float32") for x in (a, b))
            return self.cast_value(self._pow(a32, b32, "float32"), "float32", d)
        t = ltype(d)
        sym = self.mod.declare("@powf" if base == "float32" else "@pow",
                               f"declare {t} @{'powf' if base == 'float32' else 'pow'}"
                               f"({t}, {t})")
        return self.op(f"call {t} {sym}({t} {a}, {t} {b})")

    def _per_lane(self, fn, operands: tuple, d: str) -> str:
        """Apply scalar emitter ``fn`` to every lane of the vector ``operands``."""
        n = dt.lanes(d)
        base = dt.element_of(d)
        out = "poison"
        for i in range(n):
            r = fn(*(self.extract(x, d, i) for x in operands))
            out = self.op(f"insertelement {ltype(d)} {out}, {ltype(base)} {r}, i64 {i}")
        return out

    # ---------------------------------------------------------------- if_then_else
    def _if_then_else(self, e) -> str:
        cond, a, b = e.args
        d = e.dtype
        for x in (a, b):
            if dt.lanes(x.dtype) > dt.lanes(d):
                d = x.dtype
        if dt.lanes(cond.dtype) > 1 and dt.lanes(d) == 1:
            d = dt.with_lanes(d, dt.lanes(cond.dtype))
        if dt.lanes(cond.dtype) == 1:
            c = self.expr(cond)
            return self._branches(c, lambda: self.expr_as(a, d), lambda: self.expr_as(b, d), d)
        if dt.lanes(cond.dtype) != dt.lanes(d):
            raise CodegenError(f"codegen: if_then_else condition {cond.dtype} does not "
                               f"match value dtype {d}")
        c = self.expr(cond)
        n = dt.lanes(d)
        if n & (n - 1):
            # LLVM 22 miscompiles masked loads of non-power-of-two vectors (e.g. v10f32)
            # in some contexts (seen inside parallel loops); branch per lane group instead.
            return self._vector_branches(c, a, b, d)
        sa, sb = _speculation(a, n), _speculation(b, n)
        if sb == "safe" and sa == "masked" and type(a) is BufferLoad and a.dtype == d:
            return self.vector_load(a, c, self.expr_as(b, d))   # masked-off lanes = b
        if sb == "safe" and sa != "unsafe":
            return self._masked_select(c, a, b, d)
        if sa == "safe" and sb == "masked":
            nc = self.op(f"xor {ltype(cond.dtype)} {c}, {splat_lit(cond.dtype, True)}")
            return self._masked_select(nc, b, a, d)    # select(!c, b, a)
        return self._vector_branches(c, a, b, d)

    def _masked_select(self, c: str, a, b, d: str) -> str:
        """``select(c, a, b)`` where vector loads in ``a`` read only lanes set in ``c``."""
        vb = self.expr_as(b, d)
        self.load_mask = c
        try:
            va = self.expr_as(a, d)
        finally:
            self.load_mask = None
        t = ltype(d)
        return self.op(f"select <{dt.lanes(d)} x i1> {c}, {t} {va}, {t} {vb}")

    def _branches(self, c: str, then_fn, else_fn, d: str) -> str:
        """``c ? then_fn() : else_fn()`` evaluating only the taken side."""
        lt, lf, lm = self.new_label("ite_t"), self.new_label("ite_f"), self.new_label("ite_m")
        self.cbr(c, lt, lf)
        self.start_block(lt)
        va = then_fn()
        et = self.block
        self.br(lm)
        self.start_block(lf)
        vb = else_fn()
        ef = self.block
        self.br(lm)
        self.start_block(lm)
        return self.op(f"phi {ltype(d)} [ {va}, {et} ], [ {vb}, {ef} ]")

    def _vector_branches(self, c: str, a, b, d: str) -> str:
        n = dt.lanes(d)
        bits = self.op(f"bitcast <{n} x i1> {c} to i{n}")
        all_true = self.op(f"icmp eq i{n} {bits}, -1")
        none_true = self.op(f"icmp eq i{n} {bits}, 0")
        same = self.op(f"or i1 {all_true}, {none_true}")    # every lane takes one side

        def uniform():
            return self._branches(all_true, lambda: self.expr_as(a, d),
                                  lambda: self.expr_as(b, d), d)

        def lane_by_lane():
            out = "poison"
            for i in range(n):
                ci = self.op(f"extractelement <{n} x i1> {c}, i64 {i}")
                vi = self._branches(ci, lambda i=i: self._lane(a, i, d),
                                    lambda i=i: self._lane(b, i, d), dt.element_of(d))
                out = self.op(f"insertelement {ltype(d)} {out}, "
                              f"{ltype(dt.element_of(d))} {vi}, i64 {i}")
            return out

        return self._branches(same, uniform, lane_by_lane, d)

    def _lane(self, e, i: int, d: str) -> str:
        """Emit lane ``i`` of ``e`` (broadcast to the lanes of ``d`` if scalar)."""
        if dt.lanes(e.dtype) == 1:
            return self.cast_value(self.expr(e), e.dtype, dt.element_of(d))
        return self.expr(lane_expr(e, i, self._lane_var))

    def _lane_var(self, var, i: int):
        """A fresh scalar Var bound to lane ``i`` of the vector variable ``var``."""
        nv = Var(f"{var.name}_lane{i}", dt.element_of(var.dtype))
        self.vars[nv] = self.extract(self._e_var(var), var.dtype, i)
        return nv
