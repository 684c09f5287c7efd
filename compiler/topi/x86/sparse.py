"""Default CPU schedules of ``topi.nn.sparse_dense`` and ``sparse_conv2d`` (the
fallbacks without tuning records).

The product's rows run in parallel (the output row and block-row loops fused); a BSR
block's rows are innermost and vectorized.  The row-length loop, whose extent is read
from ``indptr`` at the block row, stays inside the block-row loop that defines it.
"""
from __future__ import annotations

from .. import tag as _tag
from ..utils import const_int
from .injective import schedule_injective_from_existing
from .utils import epilogue_of

__all__ = ["schedule_sparse_dense_from_existing", "schedule_sparse_conv2d_from_existing",
           "schedule_sparse_reshape_from_existing"]


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
