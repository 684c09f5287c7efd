"""``IRModule``: the named functions of a program (TVM's ``tvm.IRModule``).

``IRModule.from_expr(expr)`` wraps an expression (or takes a Function) as ``main``;
``mod["main"]`` reads it.  Passes return new modules; a module is only changed through
``mod[name] = function`` (TVM's API), never by a pass.
"""
from __future__ import annotations

from .analysis import free_vars
from .errors import RelayError
from .expr import Expr, Function
from .printer import astext

__all__ = ["IRModule"]


class IRModule:
    def __init__(self, functions=None):
        self.functions: dict = {}
        for name, fn in dict(functions or {}).items():
            self[name] = fn

    @staticmethod
    def from_expr(expr, functions=None) -> IRModule:
        if not isinstance(expr, Expr):
            raise RelayError(f"IRModule.from_expr: {expr!r} is not a relay expression")
        fn = expr if isinstance(expr, Function) else Function(free_vars(expr), expr)
        mod = IRModule(functions)
        mod["main"] = fn
        return mod

    def __getitem__(self, name) -> Function:
        key = getattr(name, "name_hint", name)
        if key not in self.functions:
            raise RelayError(f"IRModule has no function {key!r}; it has "
                             f"{sorted(self.functions)}")
        return self.functions[key]

    def __setitem__(self, name, fn) -> None:
        if not isinstance(fn, Function):
            raise RelayError(f"IRModule[{name!r}]: {type(fn).__name__} is not a relay.Function")
        self.functions[getattr(name, "name_hint", name)] = fn

    def __contains__(self, name) -> bool:
        return getattr(name, "name_hint", name) in self.functions

    def get_global_vars(self) -> list:
        return sorted(self.functions)

    def with_function(self, name: str, fn: Function) -> IRModule:
        out = IRModule(self.functions)
        out[name] = fn
        return out

    def astext(self, show_meta_data: bool = False) -> str:
        return astext(self)

    __str__ = astext

    def __repr__(self) -> str:
        return f"IRModule({sorted(self.functions)})"
