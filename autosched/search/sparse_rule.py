"""The sketch rule of TVM's sparse tuning tutorial, ready made.

Role: ``sparse_dense_sketch_rule()`` is a ``PreloadCustomSketchRule`` doing what the
tutorial's ``meet_condition_func``/``apply_func`` do for ``topi.nn.sparse_dense``'s BSR
stages: the reshape stage is inlined into its elementwise consumer, the block stage is
tiled (its row axis in three, its block-row axis in two, the consumer following) with
the row-length loop inside the block-row loop that defines its extent, and computed at
the consumer's outer block-row loop.  Without it the built-in rules leave such a stage
untiled (``sketch_rules.needs_mlt``).

Invariant: the sketch equals the tutorial's rule's, step for step (a test compares them).
"""
from __future__ import annotations

from compiler.topi import tag as _tag

from ..loop_state import LoopState
from .callbacks import PreloadCustomSketchRule
from .sketch_rules import APPLY_AND_SKIP_REST, PASS, consumers_resolved, elementwise_consumer

__all__ = ["sparse_dense_sketch_rule", "sparse_sketch_rules"]


def _meet(policy, state, stage_id):
    tag = state.stages[stage_id].op.tag
    return APPLY_AND_SKIP_REST if tag in (_tag.SPARSE_DENSE_BSR,
                                          _tag.SPARSE_DENSE_BSR_BLOCK) else PASS


def _apply(policy, state, stage_id):
    s0 = LoopState.of(state)
    if s0.stages[stage_id].op.tag == _tag.SPARSE_DENSE_BSR_BLOCK:
        return [s0, stage_id - 1]
    reshape, block = s0.stages[stage_id].op, s0.stages[stage_id - 1].op
    consumer = reshape
    cons = consumers_resolved(s0, stage_id)
    if len(cons) == 1 and elementwise_consumer(s0, stage_id) == cons[0]:
        consumer = s0.stages[cons[0]].op
        s0.compute_inline(reshape)
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


def sparse_sketch_rules() -> list:
    """TVM's ``topi.sparse.utils.sparse_sketch_rules()``: the custom sketch rules of the
    sparse kernels, for ``SketchPolicy(task, init_search_callbacks=sparse_sketch_rules())``
    (TVM's network tutorial with ``use_sparse``); a stage of another kind passes them."""
    return [sparse_dense_sketch_rule()]
