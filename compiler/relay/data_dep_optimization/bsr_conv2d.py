"""1x1 or 3x3 convolutions with sparse weights to BSR sparse_conv2d (TVM's
``data_dep_optimization.bsr_conv2d``)."""
from __future__ import annotations

from ..analysis.sparse_conv2d import process_params
from ..transform import Conv2dToSparse
from .common import main_function, run_opt_pass

__all__ = ["convert"]


def convert(func, params: dict, blocksize, sparsity_threshold: float = 0.85,
            layout: str = "NHWC", kernel_size: int = 1):
    """``(new function, params)``: every plain ``kernel_size`` x ``kernel_size``
    convolution (1 or 3; stride 1, one group, no padding for 1x1 and one pixel for 3x3;
    see ``relay.analysis.sparse_conv2d``) whose weight has at least
    ``sparsity_threshold`` zeros becomes ``nn.sparse_conv2d`` over its BSR parts, stored
    in ``params`` in place of the dense weight (in place, as TVM)."""
    func = main_function(func)
    info = process_params(func, params, tuple(int(b) for b in blocksize),
                          float(sparsity_threshold), layout, kernel_size)
    return run_opt_pass(func, Conv2dToSparse(info.weight_name, info.weight_shape, layout,
                                             kernel_size)), params
