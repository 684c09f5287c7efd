"""Data types as plain strings ("float32", "int32x16", "bool", "handle").

A vector type appends ``x<lanes>`` to its element type.  The helpers here are cached
because lowering and codegen call them for every node.
"""
from functools import cache

SCALAR_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                "uint8", "uint16", "uint32", "uint64", "bool", "handle")


@cache
def parse(dtype: str) -> tuple:
    """Return (element type, lanes) of ``dtype``; raises ValueError on unknown types."""
    base, lanes = dtype, 1
    if "x" in dtype:
        base, _, n = dtype.rpartition("x")
        if not n.isdigit():
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {SCALAR_TYPES}")
        lanes = int(n)
    if base not in SCALAR_TYPES:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {SCALAR_TYPES}")
    return base, lanes


def lanes(dtype: str) -> int:
    return parse(dtype)[1]


def element_of(dtype: str) -> str:
    return parse(dtype)[0]


@cache
def with_lanes(dtype: str, n: int) -> str:
    base = parse(dtype)[0]
    return base if n == 1 else f"{base}x{n}"


@cache
def bits(dtype: str) -> int:
    base = parse(dtype)[0]
    if base == "bool":
        return 1
    if base == "handle":
        return 64
    return int(base.lstrip("floatuint"))  # noqa: B005 - strips any leading letter of the names


def is_float(dtype: str) -> bool:
    return parse(dtype)[0].startswith("float")


def is_int(dtype: str) -> bool:
    return parse(dtype)[0].startswith("int")


def is_uint(dtype: str) -> bool:
    return parse(dtype)[0].startswith("uint")


def is_bool(dtype: str) -> bool:
    return parse(dtype)[0] == "bool"


def is_integral(dtype: str) -> bool:
    """Signed or unsigned integer (not bool)."""
    base = parse(dtype)[0]
    return base.startswith("int") or base.startswith("uint")


def nbytes(dtype: str) -> int:
    """Storage size of one element; bool is stored as one byte."""
    base, n = parse(dtype)
    return max(1, bits(base) // 8) * n
