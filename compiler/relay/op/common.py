"""Helpers shared by the operator definitions: calls, argument checks, type relations.

``topi_rel(name, build)`` derives an op's type relation from its topi compute: it builds
the compute on placeholders of the argument types and reads the output shapes and
dtypes, so the relation and the compute can never disagree; results are cached by
(argument types, attrs), both hashable.  A topi TEError becomes a RelayTypeError naming
the relay op.
"""
from __future__ import annotations

from functools import lru_cache

from ...errors import TEError
from ...te import api as te_api
from ...te.tensor import Tensor
from ..errors import RelayError, RelayTypeError
from ..expr import Call, Constant, Expr, Tuple, TupleGetItem, const, register_impl
from ..ty import TensorType, TupleType
from .attrs import CastAttrs as _CAST_ATTRS
from .registry import get

__all__ = ["call", "as_expr", "tensor_arg", "topi_rel", "placeholders", "type_of",
           "int_tuple", "pair", "quad", "TupleWrapper"]


def as_expr(x, what: str = "argument") -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, TupleWrapper):
        return x.astuple()
    if isinstance(x, (bool, int, float)):
        return const(x)
    raise RelayError(f"{what}: {x!r} is not a relay expression")


def call(op_name: str, args, attrs=None) -> Call:
    op = get(op_name)
    args = tuple(as_expr(a, f"{op_name} argument {k}") for k, a in enumerate(args))
    if op.num_inputs >= 0 and len(args) != op.num_inputs:
        raise RelayError(f"{op_name}: takes {op.num_inputs} arguments, got {len(args)}")
    return Call(op, args, attrs)


def tensor_arg(op: str, name: str, t) -> TensorType:
    if not isinstance(t, TensorType):
        raise RelayTypeError(f"{op}: argument {name} has type {t}; expected a tensor")
    return t


def placeholders(arg_types) -> list:
    out: list = []
    for k, t in enumerate(arg_types):
        if isinstance(t, TupleType):
            out.append([te_api.placeholder(f.shape, name=f"x{k}_{i}", dtype=f.dtype)
                        for i, f in enumerate(t.fields)])
        else:
            out.append(te_api.placeholder(t.shape, name=f"x{k}", dtype=t.dtype))
    return out


def type_of(out):
    if isinstance(out, Tensor):
        return TensorType(tuple(int(s.value) for s in out.shape), out.dtype)
    return TupleType(tuple(type_of(t) for t in out))


def topi_rel(name: str, build):
    @lru_cache(maxsize=4096)
    def rel(arg_types: tuple, attrs):
        for k, t in enumerate(arg_types):
            if not isinstance(t, (TensorType, TupleType)):
                raise RelayTypeError(f"{name}: argument {k} has type {t}; expected a tensor")
        try:
            out = build(placeholders(arg_types), attrs)
        except TEError as e:
            shapes = ", ".join(str(t) for t in arg_types)
            raise RelayTypeError(f"{name}: {_strip_topi_prefix(str(e))} (arguments: {shapes})") \
                from None
        return type_of(out)
    return rel


def _strip_topi_prefix(msg: str) -> str:
    head, sep, rest = msg.partition(": ")
    return rest if sep and ("." in head or head.startswith("topi")) else msg


def int_tuple(value, what: str) -> tuple:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    try:
        out = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise RelayError(f"{what}: {value!r} must be an int or a sequence of ints") from None
    return out


def pair(value, what: str) -> tuple:
    t = int_tuple(value, what)
    if len(t) == 1:
        return (t[0], t[0])
    if len(t) != 2:
        raise RelayError(f"{what}: {value!r} must have 1 or 2 values")
    return t


def quad(value, what: str) -> tuple:
    """Padding as (top, left, bottom, right) from 1, 2 or 4 values (TVM's rule)."""
    t = int_tuple(value, what)
    if len(t) == 1:
        return t * 4
    if len(t) == 2:
        return (t[0], t[1], t[0], t[1])
    if len(t) != 4:
        raise RelayError(f"{what}: {value!r} must have 1, 2 or 4 values")
    return t


class TupleWrapper:
    """A multi-output call (split, batch_norm): index it for the outputs (TVM's name)."""

    def __init__(self, tuple_value: Expr, size: int):
        self.tuple_value, self.size = tuple_value, size

    def astuple(self) -> Expr:
        return self.tuple_value

    def __getitem__(self, index: int) -> TupleGetItem:
        if not -self.size <= index < self.size:
            raise IndexError(f"TupleWrapper of {self.size} outputs: index {index} out of range")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return (self[i] for i in range(self.size))


def is_constant(e) -> bool:
    return isinstance(e, Constant) or (isinstance(e, Tuple) and all(is_constant(f)
                                                                     for f in e.fields))


def _expr_operator(name: str, a, b):
    """``Expr.__add__`` & co.: build the call of operator ``name``."""
    if name == "negative":
        return call("negative", [a])
    if name == "cast":
        return call("cast", [a], _cast_attrs(str(b)))
    return call(name, [a, b])


def _cast_attrs(dtype: str):
    return _CAST_ATTRS(dtype)


register_impl(call_binary=_expr_operator)
