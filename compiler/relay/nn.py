"""``relay.nn``: construction functions of the neural-network operators (TVM's names)."""
from .op.nn import (
                    batch_matmul,
                    bias_add,
                    contrib_dense_pack,
                    conv2d,
                    conv2d_transpose,
                    conv3d_transpose,
                    dense,
                    leaky_relu,
                    log_softmax,
                    relu,
                    softmax,
)
from .op.nn_more import (
                    adaptive_avg_pool2d,
                    adaptive_max_pool2d,
                    avg_pool2d,
                    batch_flatten,
                    batch_norm,
                    dropout,
                    global_avg_pool2d,
                    global_max_pool2d,
                    layer_norm,
                    max_pool2d,
                    pad,
                    sparse_conv2d,
                    sparse_dense,
)

__all__ = ["batch_matmul", "bias_add", "contrib_dense_pack", "conv2d", "conv2d_transpose",
           "conv3d_transpose", "dense", "leaky_relu",
           "log_softmax", "relu", "softmax", "adaptive_avg_pool2d", "adaptive_max_pool2d",
           "avg_pool2d", "batch_flatten", "batch_norm", "dropout", "global_avg_pool2d",
           "global_max_pool2d", "layer_norm", "max_pool2d", "pad", "sparse_dense",
           "sparse_conv2d"]
