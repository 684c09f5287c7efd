"""Evaluation of relay expressions with the operators' numpy references.

``evaluate(fn, args)`` walks ``fn`` once in post-order and runs every operator's
``Op.ref`` (numpy, written from the operator's definition).  The debug interpreter and
FoldConstant both use it; it depends on nothing but the IR, so passes can use it.
"""
from __future__ import annotations

import numpy as np

from .errors import RelayError
from .expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var
from .functor import post_order
from .op.registry import Op

__all__ = ["evaluate"]


def evaluate(fn: Function, args: list) -> object:
    """Values (numpy arrays / tuples) of ``fn`` applied to ``args``."""
    env = dict(zip(fn.params, args))
    return _eval(fn.body, env)


def _eval(body, env: dict):
    values: dict = {}
    for node in post_order(body, into_functions=False):
        if node in values:
            continue
        if isinstance(node, Var):
            if node in env:
                values[node] = env[node]
            continue                        # a function's own parameter: bound later
        values[node] = _eval_node(node, values)
    return values[body] if body in values else env[body]


def _eval_node(node, values):
    if isinstance(node, Constant):
        return node.data
    if isinstance(node, Call):
        args = [values[a] for a in node.args]
        if isinstance(node.op, Op):
            with np.errstate(all="ignore"):
                return node.op.ref(*args, node.attrs)
        return evaluate(node.op, args)
    if isinstance(node, Tuple):
        return tuple(values[f] for f in node.fields)
    if isinstance(node, TupleGetItem):
        return values[node.tuple_value][node.index]
    if isinstance(node, Let):
        return _eval(node.body, {**values, node.var: values[node.value]})
    if isinstance(node, Function):
        return node
    raise RelayError(f"interpreter: cannot evaluate {type(node).__name__}")
