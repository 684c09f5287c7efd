"""Neural-network operators (TVM's ``topi.nn``): compute definitions only.

Schedules live in ``compiler.topi.x86`` (default CPU schedules) and
``compiler.topi.generic`` (dispatch by tag).
"""
from ..transform import flatten
from .conv2d import (
    conv2d,
    conv2d_nchw,
    conv2d_nchw_packed,
    conv2d_nhwc,
    depthwise_conv2d_nchw,
    group_conv2d_nchw,
    packed_lanes,
)
from .conv2d_transpose import conv2d_transpose_nchw
from .conv3d_transpose import conv3d_transpose_ncdhw
from .dense import batch_matmul, dense, dense_pack, matmul, pack_dense_weight
from .elemwise import bias_add, gelu, leaky_relu, prelu, relu
from .norm import batch_norm, layer_norm
from .pad import dilate, mirror_pad, pad
from .pooling import adaptive_pool, global_pool, pool2d
from .softmax import log_softmax, softmax
from .sparse import sparse_conv2d, sparse_dense
from .utils import conv_out_size, get_pad_tuple

__all__ = ["flatten", "conv2d", "conv2d_nchw", "conv2d_nchw_packed", "packed_lanes",
           "conv2d_nhwc", "depthwise_conv2d_nchw", "mirror_pad",
           "group_conv2d_nchw", "conv2d_transpose_nchw", "conv3d_transpose_ncdhw",
           "batch_matmul", "dense", "dense_pack", "pack_dense_weight", "matmul",
           "bias_add", "gelu", "leaky_relu", "prelu", "relu", "batch_norm", "layer_norm",
           "dilate", "pad", "adaptive_pool", "global_pool", "pool2d", "log_softmax",
           "softmax", "sparse_dense", "sparse_conv2d", "conv_out_size", "get_pad_tuple"]
