"""Read-only analyses of relay expressions: variables, calls and operators."""
from __future__ import annotations

from ..expr import Call, Function, Let, Var
from ..functor import post_order, post_order_visit
from ..op.registry import Op

__all__ = ["free_vars", "bound_vars", "all_vars", "post_order_visit", "count_calls",
           "list_ops"]


def bound_vars(expr) -> list:
    """Vars bound in ``expr`` (function parameters and let variables), in order."""
    out: list = []
    for node in post_order(expr):
        if isinstance(node, Function):
            out.extend(p for p in node.params if p not in out)
        elif isinstance(node, Let) and node.var not in out:
            out.append(node.var)
    return out


def all_vars(expr) -> list:
    return [n for n in post_order(expr) if isinstance(n, Var)]


def free_vars(expr) -> list:
    """Vars used by ``expr`` but not bound inside it, in order of first use (TVM's
    ``relay.analysis.free_vars``: the parameters a Function over ``expr`` needs)."""
    bound = set(bound_vars(expr))
    return [v for v in all_vars(expr) if v not in bound]


def count_calls(expr) -> int:
    return sum(1 for n in post_order(expr) if isinstance(n, Call))


def list_ops(expr) -> list:
    """Names of the operators called in ``expr`` (sorted, unique)."""
    return sorted({n.op.name for n in post_order(expr)
                   if isinstance(n, Call) and isinstance(n.op, Op)})
