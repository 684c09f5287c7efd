"""Schedule dispatch (TVM's ``topi.generic``): the default schedule for any topi DAG.

``schedule_default(outs)`` looks at the ops reachable from ``outs`` and schedules each
anchor (the op that is not elementwise/broadcast/injective) with its x86 schedule, the
simple ops being inlined or scheduled as injective outputs.  This is the fallback a
model gets without tuning records.  The ``schedule_*`` names re-export the x86 ones so
code written against TVM's ``topi.generic`` works unchanged.

Invariant: the result is always a valid schedule of exactly ``outs`` (every op of the
DAG is either inlined, attached by its anchor's schedule or computed at root).
"""
from __future__ import annotations

from . import tag as _tag
from .x86 import (  # noqa: F401
    schedule_adaptive_pool,
    schedule_batch_matmul,
    schedule_broadcast,
    schedule_concatenate,
    schedule_conv2d_nchw,
    schedule_conv2d_nhwc,
    schedule_conv2d_transpose_nchw,
    schedule_dense,
    schedule_depthwise_conv2d_nchw,
    schedule_elemwise,
    schedule_global_pool,
    schedule_group_conv2d_nchw,
    schedule_injective,
    schedule_layer_norm,
    schedule_log_softmax,
    schedule_matmul,
    schedule_pool,
    schedule_reduce,
    schedule_softmax,
)
from .x86.conv2d import (
    schedule_conv2d_nchw_from_existing,
    schedule_conv2d_nhwc_from_existing,
    schedule_depthwise_conv2d_nchw_from_existing,
)
from .x86.dense import schedule_gemm_from_existing
from .x86.fused import schedule_anchored
from .x86.pooling import schedule_pool_from_existing
from .x86.sparse import (
    schedule_sparse_conv2d_from_existing,
    schedule_sparse_dense_from_existing,
    schedule_sparse_reshape_from_existing,
    schedule_spconv3x3_block,
    schedule_spconv3x3_from_existing,
)
from .x86.utils import all_ops, as_list

_EXISTING = {
    _tag.DENSE: schedule_gemm_from_existing, _tag.MATMUL: schedule_gemm_from_existing,
    _tag.BATCH_MATMUL: schedule_gemm_from_existing,
    _tag.CONV2D_NCHW: schedule_conv2d_nchw_from_existing,
    _tag.GROUP_CONV2D_NCHW: schedule_conv2d_nchw_from_existing,
    _tag.CONV2D_TRANSPOSE_NCHW: schedule_conv2d_nchw_from_existing,
    _tag.CONV2D_NHWC: schedule_conv2d_nhwc_from_existing,
    _tag.GROUP_CONV2D_NHWC: schedule_conv2d_nhwc_from_existing,
    _tag.DEPTHWISE_CONV2D_NCHW: schedule_depthwise_conv2d_nchw_from_existing,
    _tag.POOL_MAX: schedule_pool_from_existing, _tag.POOL_AVG: schedule_pool_from_existing,
    _tag.SPARSE_DENSE_BSR_BLOCK: schedule_sparse_dense_from_existing,
    _tag.SPARSE_DENSE_CSR: schedule_sparse_dense_from_existing,
    _tag.SPARSE_CONV2D_BSR_BLOCK: schedule_sparse_conv2d_from_existing,
    _tag.SPARSE_DENSE_BSR: schedule_sparse_reshape_from_existing,
    _tag.SPARSE_CONV2D_BSR: schedule_sparse_reshape_from_existing,
    _tag.SPARSE_CONV3X3_NHWC: schedule_spconv3x3_from_existing,
    _tag.SPARSE_CONV3X3_NCHW: schedule_spconv3x3_from_existing,
    _tag.SPARSE_CONV3X3_NHWC_BLOCK: schedule_spconv3x3_block,
}
_WHOLE = {_tag.SOFTMAX: schedule_softmax, _tag.LOG_SOFTMAX: schedule_softmax,
          _tag.LAYER_NORM: schedule_layer_norm}


def _kind(op) -> str:
    return op.tag.split(",")[0]


def schedule_default(outs):
    """The default CPU schedule of the DAG producing ``outs`` (tensor or list)."""
    outs = as_list(outs)
    ops = all_ops(outs)
    whole = [op for op in ops if _kind(op) in _WHOLE]
    if len(whole) == 1 and not any(_kind(op) in _EXISTING for op in ops):
        return _WHOLE[_kind(whole[0])](outs)
    return schedule_anchored(outs, _EXISTING)

