"""Running one relay pass over a function, as TVM's ``_run_opt_pass``."""
from __future__ import annotations

from ..errors import RelayError
from ..expr import Function
from ..module import IRModule

__all__ = ["main_function", "run_opt_pass"]


def main_function(func) -> Function:
    """``func`` itself, or the ``main`` of an IRModule."""
    if isinstance(func, IRModule):
        func = func["main"]
    if not isinstance(func, Function):
        raise RelayError(f"data_dep_optimization: expected a relay Function or an IRModule, "
                         f"got {type(func).__name__}")
    return func


def run_opt_pass(func, opt_pass) -> Function:
    """``opt_pass`` applied to ``func`` (a Function or IRModule); the new main Function."""
    return opt_pass(IRModule.from_expr(main_function(func)))["main"]
