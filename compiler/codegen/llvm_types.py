"""TIR dtypes -> LLVM IR type names, constant literals and identifiers (text form).

Role: the small, pure, cached helpers every emitter module uses to spell types and
constants.  Invariants:
- register types: float16/32/64 -> half/float/double, intN/uintN -> iN, bool -> i1,
  handle -> ptr, "<base>x<N>" -> ``<N x T>``;
- memory types differ only for bool, which is stored as one byte (i8);
- float literals are printed as the exact hexadecimal bit pattern LLVM expects
  (a double pattern for float/double, ``0xH`` for half), so no value is ever rounded
  by the text round trip and inf/nan need no special case;
- integer literals are printed in the signed range of their width (LLVM reads
  ``i64 18446744073709551615`` as an error, ``i64 -1`` is the same bits).
"""
from __future__ import annotations

import math
import re
import struct
from functools import cache, lru_cache

from ..errors import CodegenError
from ..tir import dtype as dt

_SCALAR = {
    "float16": "half", "float32": "float", "float64": "double",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "i8", "uint16": "i16", "uint32": "i32", "uint64": "i64",
    "bool": "i1", "handle": "ptr",
}
_SUFFIX = {"half": "f16", "float": "f32", "double": "f64"}


def _parse(dtype: str) -> tuple:
    try:
        return dt.parse(dtype)
    except ValueError as exc:
        raise CodegenError(f"codegen: unsupported dtype {dtype!r}: {exc}") from None


@cache
def ltype(dtype: str) -> str:
    """LLVM register type of a TIR dtype."""
    base, lanes = _parse(dtype)
    s = _SCALAR[base]
    return s if lanes == 1 else f"<{lanes} x {s}>"


@cache
def mtype(dtype: str) -> str:
    """LLVM in-memory type of a TIR dtype (bool occupies a byte)."""
    base, lanes = _parse(dtype)
    s = "i8" if base == "bool" else _SCALAR[base]
    return s if lanes == 1 else f"<{lanes} x {s}>"


@cache
def elem_ltype(dtype: str) -> str:
    return _SCALAR[_parse(dtype)[0]]


@cache
def intrinsic_suffix(dtype: str) -> str:
    """Overload suffix of an LLVM intrinsic: f32, v8f32, i32, v4i64 ..."""
    base, lanes = _parse(dtype)
    s = _SCALAR[base]
    s = _SUFFIX.get(s, s)
    return s if lanes == 1 else f"v{lanes}{s}"


@cache
def elem_bytes(dtype: str) -> int:
    """Bytes of one element in memory (the alignment we may claim for loads/stores)."""
    return dt.nbytes(dt.element_of(dtype))


def _wrap_signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def scalar_lit(dtype: str, value) -> str:
    """Literal of a scalar constant of ``dtype`` (no type prefix)."""
    # keyed by repr: 0.0 == -0.0 (and 1 == 1.0 == True) would collide in a plain cache
    return _scalar_lit(dtype, repr(value), value)


@lru_cache(maxsize=4096)
def _scalar_lit(dtype: str, _key: str, value) -> str:
    base = _parse(dtype)[0]
    if base == "bool":
        return "true" if value else "false"
    if base.startswith("float"):
        v = float(value)
        if base == "float16":
            try:
                return "0xH" + struct.pack(">e", v).hex().upper()
            except OverflowError:  # finite but beyond half range: IEEE rounds to inf
                return "0xH7C00" if v > 0 else "0xHFC00"
        if base == "float32" and math.isfinite(v):
            v = struct.unpack("<f", struct.pack("<f", v))[0]  # round to float first
        elif base == "float32":
            # inf keeps its sign; every NaN becomes the canonical quiet NaN of float
            v = v if math.isinf(v) else struct.unpack("<f", b"\x00\x00\xc0\x7f")[0]
        return "0x" + struct.pack(">d", v).hex().upper()
    if base == "handle":
        if value:
            raise CodegenError(f"codegen: handle constant {value!r}; only null is supported")
        return "null"
    return str(_wrap_signed(int(value), dt.bits(base)))


def splat_lit(dtype: str, value) -> str:
    """Constant operand of ``dtype`` (scalar or vector) with every lane = ``value``."""
    base, lanes = _parse(dtype)
    lit = scalar_lit(base, value)
    if lanes == 1:
        return lit
    return f"splat ({_SCALAR[base]} {lit})"


def vector_lit(dtype: str, values) -> str:
    """Constant vector operand with the given per-lane values."""
    base = _parse(dtype)[0]
    s = _SCALAR[base]
    return "<" + ", ".join(f"{s} {scalar_lit(base, v)}" for v in values) + ">"


@cache
def index_mask(indices: tuple) -> str:
    """``<N x i32> <...>`` mask operand of shufflevector."""
    return f"<{len(indices)} x i32> <" + ", ".join(f"i32 {i}" for i in indices) + ">"


_IDENT = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$]*\Z")
_BAD = re.compile(r"[^A-Za-z0-9_.]")


def global_name(name: str) -> str:
    """``@name``, quoted when ``name`` is not a plain LLVM identifier."""
    if _IDENT.match(name):
        return "@" + name
    if '"' in name or "\\" in name:
        raise CodegenError(f"codegen: function name {name!r} contains a quote or backslash")
    return f'@"{name}"'


def local_hint(name: str) -> str:
    """A safe fragment of a local value name derived from a TIR name."""
    s = _BAD.sub("_", name)[:24]
    return s if s and not s[0].isdigit() else "v" + s
