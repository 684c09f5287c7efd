"""Activations and per-channel elementwise ops: relu, leaky_relu, prelu, bias_add.

Invariants: relu/leaky_relu are "elemwise" ComputeOps of the input's shape; prelu and
bias_add broadcast a 1-D tensor along ``axis`` and are tagged "broadcast".  The 1-D
operand's length must equal the data's extent on ``axis`` (TEError otherwise).
"""
from __future__ import annotations

from ...tir import op as _op
from .. import tag as _tag
from ..math import gelu  # noqa: F401  (re-exported as nn.gelu)
from ..utils import check_tensor, const_tuple, error, make, normalize_axis


def relu(x):
    """``max(x, 0)``."""
    check_tensor("nn.relu", "x", x)
    zero = _op.const(0, x.dtype)
    return make(x.shape, lambda *i: _op.max_(x(*i), zero), name="T_relu", tag=_tag.ELEMWISE)


def leaky_relu(x, alpha):
    """``x`` where positive, else ``alpha * x``."""
    check_tensor("nn.leaky_relu", "x", x, float_only=True)
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
        raise error("nn.leaky_relu", "alpha", alpha, "a Python number")
    a = _op.const(float(alpha), x.dtype)

    def f(*i):
        v = x(*i)
        return _op.select(v > _op.const(0, x.dtype), v, v * a)
    return make(x.shape, f, name="T_leaky_relu", tag=_tag.ELEMWISE)


def _channel_vector(op, arg, vec, data, axis):
    check_tensor(op, arg, vec, ndim=1)
    ax = normalize_axis(op, data.ndim, axis)
    n = const_tuple(data.shape)[ax]
    if const_tuple(vec.shape)[0] != n:
        raise error(op, arg, vec, f"shape ({n},): the extent of data axis {axis}")
    if vec.dtype != data.dtype:
        raise error(op, arg, vec, f"dtype {data.dtype} like data")
    return ax


def prelu(x, slope, axis=1):
    """``x`` where positive, else ``slope[c] * x`` with c the index along ``axis``."""
    check_tensor("nn.prelu", "x", x, float_only=True)
    ax = _channel_vector("nn.prelu", "slope", slope, x, axis)

    def f(*i):
        v = x(*i)
        return _op.select(v > _op.const(0, x.dtype), v, v * slope[i[ax]])
    return make(x.shape, f, name="T_prelu", tag=_tag.BROADCAST)


def bias_add(data, bias, axis=1):
    """``data + bias`` with the 1-D ``bias`` along ``axis``."""
    check_tensor("nn.bias_add", "data", data)
    ax = _channel_vector("nn.bias_add", "bias", bias, data, axis)
    return make(data.shape, lambda *i: data(*i) + bias[i[ax]], name="T_add", tag=_tag.BROADCAST)
