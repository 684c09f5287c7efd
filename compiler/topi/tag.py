"""Operator tags and fusion pattern kinds (TVM's ``topi.tag`` and relay's OpPatternKind).

Role: every ComputeOp built by topi carries a ``tag`` string (TVM style: a kind such as
"elemwise" / "broadcast" / "injective" / "comm_reduce", or an operator name such as
"conv2d_nchw", "dense", "pool_max"; a kind may be followed by ",detail" as in
"injective,pad") and ``attrs["pattern"]``, its fusion pattern kind.

Invariants: ``pattern_of(op)`` always returns one of ``PATTERNS``; the graph level fuses
by these kinds, ordered by ``PATTERN_LEVEL`` (lower fuses more freely, as in TVM).
Schedules find the ops they must handle by tag, never by op name.
"""
from __future__ import annotations

from ..te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor, post_order_ops

# Pattern kinds (also the tag prefixes of the simple kinds).
ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"   # tag of argmax/argmin; pattern comm_reduce
OUT_ELEMWISE_FUSABLE = "out_elemwise_fusable"
OPAQUE = "opaque"

PATTERNS = (ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE, OUT_ELEMWISE_FUSABLE, OPAQUE)
# TVM's OpPatternKind values: a group's pattern is the max level of its members.
PATTERN_LEVEL = {ELEMWISE: 0, BROADCAST: 1, INJECTIVE: 2, COMM_REDUCE: 3,
                 OUT_ELEMWISE_FUSABLE: 4, OPAQUE: 8}

# Operator tags of the complex ops (pattern out_elemwise_fusable unless noted).
DENSE = "dense"
MATMUL = "matmul"
BATCH_MATMUL = "batch_matmul"
CONV2D_NCHW = "conv2d_nchw"
CONV2D_NHWC = "conv2d_nhwc"
GROUP_CONV2D_NCHW = "group_conv2d_nchw"
GROUP_CONV2D_NHWC = "group_conv2d_nhwc"
DEPTHWISE_CONV2D_NCHW = "depthwise_conv2d_nchw"
CONV2D_TRANSPOSE_NCHW = "conv2d_transpose_nchw"
CONV3D_TRANSPOSE_NCDHW = "conv3d_transpose_ncdhw"
POOL_MAX = "pool_max"               # pooling ops: pattern out_elemwise_fusable
POOL_AVG = "pool_avg"
ADAPTIVE_POOL_MAX = "adaptive_pool_max"
ADAPTIVE_POOL_AVG = "adaptive_pool_avg"
GLOBAL_POOL_MAX = "global_pool_max"
GLOBAL_POOL_AVG = "global_pool_avg"
SOFTMAX = "softmax_output"          # softmax family: pattern opaque
LOG_SOFTMAX = "log_softmax_output"
LAYER_NORM = "layer_norm"           # pattern opaque
SPARSE_DENSE_CSR = "sparse_dense_sp_rhs_csrmm"           # sparse ops: pattern opaque
SPARSE_DENSE_BSR = "sparse_dense_sp_rhs_bsrmm"
SPARSE_DENSE_BSR_BLOCK = "sparse_dense_sp_rhs_bsrmm_block"
SPARSE_CONV2D_BSR = "sparse_conv2d_sp_bsrmm"
SPARSE_CONV2D_BSR_BLOCK = "sparse_conv2d_sp_bsrmm_block"
SPARSE_CONV3X3_IM2COL = "sparse_conv2d_3x3_im2col"     # not TVM's: TVM's stage has none
SPARSE_CONV3X3_NHWC = "conv3x3_spNHWC"
SPARSE_CONV3X3_NHWC_BLOCK = "conv3x3_spNHWC_block"      # not TVM's: TVM's stage has none
SPARSE_CONV3X3_NCHW = "conv3x3_spNCHW"

_SIMPLE = (ELEMWISE, BROADCAST, INJECTIVE)
_COMPLEX_PATTERN = {
    DENSE: OUT_ELEMWISE_FUSABLE, MATMUL: OUT_ELEMWISE_FUSABLE,
    BATCH_MATMUL: OUT_ELEMWISE_FUSABLE, CONV2D_NCHW: OUT_ELEMWISE_FUSABLE,
    CONV2D_NHWC: OUT_ELEMWISE_FUSABLE, GROUP_CONV2D_NCHW: OUT_ELEMWISE_FUSABLE,
    GROUP_CONV2D_NHWC: OUT_ELEMWISE_FUSABLE, DEPTHWISE_CONV2D_NCHW: OUT_ELEMWISE_FUSABLE,
    CONV2D_TRANSPOSE_NCHW: OUT_ELEMWISE_FUSABLE, CONV3D_TRANSPOSE_NCDHW: OUT_ELEMWISE_FUSABLE,
    POOL_MAX: OUT_ELEMWISE_FUSABLE,
    POOL_AVG: OUT_ELEMWISE_FUSABLE, ADAPTIVE_POOL_MAX: OUT_ELEMWISE_FUSABLE,
    ADAPTIVE_POOL_AVG: OUT_ELEMWISE_FUSABLE, GLOBAL_POOL_MAX: OUT_ELEMWISE_FUSABLE,
    GLOBAL_POOL_AVG: OUT_ELEMWISE_FUSABLE, SOFTMAX: OPAQUE, LOG_SOFTMAX: OPAQUE,
    LAYER_NORM: OPAQUE, SPARSE_DENSE_CSR: OPAQUE, SPARSE_DENSE_BSR: OPAQUE,
    SPARSE_DENSE_BSR_BLOCK: OPAQUE, SPARSE_CONV2D_BSR: OPAQUE, SPARSE_CONV2D_BSR_BLOCK: OPAQUE,
    SPARSE_CONV3X3_IM2COL: OPAQUE, SPARSE_CONV3X3_NHWC: OPAQUE,
    SPARSE_CONV3X3_NHWC_BLOCK: OPAQUE, SPARSE_CONV3X3_NCHW: OPAQUE,
}


def _kind(tag: str) -> str:
    return tag.split(",", 1)[0] if tag else ""


def is_elemwise(tag: str) -> bool:
    return _kind(tag) == ELEMWISE


def is_broadcast(tag: str) -> bool:
    """Elementwise or broadcast (TVM's ``tag.is_broadcast``)."""
    return _kind(tag) in (ELEMWISE, BROADCAST)


def is_injective(tag: str) -> bool:
    """Elementwise, broadcast or injective: safe to inline into its consumer."""
    return _kind(tag) in _SIMPLE


def is_reduce(tag: str) -> bool:
    return _kind(tag) in (COMM_REDUCE, COMM_REDUCE_IDX)


def pattern_of(op) -> str:
    """Fusion pattern kind of ``op`` (an Operation or a Tensor): one of ``PATTERNS``.

    ``attrs["pattern"]`` wins; otherwise the tag decides; an untagged compute without
    reduction is injective, with reduction comm_reduce; a placeholder is opaque.
    """
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, Operation):
        raise TypeError(f"pattern_of: expected an operation or a tensor, got {op!r}")
    pat = op.attrs.get("pattern") if isinstance(op.attrs, dict) else None
    if pat in PATTERN_LEVEL:
        return pat
    if isinstance(op, PlaceholderOp):
        return OPAQUE
    kind = _kind(op.tag)
    if kind in _SIMPLE:
        return kind
    if kind in (COMM_REDUCE, COMM_REDUCE_IDX):
        return COMM_REDUCE
    if kind in _COMPLEX_PATTERN:
        return _COMPLEX_PATTERN[kind]
    if isinstance(op, ComputeOp) and not op.tag:
        return COMM_REDUCE if op.reduce_axis else INJECTIVE
    return OPAQUE


def attrs_for(tag: str, **extra) -> dict:
    """The ``attrs`` dict topi puts on an op with ``tag``: its pattern plus ``extra``."""
    kind = _kind(tag)
    if kind in _SIMPLE:
        pat = kind
    elif kind in (COMM_REDUCE, COMM_REDUCE_IDX):
        pat = COMM_REDUCE
    else:
        pat = _COMPLEX_PATTERN.get(kind, OPAQUE)
    out = {"pattern": pat}
    out.update(extra)
    return out


def pattern_of_dag(outs) -> str:
    """Pattern kind of a whole topi result: the highest-level kind among the compute ops
    reachable from ``outs`` (a tensor or a list), e.g. dense + bias -> out_elemwise_fusable,
    softmax -> opaque.  This is the kind the graph level records for the operator."""
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    best = ELEMWISE
    for op in post_order_ops([t.op if isinstance(t, Tensor) else t for t in outs]):
        if isinstance(op, ComputeOp) and PATTERN_LEVEL[pattern_of(op)] > PATTERN_LEVEL[best]:
            best = pattern_of(op)
    return best
