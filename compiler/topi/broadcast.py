"""Broadcasting binary operators with numpy's rules (TVM's ``topi.broadcast``).

Invariants: shapes are aligned at the right; a dimension of size 1 stretches to the other
operand's size and any other mismatch is a TEError naming the op and both shapes.  An
operand may be a Python number (it takes the tensor's dtype, as in TVM); two numbers give
an expression, not a tensor.  Results are tagged "broadcast"; comparisons give bool.
"""
from __future__ import annotations

from ..te.tensor import Tensor
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import op as _op
from . import tag as _tag
from .utils import const_tuple, error, make


def broadcast_shape(shape_a, shape_b, op: str = "topi.broadcast") -> tuple:
    """The numpy broadcast of two static shapes."""
    a, b = const_tuple(shape_a), const_tuple(shape_b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise error(op, "shapes", (const_tuple(shape_a), const_tuple(shape_b)),
                        "shapes that broadcast (numpy rules: equal or 1 in each dimension)")
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(out)


def broadcast_index(t: Tensor, out_shape, indices) -> list:
    """Indices into ``t`` for the output position ``indices`` of a broadcast to out_shape."""
    shape = const_tuple(t.shape)
    lead = len(out_shape) - len(shape)
    return [_op.const(0) if s == 1 and out_shape[lead + d] != 1 else indices[lead + d]
            for d, s in enumerate(shape)]


def _operand(op: str, arg: str, x):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, E.IntImm, E.FloatImm)):
        return x
    raise error(op, arg, x, "a te.Tensor or a Python number")


def _binary(name: str, fn, lhs, rhs):
    op = f"topi.{name}"
    lhs, rhs = _operand(op, "lhs", lhs), _operand(op, "rhs", rhs)
    if not isinstance(lhs, Tensor) and not isinstance(rhs, Tensor):
        return fn(*_op.match(lhs, rhs))
    if isinstance(lhs, Tensor) and isinstance(rhs, Tensor):
        out = broadcast_shape(lhs.shape, rhs.shape, op)

        def f(*i):
            return fn(lhs(*broadcast_index(lhs, out, i)), rhs(*broadcast_index(rhs, out, i)))
    elif isinstance(lhs, Tensor):
        out = const_tuple(lhs.shape)

        def f(*i):
            return fn(*_op.match(lhs(*i), rhs))
    else:
        out = const_tuple(rhs.shape)

        def f(*i):
            return fn(*_op.match(lhs, rhs(*i)))
    return make(out, f, name=f"T_{name}", tag=_tag.BROADCAST)


def _float_power(a, b):
    a, b = _op.match(a, b)
    if not dt.is_float(a.dtype):
        raise error("topi.power", "lhs/rhs", a.dtype, "floating-point operands")
    return _op.power(a, b)


def _logical(fn):
    def g(a, b):
        if not dt.is_bool(a.dtype) or not dt.is_bool(b.dtype):
            raise error("topi.logical", "lhs/rhs", (a.dtype, b.dtype), "bool operands")
        return fn(a, b)
    return g


_FNS = {
    "add": _op.add, "subtract": _op.sub, "multiply": _op.mul, "divide": _op.div,
    "floor_divide": _op.floordiv, "floor_mod": _op.floormod, "maximum": _op.max_,
    "minimum": _op.min_, "power": _float_power,
    "equal": lambda a, b: _op.cmp(E.EQ, a, b), "not_equal": lambda a, b: _op.cmp(E.NE, a, b),
    "less": lambda a, b: _op.cmp(E.LT, a, b), "less_equal": lambda a, b: _op.cmp(E.LE, a, b),
    "greater": lambda a, b: _op.cmp(E.GT, a, b),
    "greater_equal": lambda a, b: _op.cmp(E.GE, a, b),
    "logical_and": _logical(_op.logical_and), "logical_or": _logical(_op.logical_or),
    "logical_xor": _logical(lambda a, b: _op.logical_and(_op.logical_or(a, b),
                                                         _op.logical_not(_op.logical_and(a, b)))),
}


def _define(name):
    def fn(lhs, rhs):
        return _binary(name, _FNS[name], lhs, rhs)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of ``lhs`` and ``rhs`` with numpy broadcasting."
    return fn


add = _define("add")
subtract = _define("subtract")
multiply = _define("multiply")
divide = _define("divide")
floor_divide = _define("floor_divide")
floor_mod = _define("floor_mod")
maximum = _define("maximum")
minimum = _define("minimum")
power = _define("power")
equal = _define("equal")
not_equal = _define("not_equal")
less = _define("less")
less_equal = _define("less_equal")
greater = _define("greater")
greater_equal = _define("greater_equal")
logical_and = _define("logical_and")
logical_or = _define("logical_or")
logical_xor = _define("logical_xor")


def broadcast_to(data, shape):
    """``data`` broadcast to ``shape`` (numpy's ``broadcast_to`` rules)."""
    if not isinstance(data, Tensor):
        raise error("topi.broadcast_to", "data", data, "a te.Tensor")
    target = const_tuple(shape)
    src = const_tuple(data.shape)
    if broadcast_shape(src, target, "topi.broadcast_to") != target:
        raise error("topi.broadcast_to", "shape", target,
                    f"a shape that {src} broadcasts to without changing it")
    return make(target, lambda *i: data(*broadcast_index(data, target, i)),
                name="T_broadcast_to", tag=_tag.BROADCAST)


def where(condition, x, y):
    """``x`` where ``condition`` else ``y``, all three broadcast together."""
    op = "topi.where"
    if not isinstance(condition, Tensor) or not dt.is_bool(condition.dtype):
        raise error(op, "condition", condition, "a bool te.Tensor")
    ts = [t for t in (x, y) if isinstance(t, Tensor)]
    out = const_tuple(condition.shape)
    for t in ts:
        out = broadcast_shape(out, t.shape, op)
    for arg, v in (("x", x), ("y", y)):
        _operand(op, arg, v)

    def val(v, i):
        return v(*broadcast_index(v, out, i)) if isinstance(v, Tensor) else v

    def f(*i):
        return _op.select(condition(*broadcast_index(condition, out, i)), *_op.match(
            val(x, i), val(y, i)))
    return make(out, f, name="T_where", tag=_tag.BROADCAST)
