"""``SimplifyExpr``: reshape chains, no-op reshapes and transposes, composed transposes.

- ``reshape(reshape(x, a), b)`` -> ``reshape(x, b)`` (also through squeeze, expand_dims
  and batch_flatten); a reshape-like op to the input's own shape -> ``x``;
- ``transpose(x, axes)`` with axes in order -> ``x``;
  ``transpose(transpose(x, a), b)`` -> ``transpose(x, a[b])``.
Invariant: every node the rewrite creates is typed at once (``infer_type.typed``), so a
parent's rule can read its rewritten children's shapes.
"""
from __future__ import annotations

from ..expr import Call
from ..functor import ExprMutator
from ..module import IRModule
from ..op import transform as tops
from ..op.registry import Op
from .infer_type import infer_expr_type, typed

__all__ = ["simplify_expr"]

_RESHAPES = ("reshape", "squeeze", "expand_dims", "nn.batch_flatten")


def _name(e):
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def _axes(attrs_axes, ndim: int) -> list:
    axes = list(attrs_axes) if attrs_axes is not None else list(range(ndim))[::-1]
    return [a % ndim for a in axes]


class _Simplify(ExprMutator):
    def rewrite_Call(self, e):
        name = _name(e)
        if name in _RESHAPES:
            x = self.new(e.args[0])
            out_shape = e.checked_type.shape
            if x.checked_type.shape == out_shape:
                return x
            if _name(x) in _RESHAPES:
                return typed(tops.reshape(x.args[0], out_shape))
        elif name == "transpose":
            x = self.new(e.args[0])
            ndim = x.checked_type.ndim
            axes = _axes(e.attrs.axes, ndim)
            if _name(x) == "transpose":
                inner = _axes(x.attrs.axes, ndim)
                axes = [inner[a] for a in axes]
                x = x.args[0]
            if axes == list(range(ndim)):
                return x
            return typed(tops.transpose(x, axes))
        return _typed_rebuild(self, e)

    def rewrite_Tuple(self, e):
        return _typed_rebuild(self, e)

    rewrite_TupleGetItem = rewrite_Tuple


def _typed_rebuild(m: ExprMutator, e):
    out = m.rebuild(e)
    return out if out is e else typed(out)


def simplify_expr(mod: IRModule) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        out[name] = infer_expr_type(_Simplify().visit(infer_expr_type(fn)))
    return out
