"""``FoldConstant``: evaluate every subexpression whose inputs are all constants.

The maximal constant subexpressions of each function (operator calls whose arguments
are all constants) are evaluated together and replaced by Constants of the type
inference gave them.  Calls of functions are never folded; a constant that only feeds
other constants is not kept.

Evaluation is by our own build: ``relay.build_module`` registers an evaluator
(``register_evaluator``) that compiles one function returning all the folded values as
a tuple and runs it once (FoldConstant disabled inside, so it does not recurse).  This
pass cannot import the build (the build runs this pass), hence the registration; until
one is registered the operators' numpy references (``relay.evaluate``) are used.
"""
from __future__ import annotations

import numpy as np

from ...transform import PassContext
from ..evaluate import evaluate
from ..expr import Call, Constant, Function, Tuple, TupleGetItem
from ..functor import ExprMutator, post_order
from ..module import IRModule
from ..op.registry import Op
from ..ty import TensorType
from .infer_type import infer_expr_type

__all__ = ["fold_constant", "constant_subexpressions", "register_evaluator"]


def constant_subexpressions(body) -> list:
    """Maximal foldable tensor-valued nodes (computed from constants only), in
    post-order."""
    const: set = set()
    order = post_order(body, into_functions=False)
    for n in order:
        if isinstance(n, Constant):
            const.add(n)
        elif isinstance(n, Call) and isinstance(n.op, Op) and n.args and \
                all(a in const for a in n.args):
            const.add(n)
        elif isinstance(n, Tuple) and n.fields and all(f in const for f in n.fields):
            const.add(n)
        elif isinstance(n, TupleGetItem) and n.tuple_value in const:
            const.add(n)
    used_outside = {body} if body in const else set()
    for n in order:
        if n not in const:
            used_outside.update(c for c in _inputs(n) if c in const)
    return [n for n in order if n in used_outside and not isinstance(n, Constant)
            and isinstance(n.checked_type, TensorType)]


def _inputs(n) -> tuple:
    if isinstance(n, Call):
        return ((n.op,) if isinstance(n.op, Function) else ()) + n.args
    if isinstance(n, Tuple):
        return n.fields
    if isinstance(n, TupleGetItem):
        return (n.tuple_value,)
    if isinstance(n, Function):
        return (n.body,)
    return ()


class _Replace(ExprMutator):
    def __init__(self, values: dict):
        super().__init__()
        self.values = values

    def rebuild(self, e):
        hit = self.values.get(e)
        return hit if hit is not None else super().rebuild(e)


_EVALUATOR: list = []


def register_evaluator(fn) -> None:
    """``fn(typed Function without params) -> [numpy array per tuple field]``."""
    _EVALUATOR[:] = [fn]


def _evaluate(nodes) -> list:
    fn = infer_expr_type(Function([], Tuple(nodes)))
    if not _EVALUATOR:
        return list(evaluate(fn, []))  # type: ignore[call-overload]  # a tuple
    ctx = PassContext.current()
    with PassContext(opt_level=ctx.opt_level, config=dict(ctx.config),
                     required_pass=ctx.required_pass,
                     disabled_pass=tuple(ctx.disabled_pass) + ("FoldConstant",)):
        return _EVALUATOR[0](fn)


def fold_expr(fn: Function) -> Function:
    typed = infer_expr_type(fn)
    nodes = constant_subexpressions(typed.body)
    if not nodes:
        return typed
    values = _evaluate(nodes)
    consts = {}
    for n, v in zip(nodes, values):
        t = n.checked_type
        consts[n] = Constant(np.asarray(v, dtype=t.dtype).reshape(t.shape))
    return infer_expr_type(_Replace(consts).visit(typed))


def fold_constant(mod: IRModule) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        out[name] = fold_expr(fn)
    return out
