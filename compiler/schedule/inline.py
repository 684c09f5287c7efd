"""Inline injection: replace reads of inlined stages by their defining expressions.

Returns the *effective body* of every remaining stage without mutating any op, so the
same Schedule can be lowered many times (the tuner does).  Stages are processed in
topological order, so chains of inlined stages collapse fully.
"""
from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir.functor import Mutator, Visitor, substitute


class _Inliner(Mutator):
    def __init__(self, defs: dict):
        super().__init__()
        self.defs = defs   # Tensor -> (axis vars, expr)

    def visit_ProducerLoad(self, e):
        idx = self.visit_tuple(e.indices)
        d = self.defs.get(e.producer)
        if d is None:
            return e if idx is e.indices else E.ProducerLoad(e.producer, idx)
        vars_, body = d
        return substitute(body, dict(zip(vars_, idx)))


def inject_inline(sch) -> dict:
    """Map each non-inlined compute stage to its body with inlined stages substituted."""
    defs: dict = {}
    bodies: dict = {}
    for st in sch.stages:
        op = st.op
        if not isinstance(op, ComputeOp):
            continue
        body = op.body
        if defs:
            inl = _Inliner(defs)
            body = tuple(inl.visit(b) for b in body)
        if st.attach_type == "inline":
            vars_ = tuple(iv.var for iv in op.axis)
            for i, b in enumerate(body):
                defs[op.output(i)] = (vars_, b)
        else:
            bodies[st] = body
    return bodies


class _Reads(Visitor):
    def __init__(self):
        super().__init__()
        self.reads: dict = {}

    def visit_ProducerLoad(self, e):
        self.reads.setdefault(e.producer, []).append(e.indices)
        self.visit(e.indices)


def collect_reads(body) -> dict:
    """Tensor -> list of index tuples with which ``body`` reads it."""
    v = _Reads()
    v.visit(tuple(body))
    return v.reads
