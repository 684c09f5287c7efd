"""Scheduling a fused group around its anchors (shared by every x86 anchor schedule).

``schedule_anchored(outs, table)``: after ``prepare`` (simple intermediates inlined),
every op whose tag kind is in ``table`` is scheduled by ``table[kind](s, op, outs)``,
which also places the op's elementwise epilogue when ``epilogue_of`` finds one; every
op left over is still scheduled -- a reduction with the reduction schedule, an output
with the injective schedule -- so no stage of a fused group stays a serial, scalar loop
nest whatever the group contains.
"""
from __future__ import annotations

from .injective import schedule_injective_from_existing
from .reduction import schedule_reduce_from_existing
from .utils import as_list, epilogue_of, prepare

__all__ = ["schedule_anchored", "tag_kind"]


def tag_kind(op) -> str:
    return op.tag.split(",")[0]


def schedule_anchored(outs, table: dict):
    s, outs, ops = prepare(as_list(outs))
    done = set()
    for op in ops:
        fn = table.get(tag_kind(op))
        if fn is None:
            continue
        epi = epilogue_of(s, op, outs)    # decided before the anchor's schedule runs
        fn(s, op, outs)
        done.add(id(op))
        if epi is not None:
            done.add(id(epi))
    out_ops = {id(t.op) for t in outs}
    for op in ops:
        if id(op) in done:
            continue
        if op.reduce_axis and tag_kind(op) not in table:
            schedule_reduce_from_existing(s, op.output(0))
        elif id(op) in out_ops:
            schedule_injective_from_existing(s, op.output(0))
    return s
