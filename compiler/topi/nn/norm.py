"""Normalization: batch_norm (inference) and layer_norm (TVM's ``topi.nn``).

Invariants: batch_norm is one "broadcast" ComputeOp (x - mean) * (gamma / sqrt(var + eps))
+ beta per channel on ``axis`` and returns ``[out, moving_mean, moving_var]`` as TVM does
(the statistics are returned unchanged in inference).  layer_norm computes the mean, then
the variance of the centred data (two-pass: no cancellation), then the output tagged
"layer_norm" (pattern opaque); gamma/beta have the shape of the normalized axes.
"""
from __future__ import annotations

from ...te import api as te
from ...tir import op as _op
from .. import tag as _tag
from ..utils import check_tensor, const_tuple, error, make, normalize_axes, normalize_axis


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5,
               center=True, scale=True, training=False, momentum=0.1):
    """Inference batch normalization along ``axis``; returns [out, mean, var]."""
    op = "nn.batch_norm"
    check_tensor(op, "data", data, float_only=True)
    if training:
        raise error(op, "training", training, "False (only inference is supported)")
    ax = normalize_axis(op, data.ndim, axis)
    c = const_tuple(data.shape)[ax]
    for arg, t in (("gamma", gamma), ("beta", beta), ("moving_mean", moving_mean),
                   ("moving_var", moving_var)):
        check_tensor(op, arg, t, ndim=1)
        if const_tuple(t.shape)[0] != c:
            raise error(op, arg, t, f"shape ({c},): the extent of data axis {axis}")
    if not isinstance(epsilon, (int, float)) or epsilon < 0:
        raise error(op, "epsilon", epsilon, "a non-negative number")
    d = data.dtype
    eps = _op.const(float(epsilon), d)

    def f(*i):
        ch = i[ax]
        inv = _op.rsqrt(moving_var[ch] + eps)
        if scale:
            inv = inv * gamma[ch]
        out = (data(*i) - moving_mean[ch]) * inv
        return out + beta[ch] if center else out
    out = make(data.shape, f, name="T_batch_norm", tag=_tag.BROADCAST)
    return [out, moving_mean, moving_var]


def layer_norm(data, gamma, beta, axis, epsilon=1e-5):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over ``axis`` (int or list)."""
    op = "nn.layer_norm"
    check_tensor(op, "data", data, float_only=True)
    shape = const_tuple(data.shape)
    axes = normalize_axes(op, len(shape), axis)
    norm_shape = tuple(shape[a] for a in axes)
    for arg, t in (("gamma", gamma), ("beta", beta)):
        if t is None:
            continue
        check_tensor(op, arg, t)
        if const_tuple(t.shape) != norm_shape:
            raise error(op, arg, t, f"shape {norm_shape}: the normalized axes of data")
    if not isinstance(epsilon, (int, float)) or epsilon < 0:
        raise error(op, "epsilon", epsilon, "a non-negative number")
    d = data.dtype
    count = 1
    for a in axes:
        count *= shape[a]
    inv_n = _op.const(1.0 / count, d)
    keep = tuple(1 if a in axes else s for a, s in enumerate(shape))

    def full(i, rvs):
        it = iter(rvs)
        return [next(it).var if a in axes else x for a, x in enumerate(i)]

    r1 = [te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes]
    mean = make(keep, lambda *i: te.sum(data(*full(i, r1)) * inv_n, axis=r1),
                name="T_layer_norm_mean", tag=_tag.COMM_REDUCE)
    r2 = [te.reduce_axis((0, shape[a]), name=f"j{a}") for a in axes]

    def fvar(*i):
        c = data(*full(i, r2)) - mean(*i)
        return te.sum(c * c * inv_n, axis=r2)
    var = make(keep, fvar, name="T_layer_norm_var", tag=_tag.COMM_REDUCE)
    eps = _op.const(float(epsilon), d)

    def fout(*i):
        red = [_op.const(0) if a in axes else x for a, x in enumerate(i)]
        sub = [x for a, x in enumerate(i) if a in axes]
        out = (data(*i) - mean(*red)) * _op.rsqrt(var(*red) + eps)
        if gamma is not None:
            out = out * gamma(*sub)
        return out + beta(*sub) if beta is not None else out
    return make(shape, fout, name="T_layer_norm", tag=_tag.LAYER_NORM, axis=list(axes))
