"""``InferType``: give every node of every function its ``checked_type``.

The graph is rebuilt bottom-up (nodes are immutable): a Call's type comes from its
operator's relation over the argument types, a call of a Function from that function's
return type, tuples and tuple accesses from their parts.  Every Var must carry a type
annotation (a Let-bound var without one takes its value's type).  Errors are
RelayTypeErrors naming the operator, the argument, the shapes and what was expected.
"""
from __future__ import annotations

from ..errors import RelayTypeError
from ..expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var
from ..functor import ExprMutator, post_order
from ..module import IRModule
from ..op.registry import Op
from ..ty import FuncType, TupleType

__all__ = ["infer_type", "infer_expr_type", "typed", "type_new"]


class _Infer(ExprMutator):
    def rewrite_Var(self, v):
        if v.type_annotation is None:
            raise RelayTypeError(f"variable %{v.name_hint} has no type annotation; give it "
                                 "shape= and dtype= (relay.var) so its type is known")
        return v

    def rewrite_Constant(self, c):
        return c

    def rewrite_Call(self, e):
        op = self.new(e.op)
        args = tuple(self.new(a) for a in e.args)
        types = tuple(a.checked_type for a in args)
        if isinstance(op, Op):
            ty = op.rel(types, e.attrs)
        else:
            fty = op.checked_type
            if not isinstance(fty, FuncType):
                raise RelayTypeError(f"call of a non-function of type {fty}")
            if len(fty.arg_types) != len(types) or any(
                    a != b for a, b in zip(fty.arg_types, types)):
                raise RelayTypeError(f"call of a function of type {fty} with arguments "
                                     f"({', '.join(map(str, types))})")
            ty = fty.ret_type
        return Call(op, args, e.attrs, ty)

    def rewrite_Tuple(self, e):
        fields = tuple(self.new(f) for f in e.fields)
        return Tuple(fields, TupleType(tuple(f.checked_type for f in fields)))

    def rewrite_TupleGetItem(self, e):
        v = self.new(e.tuple_value)
        t = v.checked_type
        if not isinstance(t, TupleType):
            raise RelayTypeError(f"tuple access .{e.index} of a value of type {t}; expected a "
                                 "tuple")
        if not 0 <= e.index < len(t.fields):
            raise RelayTypeError(f"tuple access .{e.index} out of range for {t}")
        return TupleGetItem(v, e.index, t.fields[e.index])

    def rewrite_Let(self, e):
        value = self.new(e.value)
        body = self.new(e.body)
        return Let(self.new(e.var), value, body, body.checked_type)

    def rewrite_Function(self, f):
        params = tuple(self.new(p) for p in f.params)
        body = self.new(f.body)
        ret = body.checked_type
        if f.ret_type is not None and f.ret_type != ret:
            raise RelayTypeError(f"function declares return type {f.ret_type} but its body "
                                 f"has type {ret}")
        fty = FuncType(tuple(p.checked_type for p in params), ret)
        return Function(params, body, ret, f.attrs, fty)


def _type_lets(expr):
    """Give untyped Let vars their value's type (Lets are rare; done by substitution)."""
    lets = [n for n in post_order(expr) if isinstance(n, Let) and n.var.type_annotation is None]
    if not lets:
        return expr
    inner = _Infer()
    sub = {}
    for let in lets:
        value = inner.visit(let.value)
        sub[let.var] = Var(let.var.name_hint, value.checked_type)

    class _Sub(ExprMutator):
        def rewrite_Var(self, v):
            return sub.get(v, v)
    return _Sub().visit(expr)


def infer_expr_type(expr):
    """``expr`` rebuilt with types (raises RelayTypeError)."""
    return _Infer().visit(_type_lets(expr))


def infer_type(mod: IRModule) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        typed = infer_expr_type(fn)
        out[name] = typed
    return out



def typed(e):
    """``e`` (a Call, Tuple or TupleGetItem over already typed children) with its type,
    without re-inferring (and so copying) the graph below it."""
    if e._checked_type() is not None:
        return e
    # a fresh inferer maps every child to itself (``new`` of an unvisited node)
    return getattr(_Infer(), "rewrite_" + type(e).__name__)(e)


def type_new(expr):
    """``expr`` with every untyped node typed, walking only the untyped part: nodes that
    are typed already (and Vars, Constants) are kept as they are and not entered, so
    typing a graph one new node at a time (a frontend) costs O(new nodes)."""
    done: dict = {}
    stack = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if node in done:
            continue
        if isinstance(node, (Var, Constant)) or node._checked_type() is not None:
            done[node] = node
            continue
        kids = _kids(node)
        if not expanded:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if k not in done)
            continue
        done[node] = typed(_rebuilt(node, done))
    return done[expr]


def _kids(e) -> tuple:
    if isinstance(e, Call):
        return e.args + ((e.op,) if isinstance(e.op, Function) else ())
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    raise RelayTypeError(f"type_new: cannot type a {type(e).__name__} incrementally")


def _rebuilt(e, done: dict):
    if isinstance(e, Call):
        op = done.get(e.op, e.op) if isinstance(e.op, Function) else e.op
        return Call(op, tuple(done[a] for a in e.args), e.attrs)
    if isinstance(e, Tuple):
        return Tuple(tuple(done[f] for f in e.fields))
    return TupleGetItem(done[e.tuple_value], e.index)
