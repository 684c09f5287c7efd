"""The one visitor/mutator base for all TIR traversal.

``Visitor.visit(node)`` dispatches to ``visit_<ClassName>`` when a subclass defines it and
otherwise walks the node's fields generically.  ``Mutator.visit`` rebuilds a node only
when one of its children changed, so unchanged subtrees keep their identity (passes
rely on this to stay cheap, and tests on it to check that a pass was a no-op).

Generic walking covers every dataclass node: fields holding expressions, statements or
tuples of them are visited; other fields (buffers, names, ints, tensors) are kept.
"""
from __future__ import annotations

from dataclasses import fields

from .expr import IterVar, Node, Range
from .stmt import Buffer, PrimFunc

_FIELDS: dict = {}


def _fields_of(cls) -> tuple:
    f = _FIELDS.get(cls)
    if f is None:
        f = tuple(x.name for x in fields(cls))
        _FIELDS[cls] = f
    return f


# Node kinds that are not traversed into (their identity is what matters).
_OPAQUE = (Buffer, IterVar)


class Visitor:
    """Read-only traversal; override ``visit_<Class>`` and call ``self.generic_visit``."""

    def __init__(self):
        self._dispatch = {}

    def visit(self, node):
        cls = type(node)
        fn = self._dispatch.get(cls)
        if fn is None:
            fn = getattr(self, "visit_" + cls.__name__, None) or self.generic_visit
            self._dispatch[cls] = fn
        return fn(node)

    def generic_visit(self, node):
        if isinstance(node, tuple):
            for x in node:
                if isinstance(x, (Node, tuple)):
                    self.visit(x)
            return
        if isinstance(node, _OPAQUE) or not isinstance(node, Node):
            return
        for name in _fields_of(type(node)):
            v = getattr(node, name)
            if isinstance(v, (Node, tuple)) and not isinstance(v, _OPAQUE):
                self.visit(v)


class Mutator:
    """Rebuilding traversal; returns the same object when nothing below changed."""

    def __init__(self):
        self._dispatch = {}

    def visit(self, node):
        cls = type(node)
        fn = self._dispatch.get(cls)
        if fn is None:
            fn = getattr(self, "visit_" + cls.__name__, None) or self.generic_visit
            self._dispatch[cls] = fn
        return fn(node)

    def visit_tuple(self, items: tuple) -> tuple:
        changed = False
        out = []
        for x in items:
            y = self.visit(x) if isinstance(x, (Node, tuple)) and not isinstance(x, _OPAQUE) else x
            changed |= y is not x
            out.append(y)
        return tuple(out) if changed else items

    def generic_visit(self, node):
        if isinstance(node, tuple):
            return self.visit_tuple(node)
        if isinstance(node, _OPAQUE) or not isinstance(node, Node):
            return node
        names = _fields_of(type(node))
        vals = []
        changed = False
        for name in names:
            v = getattr(node, name)
            if isinstance(v, (Node, tuple)) and not isinstance(v, _OPAQUE):
                nv = self.visit(v)
                changed |= nv is not v
                v = nv
            vals.append(v)
        return type(node)(*vals) if changed else node


def post_order_visit(node, fn) -> None:
    """Call ``fn`` on every node below ``node`` (children first)."""

    class _V(Visitor):
        def generic_visit(self, n):
            super().generic_visit(n)
            if not isinstance(n, tuple):
                fn(n)

    _V().visit(node)


def substitute(node, vmap: dict):
    """Replace Vars (by identity) using ``vmap``: Var -> PrimExpr."""
    if not vmap:
        return node
    return _Substituter(vmap).visit(node)


class _Substituter(Mutator):
    def __init__(self, vmap):
        super().__init__()
        self.vmap = vmap

    def visit_Var(self, v):
        return self.vmap.get(v, v)


def transform_func(func: PrimFunc, mutator: Mutator) -> PrimFunc:
    body = mutator.visit(func.body)
    return func if body is func.body else func.with_body(body)


__all__ = ["Visitor", "Mutator", "post_order_visit", "substitute", "transform_func", "Range"]
