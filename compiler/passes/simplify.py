"""Pass ``simplify``: canonical arithmetic simplification of a whole PrimFunc.

Every expression is simplified with the ranges of the loops (and integer lets) that
enclose it, so loop-bound predicates and split/fuse index arithmetic fold away.
Statements whose fate becomes constant are resolved: an IfThenElse with a provably
true/false condition is replaced by the taken branch, loops of extent <= 0 vanish, and
sequences drop the no-ops this produces.

Invariants: returns the same PrimFunc object when nothing changed; one ``Simplifier`` per
call, so shared subexpressions are simplified once.
"""
from __future__ import annotations

from ..tir import dtype as dt
from ..tir.arith import Simplifier
from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    Broadcast,
    BufferLoad,
    FloorDiv,
    FloorMod,
    Max,
    Min,
    Mul,
    Node,
    PrimExpr,
    Ramp,
    Sub,
    Var,
)
from ..tir.functor import Mutator, Visitor, _fields_of, transform_func
from ..tir.stmt import AttrStmt, Buffer, BufferStore, Evaluate, For, LetStmt, PrimFunc
from .common import NOOP, const_int, fold_if_then_else, is_noop, loop_range, rebuild_seq

__all__ = ["simplify", "simplify_stmt", "make_replacer", "StmtSimplifier"]


class StmtSimplifier(Mutator):
    """Statement walker feeding every expression to one ``Simplifier``."""

    def __init__(self, simplifier: Simplifier | None = None):
        super().__init__()
        self.simp = simplifier if simplifier is not None else Simplifier()

    def visit(self, node):
        if isinstance(node, PrimExpr):
            return self.simp.visit(node)
        return super().visit(node)

    def expr(self, e):
        """Hook: how one expression of a statement is rewritten."""
        return self.simp.visit(e)

    def visit_For(self, s):
        mn, ext = self.expr(s.min), self.expr(s.extent)
        n = const_int(ext)
        if n is not None and n <= 0:
            return NOOP
        self.simp.bind(s.loop_var, loop_range(self.simp, mn, ext))
        body = self.visit(s.body)
        self.simp.unbind(s.loop_var)
        if is_noop(body):
            return NOOP
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return For(s.loop_var, mn, ext, s.kind, body, s.annotations)

    def visit_IfThenElse(self, s):
        return fold_if_then_else(s, self.expr(s.condition), self.visit)

    def visit_LetStmt(self, s):
        v = self.expr(s.value)
        if dt.is_integral(v.dtype) and dt.lanes(v.dtype) == 1:
            self.simp.bind(s.var, self.simp.bound(v))
        body = self.visit(s.body)
        if v is s.value and body is s.body:
            return s
        return LetStmt(s.var, v, body)

    def visit_BufferStore(self, s):
        v = self.expr(s.value)
        idx = self.visit_tuple(s.indices)
        if v is s.value and idx is s.indices:
            return s
        return BufferStore(s.buffer, v, idx)

    def visit_Evaluate(self, s):
        v = self.expr(s.value)
        return s if v is s.value else Evaluate(v)

    def visit_AttrStmt(self, s):
        val = self.expr(s.value) if isinstance(s.value, PrimExpr) else s.value
        body = self.visit(s.body)
        if val is s.value and body is s.body:
            return s
        return AttrStmt(s.node, s.key, val, body)

    def visit_SeqStmt(self, s):
        return rebuild_seq(s, self.visit)


_BINARY = frozenset((Add, Sub, Mul, FloorDiv, FloorMod, Min, Max, LT, LE, GT, GE, EQ, NE))


class _Dependents(Visitor):
    """Collects every node (expression or statement) that reads ``var``."""

    def __init__(self, var):
        super().__init__()
        self.var = var
        self.memo: dict = {}
        self.hits: set = set()

    def visit(self, node):
        r = self.memo.get(node)
        if r is None:
            if type(node) is tuple:
                r = any([self.visit(x) for x in node if isinstance(x, (Node, tuple))])
            elif type(node) is Var:
                r = node is self.var
            else:
                r = self.generic_visit(node)
                if r:
                    self.hits.add(node)
            self.memo[node] = r
        return r

    def generic_visit(self, node):
        if isinstance(node, Buffer) or not isinstance(node, Node):
            return False
        found = False
        for name in _fields_of(type(node)):
            v = getattr(node, name)
            if isinstance(v, (Node, tuple)) and self.visit(v):
                found = True
        return found


class _Replacer(StmtSimplifier):
    """Substitutes one Var and re-simplifies only the nodes that read it."""

    def __init__(self, var, deps: set, simplifier: Simplifier):
        super().__init__(simplifier)
        self.var = var
        self.value = None
        self.deps = deps

    def expr(self, e):
        if e is self.var:
            return self.value
        if e not in self.deps:
            return e             # no use of the variable below: already simplified
        return self.simp.visit(self._subst(e))

    def _subst(self, e):
        """Rebuild the nodes of ``e`` that read the variable; simplified once, at the root."""
        if e is self.var:
            return self.value
        if e not in self.deps:
            return e
        t = type(e)
        if t in _BINARY:
            return t(self._subst(e.a), self._subst(e.b))
        if t is BufferLoad:
            return BufferLoad(e.buffer, tuple([self._subst(i) for i in e.indices]))
        if t is Ramp:
            return Ramp(self._subst(e.base), self._subst(e.stride), e.lanes)
        if t is Broadcast:
            return Broadcast(self._subst(e.value), e.lanes)
        return Mutator.generic_visit(self, e)    # rarer nodes: children simplified one by one

    def visit(self, node):
        if type(node) is tuple:
            return self.visit_tuple(node)
        if isinstance(node, PrimExpr):
            return self.expr(node)
        if node not in self.deps:
            return node
        return Mutator.visit(self, node)


def make_replacer(stmt, var, simplifier: Simplifier):
    """A callable ``value -> stmt[var := value]``, simplified (used to unroll loops).

    The nodes reading ``var`` are found once, so each replacement only rebuilds those;
    ``simplifier`` should carry the ranges of the loops enclosing ``stmt``.
    """
    deps = _Dependents(var)
    deps.visit(stmt)
    rep = _Replacer(var, deps.hits, simplifier)

    def replace(value):
        rep.value = value
        return rep.visit(stmt)
    return replace


def simplify_stmt(stmt, simplifier: Simplifier | None = None):
    """Simplify one statement tree (helper for passes that create new code)."""
    return StmtSimplifier(simplifier).visit(stmt)


def simplify(func: PrimFunc) -> PrimFunc:
    """Simplify every expression of ``func`` under its loop ranges; drop dead code."""
    return transform_func(func, StmtSimplifier())
