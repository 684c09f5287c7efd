"""Tests of compiler.codegen.mathlib: IR shape, accuracy against float64, special values.

Each function is JIT-compiled into a small kernel (``mathlib_kernels.kernel_ir``: a loop of
``<lanes x T>`` loads/stores plus a scalar tail, optimized at O3 for the host CPU) and
run on numpy arrays whose lengths are not multiples of the lane count, so the vector
and the scalar definitions are both exercised.
"""
import math

import llvmlite.binding as llvm
import mathlib_kernels
import numpy as np
import pytest

from compiler.codegen import mathlib
from compiler.errors import CodegenError

FUNCS = ("exp", "log", "tanh", "sigmoid", "erf")
RTOL = 1e-6
TINY = 1e-30  # relative error is measured against max(|ref|, TINY)
# Where each float32 function must meet RTOL (exp/sigmoid results below ~1.7e-38 are
# flushed to zero, checked separately).
RANGES = {"exp": (-87.0, 88.72), "tanh": (-100.0, 100.0), "sigmoid": (-87.0, 100.0),
          "erf": (-10.0, 10.0)}
_vec_erf = np.vectorize(math.erf, otypes=[np.float64])


def reference(name, x):
    """float64 reference values of ``name`` at ``x``."""
    x = np.asarray(x, np.float64)
    if name == "exp":
        return np.exp(x)
    if name == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x)
    if name == "tanh":
        return np.tanh(x)
    if name == "sigmoid":
        q = np.exp(-np.abs(x))
        return np.where(x >= 0, 1.0 / (1.0 + q), q / (1.0 + q))
    return _vec_erf(x)


def run(name, x, dtype="float32", lanes=8):
    return mathlib_kernels.jit_kernel(name, dtype, lanes).run(np.ascontiguousarray(x, dtype))


def max_rel_err(y, ref):
    return float(np.max(np.abs(y.astype(np.float64) - ref) / np.maximum(np.abs(ref), TINY)))


def sample(name, rng):
    """Dense grid plus random points over the required range, odd length."""
    if name == "log":
        parts = [np.exp(rng.uniform(math.log(1.5e-45), math.log(3.4e38), 200_001)),
                 rng.uniform(0.5, 2.0, 100_000), 1.0 + rng.uniform(-1e-3, 1e-3, 10_000),
                 rng.uniform(0.0, 1.2e-38, 10_000)]
        x = np.concatenate(parts).astype(np.float32)
        return x[x > 0]
    lo, hi = RANGES[name]
    n = 60_001 if name == "erf" else 200_001
    parts = [np.linspace(lo, hi, n), rng.uniform(lo, hi, n), rng.uniform(-4.0, 4.0, n // 2),
             rng.uniform(-1e-3, 1e-3, 5_001), np.array([1e-30, -1e-30, 1e-8, -1e-8])]
    x = np.concatenate(parts).astype(np.float32)
    return x[(x >= lo) & (x <= hi)]


# --- IR text ------------------------------------------------------------------------
@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("dtype", ["float32", "float32x3", "float32x8", "float32x16",
                                   "float64", "float64x4"])
def test_definition_parses_and_verifies(name, dtype):
    sym, text = mathlib.math_function(name, dtype)
    assert sym == mathlib.symbol_name(name, dtype)
    assert text.startswith("define internal ")
    assert f"@{sym}(" in text and "alwaysinline nounwind" in text
    decls = "declare double @erf(double)\n" if (name, dtype[:7]) == ("erf", "float64") else ""
    mod = llvm.parse_assembly(decls + text)
    mod.verify()


def test_symbols_unique_and_float32_has_no_calls():
    syms = set()
    for name in FUNCS:
        for dtype in ("float32", "float32x4", "float32x8", "float32x16", "float64",
                      "float64x4"):
            syms.add(mathlib.math_function(name, dtype)[0])
        text = mathlib.math_function(name, "float32x8")[1]
        # Only LLVM intrinsics (fmuladd, fabs, copysign): nothing that scalarizes.
        calls = [ln for ln in text.splitlines() if " call " in ln]
        assert all("@llvm." in ln for ln in calls), calls
        assert "@llvm.exp" not in text and "@llvm.log" not in text
    assert len(syms) == 6 * len(FUNCS)
    assert mathlib.symbol_name("exp", "float32x8") == "__cc_exp_f32x8"


def test_needed_ir_dedups_and_declares_libm_once():
    pairs = [("erf", "float64x4"), ("erf", "float64"), ("exp", "float32x8"),
             ("exp", "float32x8"), ("sigmoid", "float32")]
    text = mathlib.math_functions_needed_ir(pairs)
    assert text.count("declare double @erf(double)") == 1
    assert text.count("define internal") == 4
    assert text == mathlib.math_functions_needed_ir(reversed(pairs))  # deterministic
    assert mathlib.libm_symbols(pairs) == ("erf",)
    llvm.parse_assembly(text).verify()
    assert mathlib.math_functions_needed_ir([]) == ""


@pytest.mark.parametrize("name, dtype", [("cos", "float32"), ("exp", "float16"),
                                         ("exp", "int32x8"), ("log", "float32xq"),
                                         ("tanh", "handle"), ("erf", "bool")])
def test_bad_requests_raise_codegen_error(name, dtype):
    with pytest.raises(CodegenError, match=repr(name) if name == "cos" else repr(dtype)):
        mathlib.math_function(name, dtype)


# --- float32 accuracy ---------------------------------------------------------------
@pytest.mark.parametrize("name", FUNCS)
def test_float32_accuracy(name):
    x = sample(name, np.random.default_rng(hash(name) % 2**32))
    y = run(name, x)
    assert not np.isnan(y).any()
    assert max_rel_err(y, reference(name, x)) <= RTOL


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("lanes", [1, 3, 4, 16])
def test_lane_counts_agree(name, lanes):
    rng = np.random.default_rng(7)
    x = rng.uniform(-20.0, 20.0, 1003).astype(np.float32)
    if name == "log":
        x = np.abs(x) + np.float32(1e-3)
    y8 = run(name, x)
    y = run(name, x, lanes=lanes)
    np.testing.assert_allclose(y, y8, rtol=2e-7, atol=0)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_exp_overflow_underflow_edges():
    x = np.array([88.72283, 88.7229, 89.0, 1e4, 3e38, -87.0, -87.02, -87.5, -90.0,
                  -104.0, -1e4, -3e38, 0.0, -0.0, 1e-30], np.float32)
    y = run("exp", x)
    ref = reference("exp", x)
    assert np.isfinite(y[0]) and abs(y[0] / ref[0] - 1) < RTOL
    assert np.all(np.isposinf(y[1:5]))
    assert abs(y[5] / ref[5] - 1) < RTOL  # exp(-87) = 1.65e-38 is still exact
    assert np.all(y[6:12] >= 0) and np.all(y[6:12] <= 1.7e-38)  # flushed (or tiny)
    assert np.all(y[8:12] == 0)
    assert np.all(y[12:] == 1.0)


def test_float32_special_values():
    nan, inf = np.nan, np.inf
    cases = {
        "exp": ([inf, -inf, nan], [inf, 0.0, nan]),
        "log": ([0.0, -0.0, -1.0, -inf, inf, nan, 1.0, 1.4e-45, 3.4028235e38],
                [-inf, -inf, nan, nan, inf, nan, 0.0, -149 * math.log(2.0),
                 math.log(float(np.finfo(np.float32).max))]),
        "tanh": ([inf, -inf, nan, 0.0, -0.0, 100.0, -100.0, 9.5, -1e-30],
                 [1.0, -1.0, nan, 0.0, -0.0, 1.0, -1.0, 1.0, -1e-30]),
        "sigmoid": ([inf, -inf, nan, 0.0, 100.0, -100.0, 30.0],
                    [1.0, 0.0, nan, 0.5, 1.0, 0.0, 1.0]),
        "erf": ([inf, -inf, nan, 0.0, -0.0, 10.0, -10.0, 4.0, 1e-30],
                [1.0, -1.0, nan, 0.0, -0.0, 1.0, -1.0, 1.0, 1.1283791670955126e-30]),
    }
    for name, (x, want) in cases.items():
        y = run(name, np.array(x * 3, np.float32))[: len(x)]  # 3x: vector and tail
        np.testing.assert_allclose(y, np.array(want, np.float32), rtol=RTOL, atol=0,
                                   err_msg=name)
        signs = np.signbit(np.array(want, np.float32))
        assert np.array_equal(np.signbit(y) & ~np.isnan(y), signs & ~np.isnan(y)), name


def test_sigmoid_and_tanh_saturate_without_nan():
    x = np.linspace(-1e4, 1e4, 20_001).astype(np.float32)
    for name in ("tanh", "sigmoid"):
        y = run(name, x)
        assert not np.isnan(y).any()
        assert np.all(np.abs(y) <= 1.0)
    assert np.all(np.diff(run("tanh", x[9000:11000])) >= 0)  # monotone through 0


# --- float64 (libm per lane) --------------------------------------------------------
@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("lanes", [1, 4])
def test_float64(name, lanes):
    rng = np.random.default_rng(3)
    x = rng.uniform(-30.0, 30.0, 4001)
    if name == "log":
        x = np.abs(x) + 1e-300
    y = run(name, x, "float64", lanes)
    assert max_rel_err(y, reference(name, x)) <= 1e-14
    special = np.array([np.nan, np.inf, -np.inf, 0.0] * 3)
    ys = run(name, special, "float64", lanes)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ys, reference(name, special))
