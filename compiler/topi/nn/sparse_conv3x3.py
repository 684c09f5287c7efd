"""3x3 convolutions over a BSR weight (TVM's ``conv3x3_spNHWC`` / ``conv3x3_spNCHW``,
which ``topi.nn.sparse_conv2d(..., kernel_size=3)`` computes).

Role: the convolution is an im2col product.  ``Im2Col`` gathers every pixel's 3x3
window (stride 1, one pixel of zero padding on each side, so the output has the input's
height and width) into a row of ``9 * CI`` values; the sparse weight is the ``CO x 9*CI``
matrix of the dense kernel (HWIO for NHWC: column ``(kh * 3 + kw) * CI + ci``; OIHW for
NCHW: column ``ci * 9 + kh * 3 + kw``), in BSR form; a block row's stored blocks are
walked over the row's entries, whose number is read from ``indptr`` (a data-dependent
reduction, as ``sparse_dense``).

Stages, as TVM's: NHWC is ``Im2Col (N*H*W, 9*CI)``, the block product ``CC (N*H*W,
CO/bs_r, bs_r, bs_c)``, the sum over a block's columns ``C (N*H*W, CO)`` tagged
``conv3x3_spNHWC`` and its reshape to ``(N, H, W, CO)``; NCHW is ``Im2Col (N, 9*CI,
H*W)``, ``CC (N, CO/bs_r, bs_r, 1, H*W)`` tagged ``conv3x3_spNCHW`` and its reshape to
``(N, CO, H, W)`` (one-column blocks only, as TVM's).  Not in TVM: the NHWC block stage
is tagged ``conv3x3_spNHWC_block`` and both block stages carry ``attrs["layout"]``, so
the schedules and the task-input names find them.  ``attrs["FLOP"]`` counts the stored
blocks' products, as TVM's ``add_flop``.

Invariants: the weight data is 3-D ``(blocks, bs_r, bs_c)`` and ``9 * CI`` a multiple of
``bs_c``; the caller keeps ``indices``/``indptr`` inside their arrays (no bounds check
at run time, as TVM).
"""
from __future__ import annotations

from ...te import api as te
from ...tir import op as _op
from .. import tag as _tag
from ..transform import reshape
from ..utils import const_tuple, error, make

__all__ = ["spconv2d_3x3_nhwc", "spconv2d_3x3_nchw"]


def _shapes(op, x, data, indptr, layout: str):
    """(n, ci, h, w, blocks, bs_r, bs_c, co) after the checks both layouts share."""
    if len(data.shape) != 3:
        raise error(op, "sparse_data", data, "3-D BSR data (blocks, bs_r, bs_c) for a 3x3 "
                    "kernel")
    s = const_tuple(x.shape)
    n, h, w, ci = s if layout == "NHWC" else (s[0], s[2], s[3], s[1])
    blocks, bs_r, bs_c = const_tuple(data.shape)
    if (9 * ci) % bs_c:
        raise error(op, "sparse_data", data, f"blocks whose width divides 9 * {ci} (the "
                    "kernel's columns)")
    co = (const_tuple(indptr.shape)[0] - 1) * bs_r
    return n, ci, h, w, blocks, bs_r, bs_c, co


def _window(x, b, c, y, z, kh, kw, h: int, w: int, nhwc: bool):
    """Input value under tap (kh, kw) of the window at output pixel (y, z), or zero."""
    iy, iz = y + kh - 1, z + kw - 1
    inside = _op.all_(iy >= 0, iy < h, iz >= 0, iz < w)
    val = x[b, iy, iz, c] if nhwc else x[b, c, iy, iz]
    return _op.if_then_else(inside, val, _op.const(0, x.dtype))


def spconv2d_3x3_nhwc(dense_data, sparse_data, sparse_indices, sparse_indptr,
                      layout: str = "NHWC"):
    """TVM's ``topi.x86.spconv2d_3x3_nhwc``: ``[N, H, W, CI]`` data, output ``[N, H, W,
    CO]``."""
    op = "spconv2d_3x3_nhwc"
    x, data, indices, indptr = dense_data, sparse_data, sparse_indices, sparse_indptr
    n, ci, h, w, blocks, bs_r, bs_c, co = _shapes(op, x, data, indptr, "NHWC")
    rows = n * h * w

    def im2col(row, col):
        b, y, z = row // (h * w), row // w % h, row % w
        return _window(x, b, col % ci, y, z, col // (3 * ci), col // ci % 3, h, w, True)
    cols = make((rows, 9 * ci), im2col, name="Im2Col", tag=_tag.SPARSE_CONV3X3_IM2COL)

    def block(row, nb_j, j, c):
        start = indptr[nb_j]
        e = te.reduce_axis((0, indptr[nb_j + 1] - start), name="elem_idx")
        off = start + e
        return te.sum(cols[row, indices[off] * bs_c + c] * data[off, j, c], axis=e)
    flop = rows * (blocks * bs_r * bs_c * 2 - co)
    cc = make((rows, co // bs_r, bs_r, bs_c), block, name="CC",
              tag=_tag.SPARSE_CONV3X3_NHWC_BLOCK, layout="NHWC")
    k = te.reduce_axis((0, bs_c), name="k")
    out = make((rows, co), lambda y, r: te.sum(cc[y, r // bs_r, r % bs_r, k], axis=k),
               name="C", tag=_tag.SPARSE_CONV3X3_NHWC, FLOP=flop)
    return reshape(out, (n, h, w, co))


def spconv2d_3x3_nchw(dense_data, sparse_data, sparse_indices, sparse_indptr,
                      layout: str = "NCHW"):
    """TVM's ``topi.x86.spconv2d_3x3_nchw``: ``[N, CI, H, W]`` data, one-column blocks,
    output ``[N, CO, H, W]``."""
    op = "spconv2d_3x3_nchw"
    x, data, indices, indptr = dense_data, sparse_data, sparse_indices, sparse_indptr
    n, ci, h, w, blocks, bs_r, bs_c, co = _shapes(op, x, data, indptr, "NCHW")
    if bs_c != 1:
        raise error(op, "sparse_data", data, "one-column blocks (blocks, bs_r, 1) for NCHW, "
                    "as TVM's")

    def im2col(b, ckk, hw):
        return _window(x, b, ckk // 9, hw // w, hw % w, ckk // 3 % 3, ckk % 3, h, w, False)
    cols = make((n, 9 * ci, h * w), im2col, name="im2col", tag=_tag.SPARSE_CONV3X3_IM2COL)

    def block(b, fo, fi, c, hw):
        start = indptr[fo]
        e = te.reduce_axis((0, indptr[fo + 1] - start), name="elem_idx")
        off = start + e
        return te.sum(cols[b, indices[off] * bs_c + c, hw] * data[off, fi, c], axis=e)
    flop = n * h * w * (blocks * bs_r * bs_c * 2 - co)
    cc = make((n, co // bs_r, bs_r, bs_c, h * w), block, name="CC",
              tag=_tag.SPARSE_CONV3X3_NCHW, FLOP=flop, layout="NCHW")
    return reshape(cc, (n, co, h, w))
