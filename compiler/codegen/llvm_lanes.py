"""Scalarization of a vector TIR expression: the scalar expression of one lane.

Role: ``if_then_else`` with a vector condition whose lanes disagree must evaluate each
lane's taken branch alone (a padded load may be out of bounds in the other lanes); the
emitter then generates ``lane_expr(e, i)`` for lane ``i`` under a per-lane branch.
Invariants:
- the result has the element dtype of ``e`` and reads exactly the memory lane ``i``
  of ``e`` reads (a Ramp index becomes ``base + i*stride``);
- vector variables bound by an enclosing Let are renamed to fresh scalar variables
  (``vmap``); vector variables bound outside the expression are resolved by the
  ``lane_var`` callback, which emits an ``extractelement`` in the current block;
- nodes are rebuilt with their constructors (no folding), Var identity is preserved.
"""
from __future__ import annotations

from ..errors import CodegenError
from ..tir import dtype as dt
from ..tir.expr import (
    Add,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    IntImm,
    Let,
    Mul,
    Not,
    Ramp,
    Select,
    Shuffle,
    Var,
)


def lane_expr(e, i: int, lane_var, vmap=None):
    """Scalar expression computing lane ``i`` of ``e``.

    ``lane_var(var, i)`` must return a scalar Var holding lane ``i`` of vector ``var``.
    """
    if dt.lanes(e.dtype) == 1:
        return e
    vmap = {} if vmap is None else vmap
    t = type(e)
    if t is Var:
        nv = vmap.get(e)
        return nv if nv is not None else lane_var(e, i)
    if t is Ramp:
        if i == 0:
            return e.base
        s = e.stride
        if type(s) is IntImm:
            return Add(e.base, IntImm(s.dtype, s.value * i))
        return Add(e.base, Mul(s, IntImm(s.dtype, i)))
    if t is Broadcast:
        return e.value
    if isinstance(e, (BinaryOp, CmpOp)):
        return t(lane_expr(e.a, i, lane_var, vmap), lane_expr(e.b, i, lane_var, vmap))
    if t is Not:
        return Not(lane_expr(e.a, i, lane_var, vmap))
    if t is Select:
        return Select(lane_expr(e.condition, i, lane_var, vmap),
                      lane_expr(e.true_value, i, lane_var, vmap),
                      lane_expr(e.false_value, i, lane_var, vmap))
    if t is Cast:
        return Cast(dt.element_of(e.dtype), lane_expr(e.value, i, lane_var, vmap))
    if t is Call:
        return Call(dt.element_of(e.dtype), e.op,
                    tuple(lane_expr(a, i, lane_var, vmap) for a in e.args))
    if t is BufferLoad:
        return BufferLoad(e.buffer, tuple(lane_expr(x, i, lane_var, vmap) for x in e.indices))
    if t is Shuffle:
        return _shuffle_lane(e, i, lane_var, vmap)
    if t is Let:
        return _let_lane(e, i, lane_var, vmap)
    raise CodegenError(f"codegen: cannot scalarize {type(e).__name__} expression {e} "
                       "for a lane-by-lane if_then_else")


def _shuffle_lane(e, i, lane_var, vmap):
    j = e.indices[i]
    j = int(j.value) if isinstance(j, IntImm) else int(j)
    for v in e.vectors:
        n = dt.lanes(v.dtype)
        if j < n:
            return lane_expr(v, j, lane_var, vmap) if n > 1 else v
        j -= n
    raise CodegenError(f"codegen: Shuffle index {e.indices[i]} out of range in {e}")


def _let_lane(e, i, lane_var, vmap):
    value = lane_expr(e.value, i, lane_var, vmap)
    if dt.lanes(e.var.dtype) == 1:
        return Let(e.var, value, lane_expr(e.body, i, lane_var, vmap))
    nv = Var(f"{e.var.name}_lane{i}", dt.element_of(e.var.dtype))
    inner = dict(vmap)
    inner[e.var] = nv
    return Let(nv, value, lane_expr(e.body, i, lane_var, inner))
