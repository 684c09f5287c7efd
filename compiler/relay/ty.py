"""Relay types: ``TensorType``, ``TupleType``, ``FuncType`` (TVM's ``relay.ty``).

Invariants: types are immutable and compared structurally (``==`` and ``hash`` by value):
two ``TensorType((1, 3), "float32")`` are the same type.  Shapes are static tuples of
Python ints.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import RelayError

__all__ = ["Type", "TensorType", "TupleType", "FuncType", "scalar_type"]


class Type:
    """Base class of relay types."""


_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "bool")


@dataclass(frozen=True)
class TensorType(Type):
    shape: tuple
    dtype: str = "float32"

    def __post_init__(self):
        try:
            shape = tuple(int(s) for s in self.shape)
        except (TypeError, ValueError):
            raise RelayError(f"TensorType: shape {self.shape!r} must be a tuple of ints "
                             "(static shapes only)") from None
        if any(s < 0 for s in shape):
            raise RelayError(f"TensorType: shape {self.shape!r} has a negative extent")
        if self.dtype not in _DTYPES:
            raise RelayError(f"TensorType: dtype {self.dtype!r} is not one of {_DTYPES}")
        object.__setattr__(self, "shape", shape)

    @property
    def concrete_shape(self) -> tuple:
        return self.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        dims = ", ".join(map(str, self.shape)) + ("," if len(self.shape) == 1 else "")
        return f"Tensor[({dims}), {self.dtype}]"


@dataclass(frozen=True)
class TupleType(Type):
    fields: tuple

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))

    def __str__(self) -> str:
        tail = "," if len(self.fields) == 1 else ""
        return "(" + ", ".join(str(f) for f in self.fields) + tail + ")"


@dataclass(frozen=True)
class FuncType(Type):
    arg_types: tuple
    ret_type: Type

    def __post_init__(self):
        object.__setattr__(self, "arg_types", tuple(self.arg_types))

    def __str__(self) -> str:
        return f"fn ({', '.join(str(a) for a in self.arg_types)}) -> {self.ret_type}"


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)
