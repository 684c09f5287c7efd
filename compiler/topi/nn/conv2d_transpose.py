"""Transposed 2-D convolution, NCHW (TVM's ``nn.conv2d_transpose_nchw``).

Filter layout is (in_channels, out_channels, KH, KW).  The output size is
``(H - 1) * stride - pad_top - pad_bottom + KH + output_padding`` per dimension.

Computed as TVM does: the input is dilated by the strides and padded by ``K - 1 - pad``
(one "injective,pad" stage that reads only real input positions), the filter is flipped
and transposed (an "injective" stage), and a stride-1 convolution runs over them.

Invariants: padding must be at most ``K - 1`` and output_padding smaller than the stride
(TEError otherwise); the result is one reduction ComputeOp tagged "conv2d_transpose_nchw".
"""
from __future__ import annotations

from ...te import api as te
from ...tir import op as _op
from ...tir.expr import EQ
from .. import tag as _tag
from ..utils import check_dtype, check_tensor, const_tuple, error, int_tuple, make
from .utils import get_pad_tuple


def _cast(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def _dilate_pad(data, st, before, after):
    """Dilate H, W of ``data`` by ``st`` and pad them by ``before``/``after``, in one stage."""
    n, c, h, w = const_tuple(data.shape)
    dh, dw = (h - 1) * st[0] + 1, (w - 1) * st[1] + 1
    out = (n, c, dh + before[0] + after[0], dw + before[1] + after[1])

    def f(b, ci, y, x):
        yy, xx = y - before[0], x - before[1]
        conds = [yy >= 0, yy < dh, xx >= 0, xx < dw]
        if st[0] > 1:
            conds.append(_op.cmp(EQ, _op.floormod(yy, st[0]), 0))
        if st[1] > 1:
            conds.append(_op.cmp(EQ, _op.floormod(xx, st[1]), 0))
        return _op.if_then_else(_op.all_(*conds),
                                data[b, ci, _op.floordiv(yy, st[0]), _op.floordiv(xx, st[1])],
                                _op.const(0, data.dtype))
    return make(out, f, name="data_pad", tag=_tag.INJECTIVE + ",pad")


def conv2d_transpose_nchw(Input, Filter, strides, padding, out_dtype=None,
                          output_padding=(0, 0)):
    """Transposed convolution of NCHW ``Input`` with (IC, OC, KH, KW) ``Filter``."""
    op = "nn.conv2d_transpose_nchw"
    check_tensor(op, "Input", Input, ndim=4)
    check_tensor(op, "Filter", Filter, ndim=4)
    n, ic, h, w = const_tuple(Input.shape)
    fic, oc, kh, kw = const_tuple(Filter.shape)
    if fic != ic:
        raise error(op, "Filter", Filter, f"shape ({ic}, out_channels, KH, KW) with the "
                    f"input's {ic} channels first")
    st = int_tuple(op, "strides", strides, 2, minimum=1)
    opad = int_tuple(op, "output_padding", output_padding, 2, minimum=0)
    if opad[0] >= st[0] or opad[1] >= st[1]:
        raise error(op, "output_padding", output_padding, f"values smaller than the strides {st}")
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw), op)
    if top > kh - 1 or bottom > kh - 1 or left > kw - 1 or right > kw - 1:
        raise error(op, "padding", padding, f"at most kernel - 1 = ({kh - 1}, {kw - 1}) per side")
    if Input.dtype != Filter.dtype and out_dtype is None:
        raise error(op, "Filter", Filter, f"dtype {Input.dtype} like Input (or pass out_dtype)")
    odt = check_dtype(op, "out_dtype", out_dtype) or Input.dtype
    before = (kh - 1 - top, kw - 1 - left)
    after = (kh - 1 - bottom + opad[0], kw - 1 - right + opad[1])
    data = _dilate_pad(Input, st, before, after)
    kernel = make((oc, ic, kh, kw), lambda o, i, y, x: Filter[i, o, kh - 1 - y, kw - 1 - x],
                  name="kernel_transform", tag=_tag.INJECTIVE)
    _, _, ph, pw = const_tuple(data.shape)
    oh, ow = ph - kh + 1, pw - kw + 1
    if oh < 1 or ow < 1:
        raise error(op, "Input", Input, "an input large enough for a non-empty output")
    rc = te.reduce_axis((0, ic), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return make((n, oc, oh, ow),
                lambda b, o, y, x: te.sum(_cast(data[b, rc, y + ry, x + rx], odt) *
                                          _cast(kernel[o, rc, ry, rx], odt), axis=[rc, ry, rx]),
                name="conv2d_transpose_nchw", tag=_tag.CONV2D_TRANSPOSE_NCHW,
                strides=list(st), padding=[top, left, bottom, right],
                output_padding=list(opad))
