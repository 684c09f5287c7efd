"""Loops whose extent is read from a tensor, and the loops that extent reads.

Role: a reduce axis whose extent reads a tensor at its stage's own axes (a CSR row's
length, ``indptr[r + 1] - indptr[r]``) can only run inside the loops of those axes.
``dependent_extent_violation(sch)`` names the first stage whose leaf order -- after its
splits, fuses and reorders -- puts a piece of such an axis outside a piece of an axis
its extent reads, or fuses a piece of it with any other axis (a fused loop would be
decomposed by dividing by a length read from memory); None when there is none.  The
auto-scheduler's State refuses such states with it, and lowering raises it as a
ScheduleError, so a hand-written schedule is refused clearly instead of making code
that reads an undefined variable.

Invariant: only stages with such an axis are examined (constant programs cost nothing).
"""
from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir.analysis import producers_read, vars_read
from .relations import Fuse, Split

__all__ = ["dependent_extent_violation"]


def _dependencies(op) -> list:
    """``(reduce axis, [axes of op whose vars its extent reads])`` for the reduce axes
    whose extent is read from a tensor."""
    out = []
    for r in op.reduce_axis:
        if isinstance(r.dom.extent, E.IntImm) or not producers_read(r.dom.extent):
            continue
        read = vars_read(r.dom.extent)
        out.append((r, [iv for iv in op.axis if iv.var in read]))
    return out


def _root_sets(stage) -> dict:
    """id(iter var) -> ids of the root axes it is made of (through splits and fuses)."""
    roots = {id(iv): {id(iv)} for iv in list(stage.op.axis) + list(stage.op.reduce_axis)}
    for rel in stage.relations:
        if isinstance(rel, Split):
            got = roots.get(id(rel.parent), set())
            roots[id(rel.outer)] = roots[id(rel.inner)] = got
        elif isinstance(rel, Fuse):
            roots[id(rel.fused)] = roots.get(id(rel.outer), set()) | \
                roots.get(id(rel.inner), set())
    return roots


def dependent_extent_violation(sch) -> str | None:
    """A message naming the first misplaced data-dependent loop of ``sch``, or None."""
    for stage in sch.stages:
        if not isinstance(stage.op, ComputeOp) or not stage.op.reduce_axis:
            continue
        deps = _dependencies(stage.op)
        if not deps:
            continue
        roots = _root_sets(stage)
        leaves = stage.leaf_iter_vars
        for r, needed in deps:
            for k, leaf in enumerate(leaves):
                if id(r) not in roots.get(id(leaf), ()):
                    continue
                if len(roots[id(leaf)]) > 1:
                    return (f"stage {stage.op.name}: loop {leaf.var.name} fuses reduce axis "
                            f"{r.var.name}, whose extent is read from a tensor, with other "
                            "axes; expected it fused with none")
                for j in range(k + 1, len(leaves)):
                    have = roots.get(id(leaves[j]), ())
                    bad = next((d for d in needed if id(d) in have), None)
                    if bad is not None:
                        return (f"stage {stage.op.name}: loop {leaf.var.name} runs over reduce "
                                f"axis {r.var.name}, whose extent is read from a tensor at "
                                f"axis {bad.var.name}, but loop {leaves[j].var.name} of "
                                f"{bad.var.name} runs inside it; expected every loop of "
                                f"{bad.var.name} outside it")
    return None
