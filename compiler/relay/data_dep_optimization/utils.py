"""Whole-model sparse conversion and random sparse weights (TVM's
``topi.sparse.utils.convert_model_dense_to_sparse``, ``random_sparse_dense_params`` and
``random_sparse_conv2d_params``; they rewrite relay programs, so here they live above
topi, in relay).

Invariants: the caller's ``params`` dict is never changed (a copy is converted); random
weights are drawn from numpy's global generator, as TVM's, so ``np.random.seed`` makes
them reproducible.
"""
from __future__ import annotations

import numpy as np

from ...runtime import ndarray as _nd
from ...topi.sparse.utils import random_bsr_matrix
from ..analysis.sparse_conv2d import _search_conv2d_op_weight
from ..analysis.sparse_dense import _search_dense_op_weight, as_numpy
from ..module import IRModule
from . import bsr_conv2d, bsr_dense, simplify_fc_transpose
from .common import main_function

__all__ = ["random_sparse_dense_params", "random_sparse_conv2d_params",
           "convert_model_dense_to_sparse"]


def _copy(params: dict) -> dict:
    return {k: _nd.array(as_numpy(v).copy()) for k, v in params.items()}


def random_sparse_dense_params(func, params: dict, bs_r: int, bs_c: int,
                               density: float) -> dict:
    """A copy of ``params`` where the weight of every dense layer of ``func`` whose shape
    divides into ``bs_r x bs_c`` blocks is a random block-sparse matrix of about
    ``density`` (for testing sparse kernels on a dense model)."""
    new = _copy(params)
    for name in _search_dense_op_weight(main_function(func)):
        if name not in new:
            continue
        rows, cols = new[name].shape
        if rows % bs_r == 0 and cols % bs_c == 0:
            w = random_bsr_matrix(rows, cols, bs_r, bs_c, density, "float32").todense()
            new[name] = _nd.array(w)
    return new


def random_sparse_conv2d_params(func, params: dict, bs_r: int, bs_c: int, density: float,
                                layout: str, kernel_size: int = 1) -> dict:
    """A copy of ``params`` where the weight of every 1x1 convolution of ``func`` whose
    ``out x in`` matrix divides into ``bs_r x bs_c`` blocks is random block-sparse (as
    TVM's, the matrix is laid into the kernel's shape by a reshape).  Not in TVM:
    ``kernel_size=3`` does the same for the 3x3 kernels, whose ``out x 9*in`` matrix is
    laid out as ``bsr_conv2d.convert(..., kernel_size=3)`` reads it back."""
    new = _copy(params)
    k = kernel_size
    for name in _search_conv2d_op_weight(main_function(func)):
        if name not in new:
            continue
        shape = new[name].shape
        if len(shape) != 4:
            continue
        if layout == "NHWC" and shape[:2] == (k, k):
            rows, cols = shape[3], shape[2] * k * k
        elif layout == "NCHW" and shape[2:] == (k, k):
            rows, cols = shape[0], shape[1] * k * k
        else:
            continue
        if rows % bs_r == 0 and cols % bs_c == 0:
            w = np.asarray(random_bsr_matrix(rows, cols, bs_r, bs_c, density,
                                             "float32").todense())
            if k == 3 and layout == "NHWC":     # HWIO: the matrix's columns are (kh, kw, in)
                w = w.T
            new[name] = _nd.array(w.reshape(shape))
    return new


def convert_model_dense_to_sparse(mod, params: dict, random_params: bool = False,
                                  bs_r: int = 1, bs_c: int = 1, sparsity: float = 0.85,
                                  layout: str = "NHWC"):
    """``(IRModule, params)`` of ``mod`` with its sparse dense layers and plain 1x1
    convolutions in ``layout`` (at least 80% zeros) as BSR sparse_dense/sparse_conv2d of
    ``bs_r x bs_c`` blocks; ``random_params`` first replaces those weights by random ones
    of the given ``sparsity``.  ``dense(x, transpose(W))`` is simplified first so such
    weights are seen too."""
    func, new = simplify_fc_transpose.convert(main_function(mod), _copy(params))
    if random_params:
        new = random_sparse_dense_params(func, new, bs_r, bs_c, 1 - sparsity)
        new = random_sparse_conv2d_params(func, new, bs_r, bs_c, 1 - sparsity, layout)
    func, new = bsr_dense.convert(func, new, (bs_r, bs_c), sparsity_threshold=0.8)
    func, new = bsr_conv2d.convert(func, new, (bs_r, bs_c), sparsity_threshold=0.8,
                                   layout=layout)
    return IRModule.from_expr(func), new
