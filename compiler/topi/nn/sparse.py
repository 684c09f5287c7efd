"""Sparse x dense products (TVM's ``topi.nn.sparse_dense``): ``Y = X @ W.T`` with ``W``
in CSR or BSR form (data, indices, indptr), or ``Y = W @ X.T`` with ``sparse_lhs``; and
1x1 convolutions over a BSR weight (TVM's ``topi.nn.sparse_conv2d``, NHWC or NCHW),
the same product at every pixel.

The reduction runs over a row's stored entries: its extent, ``indptr[r + 1] -
indptr[r]``, is read from the ``indptr`` tensor, so the loop bound is data-dependent
(lowering turns it into a buffer load).  As TVM's, BSR is two stages: a block product
``(m, num_blocks, bs_r)`` tagged ``sparse_dense_sp_rhs_bsrmm_block`` and its reshape to
``(m, num_blocks * bs_r)`` tagged ``sparse_dense_sp_rhs_bsrmm``; CSR is one stage
tagged ``sparse_dense_sp_rhs_csrmm``.  ``sparse_conv2d`` is two stages as BSR
``sparse_dense`` (tags ``sparse_conv2d_sp_bsrmm_block`` / ``sparse_conv2d_sp_bsrmm``,
both with ``attrs["layout"]``); its weight data is ``(blocks, bs_r, bs_c)`` or,
for one-column blocks, ``(blocks, bs_r)`` (then the block stage has no column axis, as
TVM's).  All carry ``attrs["FLOP"]`` of the dense
product (as TVM's), which the stored entries do not fix.

Invariants: ``indices``/``indptr`` are int32 or int64 1-D tensors; the entries a row
reads are ``indptr[r] .. indptr[r+1]-1`` (as scipy's layout); the caller keeps them
inside the arrays (no bounds check at run time, as TVM).
"""
from __future__ import annotations

from ...te import api as te
from .. import tag as _tag
from ..utils import check_tensor, const_tuple, error, make
from .sparse_conv3x3 import spconv2d_3x3_nchw, spconv2d_3x3_nhwc


def _check_index(op, arg, t):
    check_tensor(op, arg, t, ndim=1)
    if t.dtype not in ("int32", "int64"):
        raise error(op, arg, t, "an int32 or int64 tensor")


def sparse_dense(dense_data, sparse_data, sparse_indices, sparse_indptr,
                 sparse_lhs: bool = False):
    """``dense_data @ W.T`` for ``W`` = (sparse_data, sparse_indices, sparse_indptr) in
    CSR (1-D data) or BSR (3-D data); ``sparse_lhs``: ``W @ dense_data.T``."""
    op = "sparse_dense"
    check_tensor(op, "dense_data", dense_data, ndim=2)
    _check_index(op, "sparse_indices", sparse_indices)
    _check_index(op, "sparse_indptr", sparse_indptr)
    nd = len(sparse_data.shape)
    if nd not in (1, 3):
        raise error(op, "sparse_data", sparse_data, "1-D (CSR) or 3-D (BSR) data")
    if sparse_lhs:
        if nd == 1:
            out = _csrmm(dense_data, sparse_data, sparse_indices, sparse_indptr, op, True)
        else:
            out = _bsrmm(dense_data, sparse_data, sparse_indices, sparse_indptr, op, True)
        return out
    if nd == 1:
        return _csrmm(dense_data, sparse_data, sparse_indices, sparse_indptr, op, False)
    return _bsrmm(dense_data, sparse_data, sparse_indices, sparse_indptr, op, False)


def _csrmm(x, data, indices, indptr, op, lhs):
    m, k = const_tuple(x.shape)
    n = const_tuple(indptr.shape)[0] - 1
    flop = 2 * m * n * k

    def row_dot(i, r):
        start = indptr[r]
        e = te.reduce_axis((0, indptr[r + 1] - start), name="elem_idx")
        return te.sum(data[start + e] * x[i, indices[start + e]], axis=e)
    if lhs:
        return make((n, m), lambda r, i: row_dot(i, r), name="sparse_dense",
                    tag=_tag.SPARSE_DENSE_CSR, FLOP=flop)
    return make((m, n), row_dot, name="sparse_dense", tag=_tag.SPARSE_DENSE_CSR, FLOP=flop)


def _bsrmm(x, data, indices, indptr, op, lhs):
    m, k = const_tuple(x.shape)
    _, bs_r, bs_c = const_tuple(data.shape)
    num_blocks = const_tuple(indptr.shape)[0] - 1
    flop = 2 * m * num_blocks * bs_r * k

    def block(i, nb_j, j):
        start = indptr[nb_j]
        e = te.reduce_axis((0, indptr[nb_j + 1] - start), name="elem_idx")
        c = te.reduce_axis((0, bs_c), name="c")
        off = start + e
        return te.sum(data[off, j, c] * x[i, bs_c * indices[off] + c], axis=[e, c])
    blk = make((m, num_blocks, bs_r), block, name="sparse_dense_block",
               tag=_tag.SPARSE_DENSE_BSR_BLOCK, FLOP=flop)
    if lhs:
        return make((num_blocks * bs_r, m),
                    lambda r, i: blk[i, r // bs_r, r % bs_r], name="sparse_dense",
                    tag=_tag.SPARSE_DENSE_BSR)
    return make((m, num_blocks * bs_r), lambda i, r: blk[i, r // bs_r, r % bs_r],
                name="sparse_dense", tag=_tag.SPARSE_DENSE_BSR)


def sparse_conv2d(dense_data, sparse_data, sparse_indices, sparse_indptr,
                  layout: str = "NHWC", kernel_size: int = 1):
    """A 1x1 convolution (stride 1, no padding) of ``dense_data`` (NHWC ``[M, H, W, K]`` or
    NCHW ``[M, K, H, W]``) with the ``N x K`` weight in BSR form; the output is
    ``[M, H, W, N]`` or ``[M, N, H, W]``.  ``kernel_size=3``: a 3x3 convolution (stride 1,
    padding 1) with the ``N x 9K`` weight matrix, computed as ``sparse_conv3x3`` says
    (TVM raises here and computes it only through ``topi.x86.spconv2d_3x3_*``)."""
    op = "sparse_conv2d"
    check_tensor(op, "dense_data", dense_data, ndim=4)
    _check_index(op, "sparse_indices", sparse_indices)
    _check_index(op, "sparse_indptr", sparse_indptr)
    if len(sparse_data.shape) not in (2, 3):
        raise error(op, "sparse_data", sparse_data, "2-D or 3-D BSR data")
    if kernel_size not in (1, 3):
        raise error(op, "kernel_size", kernel_size, "1 or 3 (a 1x1 or 3x3 convolution)")
    if layout not in ("NHWC", "NCHW"):
        raise error(op, "layout", layout, "'NHWC' or 'NCHW'")
    if kernel_size == 3:
        conv = spconv2d_3x3_nhwc if layout == "NHWC" else spconv2d_3x3_nchw
        return conv(dense_data, sparse_data, sparse_indices, sparse_indptr)
    return _bsr_conv(dense_data, sparse_data, sparse_indices, sparse_indptr, layout)


def _bsr_conv(x, data, indices, indptr, layout: str):
    nhwc = layout == "NHWC"
    m, h, w, k = const_tuple(x.shape) if nhwc else (lambda s: (s[0], s[2], s[3], s[1]))(
        const_tuple(x.shape))
    shape = const_tuple(data.shape)
    bs_r = shape[1]
    num_blocks = const_tuple(indptr.shape)[0] - 1

    def pixel(i, y, z, ch):
        return x[i, y, z, ch] if nhwc else x[i, ch, y, z]

    def block(i, y, z, nb_j, j):
        start = indptr[nb_j]
        e = te.reduce_axis((0, indptr[nb_j + 1] - start), name="elem_idx")
        off = start + e
        if len(shape) == 3:
            c = te.reduce_axis((0, shape[2]), name="c")
            return te.sum(data[off, j, c] * pixel(i, y, z, shape[2] * indices[off] + c),
                          axis=[e, c])
        return te.sum(data[off, j] * pixel(i, y, z, indices[off]), axis=e)
    flop = 2 * m * num_blocks * bs_r * k * h * w
    if nhwc:
        blk = make((m, h, w, num_blocks, bs_r), block, name="sparse_conv2d_block",
                   tag=_tag.SPARSE_CONV2D_BSR_BLOCK, FLOP=flop, layout="NHWC")
        return make((m, h, w, num_blocks * bs_r),
                    lambda i, y, z, n: blk[i, y, z, n // bs_r, n % bs_r],
                    name="sparse_conv2d", tag=_tag.SPARSE_CONV2D_BSR, layout="NHWC")
    blk = make((m, num_blocks, bs_r, h, w), lambda i, nb_j, j, y, z: block(i, y, z, nb_j, j),
               name="sparse_conv2d_block", tag=_tag.SPARSE_CONV2D_BSR_BLOCK, FLOP=flop,
               layout="NCHW")
    return make((m, num_blocks * bs_r, h, w),
                lambda i, n, y, z: blk[i, n // bs_r, n % bs_r, y, z],
                name="sparse_conv2d", tag=_tag.SPARSE_CONV2D_BSR, layout="NCHW")
