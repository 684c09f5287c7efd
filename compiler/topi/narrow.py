"""Narrow number formats kept in a wider integer: bfloat16, the float8s, float4e2m1,
int4/uint4 and int2/uint2 (ONNX element types 16-26), and conversions to and from them.

A value of format F lives in ``F.storage`` (uint8, or uint16 for bfloat16) holding F's
bit pattern in the low bits, one element per storage element -- exactly how ``ml_dtypes``
(ONNX's numpy representation) lays such arrays out, so a numpy array of F is viewed, not
converted, at the graph's edges.  Kernels see only the storage dtype; ``narrow_cast``
converts between a format and an ordinary dtype with integer bit manipulation.

Invariants (each is ml_dtypes' / ONNX's reference behaviour, tested bit for bit):
- float -> float format rounds half to even on the source bits; float16 goes through
  float32 and integers through float64 first, both exact, so nothing is rounded twice;
- overflow (and infinity): IEEE-like formats (bfloat16, e5m2) give inf, "fn" formats
  (e4m3fn) NaN, "fnuz" formats their single NaN 0x80; ``saturate`` (ONNX's attribute,
  float8 only) clamps to the largest finite value instead; float4e2m1 always clamps;
- NaN becomes the format's quiet NaN with the sign kept (fnuz: 0x80; float4e2m1, which
  has none, gives ml_dtypes' -0.0 for +NaN and +0.0 for -NaN); fnuz has no -0;
- float -> int4/int2 truncates toward zero and wraps, values outside int32 (and NaN)
  giving 0, as ml_dtypes 0.5-0.6 did on x86 (ONNX leaves an out-of-range value
  undefined; ml_dtypes 0.7 gives 0 for it); ints wrap;
- float8e8m0 is encoded as ONNX's ``to_float8e8m0`` (round_mode up/down/nearest);
- decoding is exact: every format's values are float32 values (ints: int64).
The algorithm is written once against an adapter (``NUMPY`` arrays for the reference
and constant folding, ``TIR`` expressions for kernels), so both run the same steps.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np

from ..errors import TEError
from ..te.api import compute
from ..tir import dtype as dt
from ..tir import op as _op
from . import tag as _tag

__all__ = ["Format", "FORMATS", "ROUND_MODES", "narrow_cast", "narrow_cast_ref",
           "numpy_dtype", "to_storage", "from_storage", "NUMPY", "TIR"]


@dataclass(frozen=True)
class Format:
    name: str        # ml_dtypes' (and numpy's, once ml_dtypes is loaded) name
    storage: str     # the dtype that holds the bits
    kind: str        # ieee | fn | fnuz | finite | e8m0 | int | uint
    bits: int
    exp: int = 0
    man: int = 0
    bias: int = 0

    @property
    def is_float(self) -> bool:
        return self.kind not in ("int", "uint")


FORMATS = {f.name: f for f in (
    Format("bfloat16", "uint16", "ieee", 16, 8, 7, 127),
    Format("float8_e4m3fn", "uint8", "fn", 8, 4, 3, 7),
    Format("float8_e4m3fnuz", "uint8", "fnuz", 8, 4, 3, 8),
    Format("float8_e5m2", "uint8", "ieee", 8, 5, 2, 15),
    Format("float8_e5m2fnuz", "uint8", "fnuz", 8, 5, 2, 16),
    Format("float8_e8m0fnu", "uint8", "e8m0", 8, 8, 0, 127),
    Format("float4_e2m1fn", "uint8", "finite", 4, 2, 1, 1),
    Format("int4", "uint8", "int", 4), Format("uint4", "uint8", "uint", 4),
    Format("int2", "uint8", "int", 2), Format("uint2", "uint8", "uint", 2))}

ROUND_MODES = ("up", "down", "nearest")
_QNAN, _INF, _SIGN = 0x7FC00000, 0x7F800000, 2 ** 31


class _NumpyOps:
    """The adapter over numpy arrays (int64 for codes, float32/64 for values)."""

    @staticmethod
    def where(c, a, b):
        return np.where(c, a, b)

    @staticmethod
    def bits(x):
        x = np.asarray(x)
        return x.view(np.int32 if x.dtype == np.float32 else np.int64).astype(np.int64)

    @staticmethod
    def float32_of_bits(b):
        return (np.asarray(b, np.int64) % 2 ** 32).astype(np.uint32).view(np.float32)

    @staticmethod
    def rint(x):
        return np.rint(x)

    @staticmethod
    def trunc(x):
        return np.trunc(x)

    @staticmethod
    def cast(x, dtype: str):
        return np.asarray(x).astype(dtype)


class _TirOps:
    """The adapter over TIR expressions (one element of a kernel)."""

    @staticmethod
    def where(c, a, b):
        return _op.select(c, a, b)

    @staticmethod
    def bits(x):
        return _op.cast("int64", _op.reinterpret("int32" if x.dtype == "float32" else "int64",
                                                 x))

    @staticmethod
    def float32_of_bits(b):
        return _op.reinterpret("float32", _op.cast("int32", b))   # int64 -> int32 wraps

    @staticmethod
    def rint(x):
        return _op.round_(x)      # llvm.roundeven: half to even, as np.rint

    @staticmethod
    def trunc(x):
        return _op.trunc(x)

    @staticmethod
    def cast(x, dtype: str):
        return _op.cast(dtype, x)


NUMPY, TIR = _NumpyOps(), _TirOps()


# ------------------------------------------------------------------ encoding
def _encode_float(o, x, f: Format, saturate: bool, wide: bool):
    """The code of float32 (float64 if ``wide``) values ``x`` in float format ``f``."""
    saturate = saturate and f.bits == 8         # ONNX: the attribute is for float8 only
    se_bits, sm_bits = (11, 52) if wide else (8, 23)
    sbias, width = 2 ** (se_bits - 1) - 1, f.exp + f.man
    b = o.bits(x)
    sign = b < 0
    if wide:     # 2**63 is no int64: take bit 62 on its own
        mag = b % 2 ** 62 + (b // 2 ** 62) % 2 * 2 ** 62
    else:
        mag = b % 2 ** 31
    se, sm = mag // 2 ** sm_bits, mag % 2 ** sm_bits
    nan = (se == 2 ** se_bits - 1) & (sm != 0)
    # normal range: drop the low mantissa bits, half to even; a carry runs into the
    # exponent, which is the right code
    shift = sm_bits - f.man
    q, r, half = mag // 2 ** shift, mag % 2 ** shift, 2 ** (shift - 1)
    up = (r > half) | ((r == half) & (q % 2 == 1))
    code = q + o.where(up, 1, 0) - (sbias - f.bias) * 2 ** f.man
    # below the smallest normal: a multiple of the smallest subnormal, rounded half to
    # even in float64 (scaling by a power of two is exact there)
    tiny = se < sbias - f.bias + 1
    ax = o.cast(o.where(tiny, o.where(sign, -x, x), 0.0), "float64")
    code = o.where(tiny, o.cast(o.rint(ax * 2.0 ** (f.bias - 1 + f.man)), "int64"), code)
    if f.kind == "ieee":
        maxc, inf = (2 ** f.exp - 1) * 2 ** f.man - 1, (2 ** f.exp - 1) * 2 ** f.man
        code = o.where(code > maxc, maxc if saturate else inf, code)
        code = o.where(nan, inf + 2 ** (f.man - 1), code)
        return code + o.where(sign, 2 ** width, 0)
    maxc = 2 ** width - (2 if f.kind == "fn" else 1)
    over = code > maxc
    code = o.where(over, maxc, code)
    if f.kind == "finite":     # no inf/NaN; ml_dtypes maps NaN to a zero of flipped sign
        return o.where(nan, o.where(sign, 0, 2 ** width), code + o.where(sign, 2 ** width, 0))
    special = nan | over if not saturate else nan
    if f.kind == "fn":
        return o.where(special, 2 ** width - 1, code) + o.where(sign, 2 ** width, 0)
    signed = code + o.where(sign & (code != 0), 2 ** width, 0)   # fnuz: no -0
    return o.where(special, 2 ** width, signed)


def _encode_e8m0(o, x, saturate: bool, round_mode: str):
    """ONNX's ``to_float8e8m0``: the float32 exponent, rounded by ``round_mode``."""
    b = o.bits(x)
    exponent, frac = (b // 2 ** 23) % 256, b % 2 ** 23
    if round_mode == "down":
        return o.where(exponent == 255, 255, exponent)
    if round_mode == "nearest":     # ONNX's rule, its "lsb" being "exponent > 0"
        g, rr = (b // 2 ** 22) % 2 == 1, (b // 2 ** 21) % 2 == 1
        up = g & (rr | (b % 2 ** 21 != 0) | (exponent > 0))
    else:
        up = frac > 0
    if saturate:
        up = up & (exponent != 254)
    return o.where(exponent == 255, 255, exponent + o.where(up, 1, 0))


def _encode_int(o, x, src: str, f: Format):
    if dt.is_float(src):
        t = o.trunc(x)
        ok = (t >= -2.0 ** 31) & (t < 2.0 ** 31)       # false for NaN too
        v = o.where(ok, o.cast(o.where(ok, t, 0.0), "int64"), 0)
    else:
        v = o.cast(x, "int64")
    return v % 2 ** f.bits


def encode(o, x, src: str, f: Format, saturate: bool = True, round_mode: str = "up"):
    """Codes (int64) in format ``f`` of values ``x`` of dtype ``src``."""
    if f.kind in ("int", "uint"):
        return _encode_int(o, x, src, f)
    if f.kind == "e8m0" or src in ("float16", "bool"):
        if src != "float32":
            x = o.cast(x, "float32")
        src = "float32"
    elif src != "float32" and src != "float64":
        x, src = o.cast(x, "float64"), "float64"
    if f.kind == "e8m0":
        return _encode_e8m0(o, x, saturate, round_mode)
    return _encode_float(o, x, f, saturate, src == "float64")


# ------------------------------------------------------------------ decoding
def decode(o, c, f: Format):
    """The values of codes ``c`` (int64) of format ``f``: float32, or int64 for ints."""
    c = c % 2 ** f.bits
    if f.kind == "int":
        return o.where(c >= 2 ** (f.bits - 1), c - 2 ** f.bits, c)
    if f.kind == "uint":
        return c
    if f.name == "bfloat16":          # the upper half of a float32, payloads and all
        return o.float32_of_bits(c * 2 ** 16)
    if f.kind == "e8m0":
        return o.float32_of_bits(o.where(c == 255, _QNAN,
                                         o.where(c == 0, 2 ** 22, c * 2 ** 23)))
    width = f.exp + f.man
    e, m = (c // 2 ** f.man) % 2 ** f.exp, c % 2 ** f.man
    bits = (e - f.bias + 127) * 2 ** 23 + m * 2 ** (23 - f.man)
    sub = o.bits(o.cast(m, "float32") * 2.0 ** (1 - f.bias - f.man))   # exact
    bits = o.where(e == 0, sub, bits)
    if f.kind == "ieee":
        bits = o.where(e == 2 ** f.exp - 1, o.where(m == 0, _INF, _QNAN), bits)
    elif f.kind == "fn":
        bits = o.where(c % 2 ** width == 2 ** width - 1, _QNAN, bits)
    elif f.kind == "fnuz":
        bits = o.where(c == 2 ** width, _QNAN, bits)
    return o.float32_of_bits(bits + o.where(c >= 2 ** width, _SIGN, 0))


# ------------------------------------------------------------------ conversions
def check_conversion(what: str, src: str, dst: str, round_mode: str = "up") -> None:
    """Raise TEError unless ``src -> dst`` is a conversion ``narrow_cast`` makes."""
    for arg, d in (("source", src), ("target", dst)):
        if d not in FORMATS and not _scalar_dtype(d):
            raise TEError(f"{what}: {arg} {d!r} is neither a scalar dtype nor a narrow "
                          f"format (one of {sorted(FORMATS)})")
    if src not in FORMATS and dst not in FORMATS:
        raise TEError(f"{what}: neither {src!r} nor {dst!r} is a narrow format; use cast")
    if round_mode not in ROUND_MODES:
        raise TEError(f"{what}: round_mode {round_mode!r}; expected one of {ROUND_MODES}")


def _scalar_dtype(d: str) -> bool:
    try:
        return dt.lanes(d) == 1 and dt.element_of(d) != "handle"
    except ValueError:
        return False


def convert(o, x, src: str, dst: str, saturate: bool = True, round_mode: str = "up"):
    """``x`` (of ``src``: a dtype, or a format's storage) converted to ``dst`` (a dtype,
    or a format's storage); formats go through their exact float32/int64 values."""
    if src in FORMATS:
        f = FORMATS[src]
        x = decode(o, o.cast(x, "int64"), f)
        src = "float32" if f.is_float else "int64"
    if dst in FORMATS:
        f = FORMATS[dst]
        return o.cast(encode(o, x, src, f, saturate, round_mode), f.storage)
    return o.cast(x, dst)


def storage_of(d: str) -> str:
    """The dtype a value of ``d`` (a dtype or a format) has in kernels."""
    return FORMATS[d].storage if d in FORMATS else d


def narrow_cast(x, src: str, dst: str, saturate: bool = True, round_mode: str = "up"):
    """TE: ``x`` (storage of ``src``) converted to ``dst`` (its storage if a format)."""
    check_conversion("topi.narrow_cast", src, dst, round_mode)
    if x.dtype != storage_of(src):
        raise TEError(f"topi.narrow_cast: x has dtype {x.dtype}; a {src} value is held in "
                      f"{storage_of(src)}")
    return compute(x.shape, lambda *i: convert(TIR, x(*i), src, dst, saturate, round_mode),
                   name="T_narrow_cast", tag=_tag.ELEMWISE)


def narrow_cast_ref(x, src: str, dst: str, saturate: bool = True, round_mode: str = "up"):
    """numpy: the same conversion (the reference, and constant folding)."""
    check_conversion("narrow_cast", src, dst, round_mode)
    with np.errstate(invalid="ignore", over="ignore"):
        return convert(NUMPY, np.asarray(x), src, dst, saturate, round_mode)


# ------------------------------------------------------------------ numpy at the edges
def numpy_dtype(fmt: str):
    """numpy's dtype of format ``fmt`` (ml_dtypes registers these names), or None when
    ml_dtypes is not installed."""
    try:
        return np.dtype(fmt)
    except TypeError:
        pass
    try:
        importlib.import_module("ml_dtypes")     # an optional third-party package
    except ImportError:
        return None
    return np.dtype(fmt)


def to_storage(a: np.ndarray, fmt: str) -> np.ndarray:
    """An array of format ``fmt`` (an ml_dtypes array, or its storage) as storage."""
    f = FORMATS[fmt]
    a = np.asarray(a)
    if a.dtype.itemsize != np.dtype(f.storage).itemsize or \
            (str(a.dtype) != fmt and str(a.dtype) != f.storage):
        raise TEError(f"to_storage: an array of dtype {a.dtype} does not hold {fmt} values; "
                      f"expected dtype {fmt} or {f.storage}")
    a = a.view(f.storage)
    return a % np.asarray(2 ** f.bits, f.storage) if f.bits < 8 else a


def from_storage(a: np.ndarray, fmt: str) -> np.ndarray:
    """Storage ``a`` viewed as numpy's ``fmt`` array (kept as storage without ml_dtypes)."""
    d = numpy_dtype(fmt)
    return np.asarray(a) if d is None else np.asarray(a).view(d)
