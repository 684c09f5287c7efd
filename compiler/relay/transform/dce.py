"""``DeadCodeElimination``: drop let bindings nobody uses (and inline single uses).

Relay graphs built here are dataflow graphs (a node exists only if the output depends on
it); dead code appears only as unused ``let`` bindings, which this pass removes.
"""
from __future__ import annotations

from ..expr import Let
from ..functor import ExprMutator, post_order
from ..module import IRModule
from .infer_type import infer_expr_type

__all__ = ["dead_code_elimination"]


class _Subst(ExprMutator):
    def __init__(self, vmap):
        super().__init__()
        self.vmap = vmap

    def rewrite_Var(self, v):
        return self.vmap.get(v, v)


class _DCE(ExprMutator):
    def __init__(self, inline_once: bool):
        super().__init__()
        self.inline_once = inline_once

    def rewrite_Let(self, e):
        body = self.new(e.body)
        uses = sum(1 for n in post_order(body) if n is e.var)
        if uses == 0:
            return body
        value = self.new(e.value)
        if uses == 1 and self.inline_once:
            return _Subst({e.var: value}).visit(body)
        return Let(e.var, value, body)


def dead_code_elimination(mod: IRModule, inline_once: bool = False) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        out[name] = infer_expr_type(_DCE(inline_once).visit(fn))
    return out
