"""The sketch rules of TVM's sparse kernels, ready made: the sparse tuning tutorial's
for ``sparse_dense`` and ``topi.sparse.utils``'s for ``sparse_conv2d``.

Role: ``sparse_dense_sketch_rule()`` is a ``PreloadCustomSketchRule`` doing what the
tutorial's ``meet_condition_func``/``apply_func`` do for ``topi.nn.sparse_dense``'s BSR
stages: the reshape stage is inlined into its elementwise consumer, the block stage is
tiled (its row axis in three, its block-row axis in two, the consumer following) with
the row-length loop inside the block-row loop that defines its extent, and computed at
the consumer's outer block-row loop.  Without it the built-in rules leave such a stage
untiled (``sketch_rules.needs_mlt``).

``sparse_conv2d_sketch_rule()`` does the same for a sparse 1x1 convolution's block
stage: batch, height and width split in three and the block-row axis in two, the
consumer following, computed at the consumer's outer block-row loop (TVM's
``sparse_conv2d_apply_func``, NHWC and NCHW).  ``sparse_sketch_rules()`` is TVM's list of
both and, not in TVM, of ``sparse_conv3x3_sketch_rule()``.

``sparse_conv3x3_sketch_rule()`` (not TVM's: TVM tunes its 3x3 sparse kernels with
AutoTVM templates only) tiles a 3x3 sparse convolution: the pixel axis in three and the
output-channel (NHWC) or block-row (NCHW) axis in two, pixel tiles outermost; the
im2col stage is computed at the outer pixel tile, so its rows are gathered once per
tile and read by every channel tile, and the NHWC block stage at the outer channel
tile, its row-length loop inside the block-row loop that defines it; the reshape to the
output's shape is inlined into its elementwise consumer.

Invariant: the sketches of TVM's rules equal theirs, step for step (a test compares the
dense one with the tutorial's own code).
"""
from __future__ import annotations

from compiler.topi import tag as _tag

from .. import state as S
from ..loop_state import LoopState
from .callbacks import PreloadCustomSketchRule
from .sketch_rules import APPLY_AND_SKIP_REST, PASS, consumers_resolved, elementwise_consumer

__all__ = ["sparse_dense_sketch_rule", "sparse_conv2d_sketch_rule",
           "sparse_conv3x3_sketch_rule", "sparse_sketch_rules"]


def _meet(policy, state, stage_id):
    tag = state.stages[stage_id].op.tag
    return APPLY_AND_SKIP_REST if tag in (_tag.SPARSE_DENSE_BSR,
                                          _tag.SPARSE_DENSE_BSR_BLOCK) else PASS


def _inline_into_consumer(s0, stage_id: int):
    """The op the block stage is attached to: the reshape stage's single elementwise
    consumer (the reshape inlined into it), else the reshape stage itself."""
    reshape = s0.stages[stage_id].op
    cons = consumers_resolved(s0, stage_id)
    if len(cons) == 1 and elementwise_consumer(s0, stage_id) == cons[0]:
        s0.compute_inline(reshape)
        return s0.stages[cons[0]].op
    return reshape


def _apply(policy, state, stage_id):
    s0 = LoopState.of(state)
    if s0.stages[stage_id].op.tag == _tag.SPARSE_DENSE_BSR_BLOCK:
        return [s0, stage_id - 1]
    block = s0.stages[stage_id - 1].op
    consumer = _inline_into_consumer(s0, stage_id)
    i, nb_j, j, row_offset, c = s0[block].iters
    m, n = s0[consumer].iters
    i0, i1, i2 = s0.split(block, i, [None, None])
    m0, m1 = s0.follow_split(consumer, m, len(s0.transform_steps) - 1, 1)
    j0, j1 = s0.split(block, nb_j, [None])
    n0, n1 = s0.follow_split(consumer, n, len(s0.transform_steps) - 1, 1)
    s0.reorder(block, [i0, j0, i1, j1, row_offset, i2, j, c])
    s0.reorder(consumer, [m0, n0, m1, n1])
    s0.compute_at(block, consumer, n0)
    return [[s0, stage_id - 2]]


def sparse_dense_sketch_rule() -> PreloadCustomSketchRule:
    """TVM's sparse tutorial's custom sketch rule (see the module doc); pass it in
    ``SketchPolicy(..., init_search_callbacks=[sparse_dense_sketch_rule()])``."""
    return PreloadCustomSketchRule(_meet, _apply, "SparseDense")


def _meet_conv(policy, state, stage_id):
    tag = state.stages[stage_id].op.tag
    return APPLY_AND_SKIP_REST if tag in (_tag.SPARSE_CONV2D_BSR,
                                          _tag.SPARSE_CONV2D_BSR_BLOCK) else PASS


def _apply_conv(policy, state, stage_id):
    s0 = LoopState.of(state)
    if s0.stages[stage_id].op.tag == _tag.SPARSE_CONV2D_BSR_BLOCK:
        return [s0, stage_id - 1]
    nhwc = s0.stages[stage_id].op.attrs.get("layout", "NHWC") == "NHWC"
    block = s0.stages[stage_id - 1].op
    consumer = _inline_into_consumer(s0, stage_id)
    its = list(s0[block].iters)
    c = its[6] if len(its) == 7 else None          # no column axis for one-column blocks
    if nhwc:
        i, h, w, nb_j, j, row_offset = its[:6]
        m, x, y, n = s0[consumer].iters
    else:
        i, nb_j, j, h, w, row_offset = its[:6]
        m, n, x, y = s0[consumer].iters
    tiles = []
    for axis, follow in ((i, m), (h, x), (w, y)):
        a0, a1, a2 = s0.split(block, axis, [None, None])
        f0, f1 = s0.follow_split(consumer, follow, len(s0.transform_steps) - 1, 1)
        tiles.append((a0, a1, a2, f0, f1))
    j0, j1 = s0.split(block, nb_j, [None])
    n0, n1 = s0.follow_split(consumer, n, len(s0.transform_steps) - 1, 1)
    (i0, i1, i2, m0, m1), (h0, h1, h2, x0, x1), (w0, w1, w2, y0, y1) = tiles
    tail = [c] if c is not None else []
    if nhwc:
        s0.reorder(block, [i0, h0, w0, j0, i1, h1, w1, j1, row_offset, i2, h2, w2, j, *tail])
        s0.reorder(consumer, [m0, x0, y0, n0, m1, x1, y1, n1])
    else:
        s0.reorder(block, [i0, j0, h0, w0, i1, j1, h1, w1, row_offset, i2, j, *tail, h2, w2])
        s0.reorder(consumer, [m0, n0, x0, y0, m1, n1, x1, y1])
    s0.compute_at(block, consumer, n0)
    return [[s0, stage_id - 2]]


def sparse_conv2d_sketch_rule() -> PreloadCustomSketchRule:
    """TVM's sketch rule of ``topi.nn.sparse_conv2d`` (see the module doc)."""
    return PreloadCustomSketchRule(_meet_conv, _apply_conv, "SparseConv2D")


def _meet_conv3x3(policy, state, stage_id):
    tag = state.stages[stage_id].op.tag
    return APPLY_AND_SKIP_REST if tag in (_tag.SPARSE_CONV3X3_NHWC,
                                          _tag.SPARSE_CONV3X3_NCHW) else PASS


def _stage_with_tag(op, tag: str):
    return next(t.op for t in op.input_tensors if t.op.tag == tag)


def _apply_conv3x3(policy, state, stage_id):
    s0 = LoopState.of(state)
    op = s0.stages[stage_id].op
    cols = _stage_with_tag(op if op.tag == _tag.SPARSE_CONV3X3_NCHW else
                           _stage_with_tag(op, _tag.SPARSE_CONV3X3_NHWC_BLOCK),
                           _tag.SPARSE_CONV3X3_IM2COL)
    if op.tag == _tag.SPARSE_CONV3X3_NCHW:
        n, fo, fi, c, hw, row_offset = s0[op].iters
        p0, p1, p2 = s0.split(op, hw, [None, None])
        f0, f1 = s0.split(op, fo, [None])
        s0.reorder(op, [n, p0, f0, p1, f1, row_offset, fi, c, p2])
    else:
        block = _stage_with_tag(op, _tag.SPARSE_CONV3X3_NHWC_BLOCK)
        y, x, k = s0[op].iters
        p0, p1, p2 = s0.split(op, y, [None, None])
        f0, f1 = s0.split(op, x, [None])
        s0.reorder(op, [p0, f0, p1, p2, f1, k])
        s0.compute_at(block, op, f0)
        row, nb_j, j, c, row_offset = s0[block].iters
        s0.reorder(block, [nb_j, row_offset, row, c, j])
    s0.compute_at(cols, op, p0)
    reshape = consumers_resolved(s0, stage_id)
    if len(reshape) == 1 and s0.stages[reshape[0]].compute_at == S.ROOT:
        _inline_into_consumer(s0, reshape[0])
    return [[s0, s0.stage_id(cols) - 1]]


def sparse_conv3x3_sketch_rule() -> PreloadCustomSketchRule:
    """The sketch rule of a 3x3 sparse convolution (see the module doc; not TVM's)."""
    return PreloadCustomSketchRule(_meet_conv3x3, _apply_conv3x3, "SparseConv3x3")


def sparse_sketch_rules() -> list:
    """TVM's ``topi.sparse.utils.sparse_sketch_rules()``: the custom sketch rules of the
    sparse kernels, for ``SketchPolicy(task, init_search_callbacks=sparse_sketch_rules())``
    (TVM's network tutorial with ``use_sparse``); a stage of another kind passes them.
    Not in TVM's list: the 3x3 convolutions' rule."""
    return [sparse_conv2d_sketch_rule(), sparse_dense_sketch_rule(),
            sparse_conv3x3_sketch_rule()]
