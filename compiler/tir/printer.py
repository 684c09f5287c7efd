"""Stable text printer for TIR in the style of TVMScript.

The output is meant for humans and golden files: names are made unique per print
(a second distinct Var called ``i`` prints as ``i_1``), operators get the fewest
parentheses that keep precedence, and serial/parallel/vectorized/unrolled loops print as
``range``/``T.parallel``/``T.vectorized``/``T.unroll``.
"""
from __future__ import annotations

import sys

from . import dtype as dt
from . import expr as E
from . import stmt as S

_BIN = {E.Add: ("+", 4), E.Sub: ("-", 4), E.Mul: ("*", 5), E.FloorDiv: ("//", 5),
        E.FloorMod: ("%", 5), E.LT: ("<", 2), E.LE: ("<=", 2), E.GT: (">", 2),
        E.GE: (">=", 2), E.EQ: ("==", 2), E.NE: ("!=", 2), E.And: ("and", 1),
        E.Or: ("or", 0)}
_FUNC = {E.Min: "T.min", E.Max: "T.max", E.Mod: "T.truncmod"}
_KIND = {S.ForKind.PARALLEL: "T.parallel", S.ForKind.VECTORIZED: "T.vectorized",
         S.ForKind.UNROLLED: "T.unroll"}


class Printer:
    def __init__(self):
        self.names: dict = {}      # object -> printed name
        self.used: set = set()
        self.lines: list = []

    # -------------------------------------------------------------- names
    def name_of(self, obj, hint: str) -> str:
        n = self.names.get(obj)
        if n is None:
            n, k = hint, 0
            while n in self.used:
                k += 1
                n = f"{hint}_{k}"
            self.used.add(n)
            self.names[obj] = n
        return n

    # -------------------------------------------------------------- expressions
    def expr(self, e, prec: int = 0) -> str:
        t = type(e)
        if t in _BIN:
            sym, p = _BIN[t]
            s = f"{self.expr(e.a, p)} {sym} {self.expr(e.b, p + 1)}"
            return f"({s})" if p < prec else s
        if t is E.Div:
            if dt.is_float(e.dtype):
                s = f"{self.expr(e.a, 5)} / {self.expr(e.b, 6)}"
                return f"({s})" if 5 < prec else s
            return f"T.Div({self.expr(e.a)}, {self.expr(e.b)})"
        if t in _FUNC:
            return f"{_FUNC[t]}({self.expr(e.a)}, {self.expr(e.b)})"
        if t is E.Var:
            return self.name_of(e, e.name)
        if t is E.IntImm:
            if e.dtype == "int32":
                return str(e.value)
            if e.dtype == "bool":
                return "T.bool(True)" if e.value else "T.bool(False)"
            return f"T.{e.dtype}({e.value})"
        if t is E.FloatImm:
            return f"T.{e.dtype}({e.value!r})"
        if t is E.StringImm:
            return repr(e.value)
        if t is E.Cast:
            return f"T.Cast(\"{e.dtype}\", {self.expr(e.value)})"
        if t is E.Not:
            return f"not {self.expr(e.a, 6)}"
        if t is E.Select:
            return (f"T.Select({self.expr(e.condition)}, {self.expr(e.true_value)}, "
                    f"{self.expr(e.false_value)})")
        if t is E.Ramp:
            return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})"
        if t is E.Broadcast:
            return f"T.Broadcast({self.expr(e.value)}, {e.lanes})"
        if t is E.Shuffle:
            vs = ", ".join(self.expr(v) for v in e.vectors)
            return f"T.Shuffle([{vs}], {list(e.indices)})"
        if t is E.Let:
            return f"T.Let({self.expr(e.body)}, where={{{self.expr(e.var)}: {self.expr(e.value)}}})"
        if t is E.Call:
            args = ", ".join(self.expr(a) for a in e.args)
            if e.op in ("call_extern", "call_pure_extern"):    # TVM prints the dtype first
                return f"T.{e.op}(\"{e.dtype}\", {args})"
            return f"T.{e.op}({args})"
        if t is E.ProducerLoad:
            return f"{self.name_of(e.producer, e.producer.name)}[{self.indices(e.indices)}]"
        if t is E.BufferLoad:
            return f"{self.name_of(e.buffer, e.buffer.name)}[{self.indices(e.indices)}]"
        if t is E.Reduce:
            return self.reduce(e)
        if isinstance(e, E.IterVar):
            return self.name_of(e.var, e.var.name)
        return f"<{t.__name__}>"

    def indices(self, idx) -> str:
        return ", ".join(self.expr(i) for i in idx)

    def reduce(self, e) -> str:
        src = ", ".join(self.expr(s) for s in e.source)
        axes = ", ".join(self.name_of(a.var, a.var.name) for a in e.axis)
        cond = "" if isinstance(e.condition, E.IntImm) and e.condition.value else \
            f", where={self.expr(e.condition)}"
        vi = f", value_index={e.value_index}" if len(e.source) > 1 else ""
        return f"T.reduce({e.combiner.name}, [{src}], axis=[{axes}]{cond}{vi})"

    # -------------------------------------------------------------- statements
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def stmt(self, s, depth: int) -> None:
        t = type(s)
        if t is S.SeqStmt:
            for x in s.seq:
                self.stmt(x, depth)
        elif t is S.For:
            self.for_(s, depth)
        elif t is S.BufferStore:
            b = self.name_of(s.buffer, s.buffer.name)
            self.emit(depth, f"{b}[{self.indices(s.indices)}] = {self.expr(s.value)}")
        elif t is S.Allocate:
            b = s.buffer
            shape = ", ".join(self.expr(x) for x in b.shape)
            self.emit(depth, f"{self.name_of(b, b.name)} = T.allocate([{shape}], \"{b.dtype}\", "
                             f"\"{b.scope}\")")
            self.names.setdefault(b.data, f"{self.names[b]}.data")
            self.stmt(s.body, depth)
        elif t is S.IfThenElse:
            self.emit(depth, f"if {self.expr(s.condition)}:")
            self.stmt(s.then_case, depth + 1)
            if s.else_case is not None:
                self.emit(depth, "else:")
                self.stmt(s.else_case, depth + 1)
        elif t is S.LetStmt:
            self.emit(depth, f"{self.expr(s.var)}: T.{s.var.dtype} = {self.expr(s.value)}")
            self.stmt(s.body, depth)
        elif t is S.AttrStmt:
            node = self.expr(s.node) if isinstance(s.node, (E.PrimExpr, E.IterVar)) else \
                repr(getattr(s.node, "name", s.node))
            val = self.expr(s.value) if isinstance(s.value, E.PrimExpr) else repr(s.value)
            self.emit(depth, f"with T.attr({node}, \"{s.key}\", {val}):")
            self.stmt(s.body, depth + 1)
        elif t is S.Evaluate:
            self.emit(depth, f"T.evaluate({self.expr(s.value)})")
        else:
            self.emit(depth, f"<{t.__name__}>")

    def for_(self, s, depth: int) -> None:
        v = self.expr(s.loop_var)
        rng = self.expr(s.extent) if _is_zero(s.min) else \
            f"{self.expr(s.min)}, {self.expr(s.min + s.extent)}"
        fn = _KIND.get(s.kind, "range")
        ann = ""
        if s.annotations:
            ann = ", annotations={" + ", ".join(f"\"{k}\": {v!r}" for k, v in s.annotations) + "}"
            if fn == "range":
                fn = "T.serial"
        self.emit(depth, f"for {v} in {fn}({rng}{ann}):")
        self.stmt(s.body, depth + 1)

    def func(self, f) -> str:
        params = []
        for b in f.params:
            if isinstance(b, E.Var):       # a scalar passed by value
                params.append(f"{self.expr(b)}: T.{b.dtype}")
                continue
            shape = ", ".join(self.expr(x) for x in b.shape)
            if len(b.shape) == 1:
                shape += ","
            params.append(f"{self.name_of(b, b.name)}: T.Buffer(({shape}), \"{b.dtype}\")")
            self.names.setdefault(b.data, f"{self.names[b]}.data")   # as TVMScript spells it
        self.lines.append("@T.prim_func")
        self.lines.append(f"def {f.name}({', '.join(params)}):")
        attrs = {"global_symbol": f.name, **dict(f.attrs)}
        items = ", ".join(f"\"{k}\": {_pyval(v)}" for k, v in attrs.items())
        self.emit(1, f"T.func_attr({{{items}}})")
        self.stmt(f.body, 1)
        return "\n".join(self.lines)


def _pyval(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace('"', '\\"') + '"'
    return "True" if v is True else ("False" if v is False else repr(v))


def _is_zero(e) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def astext(node) -> str:
    """Print any TIR node: a PrimFunc, a statement or an expression."""
    p = Printer()
    if isinstance(node, S.PrimFunc):
        return p.func(node)
    if isinstance(node, S.Stmt):
        p.stmt(node, 0)
        return "\n".join(p.lines)
    if isinstance(node, S.Buffer):
        return f"T.Buffer({node.name}, {list(node.shape)}, \"{node.dtype}\")"
    if isinstance(node, E.Range):
        return f"range({p.expr(node.min)}, {p.expr(node.min + node.extent)})"
    if isinstance(node, E.CommReducer):
        return f"T.comm_reducer({node.name})"
    return p.expr(node)


E.register_impl(printer=sys.modules[__name__])
