"""TIR statement nodes, buffers and the PrimFunc container.

Invariants: nodes are frozen and compared by identity (like expressions); a Buffer is
identified by object, its ``data`` Var is the pointer the code generator binds.  Child
statements are ``Stmt`` instances, sequences are tuples.  ``For.kind`` is one of the
``ForKind`` strings.
"""
from __future__ import annotations

from dataclasses import dataclass

from .expr import BufferLoad, IntImm, Node, PrimExpr, Var
from .op import convert as _conv


class ForKind:
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    ALL = (SERIAL, PARALLEL, VECTORIZED, UNROLLED)


class Stmt(Node):
    __slots__ = ()
    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Buffer(Node):
    """A region of memory: ``shape`` is in elements, row-major unless ``strides`` given.

    ``scope`` is "global" for function arguments and heap/stack temporaries alike;
    ``align`` is the guaranteed byte alignment of ``data``.
    """
    name: str
    shape: tuple
    dtype: str
    data: Var
    strides: tuple = ()
    scope: str = "global"
    align: int = 64

    def vload(self, begin, dtype=None) -> PrimExpr:
        """``self[begin]`` (TVM's Buffer.vload; one index is flat, a tuple per dimension)."""
        idx = tuple(begin) if isinstance(begin, (tuple, list)) else (begin,)
        return BufferLoad(self, tuple(_conv(i) for i in idx))

    def vstore(self, begin, value) -> Stmt:
        """The statement ``self[begin] = value`` (TVM's Buffer.vstore)."""
        idx = tuple(begin) if isinstance(begin, (tuple, list)) else (begin,)
        return BufferStore(self, _conv(value, self.dtype), tuple(_conv(i) for i in idx))


def decl_buffer(shape, dtype: str = "float32", name: str = "buf", scope: str = "global",
                strides=(), align: int = 64) -> Buffer:
    """Create a Buffer with a fresh data pointer variable."""
    return Buffer(name, tuple(_conv(s) for s in shape), dtype, Var(name, "handle"),
                  tuple(_conv(s) for s in strides), scope, align)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt
    annotations: tuple = ()   # ((key, value), ...), e.g. ("pragma_auto_unroll_max_step", 16)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Allocate(Stmt):
    """Allocate ``buffer`` for the duration of ``body``."""
    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class SeqStmt(Stmt):
    seq: tuple


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class AttrStmt(Stmt):
    """Attach ``key``=``value`` about ``node`` to ``body`` (pragmas, storage hints)."""
    node: object
    key: str
    value: object
    body: Stmt


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Evaluate(Stmt):
    value: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class PrimFunc(Node):
    """A lowered function.  ``params`` are Buffers passed as pointers, in call order."""
    name: str
    params: tuple
    body: Stmt
    attrs: tuple = ()   # ((key, value), ...)

    def attr(self, key, default=None):
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def with_body(self, body: Stmt) -> PrimFunc:
        return PrimFunc(self.name, self.params, body, self.attrs)


def seq(*stmts) -> Stmt:
    """Build a SeqStmt, flattening nested sequences and dropping no-ops."""
    out: list = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            out.extend(s.seq)
        elif isinstance(s, Evaluate) and isinstance(s.value, IntImm):
            continue
        else:
            out.append(s)
    if not out:
        return Evaluate(IntImm("int32", 0))
    return out[0] if len(out) == 1 else SeqStmt(tuple(out))

