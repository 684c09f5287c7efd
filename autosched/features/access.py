"""Access analysis of compute ops (Ansor's AccessAnalyzer), memoized per op.

For each compute op: which tensors it reads and with which indices, whether every index
is a plain axis variable or constant (simple access), whether it has branches or
expensive math, and from that the predicates the sketch rules ask:
``is_strictly_inlineable`` (cheap elementwise, always inlined) and
``needs_multi_level_tiling`` (a reduction with data reuse, e.g. matmul or conv).
Ops are immutable, so results are cached by op identity.
"""
from __future__ import annotations

from compiler.schedule.inline import collect_reads
from compiler.te.tensor import ComputeOp
from compiler.tir import expr as E
from compiler.tir.functor import Visitor

_EXPENSIVE = {"exp", "log", "tanh", "sigmoid", "erf", "pow", "sqrt", "rsqrt"}


class _Features(Visitor):
    def __init__(self):
        super().__init__()
        self.branch = False
        self.expensive = False

    def visit_Select(self, e):
        self.branch = True
        self.generic_visit(e)

    def visit_Call(self, e):
        if e.op == "if_then_else":
            self.branch = True
        if e.op in _EXPENSIVE:
            self.expensive = True
        self.generic_visit(e)

    def visit_ProducerLoad(self, e):
        self.visit(e.indices)


def _vars_in(exprs) -> set:
    out = set()

    class _V(Visitor):
        def visit_Var(self, v):
            out.add(v)

    _V().visit(tuple(exprs))
    return out


class OpInfo:
    __slots__ = ("reads", "simple_access", "branch", "expensive", "strictly_inlineable",
                 "multi_level_tiling")

    def __init__(self, op: ComputeOp):
        self.reads = collect_reads(op.body)
        self.simple_access = all(
            isinstance(i, (E.Var, E.IntImm)) for idxs in self.reads.values()
            for idx in idxs for i in idx)
        f = _Features()
        f.visit(op.body)
        self.branch, self.expensive = f.branch, f.expensive
        self.strictly_inlineable = (not op.reduce_axis and self.simple_access
                                    and not self.branch and not self.expensive)
        self.multi_level_tiling = self._needs_mlt(op)

    def _needs_mlt(self, op) -> bool:
        n_missing = 0
        axes = {iv.var for iv in op.axis}
        for idxs in self.reads.values():
            used = _vars_in(i for idx in idxs for i in idx)
            if any(a not in used for a in axes):
                n_missing += 1
            if n_missing >= 2 or (n_missing >= 1 and op.reduce_axis):
                return True
        return False


class AccessAnalyzer:
    def __init__(self, ops, outputs):
        self._info: dict = {}
        self.outputs = list(outputs)

    def info(self, op) -> OpInfo:
        inf = self._info.get(op)
        if inf is None:
            inf = self._info[op] = OpInfo(op)
        return inf

    def is_strictly_inlineable(self, op) -> bool:
        return isinstance(op, ComputeOp) and self.info(op).strictly_inlineable

    def needs_multi_level_tiling(self, op) -> bool:
        return isinstance(op, ComputeOp) and self.info(op).multi_level_tiling

    def is_simple_access(self, op) -> bool:
        return isinstance(op, ComputeOp) and self.info(op).simple_access
