"""Unary elementwise operators (TVM's ``topi.math``): exp, log, sqrt, ..., gelu, clip, cast.

Invariants: each returns one ComputeOp of the input's shape tagged "elemwise"; the
transcendental functions accept floating-point tensors only (TEError naming the op
otherwise); ``cast`` keeps the shape and changes the dtype.
"""
from __future__ import annotations

import math as _pymath

from ..tir import dtype as dt
from ..tir import op as _op
from . import tag as _tag
from .utils import check_dtype, check_tensor, const_tuple, error, make


def _unary(name: str, fn, float_only: bool):
    def op(x):
        check_tensor(f"topi.{name}", "x", x, float_only=float_only)
        return make(x.shape, lambda *i: fn(x(*i)), name=f"T_{name}", tag=_tag.ELEMWISE)
    op.__name__ = name
    op.__doc__ = f"Elementwise {name} of ``x``."
    return op


exp = _unary("exp", _op.exp, True)
log = _unary("log", _op.log, True)
sqrt = _unary("sqrt", _op.sqrt, True)
rsqrt = _unary("rsqrt", _op.rsqrt, True)
tanh = _unary("tanh", _op.tanh, True)
sigmoid = _unary("sigmoid", _op.sigmoid, True)
erf = _unary("erf", _op.erf, True)
floor = _unary("floor", _op.floor, True)
ceil = _unary("ceil", _op.ceil, True)
round = _unary("round", _op.round_, True)  # noqa: A001
trunc = _unary("trunc", _op.trunc, True)
abs = _unary("abs", _op.abs_, False)  # noqa: A001
negative = _unary("negative", _op.neg, False)
identity = _unary("identity", lambda v: v, False)


def gelu(x, approximate: str = "none"):
    """GELU: ``x * 0.5 * (1 + erf(x / sqrt(2)))``, or the tanh approximation."""
    check_tensor("topi.gelu", "x", x, float_only=True)
    if approximate not in ("none", "tanh"):
        raise error("topi.gelu", "approximate", approximate, "'none' or 'tanh'")
    d = x.dtype
    if approximate == "none":
        def f(*i):
            v = x(*i)
            return v * _op.const(0.5, d) * (_op.const(1.0, d) +
                                            _op.erf(v * _op.const(1 / _pymath.sqrt(2), d)))
    else:
        def f(*i):
            v = x(*i)
            inner = _op.const(_pymath.sqrt(2 / _pymath.pi), d) * (
                v + _op.const(0.044715, d) * v * v * v)
            return v * _op.const(0.5, d) * (_op.const(1.0, d) + _op.tanh(inner))
    return make(x.shape, f, name="T_gelu", tag=_tag.ELEMWISE)


def clip(x, a_min, a_max):
    """Clamp ``x`` to ``[a_min, a_max]``."""
    check_tensor("topi.clip", "x", x)
    if not isinstance(a_min, (int, float)) or not isinstance(a_max, (int, float)):
        raise error("topi.clip", "a_min/a_max", (a_min, a_max), "Python numbers")
    if a_min > a_max:
        raise error("topi.clip", "a_min/a_max", (a_min, a_max), "a_min <= a_max")
    lo, hi = _op.const(a_min, x.dtype), _op.const(a_max, x.dtype)
    return make(x.shape, lambda *i: _op.max_(_op.min_(x(*i), hi), lo), name="T_clip",
                tag=_tag.ELEMWISE)


def cast(x, dtype: str):
    """``x`` converted to ``dtype`` (float -> int truncates toward zero, as C)."""
    check_tensor("topi.cast", "x", x)
    if check_dtype("topi.cast", "dtype", dtype) is None or dt.lanes(dtype) != 1:
        raise error("topi.cast", "dtype", dtype, "a scalar dtype string such as 'float32'")
    if dtype == x.dtype:
        return make(x.shape, lambda *i: x(*i), name="T_cast", tag=_tag.ELEMWISE)
    return make(x.shape, lambda *i: _op.cast(dtype, x(*i)), name="T_cast", tag=_tag.ELEMWISE)


def logical_not(x):
    check_tensor("topi.logical_not", "x", x)
    if not dt.is_bool(x.dtype):
        raise error("topi.logical_not", "x", x, "a bool tensor")
    return make(x.shape, lambda *i: _op.logical_not(x(*i)), name="T_logical_not",
                tag=_tag.ELEMWISE)


def elemwise_sum(xs):
    """The elementwise sum of a non-empty list of tensors of one shape and dtype (TVM's
    ``topi.elemwise_sum``)."""
    if not isinstance(xs, (list, tuple)) or not xs:
        raise error("topi.elemwise_sum", "xs", xs, "a non-empty list of te.Tensors")
    for k, x in enumerate(xs):
        check_tensor("topi.elemwise_sum", f"xs[{k}]", x)
        if const_tuple(x.shape) != const_tuple(xs[0].shape) or x.dtype != xs[0].dtype:
            raise error("topi.elemwise_sum", f"xs[{k}]", x,
                        f"the shape and dtype of xs[0] {const_tuple(xs[0].shape)} "
                        f"{xs[0].dtype}")

    def f(*i):
        acc = xs[0](*i)
        for x in xs[1:]:
            acc = _op.add(acc, x(*i))
        return acc
    return make(xs[0].shape, f, name="T_elemwise_sum", tag=_tag.ELEMWISE)
