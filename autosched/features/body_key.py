"""The structural key of a compute op's (inlined) body: what ``BodyInfo`` reads, with
the op's root axes numbered and the tensors it reads numbered in order of first read.

Why: a dataflow step rebuilds every op after it (an rfactor's split factor changes the
rf op, and so the ops reading it are new objects too), so a search round over
softmax-like programs met ~4,000 distinct ops of ~70 distinct bodies, and analysing
each body again (``BodyInfo``, ~0.4 ms) was a third of the round.  Ops with equal keys
have equal ``BodyInfo`` arrays; only the tensors differ, and ``tensors`` (the reads,
in key order) maps one op's onto the other's.

Why not ``compiler.tir.analysis.structural_key``: it keys a tensor and a free variable
by ``id``, which a cache outliving the ops may see reused, and numbers variables by
first occurrence, not by root axis, so ``A[i, j]`` and ``A[j, i]`` would share a key
while their index coefficients differ.  Here the roots are numbered as ``BodyInfo``
numbers them, the reads by slot, and any other object stands for itself in the key.

Invariants: the key is exact -- it holds every node type, dtype, constant, intrinsic
name and index structure of the body, the root extents, the output dtypes and the
shape and dtype of every tensor read; a variable that is no root axis (or reducer
argument) stands for itself (held in the key, so its identity is not reused), as do
objects of kinds it does not walk into.
"""
from __future__ import annotations

from compiler.tir import expr as E
from compiler.tir.functor import _fields_of

from ..extents import static_extent

__all__ = ["body_key"]

_SCALARS = (int, float, str, bool, type(None))


def body_key(op, body) -> tuple:
    """(key, tensors read in key order) of ``op`` with the effective ``body``."""
    axes = list(op.axis) + list(op.reduce_axis)
    walk = _Walk({iv.var: k for k, iv in enumerate(axes)})
    fp = walk.expr(tuple(body))
    outs = tuple([op.output(k).dtype for k in range(op.num_outputs)])
    reads = tuple([(walk.expr(tuple(t.shape)), t.dtype) for t in walk.tensors])
    key = (len(op.axis), tuple([static_extent(iv) for iv in axes]), outs, fp, reads)
    return key, walk.tensors


class _Walk:
    """One body's walk: ``index`` numbers the variables, ``tensors`` the reads."""

    __slots__ = ("index", "slots", "tensors")

    def __init__(self, index: dict):
        self.index = index
        self.slots: dict = {}
        self.tensors: list = []

    def expr(self, e):
        t = type(e)
        if t is E.Var:
            r = self.index.get(e)
            return e if r is None else ("v", r, e.dtype)
        if t is E.IntImm or t is E.FloatImm:
            return (t, e.dtype, e.value)
        if t is tuple:
            return tuple([self.expr(x) for x in e])
        if t is E.ProducerLoad:
            return ("L", self._slot(e.producer), self.expr(e.indices))
        if t is E.CommReducer:
            return self._reducer(e)
        if t is E.IterVar:
            return ("IV", self.expr(e.var), e.iter_type, self.expr(e.dom))
        if isinstance(e, E.Node):
            return (t,) + tuple([self.expr(getattr(e, f)) for f in _fields_of(t)])
        return e if isinstance(e, _SCALARS) else ("id", e)

    def _slot(self, tensor) -> int:
        s = self.slots.get(tensor)
        if s is None:
            s = self.slots[tensor] = len(self.tensors)
            self.tensors.append(tensor)
        return s

    def _reducer(self, r) -> tuple:
        """A reducer by its structure: its arguments numbered (reducers are made anew
        by every te.sum-like call)."""
        saved = self.index
        self.index = dict(saved)
        for k, v in enumerate(r.lhs):
            self.index[v] = ("lhs", k)
        for k, v in enumerate(r.rhs):
            self.index[v] = ("rhs", k)
        try:
            return ("R", r.name, self.expr(r.result), self.expr(r.identity_element))
        finally:
            self.index = saved
