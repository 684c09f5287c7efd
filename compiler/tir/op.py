"""Expression constructors with dtype matching and constant folding.

These are what the Python operators on expressions call.  They fold integer and float
constants and the trivial identities (x+0, x*1, x*0 for ints) at construction, so the
IR that reaches the passes is already small.  Python numbers take the dtype of the other
operand, as in TVM.
"""
from __future__ import annotations

import math
import sys

from ..errors import TEError
from . import dtype as dt
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    register_impl,
)

# Intrinsics the code generator knows, with their arity.
INTRINSICS = {
    "exp": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "tanh": 1, "sigmoid": 1, "erf": 1,
    "pow": 2, "fabs": 1, "floor": 1, "ceil": 1, "round": 1, "trunc": 1,
    "if_then_else": 3, "likely": 1, "fma": 3, "reinterpret": 1,
}


def const(value, dtype: str | None = None) -> PrimExpr:
    """A constant; the dtype defaults to int32 for ints, float32 for floats, bool for bools."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -2**31 <= value < 2**31 else "int64"
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise TEError(f"const: cannot make a constant from {value!r}; expected int/float/bool")
    dt.parse(dtype)
    if dt.lanes(dtype) > 1:
        return Broadcast(const(value, dt.element_of(dtype)), dt.lanes(dtype))
    if dt.is_float(dtype):
        return FloatImm(dtype, float(value))
    if dt.is_bool(dtype):
        return IntImm("bool", int(bool(value)))
    return IntImm(dtype, int(value))


def convert(x, dtype: str | None = None) -> PrimExpr:
    """Turn a Python number (or IterVar) into an expression."""
    if isinstance(x, PrimExpr):
        return x
    if isinstance(x, IterVar):
        return x.var
    if isinstance(x, (bool, int, float)):
        return const(x, dtype)
    if hasattr(x, "__index__"):  # numpy integers
        return const(int(x), dtype)
    if hasattr(x, "__float__"):
        return const(float(x), dtype)
    raise TEError(f"cannot convert {x!r} (type {type(x).__name__}) to an expression")


def _rank(dtype: str) -> tuple:
    base = dt.element_of(dtype)
    kind = 2 if dt.is_float(base) else (0 if dt.is_bool(base) else 1)
    return kind, dt.bits(base)


def match(a, b) -> tuple:
    """Convert operands to a common dtype (int -> float, narrow -> wide)."""
    if not isinstance(a, PrimExpr):
        b = convert(b)
        a = convert(a, _scalar_like(a, b.dtype))
    elif not isinstance(b, PrimExpr):
        b = convert(b, _scalar_like(b, a.dtype))
    if a.dtype == b.dtype:
        return a, b
    la, lb = dt.lanes(a.dtype), dt.lanes(b.dtype)
    if la != lb:
        if la == 1:
            a = Broadcast(a, lb)
        elif lb == 1:
            b = Broadcast(b, la)
        else:
            raise TEError(f"lane mismatch: {a.dtype} vs {b.dtype}")
        if a.dtype == b.dtype:
            return a, b
    if _rank(a.dtype) >= _rank(b.dtype):
        return a, cast(dt.with_lanes(dt.element_of(a.dtype), dt.lanes(b.dtype)), b)
    return cast(dt.with_lanes(dt.element_of(b.dtype), dt.lanes(a.dtype)), a), b


def _scalar_like(x, other_dtype: str) -> str:
    """The dtype a Python number takes next to an operand of ``other_dtype``."""
    base = dt.element_of(other_dtype)
    if isinstance(x, float) and not dt.is_float(base):
        return "float32"
    if base == "bool" and not isinstance(x, bool):
        return "int32"
    return base


def _ival(e):
    return e.value if isinstance(e, IntImm) else None


def _fval(e):
    return e.value if isinstance(e, (IntImm, FloatImm)) else None


def _trunc_div(x: int, y: int) -> int:
    """Integer division rounding toward zero, exact for any size (``int(x / y)`` goes
    through a float and is wrong above 2**53)."""
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def _fold(a, b, fn, cls):
    """Fold two constants with ``fn`` or build ``cls(a, b)``."""
    va, vb = _fval(a), _fval(b)
    if va is not None and vb is not None:
        return const(fn(va, vb), a.dtype)
    return cls(a, b)


def add(a, b) -> PrimExpr:
    a, b = match(a, b)
    if _fval(b) == 0:
        return a
    if _fval(a) == 0:
        return b
    return _fold(a, b, lambda x, y: x + y, Add)


def sub(a, b) -> PrimExpr:
    a, b = match(a, b)
    if _fval(b) == 0:
        return a
    if a is b and not dt.is_float(a.dtype):
        return const(0, a.dtype)
    return _fold(a, b, lambda x, y: x - y, Sub)


def mul(a, b) -> PrimExpr:
    a, b = match(a, b)
    if _fval(b) == 1:
        return a
    if _fval(a) == 1:
        return b
    if not dt.is_float(a.dtype) and (_ival(a) == 0 or _ival(b) == 0):
        return const(0, a.dtype)
    return _fold(a, b, lambda x, y: x * y, Mul)


def _check_int_div(a, b, what):
    if _ival(b) == 0:
        raise TEError(f"{what}: division by constant zero in {a} / {b}")


def div(a, b) -> PrimExpr:
    """``/``: true division for floats, truncating division for integers."""
    a, b = match(a, b)
    if _fval(b) == 1:
        return a
    if dt.is_float(a.dtype):
        return _fold(a, b, lambda x, y: x / y, Div)
    _check_int_div(a, b, "div")
    return _fold(a, b, _trunc_div, Div)


def truncdiv(a, b) -> PrimExpr:
    """Integer division rounding toward zero (C's ``/``; TVM's ``truncdiv``)."""
    a, b = match(a, b)
    if not dt.is_integral(a.dtype):
        raise TEError(f"truncdiv: expects integers, got {a} of dtype {a.dtype}")
    return div(a, b)


def truncmod(a, b) -> PrimExpr:
    a, b = match(a, b)
    _check_int_div(a, b, "truncmod")
    return _fold(a, b, lambda x, y: x - _trunc_div(x, y) * y, Mod)


def floordiv(a, b) -> PrimExpr:
    a, b = match(a, b)
    if _fval(b) == 1:
        return a
    if dt.is_float(a.dtype):
        return floor(div(a, b))
    _check_int_div(a, b, "floordiv")
    return _fold(a, b, lambda x, y: x // y, FloorDiv)


def floormod(a, b) -> PrimExpr:
    a, b = match(a, b)
    if _ival(b) == 1:
        return const(0, a.dtype)
    if dt.is_float(a.dtype):
        return sub(a, mul(floor(div(a, b)), b))
    _check_int_div(a, b, "floormod")
    return _fold(a, b, lambda x, y: x % y, FloorMod)


def min_(a, b) -> PrimExpr:
    a, b = match(a, b)
    if a is b:
        return a
    return _fold(a, b, min, Min)


def max_(a, b) -> PrimExpr:
    a, b = match(a, b)
    if a is b:
        return a
    return _fold(a, b, max, Max)


def neg(a) -> PrimExpr:
    a = convert(a)
    return sub(const(0, a.dtype) if dt.lanes(a.dtype) == 1 else
               Broadcast(const(0, dt.element_of(a.dtype)), dt.lanes(a.dtype)), a)


_CMP = {EQ: lambda x, y: x == y, NE: lambda x, y: x != y, LT: lambda x, y: x < y,
        LE: lambda x, y: x <= y, GT: lambda x, y: x > y, GE: lambda x, y: x >= y}


def cmp(cls, a, b) -> PrimExpr:
    a, b = match(a, b)
    va, vb = _fval(a), _fval(b)
    if va is not None and vb is not None:
        return const(bool(_CMP[cls](va, vb)), "bool")
    return cls(a, b)


def _as_bool(x) -> PrimExpr:
    x = convert(x)
    if not dt.is_bool(x.dtype):
        raise TEError(f"logical operation expects a bool expression, got {x} of dtype {x.dtype}")
    return x


def logical_and(a, b) -> PrimExpr:
    a, b = _as_bool(a), _as_bool(b)
    if _ival(a) is not None:
        return b if a.value else a
    if _ival(b) is not None:
        return a if b.value else b
    return And(a, b)


def logical_or(a, b) -> PrimExpr:
    a, b = _as_bool(a), _as_bool(b)
    if _ival(a) is not None:
        return a if a.value else b
    if _ival(b) is not None:
        return b if b.value else a
    return Or(a, b)


def logical_not(a) -> PrimExpr:
    a = _as_bool(a)
    if _ival(a) is not None:
        return const(not a.value, "bool")
    return Not(a)


def cast(dtype: str, value) -> PrimExpr:
    value = convert(value)
    dt.parse(dtype)
    if value.dtype == dtype:
        return value
    if isinstance(value, (IntImm, FloatImm)) and dt.lanes(dtype) == 1:
        if dt.is_float(dtype):
            return const(float(value.value), dtype)
        if dt.is_bool(dtype):
            return const(bool(value.value), dtype)
        return const(_wrap_int(int(value.value), dtype), dtype)
    if dt.lanes(value.dtype) == 1 and dt.lanes(dtype) > 1:
        return Broadcast(cast(dt.element_of(dtype), value), dt.lanes(dtype))
    return Cast(dtype, value)


def _wrap_int(v: int, dtype: str) -> int:
    nbits = dt.bits(dtype)
    v &= (1 << nbits) - 1
    if dt.is_int(dtype) and v >= 1 << (nbits - 1):
        v -= 1 << nbits
    return v


def select(cond, t, f) -> PrimExpr:
    cond = _as_bool(cond)
    t, f = match(t, f)
    if _ival(cond) is not None and dt.lanes(cond.dtype) == 1:
        return t if cond.value else f
    return Select(cond, t, f)


def call(name: str, dtype: str, *args) -> PrimExpr:
    if name not in INTRINSICS:
        raise TEError(f"unknown intrinsic {name!r}; expected one of {sorted(INTRINSICS)}")
    if len(args) != INTRINSICS[name]:
        raise TEError(f"intrinsic {name!r} takes {INTRINSICS[name]} arguments, got {len(args)}")
    return Call(dtype, name, tuple(convert(a) for a in args))


def reinterpret(dtype: str, value) -> PrimExpr:
    """The bits of ``value`` read as ``dtype`` (TVM's ``tir.reinterpret``): same bit width
    and lanes, e.g. float32 <-> int32 (how narrow float formats are encoded)."""
    value = convert(value)
    dt.parse(dtype)
    if value.dtype == dtype:
        return value
    if dt.bits(dtype) != dt.bits(value.dtype) or dt.lanes(dtype) != dt.lanes(value.dtype) \
            or "bool" in (dt.element_of(dtype), dt.element_of(value.dtype)):
        raise TEError(f"reinterpret: cannot read {value} of dtype {value.dtype} as {dtype}; "
                      "expected a non-bool dtype of the same bit width and lanes")
    return Call(dtype, "reinterpret", (value,))


def _float_math(name):
    def fn(x):
        x = convert(x)
        if not dt.is_float(x.dtype):
            raise TEError(f"{name}: expects a float expression, got {x} of dtype {x.dtype}")
        return Call(x.dtype, name, (x,))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of a float expression."
    return fn


exp = _float_math("exp")
log = _float_math("log")
sqrt = _float_math("sqrt")
rsqrt = _float_math("rsqrt")
tanh = _float_math("tanh")
sigmoid = _float_math("sigmoid")
erf = _float_math("erf")
floor = _float_math("floor")
ceil = _float_math("ceil")
round_ = _float_math("round")
trunc = _float_math("trunc")


def abs_(x) -> PrimExpr:
    x = convert(x)
    if dt.is_float(x.dtype):
        return Call(x.dtype, "fabs", (x,))
    if dt.is_uint(x.dtype) or dt.is_bool(x.dtype):
        return x
    return select(cmp(LT, x, 0), neg(x), x)


def power(a, b) -> PrimExpr:
    a, b = match(a, b)
    if not dt.is_float(a.dtype):
        raise TEError(f"power: expects float operands, got {a.dtype}")
    return Call(a.dtype, "pow", (a, b))


def if_then_else(cond, t, f) -> PrimExpr:
    """Like Select but only the taken branch is evaluated (safe for guarded loads)."""
    cond = _as_bool(cond)
    t, f = match(t, f)
    if _ival(cond) is not None and dt.lanes(cond.dtype) == 1:
        return t if cond.value else f
    return Call(t.dtype, "if_then_else", (cond, t, f))


def likely(cond) -> PrimExpr:
    """``cond``, marked as almost always true (a loop-tail guard); constants fold."""
    cond = _as_bool(cond)
    if _ival(cond) is not None:
        return cond
    return Call(cond.dtype, "likely", (cond,))


def all_(*conds) -> PrimExpr:
    out = const(True)
    for c in conds:
        out = logical_and(out, c)
    return out


def any_(*conds) -> PrimExpr:
    out = const(False)
    for c in conds:
        out = logical_or(out, c)
    return out


def indexdiv(a, b) -> PrimExpr:
    """TVM's ``indexdiv``: division of (non-negative) index expressions, i.e. floordiv."""
    return floordiv(a, b)


def indexmod(a, b) -> PrimExpr:
    """TVM's ``indexmod``: remainder of (non-negative) index expressions, i.e. floormod."""
    return floormod(a, b)


def min_value(dtype: str) -> PrimExpr:
    if dt.is_float(dtype):
        return const(-math.inf, dtype)
    if dt.is_uint(dtype) or dt.is_bool(dtype):
        return const(0, dtype)
    return const(-(1 << (dt.bits(dtype) - 1)), dtype)


def max_value(dtype: str) -> PrimExpr:
    if dt.is_float(dtype):
        return const(math.inf, dtype)
    if dt.is_bool(dtype):
        return const(1, dtype)
    if dt.is_uint(dtype):
        return const((1 << dt.bits(dtype)) - 1, dtype)
    return const((1 << (dt.bits(dtype) - 1)) - 1, dtype)


register_impl(op=sys.modules[__name__])
