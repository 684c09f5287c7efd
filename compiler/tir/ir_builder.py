"""``tir.ir_builder`` (TVM's): write a TIR statement imperatively, as te.extern bodies do.

    ib = ir_builder.create()
    a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
    with ib.for_range(0, n, name="i") as i:
        with ib.if_scope(a[i] > 0):
            b[i] = a[i] + 1
        with ib.else_scope():
            b[i] = 0.0
    return ib.get()

Invariants: the builder keeps a stack of open statement lists; a ``with`` scope pushes one
and turns it into a For / IfThenElse / nested sequence when it closes.  ``let`` and
``allocate`` push a *wrapper* (a function of the rest of the enclosing list), so the
binding scopes everything emitted after it, as in TVM.  ``buffer_ptr`` accesses with one
index are flat (row-major over the whole buffer); a tuple index is multi-dimensional.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..errors import TEError
from . import stmt as S
from .expr import BufferLoad, PrimExpr, Var
from .op import cast, convert

__all__ = ["IRBuilder", "BufferVar", "create"]

_KINDS = {"serial": S.ForKind.SERIAL, "parallel": S.ForKind.PARALLEL,
          "vectorize": S.ForKind.VECTORIZED, "unroll": S.ForKind.UNROLLED}


class BufferVar:
    """Indexable view of a Buffer: ``bv[i]`` loads, ``bv[i] = v`` stores."""

    def __init__(self, builder: IRBuilder, buffer: S.Buffer):
        self._builder, self._buffer = builder, buffer

    @property
    def dtype(self) -> str:
        return self._buffer.dtype

    def asobject(self) -> S.Buffer:
        return self._buffer

    def _index(self, index) -> tuple:
        idx = tuple(index) if isinstance(index, tuple) else (index,)
        return tuple(convert(i) for i in idx)

    def __getitem__(self, index) -> PrimExpr:
        return BufferLoad(self._buffer, self._index(index))

    def __setitem__(self, index, value) -> None:
        v = convert(value, self.dtype)
        if v.dtype != self.dtype:
            raise TEError(f"ir_builder: storing {v} ({v.dtype}) into buffer "
                          f"{self._buffer.name} of dtype {self.dtype}; cast it first")
        self._builder.emit(S.BufferStore(self._buffer, v, self._index(index)))


class IRBuilder:
    """Accumulates statements; ``get()`` returns the program."""

    def __init__(self):
        self._seq: list = [[]]

    def emit(self, stmt) -> None:
        """Append a statement (an expression becomes ``Evaluate``)."""
        if isinstance(stmt, PrimExpr):
            stmt = S.Evaluate(stmt)
        if not isinstance(stmt, S.Stmt) and not callable(stmt):
            raise TEError(f"ir_builder.emit: {stmt!r} is not a statement or expression")
        self._seq[-1].append(stmt)

    def _pop(self) -> S.Stmt:
        items = self._seq.pop()
        body: S.Stmt | None = None
        for it in reversed(items):      # wrappers scope everything after them
            if callable(it) and not isinstance(it, S.Stmt):
                body = it(body if body is not None else S.seq())
            else:
                body = it if body is None else S.seq(it, body)
        return body if body is not None else S.seq()

    @contextmanager
    def _scope(self, close):
        self._seq.append([])
        yield
        self.emit(close(self._pop()))

    @contextmanager
    def for_range(self, begin, end, name: str = "i", dtype: str = "int32",
                  kind: str = "serial"):
        """``with ib.for_range(0, n) as i:`` -- a loop over [begin, end)."""
        if kind not in _KINDS:
            raise TEError(f"ir_builder.for_range: kind {kind!r}; expected one of {list(_KINDS)}")
        var = Var(name, dtype)
        lo, hi = cast(dtype, convert(begin)), cast(dtype, convert(end))
        with self._scope(lambda body: S.For(var, lo, hi - lo, _KINDS[kind], body)):
            yield var

    def if_scope(self, cond):
        c = convert(cond)
        return self._scope(lambda body: S.IfThenElse(c, body))

    @contextmanager
    def else_scope(self):
        prev = self._seq[-1][-1] if self._seq[-1] else None
        if not isinstance(prev, S.IfThenElse) or prev.else_case is not None:
            raise TEError("ir_builder.else_scope must directly follow an if_scope")
        self._seq[-1].pop()
        with self._scope(lambda body: S.IfThenElse(prev.condition, prev.then_case, body)):
            yield

    def new_scope(self):
        return self._scope(lambda body: body)

    def scope_attr(self, node, attr_key: str, value) -> None:
        self.emit(lambda body: S.AttrStmt(node, attr_key, value, body))

    def let(self, var_name: str, value) -> Var:
        v = convert(value)
        var = Var(var_name, v.dtype)
        self.emit(lambda body: S.LetStmt(var, v, body))
        return var

    def allocate(self, dtype: str, shape, name: str = "buf", scope: str = "global") -> BufferVar:
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        buf = S.decl_buffer(shape, dtype, name, "global" if scope == "local" else scope)
        self.emit(lambda body: S.Allocate(buf, body))
        return BufferVar(self, buf)

    def buffer_ptr(self, buf: S.Buffer, shape=None) -> BufferVar:
        if not isinstance(buf, S.Buffer):
            raise TEError(f"ir_builder.buffer_ptr: expected a tir.Buffer, got {buf!r}")
        return BufferVar(self, buf)

    def get(self) -> S.Stmt:
        if len(self._seq) != 1:
            raise TEError("ir_builder.get: a with-scope is still open")
        stmt = self._pop()
        self._seq.append([stmt])    # get() may be called again
        return stmt


def create() -> IRBuilder:
    return IRBuilder()
