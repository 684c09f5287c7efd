"""Transposed 3-D convolution, NCDHW (TVM's ``nn.conv3d_transpose_ncdhw``).

Filter layout is (in_channels, out_channels, KD, KH, KW).  The output size is
``(D - 1) * stride - pad_front - pad_back + KD + output_padding`` per dimension.

Computed as the 2-D one (``conv2d_transpose``) is: the input dilated by the strides and
padded by ``K - 1 - pad`` in one "injective,pad" stage that reads only real input
positions, the filter flipped and transposed in an "injective" stage, and a stride-1
convolution over them.  It has no x86 schedule of its own: the default schedule
(``topi.generic.schedule_default``) runs it.

Invariants: padding at most ``K - 1`` per side and output_padding smaller than the
stride (TEError otherwise); the result is one reduction ComputeOp tagged
"conv3d_transpose_ncdhw".
"""
from __future__ import annotations

from ...te import api as te
from ...tir import op as _op
from ...tir.expr import EQ
from .. import tag as _tag
from ..utils import check_dtype, check_tensor, const_tuple, error, int_tuple, make


def _cast(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def _dilate_pad(data, st, before, after):
    """Dilate D, H, W of ``data`` by ``st`` and pad them by ``before``/``after``."""
    n, c, *sizes = const_tuple(data.shape)
    dil = [(s - 1) * k + 1 for s, k in zip(sizes, st)]
    out = (n, c, *(d + b + a for d, b, a in zip(dil, before, after)))

    def f(b, ci, *pos):
        src = [p - lo for p, lo in zip(pos, before)]
        conds = [c for s, d in zip(src, dil) for c in (s >= 0, s < d)]
        conds += [_op.cmp(EQ, _op.floormod(s, k), 0) for s, k in zip(src, st) if k > 1]
        at = (b, ci) + tuple(_op.floordiv(s, k) for s, k in zip(src, st))
        return _op.if_then_else(_op.all_(*conds), data[at], _op.const(0, data.dtype))
    return make(out, f, name="data_pad", tag=_tag.INJECTIVE + ",pad")


def conv3d_transpose_ncdhw(Input, Filter, strides, padding, out_dtype=None,
                           output_padding=(0, 0, 0)):
    """Transposed convolution of NCDHW ``Input`` with (IC, OC, KD, KH, KW) ``Filter``;
    ``padding`` is (front, top, left, back, bottom, right) or 3 symmetric values."""
    op = "nn.conv3d_transpose_ncdhw"
    check_tensor(op, "Input", Input, ndim=5)
    check_tensor(op, "Filter", Filter, ndim=5)
    n, ic = const_tuple(Input.shape)[:2]
    fic, oc, *ks = const_tuple(Filter.shape)
    if fic != ic:
        raise error(op, "Filter", Filter, f"shape ({ic}, out_channels, KD, KH, KW) with the "
                    f"input's {ic} channels first")
    st = int_tuple(op, "strides", strides, 3, minimum=1)
    opad = int_tuple(op, "output_padding", output_padding, 3, minimum=0)
    if any(o >= s for o, s in zip(opad, st)):
        raise error(op, "output_padding", output_padding, f"values smaller than the strides {st}")
    six = isinstance(padding, (list, tuple)) and len(padding) == 6
    pads = int_tuple(op, "padding", padding, 6 if six else 3, minimum=0)
    pads = pads if len(pads) == 6 else pads + pads
    if any(p > k - 1 for p, k in zip(pads, ks + ks)):
        raise error(op, "padding", padding, f"at most kernel - 1 = {[k - 1 for k in ks]} "
                    "per side")
    if Input.dtype != Filter.dtype and out_dtype is None:
        raise error(op, "Filter", Filter, f"dtype {Input.dtype} like Input (or pass out_dtype)")
    odt = check_dtype(op, "out_dtype", out_dtype) or Input.dtype
    before = [k - 1 - p for k, p in zip(ks, pads[:3])]
    after = [k - 1 - p + o for k, p, o in zip(ks, pads[3:], opad)]
    data = _dilate_pad(Input, st, before, after)
    kd, kh, kw = ks
    kernel = make((oc, ic, kd, kh, kw),
                  lambda o, i, z, y, x: Filter[i, o, kd - 1 - z, kh - 1 - y, kw - 1 - x],
                  name="kernel_transform", tag=_tag.INJECTIVE)
    osz = [p - k + 1 for p, k in zip(const_tuple(data.shape)[2:], ks)]
    if min(osz) < 1:
        raise error(op, "Input", Input, "an input large enough for a non-empty output")
    rc = te.reduce_axis((0, ic), name="rc")
    rz, ry, rx = (te.reduce_axis((0, k), name=nm) for k, nm in zip(ks, ("rz", "ry", "rx")))
    return make((n, oc, *osz),
                lambda b, o, z, y, x: te.sum(
                    _cast(data[b, rc, z + rz, y + ry, x + rx], odt) *
                    _cast(kernel[o, rc, rz, ry, rx], odt), axis=[rc, rz, ry, rx]),
                name="conv3d_transpose_ncdhw", tag=_tag.CONV3D_TRANSPOSE_NCDHW,
                strides=list(st), padding=list(pads), output_padding=list(opad))
