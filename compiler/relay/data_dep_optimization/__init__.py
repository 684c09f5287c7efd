"""Optimizations that depend on the weights' values (TVM's
``relay.data_dep_optimization``): dense layers and 1x1 convolutions whose weights are
mostly zeros become block-sparse ones.

``bsr_dense.convert(func, params, blocksize, sparsity_threshold)``,
``bsr_conv2d.convert(func, params, blocksize, sparsity_threshold, layout)`` and
``simplify_fc_transpose.convert(func, params)`` as in TVM; ``utils`` holds
``convert_model_dense_to_sparse`` and the random sparse parameters of TVM's
``topi.sparse.utils`` (here above topi, since they rewrite relay programs).
"""
from . import bsr_conv2d, bsr_dense, simplify_fc_transpose, utils
from .utils import (
                    convert_model_dense_to_sparse,
                    random_sparse_conv2d_params,
                    random_sparse_dense_params,
)

__all__ = ["bsr_conv2d", "bsr_dense", "simplify_fc_transpose", "utils",
           "convert_model_dense_to_sparse", "random_sparse_dense_params",
           "random_sparse_conv2d_params"]
