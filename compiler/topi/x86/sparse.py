"""Default CPU schedules of ``topi.nn.sparse_dense`` and ``sparse_conv2d`` (the
fallbacks without tuning records).

The product's rows run in parallel (the output row and block-row loops fused); a BSR
block's rows are innermost and vectorized.  The row-length loop, whose extent is read
from ``indptr`` at the block row, stays inside the block-row loop that defines it.
"""
from __future__ import annotations

from .. import tag as _tag
from ..utils import const_int

__all__ = ["schedule_sparse_dense_from_existing", "schedule_sparse_conv2d_from_existing"]


def schedule_sparse_dense_from_existing(s, op, outs) -> None:
    """Schedule the CSR product or the BSR block stage ``op`` of schedule ``s``."""
    st = s[op]
    if op.tag == _tag.SPARSE_DENSE_BSR_BLOCK:
        i, nb_j, j = st.op.axis
        e, c = st.op.reduce_axis
        st.reorder(i, nb_j, e, c, j)
        if const_int(j.dom.extent) > 1:
            st.vectorize(j)
        st.parallel(st.fuse(i, nb_j))
        return
    st.parallel(st.fuse(*st.op.axis))


def schedule_sparse_conv2d_from_existing(s, op, outs) -> None:
    """Schedule the block stage ``op`` of a sparse 1x1 convolution in ``s``."""
    st = s[op]
    red = list(st.op.reduce_axis)
    if op.attrs.get("layout", "NHWC") == "NHWC":
        i, y, z, nb_j, j = st.op.axis
        st.reorder(i, y, z, nb_j, *red, j)
        if const_int(j.dom.extent) > 1:
            st.vectorize(j)
        st.parallel(st.fuse(i, y, z, nb_j))
        return
    i, nb_j, j, y, z = st.op.axis
    st.reorder(i, nb_j, j, y, *red, z)
    if const_int(z.dom.extent) > 1:
        st.vectorize(z)
    st.parallel(st.fuse(i, nb_j))
