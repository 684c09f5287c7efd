"""Test helper: compile LLVM IR text and call its functions on numpy arrays.

Role: lets the codegen tests run generated IR without FuncMeta/argument checking.  It
uses the runtime's one JIT harness (``compile_ir_full``: parse, verify, optimize with
the new pass builder at the requested level, emit an object; ``link_object``: link it
into the process's LLJIT), so the tests exercise exactly what the runtime does.
Returned modules keep their code mapped; libgomp is resolved by the runtime.
"""
from __future__ import annotations

import ctypes
import re
import time

import numpy as np

from compiler.runtime.jit import compile_ir_full, link_object
from compiler.target import Target, host_target

# external functions a module defines (internal ones cannot be looked up)
_DEFINE = re.compile(r'^define (?!internal|private)[^@]*@("?[\w.$]+"?)\(', re.M)


class JitModule:
    """Functions of one compiled module, callable with numpy arrays."""

    def __init__(self, tracker, ir_text: str, optimized_ir: str, names):
        self.ir = ir_text
        self.optimized_ir = optimized_ir
        self._tracker = tracker
        self._names = set(names)

    def address(self, name: str) -> int:
        if name not in self._names:
            raise KeyError(f"function {name!r} not found in the JIT module")
        return self._tracker[name]

    def func(self, name: str, nargs: int, extra=()):
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nargs), *extra)
        return proto(self.address(name))

    def __call__(self, name: str, *arrays):
        fn = self.func(name, len(arrays))
        fn(*[_ptr(a) for a in arrays])

    def repeat(self, name: str, arrays, n: int) -> float:
        """Seconds per call of ``name``, timed around one ``name__repeat`` call."""
        fn = self.func(name + "__repeat", len(arrays), (ctypes.c_int64,))
        ptrs = [_ptr(a) for a in arrays]
        t0 = time.perf_counter()
        fn(*ptrs, n)
        return (time.perf_counter() - t0) / n


def _ptr(a: np.ndarray) -> int:
    if not a.flags["C_CONTIGUOUS"]:
        raise ValueError("jit_helper: arrays must be C-contiguous")
    return a.ctypes.data


def compile_ir(ir_text: str, target: Target | None = None, opt: int = 3) -> JitModule:
    """Parse, verify, optimize and JIT ``ir_text``."""
    out = compile_ir_full(ir_text, target or host_target(), opt)
    names = [n.strip('"') for n in _DEFINE.findall(ir_text)]
    return JitModule(link_object(out.object, names), ir_text, out.optimized_ir, names)


def asm_of(ir_text: str, target: Target | None = None, opt: int = 3) -> str:
    """Assembly text of ``ir_text`` after optimization (for inspecting codegen)."""
    return compile_ir_full(ir_text, target or host_target(), opt).assembly
