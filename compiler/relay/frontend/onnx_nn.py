"""ONNX converters: convolution, pooling, matrix products, normalization, softmax.

1-D convolutions and pools run as 2-D ones over a unit height (expand, convolve,
squeeze); 3-D pools as two 2-D pools (H x W, then D); 3-D ConvTranspose is
``nn.conv3d_transpose``, a 3-D Conv is refused with an error naming the node.  Grouped
ConvTranspose runs one conv2d/3d_transpose per group, a dilated one with a
zero-dilated kernel; MaxPool's Indices come from the window taps compared with the max.
``auto_pad`` SAME_UPPER / SAME_LOWER / VALID become explicit pads from the static input
shape.  Training-mode BatchNormalization normalizes with the batch's statistics;
training-mode Dropout is accepted only with ratio 0 (the identity).
"""
from __future__ import annotations

import numpy as np

from .. import expr as X
from ..op import nn as nn_ops
from ..op import nn_more
from ..op import tensor as ops
from ..op import transform as tops
from ..transform.infer_type import type_new
from .onnx_resize import resize

__all__ = ["NN_CONVERTERS"]


def _shape(e) -> tuple:
    return e.checked_type.shape


def _dtype(e) -> str:
    return e.checked_type.dtype


def _const(value, like):
    return X.const(np.asarray(value, dtype=_dtype(like)))


def _spatial(ctx, x, what: str, most: int = 2) -> int:
    n = len(_shape(x)) - 2
    if not 1 <= n <= most:
        raise ctx.error(f"{n}-D {what} is not supported (1-D to {most}-D are)")
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
    n = _spatial(ctx, x, "ConvTranspose", 3)
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
    if any(d != 1 for d in dil):
        w = type_new(_dilate_kernel(w, dil))
    # a negative pad (an output_shape beyond the full result) adds zero rows at that edge
    grow = [max(0, -p) for p in pads]
    groups = int(a.get("group", 1))
    xs, ws = _groups(x, groups), _groups(w, groups, axis=0)
    ys = [_conv_t_call(xg, wg, n, strides, [max(0, p) for p in pads], opad)
          for xg, wg in zip(xs, ws)]
    y = _from_2d(ys[0] if groups == 1 else tops.concatenate(ys, axis=1), n)
    if any(grow):
        y = nn_more.pad(y, [(0, 0), (0, 0)] + [(grow[k], grow[k + n]) for k in range(n)])
    if len(ins) > 2 and ins[2] is not None:
        y = nn_ops.bias_add(y, ins[2], axis=1)
    return y


def _conv_t_call(x, w, n: int, strides, pads, opad):
    """One ungrouped, undilated transposed convolution (1-D ones as 2-D)."""
    if n == 3:
        return nn_ops.conv3d_transpose(x, w, strides=tuple(strides), padding=tuple(pads),
                                       output_padding=tuple(opad))
    return nn_ops.conv2d_transpose(_as_2d(x, n), _as_2d(w, n), strides=_pair(strides, n, 1),
                                   padding=_quad(pads, n), output_padding=_pair(opad, n, 0))


def _groups(x, groups: int, axis: int = 1) -> list:
    """``x`` cut into ``groups`` equal parts along ``axis`` (grouped ConvTranspose runs
    one ungrouped conv2d_transpose per group)."""
    if groups == 1:
        return [x]
    step = _shape(x)[axis] // groups
    return list(tops.split(x, tuple(step * k for k in range(1, groups)), axis=axis))


def _dilate_kernel(w, dil: list):
    """The kernel with ``d - 1`` zeros between taps: a dilated transposed convolution is
    the undilated one with this kernel.  (I, O, k) -> (I, O, k, 1) -> pad the unit axis
    to d -> (I, O, k * d) -> drop the trailing d - 1 zeros."""
    s = tuple(_shape(w))
    n = len(s) - 2
    split = s[:2] + sum(((k, 1) for k in s[2:]), ())
    width = [(0, 0), (0, 0)] + [p for d in dil for p in ((0, 0), (0, d - 1))]
    y = nn_more.pad(tops.reshape(w, split), width)
    y = tops.reshape(y, s[:2] + tuple(k * d for k, d in zip(s[2:], dil)))
    return tops.strided_slice(y, [0] * n, [(k - 1) * d + 1 for k, d in zip(s[2:], dil)],
                              axes=list(range(2, 2 + n)))


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
    ratio = ctx.static(ins, 1, "ratio", np.asarray(0.5)) if ctx.opset >= 12 else \
        np.asarray(a.get("ratio", 0.5))
    # training with ratio 0 drops nothing, so it is the identity too; any other ratio
    # draws random masks, which a compiled inference graph does not reproduce
    rate = float(np.asarray(ratio).reshape(-1)[0])
    if bool(np.asarray(training).reshape(-1)[0]) and rate != 0.0:
        raise ctx.error(f"Dropout in training mode with ratio {rate} is not supported "
                        "(inference, or ratio 0, only)")
    x = ins[0]
    return [x, ops.cast(ops.ones_like(x), "bool")]


# ------------------------------------------------------------------ pooling
def _pool(kind: str):
    def conv(ctx, ins, a):
        x = ins[0]
        n = len(_shape(x)) - 2
        if n not in (1, 2, 3):
            raise ctx.error(f"{n}-D {kind}Pool is not supported (1-D to 3-D are)")
        indices = kind == "Max" and len(ctx.node.output) > 1 and bool(ctx.node.output[1])
        if indices and n != 2:
            raise ctx.error(f"MaxPool's Indices output of a {n}-D pool is not supported "
                            "(2-D is)")
        kernel = list(a["kernel_shape"])
        strides = list(a.get("strides", [1] * n))
        dil = list(a.get("dilations", [1] * n))
        pads = _auto_pads(ctx, a, _shape(x)[2:], kernel, strides, dil)
        if n == 3:
            return _pool3d(kind, x, kernel, strides, dil, pads, a)
        y = _pool2d(kind, _as_2d(x, n), _pair(kernel, n, 1), _pair(strides, n, 1),
                    _pair(dil, n, 1), _quad(pads, n), a)
        if indices:
            y = type_new(y)
            return [y, _max_indices(x, y, kernel, strides, dil, pads,
                                    int(a.get("storage_order", 0)))]
        return _from_2d(y, n)
    return conv


def _max_indices(x, y, kernel, strides, dil, pads, storage_order: int):
    """MaxPool's Indices: per output, the flat input index of the window's first maximum
    (row-major over the window, as ONNX's reference).  Each window tap is a strided slice
    of the input padded with -inf; walking the taps backwards, ``where(tap == max)`` keeps
    the first that hits."""
    b, c, h, w = _shape(x)
    oh, ow = _shape(y)[2:]
    top, left = pads[0], pads[1]
    reach = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip((oh, ow), strides, kernel, dil)]
    xp = nn_more.pad(x, [(0, 0), (0, 0), (top, max(0, reach[0] - h - top)),
                         (left, max(0, reach[1] - w - left))], pad_value=float("-inf"))
    plane = (np.arange(b * c, dtype=np.int64) * h * w).reshape(b, c, 1, 1)
    idx = None
    for i in reversed(range(kernel[0])):
        for j in reversed(range(kernel[1])):
            rows = (np.arange(oh) * strides[0] + i * dil[0] - top)[:, None]
            cols = (np.arange(ow) * strides[1] + j * dil[1] - left)[None, :]
            flat = X.const(plane + (rows * w + cols if storage_order == 0 else rows + cols * h))
            if idx is None:         # the last tap: where every earlier tap missed
                idx = flat
                continue
            tap = tops.strided_slice(xp, [i * dil[0], j * dil[1]],
                                     [i * dil[0] + reach[0] - (kernel[0] - 1) * dil[0],
                                      j * dil[1] + reach[1] - (kernel[1] - 1) * dil[1]],
                                     strides=list(strides), axes=[2, 3])
            idx = ops.where(ops.equal(tap, y), flat, idx)
    return idx


def _pool2d(kind: str, x, kernel, strides, dil, pads, a):
    common = dict(pool_size=tuple(kernel), strides=tuple(strides), dilation=tuple(dil),
                  padding=tuple(pads), ceil_mode=bool(a.get("ceil_mode", 0)))
    if kind == "Max":
        return nn_more.max_pool2d(x, **common)
    return nn_more.avg_pool2d(x, count_include_pad=bool(a.get("count_include_pad", 0)),
                              **common)


def _pool3d(kind: str, x, kernel, strides, dil, pads, a):
    """3-D pooling as two 2-D ones, over (H, W) and then over D: a box window's max is the
    max over depth of maxima over H x W, and its average (padding counted or not) is the
    average of averages, since the element count of a box is the product of per-axis
    counts."""
    b, c, d, h, w = _shape(x)
    y = type_new(_pool2d(kind, tops.reshape(x, (b, c * d, h, w)), kernel[1:], strides[1:],
                         dil[1:], (pads[1], pads[2], pads[4], pads[5]), a))
    oh, ow = _shape(y)[2:]
    y = type_new(_pool2d(kind, tops.reshape(y, (b, c, d, oh * ow)), (kernel[0], 1),
                         (strides[0], 1), (dil[0], 1), (pads[0], 0, pads[3], 0), a))
    return tops.reshape(y, (b, c, _shape(y)[2], oh, ow))


def _global_pool(fn, pool2d):
    def conv(ctx, ins, a):
        x = ins[0]
        if len(_shape(x)) == 4:
            return pool2d(x)
        return fn(x, axis=tuple(range(2, len(_shape(x)))), keepdims=True)
    return conv


# ------------------------------------------------------------------ normalization
def _batch_norm(ctx, ins, a):
    x, g, b, m, v = ins[:5]
    eps = float(a.get("epsilon", 1e-5))
    if not a.get("training_mode", 0):
        return nn_more.batch_norm(x, g, b, m, v, axis=1, epsilon=eps)[0]
    # training mode: normalize with the batch's own statistics (biased variance), and
    # output the running statistics moved toward them by 1 - momentum
    nd = len(_shape(x))
    mean, d, var = _moments(x, (0,) + tuple(range(2, nd)))
    y = ops.multiply(d, ops.rsqrt(ops.add(var, _const(eps, x))))
    y = ops.add(ops.multiply(y, tops.expand_dims(g, 1, nd - 2)), tops.expand_dims(b, 1, nd - 2))
    mom = float(a.get("momentum", 0.9))
    channels = (_shape(x)[1],)

    def running(old, batch):
        return ops.add(ops.multiply(old, _const(mom, x)),
                       ops.multiply(tops.reshape(batch, channels), _const(1 - mom, x)))
    return [y, running(m, mean), running(v, var)]


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


NN_CONVERTERS = {
    "Conv": _conv, "ConvTranspose": _conv_transpose, "Gemm": _gemm, "MatMul": _matmul,
    "Softmax": _softmax(nn_ops.softmax), "LogSoftmax": _softmax(nn_ops.log_softmax),
    "Relu": _relu, "Dropout": _dropout,
    "MaxPool": _pool("Max"), "AveragePool": _pool("Average"),
    "GlobalAveragePool": _global_pool(ops.mean, nn_more.global_avg_pool2d),
    "GlobalMaxPool": _global_pool(ops.max, nn_more.global_max_pool2d),
    "BatchNormalization": _batch_norm, "LayerNormalization": _layer_norm,
    "InstanceNormalization": _instance_norm, "Resize": resize,
}
