"""Relay text printer in TVM's style (``astext``).

    def @main(%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%data, %w, padding=[1, 1, 1, 1]) /* ty=Tensor[(1, 4, 8, 8), float32] */;
      nn.relu(%0) /* ty=Tensor[(1, 4, 8, 8), float32] */
    }

Invariants: output is deterministic (temporaries numbered in post-order, constants
numbered in first-use order as ``meta[relay.Constant][k]``); every call, tuple, tuple
access and inner function gets its own ``%k = ...;`` line and the last expression of a
function body is printed inline; only non-default attributes are printed; a known type
is appended as ``/* ty=... */``.
"""
from __future__ import annotations

import sys

import numpy as np

from . import expr as X
from .functor import post_order
from .op.attrs import non_default_items
from .op.registry import Op
from .ty import TensorType, TupleType, Type

__all__ = ["astext"]


def type_str(t) -> str:
    if isinstance(t, TensorType):
        return t.dtype if not t.shape else str(t)
    if isinstance(t, TupleType):
        return "(" + ", ".join(type_str(f) for f in t.fields) + \
            ("," if len(t.fields) == 1 else "") + ")"
    return str(t)


def _value_str(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return f"{v:g}f"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_value_str(x) for x in v) + "]"
    return str(v)


def _scalar_str(c: X.Constant):
    a = c.data
    if a.shape != ():
        return None
    v = a.item()
    suffix = {"float32": "f", "float64": "f64", "float16": "f16", "int32": "", "int64": "i64",
              "bool": "", "int8": "i8", "uint8": "u8"}.get(str(a.dtype), "")
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        text = f"{v:g}"
        return text + suffix
    return f"{v}{suffix}"


class _Printer:
    def __init__(self):
        self.consts: dict = {}

    def function(self, fn: X.Function, name: str | None, indent: str) -> list:
        names: dict = {}
        params = []
        for p in fn.params:
            names[p] = f"%{p.name_hint}"
            t = p.type_annotation
            params.append(names[p] + (f": {type_str(t)}" if t is not None else ""))
        for k, v in fn.attrs.items():
            params.append(f"{k}={_value_str(v)}")
        ret = f" -> {type_str(fn.ret_type)}" if fn.ret_type is not None else ""
        head = f"def @{name}" if name else "fn "
        lines = [f"{head}({', '.join(params)}){ret} {{"]
        lines += self.body(fn.body, names, indent + "  ")
        lines.append(indent + "}")
        return lines

    def body(self, body, names: dict, indent: str) -> list:
        lines, counter = [], [0]
        for node in post_order(body, into_functions=False):
            if node in names or isinstance(node, (X.Var, X.Constant)):
                continue
            if isinstance(node, X.Function) and node is not body:
                sub = self.function(node, None, indent)
                text = "\n".join([sub[0]] + sub[1:])
                tmp = f"%{counter[0]}"
                counter[0] += 1
                lines.append(f"{indent}{tmp} = {text}{self.ty(node)};")
                names[node] = tmp
                continue
            text = self.node(node, names) + self.ty(node)
            if node is body:
                lines.append(indent + text)
            else:
                tmp = f"%{counter[0]}"
                counter[0] += 1
                lines.append(f"{indent}{tmp} = {text};")
                names[node] = tmp
        if body in names or isinstance(body, (X.Var, X.Constant)):
            lines.append(indent + self.atom(body, names))
        return lines

    def ty(self, node) -> str:
        t = node._checked_type() if not isinstance(node, X.Var) else None
        return f" /* ty={type_str(t)} */" if isinstance(t, Type) else ""

    def atom(self, e, names) -> str:
        if e in names:
            return names[e]
        if isinstance(e, X.Var):
            return f"%{e.name_hint}"
        if isinstance(e, X.Constant):
            s = _scalar_str(e)
            if s is not None:
                return s
            if e not in self.consts:
                self.consts[e] = len(self.consts)
            return f"meta[relay.Constant][{self.consts[e]}]"
        return self.node(e, names)

    def node(self, e, names) -> str:
        if isinstance(e, X.Call):
            args = [self.atom(a, names) for a in e.args]
            args += [f"{k}={_value_str(v)}" for k, v in non_default_items(e.attrs)]
            op = e.op.name if isinstance(e.op, Op) else self.atom(e.op, names)
            return f"{op}({', '.join(args)})"
        if isinstance(e, X.Tuple):
            inner = ", ".join(self.atom(f, names) for f in e.fields)
            return f"({inner}{',' if len(e.fields) == 1 else ''})"
        if isinstance(e, X.TupleGetItem):
            return f"{self.atom(e.tuple_value, names)}.{e.index}"
        if isinstance(e, X.Let):
            return f"let %{e.var.name_hint} = {self.atom(e.value, names)}; " \
                   f"{self.atom(e.body, names)}"
        return repr(e)


def astext(node) -> str:
    """TVM-style text of a relay expression, function or IRModule."""
    p = _Printer()
    functions = getattr(node, "functions", None)
    if functions is not None:
        out = []
        for name in sorted(functions, key=lambda n: (n != "main", n)):
            out.append("\n".join(p.function(functions[name], name, "")))
        return "\n".join(out) + "\n"
    if isinstance(node, X.Function):
        return "\n".join(p.function(node, None, ""))
    return "\n".join(p.body(node, {}, ""))


def print_constant_table(consts: dict) -> str:
    return "\n".join(f"meta[relay.Constant][{k}]: {np.array2string(c.data, threshold=8)}"
                     for c, k in consts.items())


X.register_impl(printer=sys.modules[__name__])
