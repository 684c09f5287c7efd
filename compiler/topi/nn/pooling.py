"""2-D pooling: pool2d (max/avg), global_pool, adaptive_pool (TVM's ``topi.nn``).

Semantics follow PyTorch/TVM: padding is (top, left, bottom, right) or shorter forms;
``ceil_mode`` rounds the output size up but never starts a window in the bottom/right
padding; avg divides by the number of taps inside the padded input when
``count_include_pad`` else by the taps inside the real input (ceil-mode overhang never
counts).  Layouts: any layout whose H and W are unsplit primal axes ("NCHW", "NHWC", ...).

Invariants: each pool is one reduction ComputeOp tagged "pool_max"/"pool_avg"/
"adaptive_pool_*"/"global_pool_*" (pattern out_elemwise_fusable); the padding is an
"injective,pad" stage filled with the reduction's identity (-inf for max, 0 for avg), and
avg multiplies each tap by 1/count inside the single reduction stage.
"""
from __future__ import annotations

from ...te import api as te
from ...tir import op as _op
from .. import tag as _tag
from ..layout import layout_axis, parse_layout
from ..utils import check_tensor, const_tuple, error, int_tuple, make
from .pad import pad
from .utils import conv_out_size, get_pad_tuple


def _hw(op, data, layout):
    check_tensor(op, "data", data)
    h_ax, w_ax = layout_axis(layout, "H", op), layout_axis(layout, "W", op)
    if data.ndim != len(parse_layout(layout, op)):
        raise error(op, "data", data, f"a tensor in layout {layout}")
    return h_ax, w_ax


def _pool_type(op, pool_type):
    if pool_type not in ("max", "avg"):
        raise error(op, "pool_type", pool_type, "'max' or 'avg'")
    return pool_type


def _ceil_out(size, k, s, d, lo, hi):
    """PyTorch's ceil-mode output size: round up, but the last window starts in bounds."""
    span = (k - 1) * d + 1
    out = -(-(size + lo + hi - span) // s) + 1
    if (out - 1) * s >= size + lo:
        out -= 1
    return out


def _count(start, k, d, lo, hi):
    """Number of taps start + r*d (0 <= r < k) with lo <= position < hi."""
    first = _op.max_(_op.floordiv(lo - start + d - 1, d), 0)
    last = _op.min_(_op.floordiv(hi - start + d - 1, d), k)
    return _op.max_(last - first, 1)


def pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False,
           layout="NCHW", count_include_pad=True):
    """Max or average pooling over H and W."""
    op = "nn.pool2d"
    h_ax, w_ax = _hw(op, data, layout)
    _pool_type(op, pool_type)
    kh, kw = int_tuple(op, "kernel", kernel, 2, minimum=1)
    sh, sw = int_tuple(op, "stride", stride, 2, minimum=1)
    dh, dw = int_tuple(op, "dilation", dilation, 2, minimum=1)
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw), op)
    shape = const_tuple(data.shape)
    h, w = shape[h_ax], shape[w_ax]
    if ceil_mode:
        conv_out_size(op, h, kh, sh, dh, pt, pb, "data height")
        conv_out_size(op, w, kw, sw, dw, pl, pr, "data width")
        oh, ow = _ceil_out(h, kh, sh, dh, pt, pb), _ceil_out(w, kw, sw, dw, pl, pr)
    else:
        oh = conv_out_size(op, h, kh, sh, dh, pt, pb, "data height")
        ow = conv_out_size(op, w, kw, sw, dw, pl, pr, "data width")
    # extra bottom/right padding so ceil-mode windows stay inside the padded buffer
    eb = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb))
    er = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (w + pl + pr))
    src = data
    if pt or pl or pb + eb or pr + er:
        before, after = [0] * len(shape), [0] * len(shape)
        before[h_ax], before[w_ax], after[h_ax], after[w_ax] = pt, pl, pb + eb, pr + er
        fill = _op.min_value(data.dtype) if pool_type == "max" else 0.0
        src = pad(data, before, after, pad_value=fill, name="pad_temp")
    ry = te.reduce_axis((0, kh), name="rv0")
    rx = te.reduce_axis((0, kw), name="rv1")
    out_shape = list(shape)
    out_shape[h_ax], out_shape[w_ax] = oh, ow
    lo_h, hi_h = (-pt, h + pb) if count_include_pad else (0, h)
    lo_w, hi_w = (-pl, w + pr) if count_include_pad else (0, w)

    def f(*i):
        idx = list(i)
        idx[h_ax] = i[h_ax] * sh + ry * dh
        idx[w_ax] = i[w_ax] * sw + rx * dw
        if pool_type == "max":
            return te.max(src(*idx), axis=[ry, rx])
        if count_include_pad and not eb and not er:
            inv = _op.const(1.0 / (kh * kw), data.dtype)   # every window is full
        else:
            ch = _count(i[h_ax] * sh - pt, kh, dh, lo_h, hi_h)
            cw = _count(i[w_ax] * sw - pl, kw, dw, lo_w, hi_w)
            inv = _op.div(_op.const(1.0, data.dtype), (ch * cw).astype(data.dtype))
        return te.sum(src(*idx) * inv, axis=[ry, rx])
    tg = _tag.POOL_MAX if pool_type == "max" else _tag.POOL_AVG
    return make(tuple(out_shape), f, name="pool_" + pool_type, tag=tg, layout=layout,
                kernel=[kh, kw], strides=[sh, sw], dilation=[dh, dw], padding=[pt, pl, pb, pr])


def global_pool(data, pool_type, layout="NCHW"):
    """Max or average over all of H and W (output extent 1 in both)."""
    op = "nn.global_pool"
    h_ax, w_ax = _hw(op, data, layout)
    _pool_type(op, pool_type)
    shape = const_tuple(data.shape)
    h, w = shape[h_ax], shape[w_ax]
    if h * w == 0:
        raise error(op, "data", data, "non-empty H and W")
    ry = te.reduce_axis((0, h), name="rv0")
    rx = te.reduce_axis((0, w), name="rv1")
    out_shape = list(shape)
    out_shape[h_ax] = out_shape[w_ax] = 1
    inv = _op.const(1.0 / (h * w), data.dtype)

    def f(*i):
        idx = list(i)
        idx[h_ax], idx[w_ax] = ry.var, rx.var
        if pool_type == "max":
            return te.max(data(*idx), axis=[ry, rx])
        return te.sum(data(*idx) * inv, axis=[ry, rx])
    tg = _tag.GLOBAL_POOL_MAX if pool_type == "max" else _tag.GLOBAL_POOL_AVG
    return make(tuple(out_shape), f, name="global_pool_" + pool_type, tag=tg, layout=layout)


def adaptive_pool(data, output_size, pool_type, layout="NCHW"):
    """Pool into ``output_size`` bins: bin i covers [floor(i*H/O), ceil((i+1)*H/O))."""
    op = "nn.adaptive_pool"
    h_ax, w_ax = _hw(op, data, layout)
    _pool_type(op, pool_type)
    shape = const_tuple(data.shape)
    h, w = shape[h_ax], shape[w_ax]
    if isinstance(output_size, (list, tuple)) and len(output_size) == 2:
        size = (h if output_size[0] is None else output_size[0],
                w if output_size[1] is None else output_size[1])
    else:
        size = output_size
    oh, ow = int_tuple(op, "output_size", size, 2, minimum=1)

    def bounds(n, o):
        starts = [(i * n) // o for i in range(o)]
        ends = [-(-((i + 1) * n) // o) for i in range(o)]
        return max(e - s for s, e in zip(starts, ends))
    kh, kw = bounds(h, oh), bounds(w, ow)
    ry = te.reduce_axis((0, kh), name="rv0")
    rx = te.reduce_axis((0, kw), name="rv1")
    out_shape = list(shape)
    out_shape[h_ax], out_shape[w_ax] = oh, ow

    def f(*i):
        y0, x0 = _op.floordiv(i[h_ax] * h, oh), _op.floordiv(i[w_ax] * w, ow)
        y1 = _op.floordiv((i[h_ax] + 1) * h + oh - 1, oh)
        x1 = _op.floordiv((i[w_ax] + 1) * w + ow - 1, ow)
        idx = list(i)
        idx[h_ax], idx[w_ax] = y0 + ry, x0 + rx
        inside = _op.all_(y0 + ry < y1, x0 + rx < x1)
        if pool_type == "max":
            return te.max(data(*idx), axis=[ry, rx], where=inside)
        inv = _op.div(_op.const(1.0, data.dtype), ((y1 - y0) * (x1 - x0)).astype(data.dtype))
        return te.sum(data(*idx) * inv, axis=[ry, rx], where=inside)
    tg = _tag.ADAPTIVE_POOL_MAX if pool_type == "max" else _tag.ADAPTIVE_POOL_AVG
    return make(tuple(out_shape), f, name="adaptive_pool_" + pool_type, tag=tg, layout=layout)
