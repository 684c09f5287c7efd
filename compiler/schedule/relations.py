"""Iter-var relations of a stage (TVM's IterVarRelation) and the extents they imply.

A ``Split`` derives ``outer`` and ``inner`` from ``parent``, a ``Fuse`` derives ``fused``
from ``outer`` and ``inner``.  Relations are immutable records kept in creation order on
the stage; bound inference and lowering walk them.  ``split_extents`` is the one place
that decides the loop extents of a split, shared by the static domains of
``Stage.split`` and by bound inference.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..tir import expr as E


@dataclass(frozen=True)
class Split:
    parent: E.IterVar
    outer: E.IterVar
    inner: E.IterVar
    factor: int | None
    nparts: int | None


@dataclass(frozen=True)
class Fuse:
    outer: E.IterVar
    inner: E.IterVar
    fused: E.IterVar


def split_extents(parent_ext: int, factor, nparts) -> tuple:
    """``(stride, outer extent, inner extent)`` of a split, as TVM's final InferBound.

    ``parent = outer * stride + inner``.  A factor split's inner loop is
    ``min(factor, parent)`` and a nparts split's outer loop ``min(nparts, parent)``: the
    factor (or nparts) is tightened to the parent when it overshoots, so a factor of 8
    over 7 gives loops of 1 and 7.  The autosched State computes the same extents.
    """
    if factor is not None:
        inner = min(factor, parent_ext) if parent_ext > 0 else factor
        return factor, -(-parent_ext // factor), inner
    inner = max(1, -(-parent_ext // nparts))
    outer = min(nparts, parent_ext) if parent_ext > 0 else nparts
    return inner, outer, inner
