"""Schedules and lowering behave as in TVM, written as a TVM user would write them.

``tvm.lower`` returns an IRModule (``mod["main"]``, ``mod.script()``, printing unchanged
from the golden files), ``tvm.build`` takes that IRModule, ``te.create_prim_func`` gives
a PrimFunc; ``cache_write`` keeps ``C.op.axis`` valid for ``s[C]`` (opt_gemm's blocking
schedule), and a stage that is also a function argument can be ``compute_at`` another.
Every kernel is checked against numpy.
"""
import pathlib

import numpy as np
import pytest

import compiler as tvm
from compiler import te, tir
from compiler.errors import BuildError

GOLDEN = pathlib.Path(__file__).parent / "golden"
RNG = np.random.default_rng(11)


def _rand(*shape):
    return RNG.random(shape).astype("float32")


def _stencil():
    A = te.placeholder((20,), name="A")
    B = te.compute((20,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((18,), lambda i: B[i] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    co, _ci = s[C].split(C.op.axis[0], factor=6)
    s[B].compute_at(s[C], co)
    return s, A, B, C


# ------------------------------------------------------------------ lower -> IRModule
def test_lower_returns_an_irmodule_indexed_by_name():
    s, A, _B, C = _stencil()
    mod = tvm.lower(s, [A, C])
    assert isinstance(mod["main"], tir.PrimFunc) and "main" in mod and len(mod) == 1
    named = tvm.lower(s, [A, C], name="stencil_compute_at")
    func = named["stencil_compute_at"]
    assert func.name == "stencil_compute_at"
    with pytest.raises(KeyError, match="no function 'main'"):
        named["main"]


def test_script_and_print_match_the_golden_text():
    s, A, _B, C = _stencil()
    mod = tvm.lower(s, [A, C], name="stencil_compute_at", simple_mode=True)
    golden = (GOLDEN / "stencil_compute_at.txt").read_text()
    assert mod.script() + "\n" == golden
    assert str(mod) + "\n" == golden
    assert mod.astext() == str(mod["stencil_compute_at"])


def test_build_accepts_the_lowered_irmodule():
    s, A, _B, C = _stencil()
    mod = tvm.lower(s, [A, C], name="stencil")
    f = tvm.build(mod, target="llvm")
    assert f.entry_name == "stencil"
    a, c = _rand(20), np.zeros(18, "float32")
    f(a, c)
    np.testing.assert_allclose(c, (a[:18] + 1) + (a[2:] + 1), rtol=1e-6)
    assert "define" in f.get_source()


def test_irmodule_from_a_dict_and_from_expr():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 3.0, name="B")
    func = tvm.lower(te.create_schedule(B.op), [A, B])["main"]
    for mod in (tvm.IRModule({"main": func}), tvm.IRModule.from_expr(func)):
        assert mod["main"] is func and str(mod) == str(func)
        f = tvm.build(mod)
        a, b = _rand(16), np.zeros(16, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a * 3.0, rtol=1e-6)
    two = tvm.IRModule({"main": func, "other": func})
    with pytest.raises(BuildError, match="one PrimFunc per module"):
        tvm.build(two)


def test_create_prim_func_computes_every_stage():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] + A[j, i], name="C")
    func = te.create_prim_func([A, C])
    assert isinstance(func, tir.PrimFunc) and [p.name for p in func.params] == ["A", "C"]
    f = tvm.build(func)
    a, c = _rand(8, 8), np.zeros((8, 8), "float32")
    f(a, c)
    np.testing.assert_allclose(c, a * 2.0 + a.T, rtol=1e-6)


# ------------------------------------------------------------------ cache_write (opt_gemm)
def _gemm(M, N, K):
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    return A, B, C


@pytest.mark.parametrize("parallel", [False, True])
def test_cache_write_then_tile_the_original_axes(parallel):
    M = N = K = 64
    bn, kfactor = 16, 4
    A, B, C = _gemm(M, N, K)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kaxis, factor=kfactor)
    s[CC].reorder(ko, mc, ki, nc)
    s[CC].vectorize(nc)
    s[CC].unroll(ki)
    if parallel:
        s[C].parallel(mo)
    func = tvm.build(s, [A, B, C], target="llvm", name="mmult")
    a, b, c = _rand(M, K), _rand(K, N), np.zeros((M, N), "float32")
    func(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "C_global" in text and ("T.parallel" in text) == parallel


def test_cache_write_with_packed_operand_like_opt_gemm():
    M = N = K = 64
    bn = 16
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute((N // bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute((M, N), lambda m, n: te.sum(
        A[m, k] * packedB[n // bn, k, tvm.tir.indexmod(n, bn)], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    s[CC].vectorize(nc)
    bigN, _, littleN = s[packedB].op.axis
    s[packedB].vectorize(littleN)
    s[packedB].parallel(bigN)
    func = tvm.build(s, [A, B, C], name="mmult")
    a, b, c = _rand(M, K), _rand(K, N), np.zeros((M, N), "float32")
    func(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


# ------------------------------------------------------------------ compute_at on an argument
def test_compute_at_of_a_stage_that_is_an_argument():
    m = 32
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1, name="B")
    C = te.compute((m,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "T.allocate" not in text              # B is computed into the argument buffer
    f = tvm.build(s, [A, B, C])
    a, b, c = _rand(m), np.zeros(m, "float32"), np.zeros(m, "float32")
    f(a, b, c)
    np.testing.assert_allclose(b, a + 1, rtol=1e-6)
    np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6)


def test_compute_at_argument_with_overlapping_and_uneven_regions():
    s, A, B, C = _stencil()                      # B's regions overlap between iterations
    f = tvm.build(s, [A, B, C])
    a, b, c = _rand(20), np.zeros(20, "float32"), np.zeros(18, "float32")
    f(a, b, c)
    np.testing.assert_allclose(b, a + 1, rtol=1e-6)
    np.testing.assert_allclose(c, (a[:18] + 1) + (a[2:] + 1), rtol=1e-6)
    A = te.placeholder((18,), name="A")          # factor 4 does not divide 18: guarded
    B = te.compute((18,), lambda i: A[i] * 3.0, name="B")
    C = te.compute((18,), lambda i: B[i] - 1.0, name="C")
    s = te.create_schedule(C.op)
    co, _ = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], co)
    f = tvm.build(s, [A, B, C])
    a, b, c = _rand(18), np.zeros(18, "float32"), np.zeros(18, "float32")
    f(a, b, c)
    np.testing.assert_allclose(b, a * 3.0, rtol=1e-6)
    np.testing.assert_allclose(c, a * 3.0 - 1.0, rtol=1e-6)
