"""Test-only JIT: compile LLVM IR text with llvmlite MCJIT and call it on numpy arrays.

Role: lets the codegen tests run generated kernels without the real runtime
(compiler/runtime, written separately).  Invariants: every module is verified before
optimization (LLVM is built with assertions: bad IR must fail here, not abort);
optimization uses the new pass builder at the target's speed level; engines are kept
alive for the life of the process so the returned function pointers stay valid;
libgomp is loaded once so ``GOMP_parallel`` resolves.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import time
from functools import lru_cache

import llvmlite.binding as llvm
import numpy as np

from compiler.runtime.target import Target, host_target

_ENGINES = []


@lru_cache(maxsize=None)
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    gomp = ctypes.util.find_library("gomp")
    if gomp:
        llvm.load_library_permanently(gomp)


@lru_cache(maxsize=None)
def _target_machine(cpu: str, features: str, opt: int):
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=cpu, features=features, opt=opt,
                                        codemodel="jitdefault", jit=True)


class JitModule:
    """Functions of one compiled module, callable with numpy arrays."""

    def __init__(self, engine, ir_text: str, module):
        self.engine = engine
        self.ir = ir_text
        self._module = module

    @property
    def optimized_ir(self) -> str:
        return str(self._module)

    def address(self, name: str) -> int:
        addr = self.engine.get_function_address(name)
        if not addr:
            raise KeyError(f"function {name!r} not found in the JIT module")
        return addr

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
    _init()
    target = target or host_target()
    tm = _target_machine(target.mcpu, target.features, opt)
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    if opt > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    _ENGINES.append(engine)
    return JitModule(engine, ir_text, mod)


def asm_of(ir_text: str, target: Target | None = None, opt: int = 3) -> str:
    """Assembly text of ``ir_text`` after optimization (for inspecting codegen)."""
    _init()
    target = target or host_target()
    tm = _target_machine(target.mcpu, target.features, opt)
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)
