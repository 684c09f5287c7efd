"""``EliminateCommonSubexpr``: one node for each distinct operator call.

Two calls of the same operator with the same (already deduplicated) arguments and equal
attributes are the same value; tuple accesses likewise.  Constants are shared when their
dtype, shape and bytes match.
"""
from __future__ import annotations

from ..functor import ExprMutator
from ..module import IRModule
from ..op.registry import Op
from .infer_type import infer_expr_type

__all__ = ["eliminate_common_subexpr"]


class _CSE(ExprMutator):
    def __init__(self):
        super().__init__()
        self.table: dict = {}

    def _share(self, key, node):
        hit = self.table.get(key)
        if hit is not None:
            return hit
        self.table[key] = node
        return node

    def rewrite_Call(self, e):
        node = self.rebuild(e)
        if not isinstance(node.op, Op):
            return node
        key = ("call", node.op.name, tuple(id(a) for a in node.args), node.attrs)
        return self._share(key, node)

    def rewrite_TupleGetItem(self, e):
        node = self.rebuild(e)
        return self._share(("get", id(node.tuple_value), node.index), node)

    def rewrite_Constant(self, c):
        d = c.data
        return self._share(("const", str(d.dtype), d.shape, d.tobytes()), c) \
            if d.size <= 64 else c


def eliminate_common_subexpr(mod: IRModule) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        out[name] = infer_expr_type(_CSE().visit(fn))
    return out



