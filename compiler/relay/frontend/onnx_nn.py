"""ONNX converters: convolution, pooling, matrix products, normalization, softmax, resize.

1-D convolutions and pools run as 2-D ones over a unit height (expand, convolve,
squeeze); 3-D ones are refused with an error naming the node.  ``auto_pad`` SAME_UPPER /
SAME_LOWER / VALID become explicit pads from the static input shape.
"""
from __future__ import annotations

import numpy as np

from .. import expr as X
from ..op import nn as nn_ops
from ..op import nn_more
from ..op import tensor as ops
from ..op import transform as tops
from ..transform.infer_type import type_new

__all__ = ["NN_CONVERTERS"]


def _shape(e) -> tuple:
    return e.checked_type.shape


def _dtype(e) -> str:
    return e.checked_type.dtype


def _const(value, like):
    return X.const(np.asarray(value, dtype=_dtype(like)))


def _spatial(ctx, x, what: str) -> int:
    n = len(_shape(x)) - 2
    if n not in (1, 2):
        raise ctx.error(f"{n}-D {what} is not supported (1-D and 2-D are)")
    return n


def _auto_pads(ctx, a, in_sizes, kernel, strides, dilations) -> list:
    """ONNX ``pads`` (begins then ends) with ``auto_pad`` resolved."""
    n = len(in_sizes)
    mode = a.get("auto_pad", "NOTSET")
    if mode in ("NOTSET", ""):
        return list(a.get("pads", [0] * (2 * n)))
    if mode == "VALID":
        return [0] * (2 * n)
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small = total // 2
        begins.append(small if mode == "SAME_UPPER" else total - small)
        ends.append(total - small if mode == "SAME_UPPER" else small)
    return begins + ends


def _as_2d(x, n: int):
    return tops.expand_dims(x, 2) if n == 1 else x


def _from_2d(y, n: int):
    return tops.squeeze(y, (2,)) if n == 1 else y


def _pair(v: list, n: int, fill: int) -> tuple:
    return (fill, v[0]) if n == 1 else (v[0], v[1])


def _quad(pads: list, n: int) -> tuple:
    if n == 1:
        return (0, pads[0], 0, pads[1])
    return (pads[0], pads[1], pads[2], pads[3])


# ------------------------------------------------------------------ convolution
def _conv(ctx, ins, a):
    x, w = ins[0], ins[1]
    n = _spatial(ctx, x, "Conv")
    kernel = list(a.get("kernel_shape", _shape(w)[2:]))
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    pads = _auto_pads(ctx, a, _shape(x)[2:], kernel, strides, dil)
    y = nn_ops.conv2d(_as_2d(x, n), _as_2d(w, n), strides=_pair(strides, n, 1),
                      padding=_quad(pads, n), dilation=_pair(dil, n, 1),
                      groups=int(a.get("group", 1)), channels=_shape(w)[0])
    y = _from_2d(y, n)
    if len(ins) > 2 and ins[2] is not None:
        y = nn_ops.bias_add(y, ins[2], axis=1)
    return y


def _conv_transpose(ctx, ins, a):
    x, w = ins[0], ins[1]
    n = _spatial(ctx, x, "ConvTranspose")
    kernel = list(a.get("kernel_shape", _shape(w)[2:]))
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    opad = list(a.get("output_padding", [0] * n))
    if "output_shape" in a:
        pads = _transpose_pads(a, _shape(x)[2:], kernel, strides, dil, opad)
    elif a.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        target = [s * st for s, st in zip(_shape(x)[2:], strides)]
        pads = _transpose_pads(dict(a, output_shape=target), _shape(x)[2:], kernel, strides,
                               dil, opad)
    else:
        pads = list(a.get("pads", [0] * (2 * n)))
    y = nn_ops.conv2d_transpose(_as_2d(x, n), _as_2d(w, n), strides=_pair(strides, n, 1),
                                padding=_quad(pads, n), dilation=_pair(dil, n, 1),
                                groups=int(a.get("group", 1)),
                                output_padding=_pair(opad, n, 0))
    y = _from_2d(y, n)
    if len(ins) > 2 and ins[2] is not None:
        y = nn_ops.bias_add(y, ins[2], axis=1)
    return y


def _transpose_pads(a, in_sizes, kernel, strides, dil, opad) -> list:
    out_shape = list(a["output_shape"])[-len(in_sizes):]
    begins, ends = [], []
    for size, k, s, d, op, want in zip(in_sizes, kernel, strides, dil, opad, out_shape):
        total = s * (size - 1) + op + (k - 1) * d + 1 - want
        half = total // 2
        if a.get("auto_pad", "NOTSET") == "SAME_UPPER":
            begins.append(half)
            ends.append(total - half)
        else:
            begins.append(total - half)
            ends.append(half)
    return begins + ends


# ------------------------------------------------------------------ matrix products
def _gemm(ctx, ins, a):
    A, B = ins[0], ins[1]
    if a.get("transA", 0):
        A = tops.transpose(A, (1, 0))
    y = type_new(nn_ops.dense(A, B if a.get("transB", 0) else tops.transpose(B, (1, 0))))
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if alpha != 1.0:
        y = ops.multiply(y, _const(alpha, y))
    if len(ins) > 2 and ins[2] is not None and beta != 0.0:
        c = ins[2] if beta == 1.0 else ops.multiply(ins[2], _const(beta, ins[2]))
        y = ops.add(y, c)
    return y


def _matmul(ctx, ins, a):
    A, B = ins
    sa, sb = _shape(A), _shape(B)
    if len(sa) == 1 and len(sb) == 1:
        return ops.sum(ops.multiply(A, B), axis=0)
    if len(sa) == 1:
        return tops.squeeze(type_new(_matmul(ctx, [type_new(tops.expand_dims(A, 0)), B], a)),
                            (-2,))
    if len(sb) == 1:
        return tops.squeeze(type_new(_matmul(ctx, [A, type_new(tops.expand_dims(B, 1))], a)),
                            (-1,))
    if len(sb) == 2:
        return nn_ops.dense(A, tops.transpose(B, (1, 0)))
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    nb = int(np.prod(batch))
    a3 = tops.reshape(tops.broadcast_to(A, batch + sa[-2:]) if sa[:-2] != batch else A,
                      (nb,) + sa[-2:])
    b3 = tops.reshape(tops.broadcast_to(B, batch + sb[-2:]) if sb[:-2] != batch else B,
                      (nb,) + sb[-2:])
    y = nn_ops.batch_matmul(a3, b3, transpose_b=False)
    return tops.reshape(y, batch + (sa[-2], sb[-1]))


# ------------------------------------------------------------------ activations, softmax
def _softmax(fn, legacy_axis: int = 1):
    def conv(ctx, ins, a):
        x = ins[0]
        s = _shape(x)
        if ctx.opset >= 13:
            return fn(x, axis=int(a.get("axis", -1)))
        axis = int(a.get("axis", legacy_axis)) % len(s)     # older opsets: 2-D coercion
        flat = tops.reshape(x, (int(np.prod(s[:axis])), int(np.prod(s[axis:]))))
        return tops.reshape(fn(flat, axis=1), s)
    return conv


def _relu(ctx, ins, a):
    return nn_ops.relu(ins[0])


def _dropout(ctx, ins, a):
    training = ctx.static(ins, 2, "training_mode", np.asarray(False))
    if bool(np.asarray(training).item()):
        raise ctx.error("Dropout in training mode is not supported (inference only)")
    x = ins[0]
    return [x, ops.cast(ops.ones_like(x), "bool")]


# ------------------------------------------------------------------ pooling
def _pool(kind: str):
    def conv(ctx, ins, a):
        x = ins[0]
        n = _spatial(ctx, x, f"{kind}Pool")
        kernel = list(a["kernel_shape"])
        strides = list(a.get("strides", [1] * n))
        dil = list(a.get("dilations", [1] * n))
        pads = _auto_pads(ctx, a, _shape(x)[2:], kernel, strides, dil)
        common = dict(pool_size=_pair(kernel, n, 1), strides=_pair(strides, n, 1),
                      padding=_quad(pads, n), ceil_mode=bool(a.get("ceil_mode", 0)))
        if kind == "Max":
            if len(ctx.node.output) > 1 and ctx.node.output[1]:
                raise ctx.error("MaxPool's Indices output is not supported")
            y = nn_more.max_pool2d(_as_2d(x, n), dilation=_pair(dil, n, 1), **common)
        else:
            y = nn_more.avg_pool2d(_as_2d(x, n), dilation=_pair(dil, n, 1),
                                   count_include_pad=bool(
                a.get("count_include_pad", 0)), **common)
        return _from_2d(y, n)
    return conv


def _global_pool(fn, pool2d):
    def conv(ctx, ins, a):
        x = ins[0]
        if len(_shape(x)) == 4:
            return pool2d(x)
        return fn(x, axis=tuple(range(2, len(_shape(x)))), keepdims=True)
    return conv


# ------------------------------------------------------------------ normalization
def _batch_norm(ctx, ins, a):
    if a.get("training_mode", 0):
        raise ctx.error("BatchNormalization in training mode is not supported")
    x, g, b, m, v = ins[:5]
    return nn_more.batch_norm(x, g, b, m, v, axis=1, epsilon=float(a.get("epsilon", 1e-5)))[0]


def _moments(x, axes):
    mean = ops.mean(x, axis=axes, keepdims=True)
    d = ops.subtract(x, mean)
    return mean, d, ops.mean(ops.multiply(d, d), axis=axes, keepdims=True)


def _layer_norm(ctx, ins, a):
    x, scale = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    nd = len(_shape(x))
    axis = int(a.get("axis", -1)) % nd
    eps = float(a.get("epsilon", 1e-5))
    outs = list(ctx.node.output)
    extra = any(outs[1:])
    if axis == nd - 1 and not extra:
        beta = bias if bias is not None else _const(np.zeros(_shape(scale)), x)
        return nn_more.layer_norm(x, scale, beta, axis=-1, epsilon=eps)
    axes = tuple(range(axis, nd))
    mean, d, var = _moments(x, axes)
    inv = ops.rsqrt(ops.add(var, _const(eps, x)))
    y = ops.multiply(ops.multiply(d, inv), scale)
    if bias is not None:
        y = ops.add(y, bias)
    return [y, mean, inv]


def _instance_norm(ctx, ins, a):
    x, scale, bias = ins
    nd = len(_shape(x))
    mean, d, var = _moments(x, tuple(range(2, nd)))
    y = ops.multiply(d, ops.rsqrt(ops.add(var, _const(float(a.get("epsilon", 1e-5)), x))))
    trailing = nd - 2
    return ops.add(ops.multiply(y, tops.expand_dims(scale, 1, trailing)),
                   tops.expand_dims(bias, 1, trailing))


# ------------------------------------------------------------------ resize
_NEAREST = {"round_prefer_floor": "round_prefer_floor", "round_prefer_ceil": "round_prefer_ceil",
            "floor": "floor", "ceil": "ceil"}


def _resize(ctx, ins, a):
    x = ins[0]
    s = _shape(x)
    if len(s) != 4:
        raise ctx.error(f"Resize of a {len(s)}-D tensor is not supported (4-D NCHW is)")
    mode = a.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise ctx.error(f"Resize mode {mode!r} is not supported (nearest and linear are)")
    if a.get("antialias", 0) or a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise ctx.error("Resize with antialias or keep_aspect_ratio_policy is not supported")
    axes = [int(v) % 4 for v in a.get("axes", range(4))]
    scale_k, size_k = (2, 3) if ctx.opset >= 11 else (1, None)
    sizes = ctx.static(ins, size_k, "sizes", None) if size_k else None
    if sizes is not None and np.asarray(sizes).size:
        full = list(s)
        for ax, v in zip(axes, sizes):
            full[ax] = int(v)
        out = tuple(full)
    else:
        given = ctx.static(ins, scale_k, "scales")
        scales = [1.0] * 4
        for ax, v in zip(axes, given):
            scales[ax] = float(v)
        out = tuple(int(np.floor(d * float(sc))) for d, sc in zip(s, scales))
        for d, sc, o in zip(s[2:], scales[2:], out[2:]):
            if abs(d * float(sc) - o) > 1e-6:
                raise ctx.error(f"Resize scale {float(sc)} of size {d} gives a fractional "
                                "output size; only scales with whole output sizes are "
                                "supported")
    if out[:2] != s[:2]:
        raise ctx.error(f"Resize of the batch or channel axes ({s[:2]} -> {out[:2]}) is not "
                        "supported")
    coord = a.get("coordinate_transformation_mode", "half_pixel")
    rounding = _NEAREST.get(a.get("nearest_mode", "round_prefer_floor"), "") \
        if mode == "nearest" else ""
    return nn_more.resize2d(x, out[2:], layout="NCHW",
                            method="nearest_neighbor" if mode == "nearest" else "linear",
                            coordinate_transformation_mode=coord, rounding_method=rounding)


NN_CONVERTERS = {
    "Conv": _conv, "ConvTranspose": _conv_transpose, "Gemm": _gemm, "MatMul": _matmul,
    "Softmax": _softmax(nn_ops.softmax), "LogSoftmax": _softmax(nn_ops.log_softmax),
    "Relu": _relu, "Dropout": _dropout,
    "MaxPool": _pool("Max"), "AveragePool": _pool("Average"),
    "GlobalAveragePool": _global_pool(ops.mean, nn_more.global_avg_pool2d),
    "GlobalMaxPool": _global_pool(ops.max, nn_more.global_max_pool2d),
    "BatchNormalization": _batch_norm, "LayerNormalization": _layer_norm,
    "InstanceNormalization": _instance_norm, "Resize": _resize,
}
