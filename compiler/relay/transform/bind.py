"""Binding parameters to constants (TVM's ``bind_params_by_name``)."""
from __future__ import annotations

import numpy as np

from ...runtime.ndarray import NDArray
from ..errors import RelayError
from ..expr import Constant, Function
from ..functor import ExprMutator

__all__ = ["bind_params", "bind_params_by_name"]


class _Substitute(ExprMutator):
    def __init__(self, vmap: dict):
        super().__init__()
        self.vmap = vmap

    def rewrite_Var(self, v):
        return self.vmap.get(v, v)


def bind_params(fn: Function, bind: dict, keep) -> Function:
    """``fn`` with the parameters in ``bind`` (Var -> Expr) replaced; ``keep`` remain."""
    body = _Substitute(bind).visit(fn.body)
    return Function(tuple(keep), body, fn.ret_type, fn.attrs)


def bind_params_by_name(fn: Function, params: dict) -> Function:
    """Replace the parameters named in ``params`` by constants of the given values."""
    names = {p.name_hint: p for p in fn.params}
    bind = {}
    for name, value in params.items():
        p = names.get(name)
        if p is None:
            continue
        arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
        t = p.type_annotation
        if t is not None and (arr.shape != t.shape or str(arr.dtype) != t.dtype):
            raise RelayError(f"param {name!r}: got shape {arr.shape} dtype {arr.dtype}, "
                             f"expected {t}")
        bind[p] = Constant(arr)
    return bind_params(fn, bind, [p for p in fn.params if p not in bind])
