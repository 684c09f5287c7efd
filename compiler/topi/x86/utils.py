"""Helpers shared by the default CPU schedules: traversal, fusion checks, tile choice.

Invariants:
- ``prepare`` creates the schedule for ``outs`` and inlines every non-output op whose
  tag is elemwise/broadcast/injective (except "injective,pad"/"dilate" stages, which the
  anchor schedules place themselves), exactly once per op, before any other primitive.
- ``epilogue_of`` returns the output stage an anchor op may be computed inside, only when
  that output has the anchor's shape and reaches it through elemwise/broadcast ops only
  (so indices map one to one and tiling the output tiles the anchor the same way).
- Tile helpers return sizes >= 1 that never exceed the extent.
"""
from __future__ import annotations

from functools import cache

from ...schedule.schedule import create_schedule
from ...target import parse_target
from ...te.tensor import ComputeOp, PlaceholderOp, Tensor, post_order_ops
from ...tir import dtype as dt
from .. import tag as _tag
from ..utils import const_tuple

# Below this many output elements a parallel loop costs more than it saves.
PARALLEL_MIN_WORK = 1 << 14


@cache
def _host():
    return parse_target("llvm")


def vector_lanes(dtype: str = "float32") -> int:
    """SIMD lanes of ``dtype`` on the host target (8 for float32 with AVX2)."""
    return _host().vector_lanes(max(8, dt.bits(dtype)))


def num_cores() -> int:
    return _host().num_cores


def as_list(outs) -> list:
    if isinstance(outs, (Tensor, ComputeOp, PlaceholderOp)):
        outs = [outs]
    return [o.output(0) if not isinstance(o, Tensor) else o for o in outs]


def all_ops(outs) -> list:
    """Compute ops reachable from ``outs``, consumers before producers."""
    return [op for op in reversed(post_order_ops(outs)) if isinstance(op, ComputeOp)]


def _placed_by_anchor(tag: str) -> bool:
    return tag.startswith(_tag.INJECTIVE + ",pad") or tag.startswith(_tag.INJECTIVE + ",dilate")


def prepare(outs):
    """(schedule, output tensors, ops) with the simple intermediate ops inlined."""
    outs = as_list(outs)
    s = create_schedule([t.op for t in outs])
    out_ops = {id(t.op) for t in outs}
    ops = all_ops(outs)
    for op in ops:
        if id(op) in out_ops or _placed_by_anchor(op.tag):
            continue
        if _tag.is_injective(op.tag) and not op.reduce_axis:
            s[op].compute_inline()
    return s, outs, ops


def epilogue_of(s, anchor, outs):
    """The output op that ``anchor`` can be tiled inside, or None (anchor is the output)."""
    if any(t.op is anchor for t in outs) or len(outs) != 1:
        return None
    out = outs[0].op
    if const_tuple(out.output_shape(0)) != const_tuple(anchor.output_shape(0)):
        return None
    for op in post_order_ops([out], stop=lambda op: op is anchor):
        if op is anchor or not isinstance(op, ComputeOp):
            continue
        if not _tag.is_broadcast(op.tag) or op.reduce_axis:
            return None
    return out


def pick_factor(extent: int, preferred) -> int:
    """The first preferred size dividing ``extent``, else the first one <= extent."""
    for f in preferred:
        if 0 < f <= extent and extent % f == 0:
            return f
    for f in preferred:
        if 0 < f <= extent:
            return f
    return max(1, extent)


def vector_factor(extent: int, lanes: int, max_mult: int = 2) -> int:
    """An inner vector length for ``extent``: a multiple of ``lanes`` dividing it if any,
    the whole extent if short, else its largest divisor in (lanes/2, max_mult*lanes],
    else the whole extent up to 8 vectors, else ``lanes`` (with a predicated tail)."""
    for m in range(max_mult, 0, -1):
        if extent % (m * lanes) == 0:
            return m * lanes
    if extent <= max_mult * lanes:
        return extent
    for f in range(max_mult * lanes, lanes // 2, -1):
        if extent % f == 0:
            return f
    # no good divisor: a whole short row is one (odd-length) vector LLVM splits itself;
    # a long one gets a predicated tail
    return extent if extent <= 8 * lanes else lanes


def attach_pad(s, pad, stage, axis) -> None:
    """Compute the padding stage ``pad`` at ``stage``.``axis`` (inside the parallel loop).

    Left scalar on purpose: a vectorized if_then_else (a masked load) computed into a
    buffer inside a parallel loop currently miscompiles (wrong values), so only the
    consumers of the padded buffer are vectorized.
    """
    s[pad].compute_at(stage, axis)
