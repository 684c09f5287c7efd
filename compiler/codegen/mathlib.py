"""Vector math library: exp, log, tanh, sigmoid and erf as LLVM IR text.

Role: the LLVM code generator asks ``math_function(name, dtype)`` for a function
``define internal <ty> @<symbol>(<ty> %x) alwaysinline nounwind`` and appends the
definitions of everything a module needs once, via ``math_functions_needed_ir``.

Invariants:
- float32 (scalar or any lane count) is pure straight-line arithmetic on the vector
  type: fmuladd polynomials, integer bitcasts for exponent tricks, clamps and selects
  for special cases.  No calls and no branches, so after inlining it runs at full
  vector width; LLVM's own ``llvm.exp.v8f32`` would become eight scalar ``expf`` calls.
- float64 calls libm lane by lane (``llvm.exp/log/tanh`` intrinsics, which the backend
  scalarizes into ``exp``/``log``/``tanh`` calls, and an explicit ``@erf`` declaration).
  ``@erf`` is the only external symbol declared here, so the code generator must not
  declare it again (LLVM rejects a second declaration).  Intrinsics need no
  declaration: the IR parser declares them on first use.
- Accuracy for float32: relative error <= ~3e-7 against a float64 reference (absolute
  near zero crossings), NaN in -> NaN out, saturation instead of NaN for large |x|.
  exp overflows to +inf above ln(FLT_MAX) and returns 0 instead of results below
  ~1.7e-38 (x < -87.01; no denormal outputs), and so does sigmoid for x < -87.01.
  log handles denormal inputs, log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
- Output is deterministic (sorted, deduplicated) so it can be hashed into cache keys.

The polynomial coefficients are weighted minimax (Remez) fits of the residual
functions named next to each table, computed in 40-digit arithmetic and then rounded
to the element type; the residual fit error is stated next to each table.
"""
from __future__ import annotations

import struct
from functools import cache

from ..errors import CodegenError
from ..tir import dtype as _dt

SUPPORTED_FUNCTIONS = ("exp", "log", "tanh", "sigmoid", "erf")

# --- float32 constants --------------------------------------------------------------
# exp(x) = 2^n * exp(r), x = n*ln2 + r.  exp(r) = 1 + r + r^2 P(r) on |r| <= 0.37,
# relative fit error 1.6e-7 (measured max 2.3e-7 end to end).  Degree 5: one more
# term gives 8e-8 but costs ~10% of the throughput.  Highest first; the trailing
# 1, 1 make the whole polynomial one Horner chain of fmuladds.
_EXP_POLY = (0.008309183675960247, 0.041920540808797306, 0.16667253203630297,
             0.49999011925768777, 1.0, 1.0)
# n = round(x * _EXP_ROUND_SCALE): log2(e) shrunk by 2.4e-4 so that x = -87 still
# gets n = -125 and x = 88.72 gets n <= 128 (see _exp_core); r = x - n*ln2 is
# computed with the true ln2, so this only widens |r| from 0.347 to 0.368.
_EXP_ROUND_SCALE = 1.4426950408889634 * (1.0 - 2.4e-4)
# Cody-Waite split of ln2: _LN2_HI has 9 significant bits, so n * _LN2_HI is exact for
# |n| < 2^15 even when fmuladd is not fused, and x - n*_LN2_HI is then exact.
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
# Adding 1.5 * 2^23 rounds a float32 of magnitude < 2^22 to an integer held in the
# low mantissa bits (no fptosi, which is poison on NaN); the extra 126 makes those
# bits the biased exponent of 2^(n-1) directly.
_EXP_MAGIC = 12582912.0 + 126.0
# Clamps: 89 > ln(FLT_MAX) so the product overflows to inf on its own; -87.5 gives
# n = -126, a zero scale, hence exactly 0.
_EXP_HI = 89.0
_EXP_LO = -87.5

# log(1 + f) = f - f^2/2 + f^3 P(f) on [sqrt(1/2) - 1, sqrt(2) - 1]; fit error 5.8e-9.
_LOG_POLY = (-0.07634494861588843, 0.1276157517634738, -0.13160182117327507,
             0.14201758279635907, -0.16623357411458842, 0.20001226864021854,
             -0.2500082103181037, 0.33333331707890024)
_SQRT_HALF_BITS = 0x3F3504F3
_ONE_BITS = 0x3F800000
_FLT_MIN = 1.1754943508222875e-38
_TWO_POW_23 = 8388608.0

# tanh(x) = x + x^3 P(x^2) on |x| < 0.625; fit error 4.4e-9.  Above, 1 - 2/(e^2x + 1)
# has no cancellation worth mentioning (result >= 0.55).
_TANH_SMALL = 0.625
_TANH_POLY = (-0.0057049871296881525, 0.02063908736087775, -0.053739715119536444,
              0.1333144219857644, -0.33333281942030446)

# erf(x) = x P(x^2) on |x| < 1; relative fit error 1.2e-9.
_ERF_POLY = (7.853860968565598e-05, -0.0008010193500445893, 0.005188327670400222,
             -0.026853811926566506, 0.11283585148393553,
             -0.3761262582421569, 1.1283791657267135)
# erfc(x) = Q(x - 2.5) on [1, 4]; absolute fit error 4.4e-8 (so erf = 1 - Q is good to
# ~1e-7 relative).  Centering at 2.5 keeps the Horner terms small in float32.
_ERFC_POLY = (8.595769007801204e-06, -2.1299191303860215e-05, -5.871369370914551e-05,
              0.000280253805317816, -0.00029359130166639776, -0.0005729145167924403,
              0.0028253884419827107, -0.006101185961620165, 0.008612042345606323,
              -0.008353904298902934, 0.005447186946581156, -0.002178021090362492,
              0.0004069178447218)
_ERF_SPLIT = 1.0
_ERF_ONE = 4.0  # erfc(4) = 1.5e-8 < half an ulp below 1.0


def _f32_bits_as_double(v: float) -> float:
    """Round ``v`` to float32; LLVM spells float constants as the equal double."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


class _Emitter:
    """Builds straight-line IR text for one function over a (possibly vector) type."""

    def __init__(self, elem: str, lanes: int):
        self.elem = elem  # "float" or "double"
        self.lanes = lanes
        self.ibits = 32 if elem == "float" else 64
        self.lines: list[str] = []
        self._n = 0

    def vty(self, scalar: str) -> str:
        return scalar if self.lanes == 1 else f"<{self.lanes} x {scalar}>"

    @property
    def ft(self) -> str:
        return self.vty(self.elem)

    @property
    def it(self) -> str:
        return self.vty(f"i{self.ibits}")

    def suffix(self) -> str:
        """Overload suffix of an intrinsic on the float type (f32, v8f32, ...)."""
        base = "f32" if self.elem == "float" else "f64"
        return base if self.lanes == 1 else f"v{self.lanes}{base}"

    def fc(self, v: float) -> str:
        if self.elem == "float":
            v = _f32_bits_as_double(v)
        text = f"0x{struct.unpack('<Q', struct.pack('<d', v))[0]:016X}"
        return text if self.lanes == 1 else f"splat ({self.elem} {text})"

    def ic(self, v: int) -> str:
        return str(v) if self.lanes == 1 else f"splat (i{self.ibits} {v})"

    def emit(self, rhs: str) -> str:
        name = f"%v{self._n}"
        self._n += 1
        self.lines.append(f"  {name} = {rhs}")
        return name

    # Float arithmetic; operands are SSA names or constants from fc().
    def fop(self, op: str, a: str, b: str) -> str:
        return self.emit(f"{op} {self.ft} {a}, {b}")

    def fma(self, a: str, b: str, c: str) -> str:
        t = self.ft
        return self.emit(f"call {t} @llvm.fmuladd.{self.suffix()}({t} {a}, {t} {b}, {t} {c})")

    def intrinsic(self, name: str, *args: str) -> str:
        t = self.ft
        ops = ", ".join(f"{t} {a}" for a in args)
        return self.emit(f"call {t} @llvm.{name}.{self.suffix()}({ops})")

    def horner(self, x: str, coeffs) -> str:
        acc = self.fma(x, self.fc(coeffs[0]), self.fc(coeffs[1]))
        for c in coeffs[2:]:
            acc = self.fma(acc, x, self.fc(c))
        return acc

    def fcmp(self, pred: str, a: str, b: str) -> str:
        return self.emit(f"fcmp {pred} {self.ft} {a}, {b}")

    def select(self, cond: str, a: str, b: str, ty: str | None = None) -> str:
        ty = ty or self.ft
        return self.emit(f"select {self.vty('i1')} {cond}, {ty} {a}, {ty} {b}")

    def iop(self, op: str, a: str, b: str) -> str:
        return self.emit(f"{op} {self.it} {a}, {b}")

    def to_int(self, a: str) -> str:
        return self.emit(f"bitcast {self.ft} {a} to {self.it}")

    def to_float(self, a: str) -> str:
        return self.emit(f"bitcast {self.it} {a} to {self.ft}")

    def clamp_above(self, x: str, hi: float) -> str:
        # "x > hi ? hi : x" lowers to one minps whose NaN result is x: NaN survives.
        return self.select(self.fcmp("ogt", x, self.fc(hi)), self.fc(hi), x)

    def clamp_below(self, x: str, lo: float) -> str:
        return self.select(self.fcmp("olt", x, self.fc(lo)), self.fc(lo), x)


# --- float32 kernels ----------------------------------------------------------------
def _exp_core(e: _Emitter, x: str) -> str:
    """exp(x) for any x: relative error < 3e-7 while the result is >= 1.7e-38
    (x >= -87.01), 0 below that (no denormal results), inf above ln(FLT_MAX), NaN for
    NaN.  12 vector ops: 2 clamps, 3 for the reduction, 5 for the polynomial, 2 to
    scale -- special cases cost only the two clamps (selects cost ~20% throughput).

    The scale is 2^(n-1) times a doubled polynomial (doubling is exact) because n
    ranges over [-126, 128] and the 254 normal exponents cannot hold 2^n for all of
    them: with n - 1, n = 128 still works and overflows through the multiply, n = -125
    is the lowest exact one (hence the shrunk log2(e)), and n = -126 gives a zero
    scale, which the lower clamp uses to produce 0.
    """
    # "x > hi ? hi : x" lowers to minps/maxps whose NaN result is x, so NaN survives.
    xc = e.clamp_below(e.clamp_above(x, _EXP_HI), _EXP_LO)
    t = e.fma(xc, e.fc(_EXP_ROUND_SCALE), e.fc(_EXP_MAGIC))
    nf = e.fop("fsub", t, e.fc(_EXP_MAGIC))
    r = e.fma(nf, e.fc(-_LN2_HI), xc)
    r = e.fma(nf, e.fc(-_LN2_LO), r)
    p2 = e.horner(r, [2.0 * c for c in _EXP_POLY])
    # bits(t) = 0x4B400000 + n + 126; the offset's low nine bits are zero, so after
    # "shl 23" exactly n - 1 + 127 is left in the exponent field.
    scale = e.to_float(e.iop("shl", e.to_int(t), e.ic(23)))
    return e.fop("fmul", p2, scale)


def _f32_exp(e: _Emitter, x: str) -> str:
    return _exp_core(e, x)


def _f32_log(e: _Emitter, x: str) -> str:
    # Denormals: scale into the normal range first and take 23 off the exponent.
    den = e.fcmp("olt", x, e.fc(_FLT_MIN))
    xs = e.select(den, e.fop("fmul", x, e.fc(_TWO_POW_23)), x)
    ebias = e.select(den, e.ic(-23 - 127), e.ic(-127), e.it)
    # Shift the mantissa range to [sqrt(1/2), sqrt(2)) so |f| <= 0.414.
    ix = e.iop("add", e.to_int(xs), e.ic(_ONE_BITS - _SQRT_HALF_BITS))
    ei = e.iop("add", e.iop("lshr", ix, e.ic(23)), ebias)
    mant = e.iop("add", e.iop("and", ix, e.ic(0x007FFFFF)), e.ic(_SQRT_HALF_BITS))
    f = e.fop("fsub", e.to_float(mant), e.fc(1.0))
    ef = e.emit(f"sitofp {e.it} {ei} to {e.ft}")
    f2 = e.fop("fmul", f, f)
    y = e.fop("fmul", e.fop("fmul", f2, f), e.horner(f, _LOG_POLY))
    # Small terms first, the exact f and e*ln2_hi last (Cephes order).
    y = e.fma(ef, e.fc(_LN2_LO), y)
    y = e.fma(f2, e.fc(-0.5), y)
    y = e.fop("fadd", f, y)
    y = e.fma(ef, e.fc(_LN2_HI), y)
    y = e.select(e.fcmp("oeq", x, e.fc(float("inf"))), e.fc(float("inf")), y)
    y = e.select(e.fcmp("oeq", x, e.fc(0.0)), e.fc(float("-inf")), y)
    # "ult" is true for x < 0 and for NaN: both give NaN.
    return e.select(e.fcmp("ult", x, e.fc(0.0)), e.fc(float("nan")), y)


def _f32_tanh(e: _Emitter, x: str) -> str:
    ax = e.intrinsic("fabs", x)
    x2 = e.fop("fmul", x, x)
    # x * (1 + x^2 P) rather than x + x^3 P: the latter turns -0 into +0.
    small = e.fop("fmul", x, e.fma(x2, e.horner(x2, _TANH_POLY), e.fc(1.0)))
    # exp(2|x|) may overflow to inf: 2/inf = 0 gives exactly 1.
    ex = _exp_core(e, e.fop("fmul", ax, e.fc(2.0)))
    frac = e.fop("fdiv", e.fc(2.0), e.fop("fadd", ex, e.fc(1.0)))
    big = e.intrinsic("copysign", e.fop("fsub", e.fc(1.0), frac), x)
    return e.select(e.fcmp("olt", ax, e.fc(_TANH_SMALL)), small, big)


def _f32_sigmoid(e: _Emitter, x: str) -> str:
    # With q = exp(-|x|) in (0, 1]: sigmoid = 1/(1+q) for x >= 0, q/(1+q) otherwise.
    # Nothing overflows; for x < -87 the tiny result flushes to 0 like exp's.
    nx = e.emit(f"fneg {e.ft} {e.intrinsic('fabs', x)}")
    q = _exp_core(e, nx)
    s = e.fop("fdiv", e.fc(1.0), e.fop("fadd", q, e.fc(1.0)))
    # "oge" is false for NaN, which then takes q*s = NaN.
    return e.select(e.fcmp("oge", x, e.fc(0.0)), s, e.fop("fmul", q, s))


def _f32_erf(e: _Emitter, x: str) -> str:
    ax = e.intrinsic("fabs", x)
    small = e.fop("fmul", x, e.horner(e.fop("fmul", x, x), _ERF_POLY))
    q = e.horner(e.fop("fsub", ax, e.fc(2.5)), _ERFC_POLY)
    big = e.fop("fsub", e.fc(1.0), q)
    # Beyond 4 the polynomial is meaningless (and inf gives NaN): select exactly 1.
    big = e.select(e.fcmp("oge", ax, e.fc(_ERF_ONE)), e.fc(1.0), big)
    big = e.intrinsic("copysign", big, x)
    return e.select(e.fcmp("olt", ax, e.fc(_ERF_SPLIT)), small, big)


_F32_KERNELS = {"exp": _f32_exp, "log": _f32_log, "tanh": _f32_tanh,
                "sigmoid": _f32_sigmoid, "erf": _f32_erf}


# --- float64 kernels: libm per lane -------------------------------------------------
def _f64_sigmoid(e: _Emitter, x: str) -> str:
    nx = e.emit(f"fneg {e.ft} {e.intrinsic('fabs', x)}")
    q = e.intrinsic("exp", nx)
    s = e.fop("fdiv", e.fc(1.0), e.fop("fadd", q, e.fc(1.0)))
    return e.select(e.fcmp("oge", x, e.fc(0.0)), s, e.fop("fmul", q, s))


def _f64_erf(e: _Emitter, x: str) -> str:
    if e.lanes == 1:
        return e.emit(f"call double @erf(double {x})")
    acc = "poison"
    for i in range(e.lanes):
        lane = e.emit(f"extractelement {e.ft} {x}, i32 {i}")
        y = e.emit(f"call double @erf(double {lane})")
        acc = e.emit(f"insertelement {e.ft} {acc}, double {y}, i32 {i}")
    return acc


_F64_KERNELS = {"exp": lambda e, x: e.intrinsic("exp", x),
                "log": lambda e, x: e.intrinsic("log", x),
                "tanh": lambda e, x: e.intrinsic("tanh", x),
                "sigmoid": _f64_sigmoid, "erf": _f64_erf}

_LIBM_DECLS = {("erf", "double"): "declare double @erf(double) nounwind"}


# --- public API ---------------------------------------------------------------------
def _check(name: str, dtype: str) -> tuple:
    if name not in SUPPORTED_FUNCTIONS:
        raise CodegenError(f"math function {name!r}: expected one of {SUPPORTED_FUNCTIONS}")
    try:
        base, lanes = _dt.parse(dtype)
    except (ValueError, TypeError):
        base, lanes = None, 0
    if base not in ("float32", "float64"):
        raise CodegenError(f"math function {name!r}: dtype {dtype!r} is not supported; "
                           "expected float32 or float64, optionally with lanes "
                           "(e.g. 'float32x8')")
    return ("float" if base == "float32" else "double"), lanes


def symbol_name(name: str, dtype: str) -> str:
    """LLVM symbol of ``name`` for ``dtype``, e.g. ``__cc_exp_f32x8``."""
    elem, lanes = _check(name, dtype)
    short = "f32" if elem == "float" else "f64"
    return f"__cc_{name}_{short}" + (f"x{lanes}" if lanes > 1 else "")


@cache
def math_function(name: str, dtype: str) -> tuple:
    """Return (symbol, IR text of its ``define internal ... alwaysinline`` definition)."""
    elem, lanes = _check(name, dtype)
    sym = symbol_name(name, dtype)
    e = _Emitter(elem, lanes)
    kernels = _F32_KERNELS if elem == "float" else _F64_KERNELS
    result = kernels[name](e, "%x")
    body = "\n".join(e.lines)
    text = (f"define internal {e.ft} @{sym}({e.ft} %x) alwaysinline nounwind {{\n"
            f"{body}\n  ret {e.ft} {result}\n}}\n")
    return sym, text


def math_functions_needed_ir(pairs) -> str:
    """Definitions for every (name, dtype) in ``pairs``, each once, in sorted order,
    preceded by the declarations of the libm functions they call."""
    keys = sorted({(str(n), str(d)) for n, d in pairs})
    decls = set()
    defs = []
    for name, dtype in keys:
        elem, _ = _check(name, dtype)
        decl = _LIBM_DECLS.get((name, elem))
        if decl:
            decls.add(decl)
        defs.append(math_function(name, dtype)[1])
    return "".join(d + "\n" for d in sorted(decls)) + "\n".join(defs)


def libm_symbols(pairs) -> tuple:
    """Names of the external libm functions that ``math_functions_needed_ir(pairs)``
    declares, so a code generator can avoid declaring them twice."""
    out = set()
    for name, dtype in pairs:
        elem, _ = _check(name, dtype)
        if (name, elem) in _LIBM_DECLS:
            out.add(name)
    return tuple(sorted(out))
