"""2-D convolutions: conv2d_nchw / conv2d_nhwc (with groups), group and depthwise variants.

Layouts (TVM's): NCHW data with OIHW filters (O, I/groups, KH, KW) or, groups 1 only,
"OIHW{v}o" filters packed by blocks of v output channels (O/v, I, KH, KW, v); NHWC data
with HWIO filters (KH, KW, I/groups, O); depthwise NCHW filters are (C, multiplier, KH, KW) and give
C * multiplier output channels.

Invariants: padding is a separate "injective,pad" stage (absent when all pads are 0; for
NCHW with a column stride > 1 it also deinterleaves the columns, see ``nchw_input``,
except with a packed filter, whose schedule broadcasts input values one at a time), the
convolution is one reduction ComputeOp tagged by its kind (pattern out_elemwise_fusable)
whose attrs record strides, dilation, padding and groups for the schedules.  Shape errors
are TEErrors naming the op and the argument.
"""
from __future__ import annotations

import re

from ...te import api as te
from ...tir import op as _op
from .. import tag as _tag
from ..utils import check_dtype, check_tensor, const_tuple, error, int_tuple, make
from .pad import pad
from .utils import conv_out_size, get_pad_tuple


def _cast(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def _common(op, data, kernel, stride, padding, dilation, kshape_hw, out_dtype,
            filter_ndim=4):
    check_tensor(op, "Input", data, ndim=4)
    check_tensor(op, "Filter", kernel, ndim=filter_ndim)
    st = int_tuple(op, "stride", stride, 2, minimum=1)
    dil = int_tuple(op, "dilation", dilation, 2, minimum=1)
    pads = get_pad_tuple(padding, kshape_hw, op)
    if data.dtype != kernel.dtype and out_dtype is None:
        raise error(op, "Filter", kernel, f"dtype {data.dtype} like Input (or pass out_dtype)")
    odt = check_dtype(op, "out_dtype", out_dtype) or data.dtype
    return st, dil, pads, odt


def nchw_input(data, pads, sw: int, dw: int, name: str):
    """``read(b, c, y_in, x_out, rx)``: the padded NCHW input at row ``y_in`` and column
    ``x_out * sw + rx * dw``.

    With a column stride ``sw`` > 1 the padding stage also deinterleaves the columns,
    ``P[b, c, y, phase, q] = padded[b, c, y, q * sw + phase]``, so that consecutive
    output columns read consecutive elements (``P[.., (rx*dw) % sw, x + (rx*dw) // sw]``)
    and a vector of outputs is one contiguous load instead of a lane-by-lane gather.
    """
    n, c, h, w = const_tuple(data.shape)
    pt, pl, pb, pr = pads
    if sw == 1:
        src = pad(data, [0, 0, pt, pl], [0, 0, pb, pr], name=name) if any(pads) else data
        return lambda b, ci, y, x, rx: src[b, ci, y, x + rx * dw]
    wq = -(-(w + pl + pr) // sw)

    def f(b, ci, y, ph, q):
        xx = q * sw + ph
        inside = _op.all_(y >= pt, y < pt + h, xx >= pl, xx < pl + w)
        return _op.if_then_else(inside, data[b, ci, y - pt, xx - pl], _op.const(0, data.dtype))
    src = make((n, c, h + pt + pb, sw, wq), f, name=name, tag=_tag.INJECTIVE + ",pad",
               deinterleave=sw)
    return lambda b, ci, y, x, rx: src[b, ci, y, _op.floormod(rx * dw, sw),
                                       x + _op.floordiv(rx * dw, sw)]


def _check_groups(op, groups, in_c, out_c):
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise error(op, "groups", groups, "an int >= 1")
    if in_c % groups or out_c % groups:
        raise error(op, "groups", groups, f"a divisor of both input channels {in_c} and "
                    f"output channels {out_c}")


def conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None, groups=1):
    """NCHW convolution with OIHW filter; ``groups`` > 1 makes a grouped convolution."""
    op = "nn.conv2d_nchw" if groups == 1 else "nn.group_conv2d_nchw"
    check_tensor(op, "Filter", Filter, ndim=4)
    oc, icg, kh, kw = const_tuple(Filter.shape)
    st, dil, pads, odt = _common(op, Input, Filter, stride, padding, dilation, (kh, kw),
                                 out_dtype)
    n, ic, h, w = const_tuple(Input.shape)
    _check_groups(op, groups, ic, oc)
    if icg * groups != ic:
        raise error(op, "Filter", Filter, f"shape (O, {ic // groups}, KH, KW): input "
                    f"channels {ic} / groups {groups}")
    oh = conv_out_size(op, h, kh, st[0], dil[0], pads[0], pads[2], "Input height")
    ow = conv_out_size(op, w, kw, st[1], dil[1], pads[1], pads[3], "Input width")
    read = nchw_input(Input, pads, st[1], dil[1], "pad_temp")
    rc = te.reduce_axis((0, icg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    ocg = oc // groups

    def f(b, o, y, x):
        c = rc if groups == 1 else (o // ocg) * icg + rc
        return te.sum(_cast(read(b, c, y * st[0] + ry * dil[0], x, rx), odt)
                      * _cast(Filter[o, rc, ry, rx], odt), axis=[rc, ry, rx])
    tg = _tag.CONV2D_NCHW if groups == 1 else _tag.GROUP_CONV2D_NCHW
    return make((n, oc, oh, ow), f, name="conv2d_nchw", tag=tg, strides=list(st),
                dilation=list(dil), padding=list(pads), groups=groups, layout="NCHW",
                layout_free_placeholders=[Filter])


def conv2d_nchw_packed(Input, Filter, stride, padding, dilation, out_dtype=None):
    """NCHW convolution with the filter packed by blocks of ``v`` output channels,
    (O // v, I, KH, KW, v): TVM's "OIHW{v}o" kernel layout, made from a constant OIHW
    weight by relay's ``AlterOpLayout``.  A vector of ``v`` output channels is then one
    contiguous filter load, so the x86 schedule vectorizes channels instead of a narrow
    output width.  Data and output stay NCHW; attrs["kernel_vector"] is ``v``."""
    op = "nn.conv2d_nchw_packed"
    check_tensor(op, "Filter", Filter, ndim=5)
    ocb, ic_f, kh, kw, v = const_tuple(Filter.shape)
    st, dil, pads, odt = _common(op, Input, Filter, stride, padding, dilation, (kh, kw),
                                 out_dtype, filter_ndim=5)
    n, ic, h, w = const_tuple(Input.shape)
    if ic_f != ic:
        raise error(op, "Filter", Filter, f"shape (O/v, {ic}, KH, KW, v): the input's {ic} "
                    "channels")
    oh = conv_out_size(op, h, kh, st[0], dil[0], pads[0], pads[2], "Input height")
    ow = conv_out_size(op, w, kw, st[1], dil[1], pads[1], pads[3], "Input width")
    # input values are broadcast one at a time, so strided columns need no deinterleaving
    pt, pl, pb, pr = pads
    src = pad(Input, [0, 0, pt, pl], [0, 0, pb, pr], name="pad_temp") if any(pads) else Input
    rc = te.reduce_axis((0, ic), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def f(b, o, y, x):
        return te.sum(_cast(src[b, rc, y * st[0] + ry * dil[0], x * st[1] + rx * dil[1]], odt)
                      * _cast(Filter[o // v, rc, ry, rx, o % v], odt), axis=[rc, ry, rx])
    return make((n, ocb * v, oh, ow), f, name="conv2d_nchw", tag=_tag.CONV2D_NCHW,
                strides=list(st), dilation=list(dil), padding=list(pads), groups=1,
                layout="NCHW", kernel_vector=v, layout_free_placeholders=[Filter])


def group_conv2d_nchw(Input, Filter, stride, padding, dilation, groups, out_dtype=None):
    """Grouped NCHW convolution (TVM's signature)."""
    return conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype, groups)


def conv2d_nhwc(Input, Filter, stride, padding, dilation, out_dtype=None, groups=1):
    """NHWC convolution with HWIO filter (KH, KW, I/groups, O)."""
    op = "nn.conv2d_nhwc" if groups == 1 else "nn.group_conv2d_nhwc"
    check_tensor(op, "Filter", Filter, ndim=4)
    kh, kw, icg, oc = const_tuple(Filter.shape)
    st, dil, pads, odt = _common(op, Input, Filter, stride, padding, dilation, (kh, kw),
                                 out_dtype)
    n, h, w, ic = const_tuple(Input.shape)
    _check_groups(op, groups, ic, oc)
    if icg * groups != ic:
        raise error(op, "Filter", Filter, f"shape (KH, KW, {ic // groups}, O): input "
                    f"channels {ic} / groups {groups}")
    oh = conv_out_size(op, h, kh, st[0], dil[0], pads[0], pads[2], "Input height")
    ow = conv_out_size(op, w, kw, st[1], dil[1], pads[1], pads[3], "Input width")
    data = Input
    if any(pads):
        data = pad(Input, [0, pads[0], pads[1], 0], [0, pads[2], pads[3], 0], name="pad_temp")
    rc = te.reduce_axis((0, icg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    ocg = oc // groups

    def f(b, y, x, o):
        c = rc if groups == 1 else (o // ocg) * icg + rc
        return te.sum(_cast(data[b, y * st[0] + ry * dil[0], x * st[1] + rx * dil[1], c], odt)
                      * _cast(Filter[ry, rx, rc, o], odt), axis=[ry, rx, rc])
    tg = _tag.CONV2D_NHWC if groups == 1 else _tag.GROUP_CONV2D_NHWC
    return make((n, oh, ow, oc), f, name="conv2d_nhwc", tag=tg, strides=list(st),
                dilation=list(dil), padding=list(pads), groups=groups, layout="NHWC",
                layout_free_placeholders=[Filter])


def depthwise_conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):
    """Depthwise NCHW convolution; Filter (C, multiplier, KH, KW) -> C*multiplier channels."""
    op = "nn.depthwise_conv2d_nchw"
    check_tensor(op, "Filter", Filter, ndim=4)
    fc, mult, kh, kw = const_tuple(Filter.shape)
    st, dil, pads, odt = _common(op, Input, Filter, stride, padding, dilation, (kh, kw),
                                 out_dtype)
    n, c, h, w = const_tuple(Input.shape)
    if fc != c:
        raise error(op, "Filter", Filter, f"shape ({c}, multiplier, KH, KW) with the input's "
                    f"{c} channels")
    oh = conv_out_size(op, h, kh, st[0], dil[0], pads[0], pads[2], "Input height")
    ow = conv_out_size(op, w, kw, st[1], dil[1], pads[1], pads[3], "Input width")
    read = nchw_input(Input, pads, st[1], dil[1], "PaddedInput")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def f(b, o, y, x):
        ci, q = (o, 0) if mult == 1 else (o // mult, o % mult)
        return te.sum(_cast(read(b, ci, y * st[0] + ry * dil[0], x, rx), odt)
                      * _cast(Filter[ci, q, ry, rx], odt), axis=[ry, rx])
    return make((n, c * mult, oh, ow), f, name="DepthwiseConv2d",
                tag=_tag.DEPTHWISE_CONV2D_NCHW, strides=list(st), dilation=list(dil),
                padding=list(pads), groups=c, layout="NCHW")


def conv2d(input, filter, strides, padding, dilation, data_layout="NCHW",  # noqa: A002
           kernel_layout="", out_dtype=None, groups=1):
    """Dispatch on ``data_layout``: "NCHW" (OIHW filter, or "OIHW{v}o" packed when
    groups is 1) or "NHWC" (HWIO filter)."""
    if data_layout == "NCHW" and kernel_layout in ("", "OIHW"):
        return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype, groups)
    if data_layout == "NCHW" and packed_lanes(kernel_layout) and groups == 1:
        return conv2d_nchw_packed(input, filter, strides, padding, dilation, out_dtype)
    if data_layout == "NHWC" and kernel_layout in ("", "HWIO"):
        return conv2d_nhwc(input, filter, strides, padding, dilation, out_dtype, groups)
    raise error("nn.conv2d", "data_layout/kernel_layout", (data_layout, kernel_layout),
                "('NCHW', 'OIHW'), ('NCHW', 'OIHW<v>o') with groups 1, or ('NHWC', 'HWIO')")


def packed_lanes(kernel_layout: str) -> int:
    """``v`` of a packed "OIHW{v}o" kernel layout, else 0."""
    m = re.fullmatch(r"OIHW([1-9][0-9]*)o", kernel_layout or "")
    return int(m.group(1)) if m else 0
