"""Test helper: run one ``mathlib`` function elementwise without the rest of the compiler.

Builds a tiny LLVM module (a vector loop of ``<lanes x T>`` loads/stores plus a scalar
tail, so both definitions of the function run) and compiles and links it with the
runtime's one JIT harness (``compile_ir_full`` + ``link_object``).  Inputs are
contiguous 1-D arrays of the kernel's element type (checked); the returned ``Kernel``
keeps its code mapped.
"""
from __future__ import annotations

import ctypes
from functools import cache

import numpy as np

from compiler.codegen.mathlib import math_functions_needed_ir, symbol_name
from compiler.errors import CodegenError
from compiler.runtime.jit import compile_ir_full, link_object
from compiler.target import host_target

_ELEM = {"float32": ("float", np.float32), "float64": ("double", np.float64)}


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
        out = compile_ir_full(ir_text, host_target(), 3)
        self.asm = out.assembly
        self._tracker = link_object(out.object, ["apply", "apply_repeat"])
        self.np_dtype = np_dtype
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
        self._fn = proto(self._tracker["apply"])
        rproto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                  ctypes.c_int64)
        self._repeat = rproto(self._tracker["apply_repeat"])

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


@cache
def jit_kernel(name: str, dtype: str = "float32", lanes: int = 8) -> Kernel:
    """Compiled kernel applying math function ``name`` elementwise (cached)."""
    return Kernel(kernel_ir(name, dtype, lanes), _ELEM[dtype][1])
