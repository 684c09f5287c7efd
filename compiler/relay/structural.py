"""Structural equality and hash of relay expressions (TVM's ``tvm.ir.structural_equal``).

``structural_key(expr)`` is a tuple describing the graph in post-order: each node by its
kind, operator, attributes, type annotation, constant bytes and the positions of its
children, so equal keys mean equal structure *and* equal sharing.  Variables bound
inside the expression are numbered by definition; free variables are compared by
identity unless ``map_free_vars`` (then by order of first use).  ``structural_hash``
is a sha256 of that key, stable across processes.
"""
from __future__ import annotations

import hashlib

from . import expr as X
from .analysis import bound_vars
from .functor import post_order
from .op.attrs import attrs_items
from .op.registry import Op

__all__ = ["structural_key", "structural_equal", "structural_hash"]


def structural_key(expr, map_free_vars: bool = False) -> tuple:
    index: dict = {}
    bound = {v: k for k, v in enumerate(bound_vars(expr))}
    free: dict = {}
    out: list = []
    for node in post_order(expr):
        index[node] = len(out)
        out.append(_node_key(node, index, bound, free, map_free_vars))
    return tuple(out)


def _node_key(n, index, bound, free, map_free):
    t = type(n)
    if t is X.Var:
        if n in bound:
            ident = ("bound", bound[n])
        elif map_free:
            ident = ("free", free.setdefault(n, len(free)))
        else:
            ident = ("free-id", id(n))
        return ("Var", ident, repr(n.type_annotation))
    if t is X.Constant:
        d = n.data
        return ("Const", str(d.dtype), d.shape, hashlib.sha256(d.tobytes()).hexdigest())
    if t is X.Call:
        op = ("op", n.op.name) if isinstance(n.op, Op) else ("fn", index[n.op])
        return ("Call", op, tuple(index[a] for a in n.args), _attrs_key(n.attrs))
    if t is X.Tuple:
        return ("Tuple", tuple(index[f] for f in n.fields))
    if t is X.TupleGetItem:
        return ("Get", index[n.tuple_value], n.index)
    if t is X.Let:
        return ("Let", index[n.var], index[n.value], index[n.body])
    if t is X.Function:
        return ("Fn", tuple(index[p] for p in n.params), index[n.body], repr(n.ret_type),
                tuple(sorted((k, repr(v)) for k, v in n.attrs.items())))
    raise TypeError(f"structural_key: unknown node {t.__name__}")


def _attrs_key(attrs):
    return None if attrs is None else (type(attrs).__name__, tuple(attrs_items(attrs)))


def structural_equal(a, b, map_free_vars: bool = False) -> bool:
    return structural_key(a, map_free_vars) == structural_key(b, map_free_vars)


def structural_hash(expr, map_free_vars: bool = True) -> int:
    text = repr(structural_key(expr, map_free_vars))
    return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16)
