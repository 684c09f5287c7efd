"""Iter-var relations of a stage (TVM's IterVarRelation) and the extents they imply.

A ``Split`` derives ``outer`` and ``inner`` from ``parent``, a ``Fuse`` derives ``fused``
from ``outer`` and ``inner``.  Relations are immutable records kept in creation order on
the stage; bound inference and lowering walk them.  ``split_extents`` is the one place
that decides the loop extents of a split, shared by the static domains of
``Stage.split`` and by bound inference.

An extent is a Python int when static and an integer PrimExpr when it depends on a
shape variable (``te.var``); static programs never see an expression, so their loops
and IR are exactly those of the static-only compiler.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..tir import expr as E
from ..tir import op as _op


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


def dom_extent(iv: E.IterVar):
    """The extent of ``iv``'s domain: an int when constant, else the PrimExpr."""
    assert iv.dom is not None
    x = iv.dom.extent
    return x.value if isinstance(x, E.IntImm) else x


def as_expr(x, dtype: str = "int32") -> E.PrimExpr:
    """An extent (int or PrimExpr) as a PrimExpr."""
    return _op.const(x, dtype) if isinstance(x, int) else x


def ext_mul(a, b):
    """Product of two extents, an int when both are."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return _op.mul(as_expr(a), as_expr(b))


def ceil_div(a, b):
    """``ceil(a / b)`` of an extent ``a`` and a positive int ``b`` (TVM prints the
    symbolic form as ``floordiv(a + b - 1, b)``)."""
    if isinstance(a, int):
        return -(-a // b)
    return a if b == 1 else _op.floordiv(_op.add(a, b - 1), b)


def split_extents(parent_ext: int, factor, nparts) -> tuple:
    """``(stride, outer extent, inner extent)`` of a split, as TVM's final InferBound.

    ``parent = outer * stride + inner``.  A factor split's inner loop is
    ``min(factor, parent)`` and a nparts split's outer loop ``min(nparts, parent)``: the
    factor (or nparts) is tightened to the parent when it overshoots, so a factor of 8
    over 7 gives loops of 1 and 7.  The autosched State computes the same extents.
    A symbolic parent keeps the factor (or nparts) as given: the tail is guarded.
    """
    if not isinstance(parent_ext, int):
        if factor is not None:
            return factor, ceil_div(parent_ext, factor), factor
        inner_s = ceil_div(parent_ext, nparts)
        return inner_s, nparts, inner_s
    if factor is not None:
        inner = min(factor, parent_ext) if parent_ext > 0 else factor
        return factor, -(-parent_ext // factor), inner
    inner = max(1, -(-parent_ext // nparts))
    outer = min(nparts, parent_ext) if parent_ext > 0 else nparts
    return inner, outer, inner
