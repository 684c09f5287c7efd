"""TIR construction helpers shared by the code generation tests.

Role: keep the test modules short: one-dimensional buffers, Ramp/loop shorthands, an
elementwise kernel builder, ``build`` (codegen + tests/jit_helper.py) and arrays placed
right before a PROT_NONE page, so an out-of-bounds read faults instead of passing.
"""
import ctypes
import mmap

import jit_helper
import numpy as np

from compiler.codegen.llvm import codegen_llvm
from compiler.target import host_target
from compiler.tir import BufferLoad, BufferStore, For, PrimFunc, Ramp, Var, const, decl_buffer

TARGET = host_target()
LANES = TARGET.vector_lanes(32)      # float32 lanes of one native vector register


# ---------------------------------------------------------------- helpers
def buf(name, n, dtype="float32"):
    return decl_buffer((n,), dtype, name)


def ld(b, idx):
    return BufferLoad(b, (idx,))


def st(b, idx, value):
    return BufferStore(b, value, (idx,))


def ramp(base, lanes, stride=1):
    return Ramp(base, const(stride, base.dtype), lanes)


def loop(var, extent, body, kind="serial", ann=()):
    return For(var, const(0, var.dtype), const(extent, var.dtype), kind, body, ann)


def build(funcs, target=TARGET):
    return jit_helper.compile_ir(codegen_llvm(funcs, target), target)


def elementwise(name, dtype, n, make_value, lanes=1, out_dtype=None, inputs=2):
    """out[i] = make_value(in0[i], in1[i], ...) over n elements, vectorized by lanes."""
    ins = [buf(f"I{k}", n, dtype) for k in range(inputs)]
    out = buf("O", n, out_dtype or dtype)
    i = Var("i", "int32")
    idx = ramp(i * lanes, lanes) if lanes > 1 else i
    body = st(out, idx, make_value(*[ld(b, idx) for b in ins]))
    return PrimFunc(name, tuple(ins) + (out,), loop(i, n // lanes, body))


def run(func, *arrays):
    build(func)(func.name, *arrays)


def guarded_array(n, dtype):
    """A numpy array of n elements that ends exactly where a PROT_NONE page begins."""
    page = mmap.PAGESIZE
    m = mmap.mmap(-1, 2 * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    libc = ctypes.CDLL(None)
    assert libc.mprotect(ctypes.c_void_p(base + page), page, 0) == 0
    item = np.dtype(dtype).itemsize
    arr = np.frombuffer(m, dtype=dtype, count=n, offset=page - n * item)
    guarded_array.keep.append(m)
    return arr


guarded_array.keep = []


# ---------------------------------------------------------------- elementwise
