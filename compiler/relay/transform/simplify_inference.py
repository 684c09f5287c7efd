"""``SimplifyInference``: batch_norm becomes a scale and a shift, dropout the identity.

``batch_norm(x, g, b, m, v)[0]`` -> ``x * s + (b - m * s)`` with ``s = g / sqrt(v + eps)``
(without g or b when ``scale``/``center`` are off), the per-channel vectors expanded to
broadcast along ``axis``; outputs 1 and 2 are the moving mean and variance.  With
constant statistics FoldConstant then folds ``s`` and the shift to constants, and
FoldScaleAxis folds ``s`` into a preceding convolution or dense weight.
"""
from __future__ import annotations

from ..expr import Call, const
from ..functor import ExprMutator
from ..module import IRModule
from ..op import tensor as ops
from ..op import transform as tops
from ..op.registry import Op
from .infer_type import infer_expr_type

__all__ = ["simplify_inference"]


def _is(e, name) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


class _Simplify(ExprMutator):
    def rewrite_TupleGetItem(self, e):
        bn = e.tuple_value
        if not _is(bn, "nn.batch_norm"):
            return self.rebuild(e)
        x, g, b, m, v = (self.new(a) for a in bn.args)
        a = bn.attrs
        if e.index == 1:
            return m
        if e.index == 2:
            return v
        ndim = bn.args[0].checked_type.ndim
        axis = a.axis % ndim
        scale = ops.rsqrt(ops.add(v, const(a.epsilon, bn.args[4].checked_type.dtype)))
        if a.scale:
            scale = ops.multiply(scale, g)
        shift = ops.negative(ops.multiply(m, scale))
        if a.center:
            shift = ops.add(shift, b)
        trailing = ndim - axis - 1
        if trailing:
            scale = tops.expand_dims(scale, 1, trailing)
            shift = tops.expand_dims(shift, 1, trailing)
        return ops.add(ops.multiply(x, scale), shift)

    def rewrite_Call(self, e):
        if _is(e, "nn.dropout"):
            return self.new(e.args[0])
        return self.rebuild(e)


def simplify_inference(mod: IRModule) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        typed = infer_expr_type(fn)
        out[name] = infer_expr_type(_Simplify().visit(typed))
    return out

