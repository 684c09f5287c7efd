"""Default CPU schedules (TVM's ``topi.x86``): each takes the output tensor(s) of a topi
op, possibly followed by elementwise ops, and returns a ``te.Schedule``.

The SIMD width comes from the host target (``parse_target("llvm").vector_bits``), so
the same code serves AVX2 (8 float32 lanes) and AVX-512 (16).
"""
from .conv2d import (
                     schedule_conv2d_nchw,
                     schedule_conv2d_nchw_from_existing,
                     schedule_conv2d_nhwc,
                     schedule_conv2d_nhwc_from_existing,
                     schedule_conv2d_transpose_nchw,
                     schedule_depthwise_conv2d_nchw,
                     schedule_depthwise_conv2d_nchw_from_existing,
                     schedule_group_conv2d_nchw,
)
from .dense import (
                     schedule_batch_matmul,
                     schedule_dense,
                     schedule_gemm_from_existing,
                     schedule_matmul,
)
from .injective import (
                     schedule_broadcast,
                     schedule_concatenate,
                     schedule_elemwise,
                     schedule_injective,
                     schedule_injective_from_existing,
)
from .pooling import schedule_adaptive_pool, schedule_pool, schedule_pool_from_existing
from .reduction import schedule_global_pool, schedule_reduce, schedule_reduce_from_existing
from .softmax import schedule_layer_norm, schedule_softmax
from .sparse import (
                     schedule_spconv2d_3x3_nchw,
                     schedule_spconv2d_3x3_nhwc,
                     spconv2d_3x3_nchw,
                     spconv2d_3x3_nhwc,
)

schedule_log_softmax = schedule_softmax

__all__ = [n for n in dir() if n.startswith(("schedule_", "spconv2d_"))]
