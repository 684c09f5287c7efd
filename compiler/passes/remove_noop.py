"""Pass ``remove_noop``: delete statements that do nothing and trivial loops.

Removes: loops of extent 1 (the variable is replaced by the loop min and the body
simplified), loops of extent <= 0, Evaluate of constants, empty or no-op sequences,
loops/lets/allocations/attributes whose body is a no-op, IfThenElse with a constant
condition or with no-op branches.

Invariants: expressions are assumed side-effect free (TIR has no calls with effects), so
a statement whose body does nothing can be dropped with its condition/value.  Returns the
same PrimFunc when nothing changed; the function body is never left empty (a no-op
``Evaluate(0)`` stands in).
"""
from __future__ import annotations

from ..tir.analysis import uses_var, vars_read
from ..tir.arith import Simplifier
from ..tir.expr import Not, PrimExpr
from ..tir.functor import Mutator, transform_func
from ..tir.stmt import For, PrimFunc
from .common import NOOP, const_int, fold_if_then_else, is_noop, rebuild_seq
from .simplify import make_replacer

__all__ = ["remove_noop"]


class _NoopRemover(Mutator):
    def __init__(self, read: set):
        super().__init__()
        self.simp = Simplifier()
        # the Vars read anywhere in the function before the pass: a loop variable not
        # among them is read nowhere, and asking ``uses_var`` of each of a nest of
        # extent-1 loops walked its body once per loop (a tenth of a build)
        self.read = read

    def visit(self, node):
        if isinstance(node, PrimExpr):
            return node
        return super().visit(node)

    def visit_For(self, s):
        n = const_int(s.extent)
        if n is not None and n <= 0:
            return NOOP
        body = self.visit(s.body)
        if is_noop(body):
            return NOOP
        if n == 1:
            if s.loop_var in self.read and uses_var(body, s.loop_var):
                body = make_replacer(body, s.loop_var, self.simp)(s.min)
            return body
        if body is s.body:
            return s
        return For(s.loop_var, s.min, s.extent, s.kind, body, s.annotations)

    def visit_IfThenElse(self, s):
        return fold_if_then_else(s, s.condition, self.visit,
                                 lambda c: self.simp.visit(Not(c)))

    def _body_only(self, s):
        """LetStmt / Allocate / AttrStmt: gone when their body does nothing."""
        r = self.generic_visit(s)
        return NOOP if is_noop(r.body) else r

    visit_LetStmt = visit_Allocate = visit_AttrStmt = _body_only

    def visit_Evaluate(self, s):
        return NOOP if is_noop(s) else s

    def visit_SeqStmt(self, s):
        return rebuild_seq(s, self.visit)


def remove_noop(func: PrimFunc) -> PrimFunc:
    """Drop no-op statements and loops of extent 1 from ``func``."""
    return transform_func(func, _NoopRemover(vars_read(func.body)))
