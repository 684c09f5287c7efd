"""The reference interpreter (``relay.create_executor("debug")``): numpy, no compilation.

Every operator runs its numpy reference (``Op.ref``), written from the operator's
definition, so results are an oracle for ``relay.build``.  Inputs bind by position or
by name; ``params`` bind the remaining parameters.  Results come back as NDArrays (a
tuple result as a tuple of them), as TVM's debug executor returns.
"""
from __future__ import annotations

import numpy as np

from ..runtime.ndarray import NDArray, array
from .errors import RelayInputError
from .evaluate import evaluate
from .expr import Function
from .module import IRModule
from .transform.bind import bind_params_by_name
from .transform.infer_type import infer_type

__all__ = ["Executor", "bind_params"]


def _wrap(v):
    if isinstance(v, tuple):
        return tuple(_wrap(x) for x in v)
    return array(np.asarray(v))


class Executor:
    """``create_executor("debug", mod=mod).evaluate()(*inputs, **params)``."""

    def __init__(self, mod: IRModule, device=None, target="llvm"):
        self.mod = infer_type(mod)
        self.device, self.target = device, target

    def evaluate(self, expr=None):
        fn = self.mod["main"] if expr is None else expr
        if not isinstance(fn, Function):
            fn = infer_type(IRModule.from_expr(fn))["main"]
        return lambda *args, **kwargs: self._run(fn, args, kwargs)

    def _run(self, fn: Function, args, kwargs):
        names = [p.name_hint for p in fn.params]
        values = list(args) + [None] * (len(names) - len(args))
        if len(args) > len(names):
            raise RelayInputError(f"main takes {len(names)} inputs ({names}), got {len(args)}")
        for k, v in kwargs.items():
            if k not in names:
                raise RelayInputError(f"unknown input {k!r}; inputs are {names}")
            values[names.index(k)] = v
        arrays = []
        for p, v in zip(fn.params, values):
            if v is None:
                raise RelayInputError(f"input {p.name_hint!r} was not given")
            a = v.numpy() if isinstance(v, NDArray) else np.asarray(v)
            t = p.type_annotation
            if a.shape != t.shape or str(a.dtype) != t.dtype:
                raise RelayInputError(f"input {p.name_hint!r}: got shape {a.shape} dtype "
                                      f"{a.dtype}, expected {t}")
            arrays.append(a)
        return _wrap(evaluate(fn, arrays))


def bind_params(mod: IRModule, params: dict) -> IRModule:
    return mod.with_function("main", bind_params_by_name(mod["main"], params))
