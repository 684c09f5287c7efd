"""Stand-alone harness for ``mathlib``: JIT an elementwise kernel and time ``exp``.

Role: the tests and ``scripts/bench_compiler.py`` need to run one math function over a
numpy array without the rest of the compiler; this module builds that tiny LLVM module
(a vector loop of ``<lanes x T>`` loads/stores plus a scalar tail), optimizes it with
the new pass manager, JITs it with MCJIT and wraps it for ctypes.

Invariants: inputs are contiguous 1-D arrays of the kernel's element type (checked);
the execution engine is kept alive by the returned ``Kernel`` object; everything runs
on the calling thread (single-core numbers).
"""
from __future__ import annotations

import ctypes
import time
from functools import lru_cache

import llvmlite.binding as llvm
import numpy as np

from ..errors import CodegenError
from .mathlib import math_functions_needed_ir, symbol_name

_ELEM = {"float32": ("float", np.float32), "float64": ("double", np.float64)}


@lru_cache(maxsize=None)
def _init_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def _target_machine():
    # Not cached: an MCJIT engine takes ownership of its target machine and frees it
    # with itself, so sharing one between engines is a use-after-free.
    _init_llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3)


# out[i] = f(in[i]): a <lanes x T> loop, then a scalar tail loop.
_KERNEL_TEMPLATE = """
define void @apply(ptr noalias %a, ptr noalias %b, i64 %n) {{
entry:
  %rem = urem i64 %n, {lanes}
  %nv = sub i64 %n, %rem
  br label %vcheck
vcheck:
  %i = phi i64 [0, %entry], [%inext, %vbody]
  %c = icmp ult i64 %i, %nv
  br i1 %c, label %vbody, label %scheck
vbody:
  %pa = getelementptr {ty}, ptr %a, i64 %i
  %va = load {vty}, ptr %pa, align 4
  %vr = call {vty} @{vsym}({vty} %va)
  %pb = getelementptr {ty}, ptr %b, i64 %i
  store {vty} %vr, ptr %pb, align 4
  %inext = add i64 %i, {lanes}
  br label %vcheck, !llvm.loop !0
scheck:
  %j = phi i64 [%i, %vcheck], [%jnext, %sbody]
  %c2 = icmp ult i64 %j, %n
  br i1 %c2, label %sbody, label %exit
sbody:
  %qa = getelementptr {ty}, ptr %a, i64 %j
  %sa = load {ty}, ptr %qa, align 4
  %sr = call {ty} @{ssym}({ty} %sa)
  %qb = getelementptr {ty}, ptr %b, i64 %j
  store {ty} %sr, ptr %qb, align 4
  %jnext = add i64 %j, 1
  br label %scheck
exit:
  ret void
}}

; Default unroll 2: more only adds register pressure (polynomial constants vs 16 ymm).
!0 = distinct !{{!0, !1}}
!1 = !{{!"llvm.loop.unroll.count", i32 {unroll}}}

define void @apply_repeat(ptr noalias %a, ptr noalias %b, i64 %n, i64 %reps) {{
entry:
  br label %loop
loop:
  %k = phi i64 [0, %entry], [%knext, %loop]
  call void @apply(ptr %a, ptr %b, i64 %n)
  %knext = add i64 %k, 1
  %more = icmp ult i64 %knext, %reps
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""


def kernel_ir(name: str, dtype: str = "float32", lanes: int = 8, unroll: int = 2) -> str:
    """IR of ``void @apply(ptr in, ptr out, i64 n)``: out[i] = name(in[i]), and of
    ``void @apply_repeat(ptr in, ptr out, i64 n, i64 reps)`` calling it ``reps`` times.
    The vector loop is unrolled ``unroll`` times (metadata), the tail is scalar."""
    if dtype not in _ELEM:
        raise CodegenError(f"kernel dtype {dtype!r}: expected one of {tuple(_ELEM)}")
    if not isinstance(lanes, int) or lanes < 1:
        raise CodegenError(f"kernel lanes {lanes!r}: expected a positive int")
    ty, _ = _ELEM[dtype]
    vdt = dtype if lanes == 1 else f"{dtype}x{lanes}"
    vty = ty if lanes == 1 else f"<{lanes} x {ty}>"
    vsym, ssym = symbol_name(name, vdt), symbol_name(name, dtype)
    lib = math_functions_needed_ir({(name, vdt), (name, dtype)})
    return lib + _KERNEL_TEMPLATE.format(ty=ty, vty=vty, vsym=vsym, ssym=ssym,
                                         lanes=lanes, unroll=unroll)


class Kernel:
    """A JIT-compiled ``apply`` kernel; call it with a numpy array to get name(array)."""

    def __init__(self, ir_text: str, np_dtype):
        tm = _target_machine()
        mod = llvm.parse_assembly(ir_text)
        mod.verify()  # LLVM asserts on bad IR: verify before any pass touches it
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        self.engine = llvm.create_mcjit_compiler(mod, tm)
        self.engine.finalize_object()
        self.np_dtype = np_dtype
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
        self._fn = proto(self.engine.get_function_address("apply"))
        rproto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                  ctypes.c_int64)
        self._repeat = rproto(self.engine.get_function_address("apply_repeat"))
        self.asm = tm.emit_assembly(mod)

    def run(self, x: np.ndarray, out: np.ndarray | None = None,
            repeat: int = 1) -> np.ndarray:
        """out = f(x); with ``repeat`` > 1 the kernel runs that many times inside one
        native call (timing without the ~microsecond ctypes overhead)."""
        if x.dtype != self.np_dtype or x.ndim != 1 or not x.flags.c_contiguous:
            raise CodegenError(f"kernel input of dtype {x.dtype} shape {x.shape}: expected "
                               f"a contiguous 1-D {np.dtype(self.np_dtype).name} array")
        out = np.empty_like(x) if out is None else out
        if out.dtype != x.dtype or out.shape != x.shape or not out.flags.c_contiguous:
            raise CodegenError(f"kernel output of dtype {out.dtype} shape {out.shape}: "
                               f"expected contiguous, like the input {x.dtype} {x.shape}")
        if repeat == 1:
            self._fn(x.ctypes.data, out.ctypes.data, x.size)
        else:
            self._repeat(x.ctypes.data, out.ctypes.data, x.size, repeat)
        return out

    __call__ = run


@lru_cache(maxsize=None)
def jit_kernel(name: str, dtype: str = "float32", lanes: int = 8) -> Kernel:
    """Compiled kernel applying math function ``name`` elementwise (cached)."""
    return Kernel(kernel_ir(name, dtype, lanes), _ELEM[dtype][1])


def _best_seconds(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


# Typical inputs: inside each function's interesting range, so no lane saturates.
_BENCH_RANGE = {"exp": (-80.0, 80.0), "log": (1e-3, 1e3), "tanh": (-5.0, 5.0),
                "sigmoid": (-10.0, 10.0), "erf": (-3.0, 3.0)}


def _bench_input(name: str, n: int, dtype: str) -> np.ndarray:
    lo, hi = _BENCH_RANGE[name]
    return np.random.default_rng(0).uniform(lo, hi, n).astype(_ELEM[dtype][1])


def bench_function(name: str, dtype: str = "float32", lanes: int = 8, n: int = 1 << 13,
                   repeat: int = 1024, reps: int = 5) -> float:
    """In-cache throughput (Gelem/s, one thread, best of ``reps``) of ``name``: an
    ``n``-element array (32 KiB for float32) processed ``repeat`` times per native call,
    so neither memory traffic nor ctypes overhead is measured."""
    kern = jit_kernel(name, dtype, lanes)
    x = _bench_input(name, n, dtype)
    out = np.empty_like(x)
    t = _best_seconds(lambda: kern.run(x, out, repeat=repeat), reps)
    return n * repeat / t / 1e9


def bench_exp(n: int = 1 << 22, reps: int = 20, lanes: int = 8) -> dict:
    """Single-thread float32 exp throughput (Gelem/s, best of ``reps``, which filters
    out noise from other processes) of our vector exp vs ``numpy.exp`` on the same
    ``n``-element array, plus the in-cache figure of ``bench_function``."""
    kern = jit_kernel("exp", "float32", lanes)
    x = _bench_input("exp", n, "float32")
    out = np.empty_like(x)
    t_ours = _best_seconds(lambda: kern.run(x, out), reps)
    t_np = _best_seconds(lambda: np.exp(x, out=out), reps)
    return {"n": n, "lanes": lanes,
            "ours_gelem_s": n / t_ours / 1e9,
            "numpy_gelem_s": n / t_np / 1e9,
            "speedup_vs_numpy": t_np / t_ours,
            "ours_in_cache_gelem_s": bench_function("exp", "float32", lanes,
                                                    reps=max(3, reps // 4))}


if __name__ == "__main__":
    print(bench_exp())
    for fname in _BENCH_RANGE:
        print(fname, "float32x8 in-cache Gelem/s:", round(bench_function(fname), 3))
