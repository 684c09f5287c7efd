"""Relay expressions (TVM's ``relay.expr``): Var, Constant, Call, Tuple, TupleGetItem, Let,
Function, and the immutable attribute containers.

Invariants:
- Nodes are frozen dataclasses compared and hashed by identity (a ``Var`` is the same
  variable only if it is the same object); structural comparison lives in
  ``structural``.  The printer gives ``str(expr)``.
- ``checked_type`` is filled by ``InferType``, which rebuilds the graph (nodes are never
  mutated); a Var's type is its annotation.  Reading it before inference is an error.
- ``Constant.data`` is a read-only numpy array owned by the node.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import RelayError
from .ty import TensorType, Type

__all__ = ["Expr", "Var", "Constant", "Call", "Tuple", "TupleGetItem", "Let", "Function",
           "DictAttrs", "Attrs", "var", "const"]


class Attrs:
    """Base class of operator attributes (each op has a frozen dataclass subclass)."""

    def keys(self):
        return list(getattr(self, "__dataclass_fields__", {}))

    def __getitem__(self, key):
        return getattr(self, key)


class DictAttrs(Mapping):
    """Immutable string-keyed attributes of a Function (``fn.attrs["Primitive"]``)."""

    def __init__(self, items=None):
        self._d = dict(items or {})

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __hash__(self):
        return hash(tuple(sorted((k, repr(v)) for k, v in self._d.items())))

    def __eq__(self, other):
        return isinstance(other, DictAttrs) and self._d == other._d

    def with_attr(self, key, value) -> DictAttrs:
        d = dict(self._d)
        d[key] = value
        return DictAttrs(d)

    def __repr__(self):
        return f"DictAttrs({self._d!r})"


class Expr:
    """Base class of relay expressions."""
    __slots__ = ()

    @property
    def checked_type(self) -> Type:
        t = self._checked_type()
        if t is None:
            raise RelayError(f"the type of {type(self).__name__} {_short(self)} is not known: "
                             "run relay.transform.InferType() on its module first")
        return t

    def _checked_type(self):
        return getattr(self, "checked_type_", None)

    def __str__(self) -> str:
        return _printer.astext(self)

    __repr__ = __str__

    # arithmetic sugar, as TVM's relay.Expr
    def __add__(self, other):
        return _call_binary("add", self, other)

    def __sub__(self, other):
        return _call_binary("subtract", self, other)

    def __mul__(self, other):
        return _call_binary("multiply", self, other)

    def __truediv__(self, other):
        return _call_binary("divide", self, other)

    def __neg__(self):
        return _call_binary("negative", self, None)

    def astype(self, dtype: str):
        return _call_binary("cast", self, dtype)


def _short(e) -> str:
    name = getattr(e, "name_hint", None) or getattr(getattr(e, "op", None), "name", None)
    return f"'{name}'" if name else f"at {id(e):#x}"


@dataclass(frozen=True, eq=False)
class Var(Expr):
    name_hint: str
    type_annotation: Type | None = None

    def _checked_type(self):
        return self.type_annotation


@dataclass(frozen=True, eq=False)
class Constant(Expr):
    data: np.ndarray
    checked_type_: Type | None = field(default=None, compare=False)

    def __post_init__(self):
        arr = np.array(self.data, copy=True)
        arr.setflags(write=False)
        object.__setattr__(self, "data", arr)
        if self.checked_type_ is None:
            object.__setattr__(self, "checked_type_", TensorType(arr.shape, str(arr.dtype)))


@dataclass(frozen=True, eq=False)
class Call(Expr):
    op: Any                    # an Op, a Function (fused group) or an expression
    args: Any                  # any sequence; stored as a tuple
    attrs: Any = None          # the op's Attrs dataclass (None for a function call)
    checked_type_: Type | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))


@dataclass(frozen=True, eq=False)
class Tuple(Expr):
    fields: Any                # any sequence; stored as a tuple
    checked_type_: Type | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))

    def __len__(self):
        return len(self.fields)

    def __getitem__(self, i):
        return self.fields[i]


@dataclass(frozen=True, eq=False)
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int
    checked_type_: Type | None = field(default=None, compare=False)


@dataclass(frozen=True, eq=False)
class Let(Expr):
    var: Var
    value: Expr
    body: Expr
    checked_type_: Type | None = field(default=None, compare=False)


@dataclass(frozen=True, eq=False)
class Function(Expr):
    params: Any                # any sequence of Vars; stored as a tuple
    body: Expr
    ret_type: Type | None = None
    attrs: Any = field(default_factory=DictAttrs)   # a mapping; stored as DictAttrs
    checked_type_: Type | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))
        if not isinstance(self.attrs, DictAttrs):
            object.__setattr__(self, "attrs", DictAttrs(self.attrs))
        for p in self.params:
            if not isinstance(p, Var):
                raise RelayError(f"Function: parameter {p!r} is not a relay.Var")

    def with_attr(self, key, value) -> Function:
        return Function(self.params, self.body, self.ret_type, self.attrs.with_attr(key, value),
                        self.checked_type_)


def var(name_hint: str, type_annotation=None, shape=None, dtype: str = "float32") -> Var:
    """``relay.var("x", shape=(1, 3), dtype="float32")`` or with a TensorType."""
    if not isinstance(name_hint, str) or not name_hint:
        raise RelayError(f"relay.var: name {name_hint!r} must be a non-empty string")
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(tuple(shape), dtype)
    elif isinstance(type_annotation, (tuple, list)):
        type_annotation = TensorType(tuple(type_annotation), dtype)
    if type_annotation is not None and not isinstance(type_annotation, Type):
        raise RelayError(f"relay.var {name_hint!r}: type {type_annotation!r} is not a relay type")
    return Var(name_hint, type_annotation)


def const(value, dtype: str | None = None) -> Constant:
    """``relay.const(1.0)`` / ``relay.const(np_array)``; Python floats default to float32."""
    if isinstance(value, (bool, int, float)) and dtype is None:
        dtype = "bool" if isinstance(value, bool) else ("float32" if isinstance(value, float)
                                                        else "int32")
    arr = np.asarray(value, dtype=dtype)
    if arr.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
        arr = arr.astype(np.float32)
    return Constant(arr)


# The op registry and the printer build on these classes; they install themselves here
# when imported (the relay package imports both), so this module imports neither.
_printer: Any = None
_call_binary: Any = None


def register_impl(printer=None, call_binary=None) -> None:
    global _printer, _call_binary
    if printer is not None:
        _printer = printer
    if call_binary is not None:
        _call_binary = call_binary
