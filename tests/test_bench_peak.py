"""scripts/bench_peak.py: the FMA loop computes what its flop count claims, compiles to
vector FMAs of the target's width, and the probe reports a positive peak."""
import ctypes
import platform

import numpy as np
import pytest
from script_helpers import load_script

from compiler.runtime.jit import compile_ir_full
from compiler.target import host_target


@pytest.fixture(scope="module")
def peak():
    return load_script("bench_peak")


def _reference(n: int, chains: int, mul: float, add: float) -> np.float32:
    """The kernel's result in numpy: every chain runs the same float32 recurrence from
    1.0 (one rounding per step, as a fused multiply-add: computed in float64, where the
    product of two float32 values is exact, then rounded), and the chains are summed in
    order."""
    a = np.float32(1.0)
    m, c = np.float32(mul), np.float32(add)
    for _ in range(n):
        a = np.float32(np.float64(a) * np.float64(m) + np.float64(c))
    total = np.float32(a + a)
    for _ in range(chains - 2):
        total = np.float32(total + a)
    return total


@pytest.mark.parametrize("chains", [2, 5])
def test_the_kernel_runs_the_fma_recurrence_it_counts(peak, chains):
    k = peak.PeakKernel(host_target(), chains)
    out = ctypes.c_float()
    k._fn(1000, ctypes.addressof(out))
    want = _reference(1000, chains, peak.MULTIPLIER, peak.ADDEND)
    assert out.value == pytest.approx(float(want), rel=1e-6)
    assert k.flops(1000) == 2 * k.lanes * chains * 1000


def test_the_accumulators_stay_normal_and_finite(peak):
    # the fixed point ADDEND / (1 - MULTIPLIER) is far from denormals and overflow
    fixed = peak.ADDEND / (1.0 - np.float32(peak.MULTIPLIER))
    assert 1e-6 < fixed < 1.0


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 assembly")
def test_the_loop_is_vector_fmas_of_the_target_width(peak):
    t = host_target()
    lanes = t.vector_lanes(32)
    asm = compile_ir_full(peak.fma_ir(lanes, 8), t, 3).assembly
    reg = {4: "xmm", 8: "ymm", 16: "zmm"}[lanes]
    fmas = [line for line in asm.splitlines() if "vfmadd" in line]
    assert fmas and all(reg in line for line in fmas)
    assert "rsp" not in "".join(fmas)        # no accumulator spilled to the stack


def test_measure_peak_reports_both_thread_counts(peak):
    res = peak.measure_peak(threads=2, seconds=0.01, repeats=1)
    assert res["threads"] == 2 and res["chains"] in peak.CHAIN_COUNTS
    assert res["gflops"] > 0 and res["gflops_1_thread"] > 0
    assert res["gflops_per_thread"] == pytest.approx(res["gflops"] / 2)
    assert res["float32_lanes"] == host_target().vector_lanes(32)
