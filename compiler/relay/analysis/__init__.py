"""Read-only analyses of relay expressions (TVM's ``relay.analysis``).

``basic`` holds the variable and operator queries; ``sparse_dense`` and
``sparse_conv2d`` find the weights a dense model's dense and 1x1 convolution layers
read and turn the sparse ones into BSR parameters (``relay.data_dep_optimization``
drives them).
"""
from . import sparse_conv2d, sparse_dense
from .basic import all_vars, bound_vars, count_calls, free_vars, list_ops, post_order_visit

__all__ = ["free_vars", "bound_vars", "all_vars", "post_order_visit", "count_calls",
           "list_ops", "sparse_dense", "sparse_conv2d"]
