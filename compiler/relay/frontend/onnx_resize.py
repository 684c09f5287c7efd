"""ONNX ``Resize`` (opsets 10-21): nearest, linear and cubic, every coordinate mode.

Two lowerings, chosen per node:

- ``image.resize2d`` (TVM's op) when it computes exactly what ONNX asks: a 4-D NCHW
  tensor resized in H and W only, nearest or linear, no antialias, and output sizes
  equal to ``scale * input`` -- resize2d maps coordinates with ``in / out``, ONNX with
  the given scale, and the two agree only then;
- otherwise a separable resize: ONNX's resize is a chain of 1-D resizes, one per resized
  axis, and each is a fixed linear map.  Its taps (source indices, clamped to the input
  as ONNX's edge padding does) and weights are computed here in float64 with ONNX's
  formulas (cubic with ``cubic_coeff_a`` and ``exclude_outside``, antialiased kernels,
  ``tf_crop_and_resize`` with its ``extrapolation_value``), and applied as ``take`` along
  the axis times constant weights, summed (nearest: one ``take``).

Invariants: shapes are static (scales, sizes and roi must be known at import); integer
tensors resize only with ``nearest`` (an interpolated value would need ONNX's saturating
cast back); every refusal names the node and the bad attribute.
"""
from __future__ import annotations

import math

import numpy as np

from .. import expr as X
from ..op import nn_more
from ..op import tensor as ops
from ..op import transform as tops

__all__ = ["resize"]

_RESIZE2D_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                   "tf_half_pixel_for_nn")
_COORD_MODES = _RESIZE2D_MODES + ("half_pixel_symmetric", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize(ctx, ins, a):
    x = ins[0]
    shape = tuple(int(d) for d in x.checked_type.shape)
    nd = len(shape)
    opts = _options(ctx, a, x.checked_type.dtype)
    axes = [int(v) % nd for v in a.get("axes", range(nd))]
    scales, out = _scales_and_sizes(ctx, ins, a, shape, axes)
    roi = _roi(ctx, ins, axes, nd)
    moved = [k for k in range(nd) if not _identity_axis(shape[k], out[k], scales[k], roi, k, nd)]
    if _fits_resize2d(opts, shape, out, scales, moved):
        coord = opts["coord"]
        if coord == "half_pixel_symmetric":    # the same as half_pixel when out == scale * in
            coord = "half_pixel"
        return nn_more.resize2d(
            x, out[2:], layout="NCHW",
            method="nearest_neighbor" if opts["mode"] == "nearest" else "linear",
            coordinate_transformation_mode=coord,
            rounding_method=opts["nearest_mode"] if opts["mode"] == "nearest" else "")
    y = x
    for k in moved:
        idx, w, outside = _taps(opts, shape[k], out[k], scales[k], (roi[k], roi[k + nd]))
        y = _apply_axis(y, k, nd, idx, w, outside, opts)
    return y


def _options(ctx, a, dtype: str) -> dict:
    old = ctx.opset < 11                    # Resize-10: asymmetric coordinates, floor
    opts = {"mode": a.get("mode", "nearest"),
            "coord": a.get("coordinate_transformation_mode",
                           "asymmetric" if old else "half_pixel"),
            "nearest_mode": a.get("nearest_mode", "floor" if old else "round_prefer_floor"),
            "cubic_a": float(a.get("cubic_coeff_a", -0.75)),
            "exclude": bool(a.get("exclude_outside", 0)),
            "antialias": bool(a.get("antialias", 0)),
            "extrapolation": float(a.get("extrapolation_value", 0.0)),
            "policy": a.get("keep_aspect_ratio_policy", "stretch"), "dtype": dtype}
    if opts["mode"] not in ("nearest", "linear", "cubic"):
        raise ctx.error(f"Resize mode {opts['mode']!r}; expected nearest, linear or cubic")
    if opts["coord"] not in _COORD_MODES:
        raise ctx.error(f"Resize coordinate_transformation_mode {opts['coord']!r}; expected "
                        f"one of {_COORD_MODES}")
    if opts["mode"] == "nearest" and opts["nearest_mode"] not in _NEAREST_MODES:
        raise ctx.error(f"Resize nearest_mode {opts['nearest_mode']!r}; expected one of "
                        f"{_NEAREST_MODES}")
    if opts["mode"] == "nearest" and opts["antialias"]:
        raise ctx.error("Resize antialias=1 with mode 'nearest'; ONNX defines antialias for "
                        "linear and cubic only")
    if opts["mode"] != "nearest" and not dtype.startswith("float"):
        raise ctx.error(f"Resize mode {opts['mode']!r} of a {dtype} tensor is not supported "
                        "(integer tensors resize with mode 'nearest')")
    return opts


def _scales_and_sizes(ctx, ins, a, shape: tuple, axes: list) -> tuple:
    """Per-axis float scales and int output sizes, as ONNX's reference derives them."""
    nd = len(shape)
    scale_k, size_k = (2, 3) if ctx.opset >= 11 else (1, None)
    sizes = ctx.static(ins, size_k, "sizes", None) if size_k else None
    scales = [1.0] * nd
    out = list(shape)
    if sizes is not None and np.asarray(sizes).size:
        for ax, v in zip(axes, np.asarray(sizes).reshape(-1)):
            out[ax] = int(v)
            scales[ax] = out[ax] / shape[ax]
        policy = a.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            if policy not in ("not_larger", "not_smaller"):
                raise ctx.error(f"Resize keep_aspect_ratio_policy {policy!r}; expected "
                                "stretch, not_larger or not_smaller")
            pick = min if policy == "not_larger" else max
            s = pick(scales[ax] for ax in axes)
            for ax in axes:
                scales[ax] = s
                out[ax] = int(s * shape[ax] + 0.5)          # ONNX rounds half up here
        return scales, out
    given = ctx.static(ins, scale_k, "scales")
    for ax, v in zip(axes, np.asarray(given).reshape(-1)):
        scales[ax] = float(v)
        out[ax] = int(scales[ax] * shape[ax])               # ONNX truncates here
    if any(v <= 0 for v in scales):
        raise ctx.error(f"Resize scales {list(np.asarray(given).reshape(-1))}; expected "
                        "positive scales")
    return scales, out


def _roi(ctx, ins, axes: list, nd: int) -> list:
    """``[start_0 .. start_n-1, end_0 .. end_n-1]`` over all axes (default 0 and 1)."""
    full = [0.0] * nd + [1.0] * nd
    given = ctx.static(ins, 1, "roi", None) if ctx.opset >= 11 else None
    if given is not None and np.asarray(given).size:
        flat = [float(v) for v in np.asarray(given).reshape(-1)]
        for i, ax in enumerate(axes):
            full[ax], full[nd + ax] = flat[i], flat[len(axes) + i]
    return full


def _identity_axis(size: int, out: int, scale: float, roi: list, k: int, nd: int) -> bool:
    return math.isclose(scale, 1.0) and out == size and \
        math.isclose(roi[k], 0.0) and math.isclose(roi[k + nd], 1.0)


def _fits_resize2d(opts: dict, shape: tuple, out: list, scales: list, moved: list) -> bool:
    return (len(shape) == 4 and set(moved) <= {2, 3} and opts["mode"] != "cubic"
            and not opts["antialias"] and opts["coord"] != "tf_crop_and_resize"
            and opts["coord"] in _RESIZE2D_MODES + ("half_pixel_symmetric",)
            and all(out[k] == scales[k] * shape[k] for k in (2, 3)))


# ------------------------------------------------------------------ separable resize
def _source(coord: str, y, scale: float, size: int, out: int, roi: tuple):
    """Input coordinates of output positions ``y`` along one axis (ONNX's formulas)."""
    width = scale * size                    # ONNX's float output width, not ``out``
    if coord == "align_corners":
        return np.zeros_like(y) if width == 1 else y * (size - 1) / (width - 1)
    if coord == "asymmetric":
        return y / scale
    if coord == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    if coord == "tf_crop_and_resize":
        span = (roi[1] - roi[0]) * (size - 1)
        x = np.full_like(y, span / 2) if width == 1 else y * span / (width - 1)
        return x + roi[0] * (size - 1)
    if coord == "pytorch_half_pixel" and width == 1:
        return np.full_like(y, -0.5)
    if coord == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / width)
        return offset + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5          # half_pixel, pytorch_half_pixel


def _kernel(opts: dict, ratio, scale: float) -> tuple:
    """``(offsets, weights)``: taps at ``left + offsets`` where ``left = ceil(x) - 1`` and
    ``ratio = x - left`` is in (0, 1]; weights per output row."""
    mode, A = opts["mode"], opts["cubic_a"]
    r = ratio[:, None]
    if mode == "nearest":
        nm = opts["nearest_mode"]
        up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
              "floor": ratio == 1.0, "ceil": np.ones_like(ratio, bool)}[nm]
        return np.array([0, 1]), np.stack([~up, up], axis=1).astype(np.float64)
    if not opts["antialias"]:
        if mode == "linear":
            return np.array([0, 1]), np.concatenate([1 - r, r], axis=1)
        d = np.concatenate([r + 1, r, 1 - r, 2 - r], axis=1)       # distances to 4 taps
        return np.array([-1, 0, 1, 2]), _cubic(d, A)
    s = min(scale, 1.0)                     # antialias widens the kernel when shrinking
    reach = 1.0 if mode == "linear" else 2.0
    start = int(np.floor(-reach / s)) + 1
    offsets = np.arange(start, 2 - start)
    args = np.abs((offsets[None, :] - r) * s)
    w = np.clip(1 - args, 0, 1) if mode == "linear" else _cubic(args, A)
    return offsets, w / w.sum(axis=1, keepdims=True)


def _cubic(d, A: float):
    d = np.abs(d)
    near = ((A + 2) * d - (A + 3)) * d * d + 1
    far = ((A * d - 5 * A) * d + 8 * A) * d - 4 * A
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _taps(opts: dict, size: int, out: int, scale: float, roi: tuple) -> tuple:
    """``(indices (out, n), weights (out, n), outside mask (out,) or None)`` of one axis."""
    x = _source(opts["coord"], np.arange(out, dtype=np.float64), scale, size, out, roi)
    left = np.ceil(x) - 1
    offsets, w = _kernel(opts, x - left, scale)
    idx = left.astype(np.int64)[:, None] + offsets[None, :]
    if opts["exclude"]:
        w = np.where((idx < 0) | (idx >= size), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    outside = None
    if opts["coord"] == "tf_crop_and_resize":
        outside = (x < 0) | (x > size - 1)
    if opts["mode"] == "nearest":           # one tap: the one with weight 1
        idx = np.take_along_axis(idx, np.argmax(w, axis=1)[:, None], axis=1)
        w = None
    return np.clip(idx, 0, size - 1).astype(np.int32), w, outside


def _apply_axis(x, axis: int, nd: int, idx, w, outside, opts: dict):
    along = (idx.shape[0],) + (1,) * (nd - axis - 1)   # broadcasts over later axes
    dtype = opts["dtype"]
    y = None
    for t in range(idx.shape[1]):
        g = tops.take(x, X.const(idx[:, t]), axis=axis, mode="clip")
        if w is not None:
            g = ops.multiply(g, X.const(w[:, t].reshape(along).astype(dtype)))
        y = g if y is None else ops.add(y, g)
    if outside is not None and outside.any():
        value = X.const(np.asarray(opts["extrapolation"], dtype=dtype))
        y = ops.where(X.const(outside.reshape(along)), value, y)
    return y
