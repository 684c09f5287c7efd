"""``IRModule``: the named functions of a program (TVM's ``tvm.IRModule``).

``IRModule.from_expr(expr)`` wraps an expression (or takes a Function) as ``main``;
``mod["main"]`` reads it.  It extends the TIR module (``compiler.tir.module``), so a
module may also hold PrimFuncs (``tvm.IRModule({"main": prim_func})``).  Passes return
new modules; a module is only changed through ``mod[name] = function`` (TVM's API),
never by a pass.
"""
from __future__ import annotations

from ..tir import module as _tir_module
from ..tir.stmt import PrimFunc
from .analysis import free_vars
from .errors import RelayError
from .expr import Expr, Function
from .printer import astext

__all__ = ["IRModule"]


class IRModule(_tir_module.IRModule):
    @classmethod
    def from_expr(cls, expr, functions=None) -> IRModule:
        if not isinstance(expr, (Expr, PrimFunc)):
            raise RelayError(f"IRModule.from_expr: {expr!r} is not a relay expression or a "
                             "tir.PrimFunc")
        fn = expr if isinstance(expr, (Function, PrimFunc)) else Function(free_vars(expr), expr)
        mod = cls(functions)
        mod["main"] = fn
        return mod

    def __getitem__(self, name):
        key = getattr(name, "name_hint", name)
        if key not in self.functions:
            raise RelayError(f"IRModule has no function {key!r}; it has "
                             f"{sorted(self.functions)}")
        return self.functions[key]

    def _check_function(self, name: str, fn) -> None:
        if not isinstance(fn, (Function, PrimFunc)):
            raise RelayError(f"IRModule[{name!r}]: {type(fn).__name__} is not a "
                             "relay.Function or a tir.PrimFunc")

    def get_global_vars(self) -> list:
        return sorted(self.functions)

    def with_function(self, name: str, fn: Function) -> IRModule:
        out = IRModule(self.functions)
        out[name] = fn
        return out

    def astext(self, show_meta_data: bool = False) -> str:
        prim = self.prim_funcs()
        if not prim:
            return astext(self)
        relay_part = {k: f for k, f in self.functions.items() if k not in prim}
        tir_text = _tir_module.IRModule(prim).script()
        return astext(IRModule(relay_part)) + tir_text if relay_part else tir_text

    __str__ = astext
    script = astext

    def __repr__(self) -> str:
        return f"IRModule({sorted(self.functions)})"
