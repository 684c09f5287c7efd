"""TIR expression nodes.

Invariants:
- Every node is an immutable frozen dataclass with slots.  Equality and hashing are by
  identity (a ``Var`` is the same variable only if it is the same object); structural
  comparison lives in ``tir.analysis``.
- ``a == b`` on expressions builds an ``EQ`` node (as in TVM); its truth value is the
  identity test, so expressions still work as dict keys and in ``in`` tests.  Any other
  symbolic expression refuses ``bool()`` to catch accidental Python control flow.
- Arithmetic operators fold constants through ``tir.op`` so the printed IR stays short.
- ``int(IntImm)`` and ``float(FloatImm)`` give the constant's value, as in TVM.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import TEError
from . import dtype as dt


class Node:
    """Common base of expressions and statements (identity semantics)."""
    __slots__ = ()

    def __str__(self) -> str:
        return _printer.astext(self)

    __repr__ = __str__


class PrimExpr(Node):
    """Base class of scalar and vector expressions; every subclass exposes ``dtype``."""
    __slots__ = ()

    if TYPE_CHECKING:   # a field of most subclasses, a property of the others
        @property
        def dtype(self) -> str: ...

    # arithmetic, folded through tir.op
    def __add__(self, o): return _op.add(self, o)
    def __radd__(self, o): return _op.add(o, self)
    def __sub__(self, o): return _op.sub(self, o)
    def __rsub__(self, o): return _op.sub(o, self)
    def __mul__(self, o): return _op.mul(self, o)
    def __rmul__(self, o): return _op.mul(o, self)
    def __truediv__(self, o): return _op.div(self, o)
    def __rtruediv__(self, o): return _op.div(o, self)
    def __floordiv__(self, o): return _op.floordiv(self, o)
    def __rfloordiv__(self, o): return _op.floordiv(o, self)
    def __mod__(self, o): return _op.floormod(self, o)
    def __rmod__(self, o): return _op.floormod(o, self)
    def __neg__(self): return _op.neg(self)
    def __lt__(self, o): return _op.cmp(LT, self, o)
    def __le__(self, o): return _op.cmp(LE, self, o)
    def __gt__(self, o): return _op.cmp(GT, self, o)
    def __ge__(self, o): return _op.cmp(GE, self, o)
    def __eq__(self, o): return _op.cmp(EQ, self, o)
    def __ne__(self, o): return _op.cmp(NE, self, o)
    def __and__(self, o): return _op.logical_and(self, o)
    def __rand__(self, o): return _op.logical_and(o, self)
    def __or__(self, o): return _op.logical_or(self, o)
    def __ror__(self, o): return _op.logical_or(o, self)
    def __invert__(self): return _op.logical_not(self)
    __hash__ = object.__hash__

    def __bool__(self):
        raise TEError(f"cannot use symbolic expression {self} as a Python bool; "
                      "use te.if_then_else / tir.Select instead")

    def astype(self, dtype: str) -> PrimExpr:
        return _op.cast(dtype, self)

    def equal(self, other) -> PrimExpr:
        return _op.cmp(EQ, self, other)


# ---------------------------------------------------------------- leaves
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Var(PrimExpr):
    name: str
    dtype: str = "int32"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IntImm(PrimExpr):
    dtype: str
    value: int

    def __int__(self) -> int:      # TVM: int(C.shape[0]), int(k.dom.extent)
        return int(self.value)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class FloatImm(PrimExpr):
    dtype: str
    value: float

    def __float__(self) -> float:
        return float(self.value)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class StringImm(PrimExpr):
    value: str
    dtype: str = "handle"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Cast(PrimExpr):
    dtype: str
    value: PrimExpr


# ---------------------------------------------------------------- binary arithmetic
class BinaryOp(PrimExpr):
    __slots__ = ()
    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Add(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Sub(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Mul(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Div(BinaryOp):
    """Float division, or truncating division for integers (C semantics)."""
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Mod(BinaryOp):
    """Truncating remainder (C semantics)."""
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class FloorDiv(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class FloorMod(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Min(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Max(BinaryOp):
    a: PrimExpr
    b: PrimExpr


# ---------------------------------------------------------------- comparisons / logic
class CmpOp(PrimExpr):
    __slots__ = ()
    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return dt.with_lanes("bool", dt.lanes(self.a.dtype))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class EQ(CmpOp):
    a: PrimExpr
    b: PrimExpr

    def __bool__(self):  # identity, so that dict/list membership works as in TVM
        return self.a is self.b


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class NE(CmpOp):
    a: PrimExpr
    b: PrimExpr

    def __bool__(self):
        return self.a is not self.b


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class LT(CmpOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class LE(CmpOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class GT(CmpOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class GE(CmpOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class And(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Or(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Not(PrimExpr):
    a: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Select(PrimExpr):
    """Both branches are evaluated; use ``if_then_else`` when a branch may be unsafe."""
    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    @property
    def dtype(self) -> str:
        return self.true_value.dtype


# ---------------------------------------------------------------- vectors
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Ramp(PrimExpr):
    base: PrimExpr
    stride: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.base.dtype, self.lanes)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Broadcast(PrimExpr):
    value: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.value.dtype, self.lanes)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Shuffle(PrimExpr):
    """Concatenate vectors then pick lanes by ``indices`` (used to build vectors)."""
    vectors: tuple
    indices: tuple

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.vectors[0].dtype, len(self.indices))


# ---------------------------------------------------------------- binding / calls
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr

    @property
    def dtype(self) -> str:
        return self.body.dtype


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Call(PrimExpr):
    """An intrinsic call; ``op`` is a name from ``tir.op.INTRINSICS``."""
    dtype: str
    op: str
    args: tuple


# ---------------------------------------------------------------- memory
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ProducerLoad(PrimExpr):
    """A read of a TE tensor ``producer[indices]``; replaced by BufferLoad at lowering."""
    producer: Any
    indices: tuple

    @property
    def dtype(self) -> str:
        return self.producer.dtype


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class BufferLoad(PrimExpr):
    """``buffer[indices]``; a Ramp index makes it a vector load."""
    buffer: Any
    indices: tuple

    @property
    def dtype(self) -> str:
        n = 1
        for i in self.indices:
            n = max(n, dt.lanes(i.dtype))
        return dt.with_lanes(self.buffer.dtype, n)


# ---------------------------------------------------------------- ranges, iter vars, reductions
@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Range(Node):
    min: PrimExpr
    extent: PrimExpr


class IterVar(Node):
    """A loop variable with its domain and kind (TVM's IterVar).

    Mutable only in nothing: kinds are class constants, the object is frozen by slots.
    """
    DataPar, ThreadIndex, CommReduce, Ordered, Opaque, Unrolled, Vectorized, Parallelized = range(8)
    __slots__ = ("dom", "var", "iter_type", "thread_tag")
    dom: Range | None
    var: Var
    iter_type: int
    thread_tag: str

    def __init__(self, dom: Range | None, var: Var, iter_type: int, thread_tag: str = ""):
        object.__setattr__(self, "dom", dom)
        object.__setattr__(self, "var", var)
        object.__setattr__(self, "iter_type", iter_type)
        object.__setattr__(self, "thread_tag", thread_tag)

    def __setattr__(self, k, v):
        raise AttributeError(f"IterVar is immutable (tried to set {k})")

    def __reduce__(self):  # immutable: rebuild through __init__ when unpickled
        return (IterVar, (self.dom, self.var, self.iter_type, self.thread_tag))

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def dtype(self) -> str:
        return self.var.dtype

    # An IterVar used in arithmetic behaves as its variable, as in TVM.
    def _v(self): return self.var
    def __add__(self, o): return self.var + o
    def __radd__(self, o): return o + self.var
    def __sub__(self, o): return self.var - o
    def __rsub__(self, o): return o - self.var
    def __mul__(self, o): return self.var * o
    def __rmul__(self, o): return o * self.var
    def __floordiv__(self, o): return self.var // o
    def __mod__(self, o): return self.var % o
    def __lt__(self, o): return self.var < o
    def __le__(self, o): return self.var <= o
    def __gt__(self, o): return self.var > o
    def __ge__(self, o): return self.var >= o
    def __neg__(self): return -self.var
    def astype(self, dtype): return self.var.astype(dtype)
    __hash__ = object.__hash__

    def __eq__(self, o):
        return self is o


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class CommReducer(Node):
    """A commutative reducer: ``result`` combines ``lhs`` (accumulator) and ``rhs``."""
    lhs: tuple
    rhs: tuple
    result: tuple
    identity_element: tuple
    name: str = "reducer"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class Reduce(PrimExpr):
    combiner: CommReducer
    source: tuple
    axis: tuple
    condition: PrimExpr
    value_index: int
    init: tuple = ()

    @property
    def dtype(self) -> str:
        return self.source[self.value_index].dtype


def as_var(x) -> Var:
    """Accept a Var or an IterVar where a loop variable is expected."""
    return x.var if isinstance(x, IterVar) else x


# tir.op (arithmetic with constant folding) and tir.printer build on the classes above.
# They register themselves here when imported (tir/__init__ imports both) rather than
# this module importing them, which would be an import cycle.
_op: Any = None
_printer: Any = None


def register_impl(op=None, printer=None) -> None:
    """Install the modules that implement node arithmetic and printing."""
    global _op, _printer
    if op is not None:
        _op = op
    if printer is not None:
        _printer = printer
