"""Elementwise, broadcast and reduction operators (TVM's ``relay.op.tensor`` / ``reduce``).

Each op is registered with its type relation, fusion pattern, topi compute and numpy
reference, and has a construction function with TVM's name and signature
(``relay.add(a, b)``, ``relay.sum(x, axis=1, keepdims=True)``, ...).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ... import topi
from ...tir import op as _tir_op
from ...topi import tag as T
from ...topi.utils import make as make_compute
from ..errors import RelayError, RelayTypeError
from ..ty import TensorType
from . import attrs as A
from .common import call, int_tuple, tensor_arg, topi_rel
from .registry import register_op

_erf = np.vectorize(math.erf, otypes=[np.float64])


# ------------------------------------------------------------------ elementwise unary
def _same_type(name):
    def rel(arg_types, attrs):
        return tensor_arg(name, "data", arg_types[0])
    return rel


def _float_ref(fn):
    def ref(x, attrs=None):
        return fn(x.astype(np.float64)).astype(x.dtype)
    return ref


_UNARY = {
    "exp": (topi.exp, _float_ref(np.exp)),
    "log": (topi.log, _float_ref(np.log)),
    "sqrt": (topi.sqrt, _float_ref(np.sqrt)),
    "rsqrt": (topi.rsqrt, _float_ref(lambda v: 1.0 / np.sqrt(v))),
    "tanh": (topi.tanh, _float_ref(np.tanh)),
    "sigmoid": (topi.sigmoid, _float_ref(lambda v: 1.0 / (1.0 + np.exp(-v)))),
    "erf": (topi.erf, _float_ref(_erf)),
    "floor": (topi.floor, _float_ref(np.floor)),
    "ceil": (topi.ceil, _float_ref(np.ceil)),
    "round": (topi.round, _float_ref(np.round)),
    "abs": (topi.abs, lambda x, attrs=None: np.abs(x)),
    "negative": (topi.negative, lambda x, attrs=None: np.negative(x)),
    "logical_not": (topi.logical_not, lambda x, attrs=None: np.logical_not(x)),
}
for _name, (_fn, _ref) in _UNARY.items():
    register_op(_name, 1, _same_type(_name), T.ELEMWISE,
                lambda ins, attrs, ty, _fn=_fn: _fn(ins[0]), _ref)


def _unary_maker(name):
    def make(data):
        return call(name, [data])
    make.__name__ = name
    make.__doc__ = f"Elementwise {name} (TVM's relay.{name})."
    return make


exp, log, sqrt, rsqrt, tanh, sigmoid, erf, floor, ceil, round, abs, negative, logical_not = (  # noqa: A001
    _unary_maker(n) for n in _UNARY)


# ------------------------------------------------------------------ broadcast binary
def broadcast_shapes(name: str, a: tuple, b: tuple) -> tuple:
    out = []
    for k in range(builtins.max(len(a), len(b))):
        x = a[len(a) - 1 - k] if k < len(a) else 1
        y = b[len(b) - 1 - k] if k < len(b) else 1
        if x != y and x != 1 and y != 1:
            raise RelayTypeError(f"{name}: shapes {a} and {b} do not broadcast (dimension "
                                 f"{-1 - k}: {x} vs {y})")
        out.append(builtins.max(x, y) if builtins.min(x, y) != 0 else 0)
    return tuple(reversed(out))


def _broadcast_rel(name, out_bool=False):
    def rel(arg_types, attrs):
        a = tensor_arg(name, "lhs", arg_types[0])
        b = tensor_arg(name, "rhs", arg_types[1])
        if a.dtype != b.dtype:
            raise RelayTypeError(f"{name}: lhs has dtype {a.dtype} but rhs {b.dtype}; expected "
                                 f"equal dtypes (lhs {a}, rhs {b})")
        return TensorType(broadcast_shapes(name, a.shape, b.shape),
                          "bool" if out_bool else a.dtype)
    return rel


def _int_div(a, b):
    with np.errstate(all="ignore"):
        q = np.where(b == 0, 0, np.trunc(a.astype(np.float64) / np.where(b == 0, 1, b)))
    return q.astype(a.dtype)


def _divide(a, b, attrs=None):
    if np.issubdtype(a.dtype, np.integer):
        return _int_div(a, b)
    return (a / b).astype(a.dtype)


_BINARY = {
    "add": (topi.add, np.add, False), "subtract": (topi.subtract, np.subtract, False),
    "multiply": (topi.multiply, np.multiply, False), "divide": (topi.divide, None, False),
    "power": (topi.power, np.power, False), "maximum": (topi.maximum, np.maximum, False),
    "minimum": (topi.minimum, np.minimum, False),
    "floor_divide": (topi.floor_divide, np.floor_divide, False),
    "floor_mod": (topi.floor_mod, np.mod, False),
    "equal": (topi.equal, np.equal, True), "not_equal": (topi.not_equal, np.not_equal, True),
    "less": (topi.less, np.less, True), "less_equal": (topi.less_equal, np.less_equal, True),
    "greater": (topi.greater, np.greater, True),
    "greater_equal": (topi.greater_equal, np.greater_equal, True),
    "logical_and": (topi.logical_and, np.logical_and, True),
    "logical_or": (topi.logical_or, np.logical_or, True),
}
for _name, (_fn, _np, _bool) in _BINARY.items():
    _r = _divide if _np is None else (lambda a, b, attrs=None, _np=_np, _bool=_bool:
                                       np.asarray(_np(a, b), bool if _bool else a.dtype))
    register_op(_name, 2, _broadcast_rel(_name, _bool), T.BROADCAST,
                lambda ins, attrs, ty, _fn=_fn: _fn(ins[0], ins[1]), _r)


def _binary_maker(name):
    def make(lhs, rhs):
        return call(name, [lhs, rhs])
    make.__name__ = name
    make.__doc__ = f"Elementwise {name} with numpy broadcasting (TVM's relay.{name})."
    return make


(add, subtract, multiply, divide, power, maximum, minimum, floor_divide, floor_mod, equal,
 not_equal, less, less_equal, greater, greater_equal, logical_and, logical_or) = (
    _binary_maker(n) for n in _BINARY)


# ------------------------------------------------------------------ clip, cast, where, init
register_op("clip", 1, _same_type("clip"), T.ELEMWISE,
            lambda ins, a, ty: topi.clip(ins[0], a.a_min, a.a_max),
            lambda x, attrs: np.clip(x, attrs.a_min, attrs.a_max).astype(x.dtype),
            A.ClipAttrs)


def clip(a, a_min, a_max):
    return call("clip", [a], A.ClipAttrs(float(a_min), float(a_max)))


def _cast_rel(arg_types, attrs):
    t = tensor_arg("cast", "data", arg_types[0])
    return TensorType(t.shape, attrs.dtype)


register_op("cast", 1, _cast_rel, T.ELEMWISE, lambda ins, a, ty: topi.cast(ins[0], a.dtype),
            lambda x, attrs: x.astype(attrs.dtype), A.CastAttrs)


def cast(data, dtype: str):
    return call("cast", [data], A.CastAttrs(str(dtype)))


register_op("where", 3, topi_rel("where", lambda x, a: topi.where(*x)), T.BROADCAST,
            lambda ins, a, ty: topi.where(*ins), lambda c, x, y, attrs=None: np.where(c, x, y))


def where(condition, x, y):
    return call("where", [condition, x, y])


def _init_like(name, value):
    register_op(name, 1, _same_type(name), T.ELEMWISE,
                lambda ins, a, ty: full_compute(ty.shape, ty.dtype, value),
                lambda x, attrs=None: np.full_like(x, value))


def full_compute(shape, dtype, value):
    """A constant tensor as a TE compute."""
    return make_compute(shape, lambda *i: _tir_op.const(value, dtype), name="T_full",
                        tag=T.ELEMWISE)


_init_like("zeros_like", 0)
_init_like("ones_like", 1)


def zeros_like(data):
    return call("zeros_like", [data])


def ones_like(data):
    return call("ones_like", [data])


# ------------------------------------------------------------------ reductions
def _axes(attrs, ndim, name):
    if attrs.axis is None:
        axes = list(range(ndim))
    else:
        axes = [a + ndim if a < 0 else a for a in attrs.axis]
        if any(not 0 <= a < ndim for a in axes):
            raise RelayTypeError(f"{name}: axis {attrs.axis} out of range for a {ndim}-D tensor")
    if attrs.exclude:
        axes = [a for a in range(ndim) if a not in axes]
    return axes


def _reduce(name, fn, npfn):
    def build(ins, attrs):
        axes = _axes(attrs, ins[0].ndim, name)
        return fn(ins[0], axis=tuple(axes) if axes else None, keepdims=attrs.keepdims) \
            if axes else topi.identity(ins[0])

    def ref(x, attrs):
        axes = tuple(_axes(attrs, x.ndim, name))
        return np.asarray(npfn(x, axis=axes, keepdims=attrs.keepdims)) if axes else x.copy()

    register_op(name, 1, topi_rel(name, build), T.COMM_REDUCE,
                lambda ins, a, ty: build(ins, a), ref, A.ReduceAttrs)

    def make(data, axis=None, keepdims=False, exclude=False):
        ax = None if axis is None else int_tuple(axis, f"{name} axis")
        return call(name, [data], A.ReduceAttrs(ax, bool(keepdims), bool(exclude)))
    make.__name__ = name
    return make


def _mean_np(x, axis, keepdims):
    return np.mean(x.astype(np.float64), axis=axis, keepdims=keepdims).astype(x.dtype)


sum = _reduce("sum", topi.sum, lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims))  # noqa: A001
mean = _reduce("mean", topi.mean, _mean_np)
max = _reduce("max", topi.max, np.max)  # noqa: A001
min = _reduce("min", topi.min, np.min)  # noqa: A001
prod = _reduce("prod", topi.prod, np.prod)


def _arg(name, fn, npfn):
    def build(ins, attrs):
        axes = _axes(attrs, ins[0].ndim, name)
        if len(axes) != 1:
            raise RelayError(f"{name}: reduces one axis at a time, got axes {axes}")
        return fn(ins[0], axis=axes[0], keepdims=attrs.keepdims,
                  select_last_index=attrs.select_last_index)

    def ref(x, attrs):
        axis = _axes(attrs, x.ndim, name)[0]
        src = np.flip(x, axis) if attrs.select_last_index else x
        r = npfn(src, axis=axis)
        if attrs.select_last_index:
            r = x.shape[axis] - 1 - r
        r = r.astype(np.int32)
        return np.expand_dims(r, axis) if attrs.keepdims else r

    register_op(name, 1, topi_rel(name, build), T.COMM_REDUCE,
                lambda ins, a, ty: build(ins, a), ref, A.ArgReduceAttrs)

    def make(data, axis=None, keepdims=False, exclude=False, select_last_index=False):
        ax = None if axis is None else int_tuple(axis, f"{name} axis")
        return call(name, [data], A.ArgReduceAttrs(ax, bool(keepdims), bool(exclude),
                                                   bool(select_last_index)))
    make.__name__ = name
    return make


argmax = _arg("argmax", topi.argmax, np.argmax)
argmin = _arg("argmin", topi.argmin, np.argmin)
