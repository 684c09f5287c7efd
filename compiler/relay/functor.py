"""The one traversal base of relay: iterative post-order walk, visitor and mutator.

``post_order(expr)`` lists every node reachable from ``expr`` once, children before their
parents (a DAG is visited once; no recursion, so deep graphs are fine).  ``ExprVisitor``
calls ``visit_<Class>(node)`` in that order.  ``ExprMutator`` rebuilds bottom-up: it maps
each node to ``rewrite_<Class>(node)`` (default: the node rebuilt over the rewritten
children, or the node itself when no child changed), memoized so shared subexpressions
stay shared.  A Call's ``op`` is a child only when it is an expression (a Function).
"""
from __future__ import annotations

from .expr import Call, Constant, Expr, Function, Let, Tuple, TupleGetItem, Var

__all__ = ["children", "post_order", "post_order_visit", "ExprVisitor", "ExprMutator"]


def children(e) -> tuple:
    t = type(e)
    if t is Call:      # arguments before a called function (TVM prints them first)
        return e.args + ((e.op,) if isinstance(e.op, Expr) else ())
    if t is Tuple:
        return e.fields
    if t is TupleGetItem:
        return (e.tuple_value,)
    if t is Let:
        return (e.var, e.value, e.body)
    if t is Function:
        return e.params + (e.body,)
    return ()


def post_order(expr, into_functions: bool = True) -> list:
    """Nodes reachable from ``expr``, children first; with ``into_functions=False`` the
    parameters and bodies of nested functions are not entered."""
    order, seen = [], set()
    stack = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if not into_functions and type(node) is Function and node is not expr:
            continue
        for c in reversed(children(node)):
            if id(c) not in seen:
                stack.append((c, False))
    return order


def post_order_visit(expr, fn) -> None:
    """Call ``fn(node)`` on every node of ``expr``, children first (TVM's name)."""
    for node in post_order(expr):
        fn(node)


class ExprVisitor:
    def visit(self, expr) -> None:
        for node in post_order(expr):
            fn = getattr(self, "visit_" + type(node).__name__, None)
            if fn is not None:
                fn(node)


class ExprMutator:
    def __init__(self):
        self.memo: dict = {}

    def visit(self, expr):
        memo = self.memo
        for node in post_order(expr):
            if node in memo:
                continue
            fn = getattr(self, "rewrite_" + type(node).__name__, None)
            memo[node] = fn(node) if fn is not None else self.rebuild(node)
        return memo[expr]

    def new(self, e):
        """The rewritten form of child ``e`` (already visited)."""
        return self.memo.get(e, e) if isinstance(e, Expr) else e

    def rebuild(self, e):
        """``e`` over its rewritten children (``e`` itself when none changed)."""
        t = type(e)
        if t is Var or t is Constant:
            return e
        if t is Call:
            op = self.new(e.op)
            args = tuple(self.new(a) for a in e.args)
            if op is e.op and all(a is b for a, b in zip(args, e.args)):
                return e
            return Call(op, args, e.attrs)
        if t is Tuple:
            fields = tuple(self.new(f) for f in e.fields)
            return e if all(a is b for a, b in zip(fields, e.fields)) else Tuple(fields)
        if t is TupleGetItem:
            v = self.new(e.tuple_value)
            return e if v is e.tuple_value else TupleGetItem(v, e.index)
        if t is Let:
            var, value, body = self.new(e.var), self.new(e.value), self.new(e.body)
            if var is e.var and value is e.value and body is e.body:
                return e
            return Let(var, value, body)
        if t is Function:
            params = tuple(self.new(p) for p in e.params)
            body = self.new(e.body)
            if body is e.body and all(a is b for a, b in zip(params, e.params)):
                return e
            return Function(params, body, e.ret_type, e.attrs)
        raise TypeError(f"ExprMutator: unknown node {type(e).__name__}")
