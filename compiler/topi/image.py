"""Image resizing (TVM's ``topi.image.resize2d``): nearest neighbour and bilinear.

Coordinate transformation modes map an output pixel x to an input coordinate:
half_pixel ``(x + 0.5) * in/out - 0.5``, pytorch_half_pixel (same, 0 when out == 1),
align_corners ``x * (in - 1) / (out - 1)``, asymmetric ``x * in/out``,
tf_half_pixel_for_nn ``(x + 0.5) * in/out``.  Nearest rounds with ``rounding_method``
(default "round" for align_corners, else "floor", as TVM); linear interpolates the four
neighbours.  Coordinates are computed in the data's float type (float32 for ints).

Invariants: source indices are clamped to the image, so no read is out of bounds; the
result is one ComputeOp tagged "injective" in the input's layout ("NCHW", "NHWC" or any
layout with unsplit H and W).
"""
from __future__ import annotations

from ..tir import dtype as dt
from ..tir import op as _op
from . import tag as _tag
from .layout import layout_axis, parse_layout
from .utils import check_dtype, check_tensor, const_tuple, error, int_tuple, make

_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
          "tf_half_pixel_for_nn")
_ROUNDING = ("round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")
_METHODS = {"nearest_neighbor": "nearest", "nearest": "nearest", "linear": "linear",
            "bilinear": "linear"}


def _in_coord(x, in_size: int, out_size: int, mode: str, f: str):
    # multiply by the input size, then divide by the output size: exact for the
    # half-way points nearest rounding must see (3.5 * 2 / 7 is 1.0, 3.5 * (2 / 7) is not)
    xf = _op.cast(f, x)

    def scaled(v, num, den):
        return v * _op.const(float(num), f) / _op.const(float(den), f)
    if mode == "align_corners":
        return scaled(xf, in_size - 1, out_size - 1) if out_size > 1 else xf * _op.const(0.0, f)
    if mode == "asymmetric":
        return scaled(xf, in_size, out_size)
    if mode == "tf_half_pixel_for_nn":
        return scaled(xf + _op.const(0.5, f), in_size, out_size)
    if mode == "pytorch_half_pixel" and out_size == 1:
        return _op.const(0.0, f)
    return scaled(xf + _op.const(0.5, f), in_size, out_size) - _op.const(0.5, f)


def _round(v, method: str):
    if method == "floor":
        return _op.floor(v)
    if method == "ceil":
        return _op.ceil(v)
    if method == "round_prefer_floor":
        return _op.ceil(v - _op.const(0.5, v.dtype))
    return _op.floor(v + _op.const(0.5, v.dtype))   # round (half up), round_prefer_ceil


def _clamp(i, size: int):
    return _op.min_(_op.max_(i, _op.const(0)), _op.const(size - 1))


def _check(op, data, size, layout, method, mode, rounding):
    check_tensor(op, "data", data)
    toks = parse_layout(layout, op)
    if data.ndim != len(toks):
        raise error(op, "layout", layout, f"{data.ndim} axes like data {const_tuple(data.shape)}")
    if method not in _METHODS:
        raise error(op, "method", method, f"one of {sorted(_METHODS)}")
    if mode not in _MODES:
        raise error(op, "coordinate_transformation_mode", mode, f"one of {_MODES}")
    if rounding not in ("",) + _ROUNDING:
        raise error(op, "rounding_method", rounding, f"'' or one of {_ROUNDING}")
    return int_tuple(op, "size", size, 2, minimum=1)


def resize2d(data, roi, size, layout="NCHW", method="linear",
             coordinate_transformation_mode="half_pixel", rounding_method="",
             bicubic_alpha=-0.5, bicubic_exclude=0, extrapolation_value=0.0, out_dtype=None,
             output_shape=None):
    """Resize the H and W dimensions of ``data`` to ``size`` = (out_h, out_w)."""
    op = "image.resize2d"
    mode = coordinate_transformation_mode
    oh, ow = _check(op, data, size, layout, method, mode, rounding_method)
    kind = _METHODS[method]
    odt = check_dtype(op, "out_dtype", out_dtype) or data.dtype
    h_ax, w_ax = layout_axis(layout, "H", op), layout_axis(layout, "W", op)
    shape = const_tuple(data.shape)
    h, w = shape[h_ax], shape[w_ax]
    out = list(shape)
    out[h_ax], out[w_ax] = oh, ow
    if output_shape is not None and tuple(const_tuple(output_shape)) != tuple(out):
        raise error(op, "output_shape", output_shape, f"{tuple(out)}")
    ct = data.dtype if dt.is_float(data.dtype) else "float32"   # coordinate arithmetic
    rounding = rounding_method or ("round" if mode == "align_corners" else "floor")

    def pixel(i, y, x):
        idx = list(i)
        idx[h_ax], idx[w_ax] = _clamp(y, h), _clamp(x, w)
        return data(*idx)

    def f(*i):
        in_y = _in_coord(i[h_ax], h, oh, mode, ct)
        in_x = _in_coord(i[w_ax], w, ow, mode, ct)
        if kind == "nearest":
            val = pixel(i, _op.cast("int32", _round(in_y, rounding)),
                        _op.cast("int32", _round(in_x, rounding)))
            return _op.cast(odt, val)
        y0, x0 = _op.floor(in_y), _op.floor(in_x)
        dy, dx = in_y - y0, in_x - x0
        yi, xi = _op.cast("int32", y0), _op.cast("int32", x0)
        p = [[_op.cast(ct, pixel(i, yi + a, xi + b)) for b in (0, 1)] for a in (0, 1)]
        one = _op.const(1.0, ct)
        top = p[0][0] * (one - dx) + p[0][1] * dx
        bottom = p[1][0] * (one - dx) + p[1][1] * dx
        return _op.cast(odt, top * (one - dy) + bottom * dy)
    return make(tuple(out), f, name="resize", tag=_tag.INJECTIVE, layout=layout,
                method=kind, coordinate_transformation_mode=mode)
