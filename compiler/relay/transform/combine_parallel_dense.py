"""``CombineParallelDense``: dense layers reading the same input become one wider dense.

    y_i = dense(x, W_i)  (i = 1..n, n >= min_num_branches)
 -> y = dense(x, concatenate(W_1..W_n, axis=0)); y_i = split(y, offsets, axis=-1)[i]

One GEMM over the concatenated weights replaces n narrow ones (the Q/K/V projections
of an attention layer are the typical case).  Branches combine only when their weights
have the same input width and dtype and the same out_dtype.  Opt level 4 in the
default pipeline, as in TVM.
"""
from __future__ import annotations

import numpy as np

from ..expr import Call, Constant, Function
from ..functor import ExprMutator, post_order
from ..module import IRModule
from ..op import nn as nn_ops
from ..op import transform as tops
from ..op.registry import Op
from .infer_type import infer_expr_type

__all__ = ["combine_parallel_dense"]


def _dense_groups(body, min_branches: int) -> list:
    groups: dict = {}
    for n in post_order(body, into_functions=False):
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.dense":
            w = n.args[1].checked_type
            key = (n.args[0], w.shape[1], w.dtype, n.attrs.out_dtype)
            groups.setdefault(key, []).append(n)
    return [g for g in groups.values() if len(g) >= min_branches]


class _Combine(ExprMutator):
    def __init__(self, groups: list):
        super().__init__()
        self.member: dict = {}
        for g in groups:
            for k, d in enumerate(g):
                self.member[d] = (g, k)
        self.combined: dict = {}

    def rewrite_Call(self, e):
        if e not in self.member:
            return self.rebuild(e)
        group, k = self.member[e]
        first = id(group[0])
        if first not in self.combined:
            weights = [self.new(d.args[1]) for d in group]
            units = [d.args[1].checked_type.shape[0] for d in group]
            # constant weights are joined here (AlterOpLayout, next, packs constants only)
            wide_w = Constant(np.concatenate([w.data for w in weights], axis=0)) \
                if all(isinstance(w, Constant) for w in weights) else \
                tops.concatenate(weights, axis=0)
            wide = nn_ops.dense(self.new(group[0].args[0]), wide_w,
                                out_dtype=group[0].attrs.out_dtype)
            offsets, acc = [], 0
            for u in units[:-1]:
                acc += u
                offsets.append(acc)
            self.combined[first] = tops.split(wide, offsets, axis=-1)
        return self.combined[first][k]


def combine_parallel_dense(mod: IRModule, min_num_branches: int = 3) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        typed = infer_expr_type(fn)
        groups = _dense_groups(typed.body, min_num_branches)
        new = _Combine(groups).visit(typed) if groups else typed
        out[name] = infer_expr_type(new) if isinstance(new, Function) else new
    return out
