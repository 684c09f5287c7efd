"""ONNX converters: elementwise math, comparisons, reductions and data movement.

Each converter is ``fn(ctx, ins, attrs) -> relay expression | list`` where ``ins`` are
the node's inputs as typed relay expressions (None for an omitted optional input) and
``attrs`` its attributes.  ``CONVERTERS`` maps op types to converters (this module's and
``onnx_nn``'s; Cast and CastLike are ``onnx_narrow``'s, merged in by ``onnx``);
``NO_FOLD`` lists op types never evaluated at import time.
"""
from __future__ import annotations

import numpy as np

from .. import expr as X
from ..op import nn as nn_ops
from ..op import nn_more
from ..op import tensor as ops
from ..op import transform as tops
from .onnx_nn import NN_CONVERTERS

__all__ = ["CONVERTERS", "NO_FOLD", "ONNX_DTYPE_NAMES", "shape_of", "dtype_of"]

NO_FOLD: set = set()


def shape_of(e) -> tuple:
    return e.checked_type.shape


def dtype_of(e) -> str:
    return e.checked_type.dtype


def _axis(a: int, ndim: int) -> int:
    return a + ndim if a < 0 else a


def _const_like(value, e):
    return X.const(np.asarray(value, dtype=dtype_of(e)))


# ------------------------------------------------------------------ elementwise
def _binary(fn):
    return lambda ctx, ins, a: fn(ins[0], ins[1])


def _div(ctx, ins, a):
    x, y = ins
    if dtype_of(x).startswith(("int", "uint")):
        # ONNX integer Div truncates toward zero (numpy's true divide, then a cast)
        q = ops.divide(ops.cast(x, "float64"), ops.cast(y, "float64"))
        return ops.cast(q, dtype_of(x))
    return ops.divide(x, y)


def _pow(ctx, ins, a):
    x, y = ins
    if not dtype_of(x).startswith("float"):        # integer powers, computed exactly in f64
        p = ops.power(ops.cast(x, "float64"), ops.cast(y, "float64"))
        return ops.cast(p, dtype_of(x))
    if dtype_of(y) != dtype_of(x):
        y = ops.cast(y, dtype_of(x))
    return ops.power(x, y)


def _unary(fn):
    return lambda ctx, ins, a: fn(ins[0])


def _reciprocal(ctx, ins, a):
    return ops.divide(_const_like(1, ins[0]), ins[0])


def _leaky_relu(ctx, ins, a):
    return nn_ops.leaky_relu(ins[0], float(a.get("alpha", 0.01)))


def _clip(ctx, ins, a):
    x = ins[0]
    info = np.finfo if dtype_of(x).startswith("float") else np.iinfo
    lim = info(np.dtype(dtype_of(x)))
    if ctx.opset >= 11:
        lo = ctx.static(ins, 1, "min", None)
        hi = ctx.static(ins, 2, "max", None)
    else:
        lo, hi = a.get("min"), a.get("max")
    lo = lim.min if lo is None else np.asarray(lo).item()
    hi = lim.max if hi is None else np.asarray(hi).item()
    if dtype_of(x).startswith("float") and lo <= hi:
        return ops.clip(x, lo, hi)
    return ops.minimum(ops.maximum(x, _const_like(lo, x)), _const_like(hi, x))


def _hard_sigmoid(ctx, ins, a):
    x = ins[0]
    y = ops.add(ops.multiply(x, _const_like(a.get("alpha", 0.2), x)),
                _const_like(a.get("beta", 0.5), x))
    return ops.clip(y, 0.0, 1.0)


def _hard_swish(ctx, ins, a):
    x = ins[0]
    gate = ops.clip(ops.add(ops.multiply(x, _const_like(1 / 6, x)), _const_like(0.5, x)),
                    0.0, 1.0)
    return ops.multiply(x, gate)


def _gelu(ctx, ins, a):
    x = ins[0]
    half = ops.multiply(x, _const_like(0.5, x))
    if a.get("approximate", "none") == "tanh":
        inner = ops.multiply(_const_like(np.sqrt(2 / np.pi), x),
                             ops.add(x, ops.multiply(_const_like(0.044715, x),
                                                     ops.multiply(x, ops.multiply(x, x)))))
        return ops.multiply(half, ops.add(_const_like(1, x), ops.tanh(inner)))
    return ops.multiply(half, ops.add(_const_like(1, x),
                                      ops.erf(ops.multiply(x, _const_like(1 / np.sqrt(2), x)))))


def _variadic(fn):
    def conv(ctx, ins, a):
        out = ins[0]
        for x in ins[1:]:
            out = fn(out, x)
        return out
    return conv


# TensorProto element types of the ordinary dtypes (the narrow ones: onnx_narrow)
ONNX_DTYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
                    7: "int64", 9: "bool", 10: "float16", 11: "float64", 12: "uint32",
                    13: "uint64"}


def _not(ctx, ins, a):
    return ops.logical_not(ins[0])


def _where(ctx, ins, a):
    return ops.where(ins[0], ins[1], ins[2])


# ------------------------------------------------------------------ reductions
def _reduce_axes(ctx, ins, a, axes_input_from: int):
    if ctx.opset >= axes_input_from:
        axes = ctx.static(ins, 1, "axes", None)
    else:
        axes = a.get("axes")
    if axes is None or len(np.atleast_1d(axes)) == 0:
        return None
    return tuple(int(v) for v in np.atleast_1d(axes))


def _reduce(fn, axes_input_from: int = 18):
    def conv(ctx, ins, a):
        x = ins[0]
        axes = _reduce_axes(ctx, ins, a, axes_input_from)
        if axes is None and a.get("noop_with_empty_axes", 0):
            return x
        return fn(x, axis=axes, keepdims=bool(a.get("keepdims", 1)))
    return conv


def _argmax(ctx, ins, a):
    out = ops.argmax(ins[0], axis=int(a.get("axis", 0)), keepdims=bool(a.get("keepdims", 1)),
                     select_last_index=bool(a.get("select_last_index", 0)))
    return ops.cast(out, "int64")


# ------------------------------------------------------------------ data movement
def _identity(ctx, ins, a):
    return ins[0]


def _flatten(ctx, ins, a):
    s = shape_of(ins[0])
    axis = _axis(int(a.get("axis", 1)), len(s))
    return tops.reshape(ins[0], (int(np.prod(s[:axis])), int(np.prod(s[axis:]))))


def _reshape(ctx, ins, a):
    new = [int(v) for v in ctx.static(ins, 1, "shape")]
    src = shape_of(ins[0])
    if a.get("allowzero", 0):
        if 0 in new and int(np.prod(src)) == 0 and -1 not in new:
            # a literal 0 dimension (relay's reshape reads 0 as "copy"): no elements to move
            return X.Constant(np.zeros(new, dtype=dtype_of(ins[0])))
        if -1 in new:
            known = int(np.prod([d for d in new if d != -1]))
            new = [int(np.prod(src)) // max(known, 1) if d == -1 else d for d in new]
    else:
        new = [src[k] if d == 0 else d for k, d in enumerate(new)]
    return tops.reshape(ins[0], tuple(new))


def _transpose(ctx, ins, a):
    perm = a.get("perm")
    return tops.transpose(ins[0], None if perm is None else tuple(perm))


def _squeeze(ctx, ins, a):
    axes = ctx.static(ins, 1, "axes", None) if ctx.opset >= 13 else a.get("axes")
    if axes is None:
        return tops.squeeze(ins[0])
    return tops.squeeze(ins[0], tuple(int(v) for v in np.atleast_1d(axes)))


def _unsqueeze(ctx, ins, a):
    axes = ctx.static(ins, 1, "axes") if ctx.opset >= 13 else a.get("axes")
    out_ndim = len(shape_of(ins[0])) + len(np.atleast_1d(axes))
    x = ins[0]
    for ax in sorted(_axis(int(v), out_ndim) for v in np.atleast_1d(axes)):
        x = tops.expand_dims(x, ax)
    return x


def _concat(ctx, ins, a):
    return tops.concatenate([x for x in ins if x is not None], axis=int(a["axis"]))


def _split(ctx, ins, a):
    x = ins[0]
    axis = _axis(int(a.get("axis", 0)), len(shape_of(x)))
    sizes = ctx.static(ins, 1, "split", None) if ctx.opset >= 13 else a.get("split")
    n_out = len(ctx.node.output)
    dim = shape_of(x)[axis]
    if sizes is None:
        parts = int(a.get("num_outputs", n_out))
        step = -(-dim // parts)
        sizes = [min(step, dim - k * step) for k in range(parts)]
    offsets = np.cumsum([int(s) for s in sizes])[:-1]
    if len(offsets) == 0:
        return [x]
    return list(tops.split(x, tuple(int(o) for o in offsets), axis=axis))


def _slice(ctx, ins, a):
    x = ins[0]
    starts = ctx.static(ins, 1, "starts")
    ends = ctx.static(ins, 2, "ends")
    ndim = len(shape_of(x))
    axes = ctx.static(ins, 3, "axes", np.arange(len(starts)))
    steps = ctx.static(ins, 4, "steps", np.ones(len(starts), dtype=np.int64))
    # ONNX's INT64_MAX/MIN "to the end" markers clamp like Python slices do
    return tops.strided_slice(x, [int(v) for v in starts], [int(v) for v in ends],
                              [int(v) for v in steps], [_axis(int(v), ndim) for v in axes])


def _gather(ctx, ins, a):
    x, idx = ins
    axis = _axis(int(a.get("axis", 0)), len(shape_of(x)))
    return tops.take(x, idx, axis=axis, mode="wrap")


def _shape(ctx, ins, a):
    s = np.asarray(shape_of(ins[0]), dtype=np.int64)
    n = len(s)
    start = _axis(int(a.get("start", 0)), n)
    end = a.get("end")
    end = n if end is None else _axis(int(end), n)
    return X.Constant(s[max(0, min(start, n)):max(0, min(end, n))])


def _constant(ctx, ins, a):
    for key, fn in (("value", np.asarray), ("value_float", lambda v: np.float32(v)),
                    ("value_floats", lambda v: np.asarray(v, np.float32)),
                    ("value_int", lambda v: np.int64(v)),
                    ("value_ints", lambda v: np.asarray(v, np.int64))):
        if key in a:
            return X.Constant(np.asarray(fn(a[key])))
    raise ctx.error(f"Constant with attributes {sorted(a)} is not supported")


def _constant_of_shape(ctx, ins, a):
    shape = tuple(int(v) for v in ctx.static(ins, 0, "shape"))
    value = a.get("value", np.zeros(1, np.float32))
    return X.Constant(np.full(shape, np.asarray(value).reshape(-1)[0],
                              dtype=np.asarray(value).dtype))


def _expand(ctx, ins, a):
    target = tuple(int(v) for v in ctx.static(ins, 1, "shape"))
    out = tuple(np.broadcast_shapes(shape_of(ins[0]), target))
    return tops.broadcast_to(ins[0], out)


def _range(ctx, ins, a):
    start, limit, delta = (ctx.static(ins, k, n) for k, n in
                           enumerate(("start", "limit", "delta")))
    return X.Constant(np.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype))


def _pad(ctx, ins, a):
    x = ins[0]
    ndim = len(shape_of(x))
    pads = ctx.static(ins, 1, "pads") if ctx.opset >= 11 else np.asarray(a["pads"])
    value = ctx.static(ins, 2, "constant_value", None) if ctx.opset >= 11 else a.get("value")
    axes = ctx.static(ins, 3, "axes", None)
    axes = list(range(ndim)) if axes is None else [_axis(int(v), ndim) for v in axes]
    width = [[0, 0] for _ in range(ndim)]
    for k, ax in enumerate(axes):
        width[ax] = [int(pads[k]), int(pads[k + len(axes)])]
    mode = a.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise ctx.error(f"Pad mode {mode!r} is not supported")
    fill = 0.0 if value is None or np.asarray(value).size == 0 else float(np.asarray(value).item())
    return nn_more.pad(x, width, pad_value=fill, pad_mode=mode)


CONVERTERS = {
    "Add": _binary(ops.add), "Sub": _binary(ops.subtract), "Mul": _binary(ops.multiply),
    "Div": _div, "Pow": _pow, "Equal": _binary(ops.equal), "Less": _binary(ops.less),
    "Greater": _binary(ops.greater), "LessOrEqual": _binary(ops.less_equal),
    "GreaterOrEqual": _binary(ops.greater_equal), "Not": _not, "Where": _where,
    "And": _binary(ops.logical_and), "Or": _binary(ops.logical_or),
    "Sqrt": _unary(ops.sqrt), "Reciprocal": _reciprocal, "Exp": _unary(ops.exp),
    "Log": _unary(ops.log), "Erf": _unary(ops.erf), "Tanh": _unary(ops.tanh),
    "Sigmoid": _unary(ops.sigmoid), "Abs": _unary(ops.abs), "Neg": _unary(ops.negative),
    "Floor": _unary(ops.floor), "Ceil": _unary(ops.ceil),
    "LeakyRelu": _leaky_relu, "Clip": _clip, "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish, "Gelu": _gelu,
    "Min": _variadic(ops.minimum), "Max": _variadic(ops.maximum),
    "ReduceMean": _reduce(ops.mean), "ReduceSum": _reduce(ops.sum, 13),
    "ReduceMax": _reduce(ops.max), "ReduceMin": _reduce(ops.min), "ArgMax": _argmax,
    "Identity": _identity, "Flatten": _flatten, "Reshape": _reshape, "Transpose": _transpose,
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Concat": _concat, "Split": _split,
    "Slice": _slice, "Gather": _gather, "Shape": _shape, "Constant": _constant,
    "ConstantOfShape": _constant_of_shape, "Expand": _expand, "Range": _range, "Pad": _pad,
    **NN_CONVERTERS,
}
