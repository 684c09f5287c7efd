"""Default CPU schedules of ``topi.nn.sparse_dense`` and ``sparse_conv2d`` (the
fallbacks without tuning records), and TVM's names for the 3x3 sparse convolutions.

The product's rows run in parallel (the output row and block-row loops fused); a BSR
block's rows are innermost and vectorized.  The row-length loop, whose extent is read
from ``indptr`` at the block row, stays inside the block-row loop that defines it.  A 3x3
convolution's im2col rows are gathered per tile of pixels, inside the parallel loop,
and every block row of the weight reads them there.
"""
from __future__ import annotations

from .. import tag as _tag
from ..nn.sparse_conv3x3 import spconv2d_3x3_nchw, spconv2d_3x3_nhwc
from ..utils import const_int
from .fused import schedule_anchored
from .injective import schedule_injective_from_existing
from .utils import epilogue_of

__all__ = ["schedule_sparse_dense_from_existing", "schedule_sparse_conv2d_from_existing",
           "schedule_sparse_reshape_from_existing", "schedule_spconv3x3_from_existing",
           "schedule_spconv3x3_block",
           "spconv2d_3x3_nhwc", "spconv2d_3x3_nchw", "schedule_spconv2d_3x3_nhwc",
           "schedule_spconv2d_3x3_nchw"]


def schedule_sparse_dense_from_existing(s, op, outs) -> None:
    """Schedule the CSR product or the BSR block stage ``op`` of schedule ``s``."""
    st = s[op]
    if op.tag == _tag.SPARSE_DENSE_BSR_BLOCK:
        # a block row's blocks walked once per tile of rows of X, whose products stay
        # in registers: the tile's rows unrolled, a block's rows vectorized
        i, nb_j, j = st.op.axis
        e, c = st.op.reduce_axis
        io, ii = st.split(i, factor=_tile(const_int(i.dom.extent)))
        st.reorder(nb_j, io, e, c, ii, j)
        if const_int(j.dom.extent) > 1:
            st.vectorize(j)
        st.unroll(ii)
        st.parallel(st.fuse(nb_j, io))
        return
    st.parallel(st.fuse(*st.op.axis))


def schedule_sparse_reshape_from_existing(s, op, outs) -> None:
    """The stage that reads a BSR block stage as the product's shape: inlined into its
    consumer (its reads of consecutive columns are consecutive addresses), or, when it
    is an output, parallel over its outer axes and vectorized along the last."""
    if not any(t.op is op for t in outs):
        epi = epilogue_of(s, op, outs)     # schedule_anchored leaves it to this function
        s[op].compute_inline()
        if epi is not None:
            schedule_injective_from_existing(s, epi.output(0))
        return
    st = s[op]
    *outer, last = st.op.axis
    if outer:
        st.parallel(st.fuse(*outer))
    st.vectorize(last)


def _tile(w: int, most: int = 8) -> int:
    """The largest divisor of ``w`` up to ``most``: a pixel tile without a tail."""
    return max(d for d in range(1, min(w, most) + 1) if w % d == 0)


def schedule_sparse_conv2d_from_existing(s, op, outs) -> None:
    """Schedule the block stage ``op`` of a sparse 1x1 convolution in ``s``: a block row's
    stored blocks are walked once per tile of pixels, whose products stay in registers
    (NHWC: a block's rows vectorized, the tile's pixels unrolled; NCHW: the pixels
    vectorized, a block's rows unrolled)."""
    st = s[op]
    red = list(st.op.reduce_axis)
    if op.attrs.get("layout", "NHWC") == "NHWC":
        i, y, z, nb_j, j = st.op.axis
        zo, zi = st.split(z, factor=_tile(const_int(z.dom.extent)))
        st.reorder(i, y, nb_j, zo, *red, zi, j)
        if const_int(j.dom.extent) > 1:
            st.vectorize(j)
        st.unroll(zi)
        st.parallel(st.fuse(i, y))
        return
    i, nb_j, j, y, z = st.op.axis
    lanes = _tile(const_int(z.dom.extent), 16)
    zo, zi = st.split(z, factor=lanes)
    st.reorder(i, nb_j, y, zo, *red, j, zi)
    st.unroll(j)
    if lanes > 1:
        st.vectorize(zi)
    st.parallel(st.fuse(i, nb_j))


def _producer(op, tag: str):
    return next(t.op for t in op.input_tensors if t.op.tag == tag)


def schedule_spconv3x3_from_existing(s, op, outs) -> None:
    """Schedule a 3x3 sparse convolution in ``s`` from its tagged stage ``op`` (NHWC: the
    block-column sum ``C``; NCHW: the block product ``CC``): a tile of pixels at a time,
    in parallel, gathers its im2col rows once and walks every block row's stored
    blocks over them, the tile's products in registers."""
    if op.tag == _tag.SPARSE_CONV3X3_NCHW:
        _spconv3x3_nchw(s, op)
        return
    cc = _producer(op, _tag.SPARSE_CONV3X3_NHWC_BLOCK)
    cols = _producer(cc, _tag.SPARSE_CONV3X3_IM2COL)
    st = s[op]
    y, x = st.op.axis
    (k,) = st.op.reduce_axis
    bs_r = const_int(cc.axis[2].dom.extent)
    yo, yi = st.split(y, factor=_tile(const_int(y.dom.extent)))
    xo, xi = st.split(x, factor=bs_r)
    st.reorder(yo, xo, yi, xi, k)
    st.unroll(k)
    st.unroll(yi)
    if bs_r > 1:
        st.vectorize(xi)
    st.parallel(yo)
    s[cc].compute_at(st, xo)
    cy, cx, r, c = s[cc].op.axis
    s[cc].reorder(cx, *s[cc].op.reduce_axis, cy, c, r)
    s[cc].unroll(cy)
    s[cc].unroll(c)
    if bs_r > 1:
        s[cc].vectorize(r)
    s[cols].compute_at(st, yo)
    # a window tap's channels are contiguous in both the input and the im2col row
    ci = const_int(cols.input_tensors[0].shape[3])
    _, ck = s[cols].op.axis
    taps_ci = s[cols].split(ck, factor=ci)[1]
    s[cols].vectorize(s[cols].split(taps_ci, factor=_tile(ci, 16))[1])


def _spconv3x3_nchw(s, cc) -> None:
    cols = _producer(cc, _tag.SPARSE_CONV3X3_IM2COL)
    st = s[cc]
    n, fo, fi, c, hw = st.op.axis
    lanes = _tile(const_int(hw.dom.extent), 16)
    hwo, hwi = st.split(hw, factor=lanes)
    st.reorder(n, hwo, fo, *st.op.reduce_axis, fi, c, hwi)
    st.unroll(fi)
    st.unroll(c)
    if lanes > 1:
        st.vectorize(hwi)
    outer = st.fuse(n, hwo)
    st.parallel(outer)
    s[cols].compute_at(st, outer)
    _, _, chw = s[cols].op.axis
    if lanes > 1:
        s[cols].vectorize(chw)


def schedule_spconv3x3_block(s, op, outs) -> None:
    """The NHWC block stage: placed by its consumer's schedule (above)."""


_SPCONV3X3 = {_tag.SPARSE_CONV3X3_NHWC: schedule_spconv3x3_from_existing,
              _tag.SPARSE_CONV3X3_NHWC_BLOCK: schedule_spconv3x3_block,
              _tag.SPARSE_CONV3X3_NCHW: schedule_spconv3x3_from_existing}


def schedule_spconv2d_3x3_nhwc(outs):
    """TVM's ``topi.x86.schedule_spconv2d_3x3_nhwc`` (this module's own schedule)."""
    return schedule_anchored(outs, _SPCONV3X3)


def schedule_spconv2d_3x3_nchw(outs):
    """TVM's ``topi.x86.schedule_spconv2d_3x3_nchw`` (this module's own schedule)."""
    return schedule_anchored(outs, _SPCONV3X3)
