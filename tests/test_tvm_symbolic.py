"""Symbolic shapes (``te.var`` extents) as a TVM user writes them: define, schedule,
lower, build once, then call at several sizes; every kernel is compared with numpy.

The golden file of one symbolic kernel's lowered text lives beside the others
(``pytest tests/test_tvm_symbolic.py --update-golden`` rewrites it).
"""
import json
import pathlib

import numpy as np
import pytest

import autosched as auto
import compiler as tvm
from compiler import te, tir
from compiler.errors import BuildError, CodegenError, TEError
from compiler.runtime import load_module

GOLDEN = pathlib.Path(__file__).parent / "golden"


def rand(*shape, dtype="float32"):
    return np.random.default_rng(sum(shape) + len(shape)).uniform(-1, 1, shape).astype(dtype)


def vector_add():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C


# ---------------------------------------------------------------- 1-D
@pytest.mark.parametrize("sched", ["naive", "split_parallel_vectorize", "nparts"])
def test_vector_add_runs_at_two_lengths(sched):
    A, B, C = vector_add()
    s = te.create_schedule(C.op)
    if sched == "split_parallel_vectorize":
        outer, inner = s[C].split(C.op.axis[0], factor=4)
        s[C].parallel(outer)
        s[C].vectorize(inner)
    elif sched == "nparts":
        s[C].split(C.op.axis[0], nparts=3)
    f = tvm.build(s, [A, B, C], target="llvm", name="vadd_" + sched)
    for n in (1024, 37):
        a, b = rand(n), rand(n) * 2
        c = tvm.nd.array(np.zeros(n, "float32"))
        f(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)
    empty = np.zeros(0, "float32")
    f(empty, empty.copy(), empty.copy())     # n = 0: no work, no crash


def test_expression_extent_and_size_var():
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    D = te.compute((n - 1,), lambda i: A[i + 1] - A[i], name="D")
    s = te.create_schedule(D.op)
    s[D].split(D.op.axis[0], factor=8)
    f = tvm.build(s, [A, D], target="llvm", name="diff")
    a = rand(29)
    d = np.zeros(28, "float32")
    f(a, d)
    np.testing.assert_allclose(d, np.diff(a), rtol=1e-6)
    with pytest.raises(ValueError, match=r"param 'D': dimension 0 is \(n - 1\); expected 28 "
                                         r"\(n = 29 from param 'A' dimension 0\), got 29"):
        f(a, np.zeros(29, "float32"))


# ---------------------------------------------------------------- 2-D schedules
def _scale2d():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return A, B


def _sched_split(s, B):
    s[B].split(B.op.axis[0], factor=8)


def _sched_tile(s, B):
    s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)


def _sched_tile_fuse(s, B):
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    s[B].fuse(xi, yi)


def _sched_tile_reorder(s, B):
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    s[B].reorder(xi, yo, xo, yi)


def _sched_fuse_split_parallel(s, B):
    f = s[B].fuse(*B.op.axis)
    o, i = s[B].split(f, factor=16)
    s[B].parallel(o)
    s[B].vectorize(i)


@pytest.mark.parametrize("sched", [_sched_split, _sched_tile, _sched_tile_fuse,
                                   _sched_tile_reorder, _sched_fuse_split_parallel],
                         ids=lambda f: f.__name__[7:])
def test_2d_schedules_at_non_dividing_sizes(sched):
    A, B = _scale2d()
    s = te.create_schedule(B.op)
    sched(s, B)
    f = tvm.build(s, [A, B], target="llvm")
    for shape in ((37, 23), (4, 3)):
        a = rand(*shape)
        b = np.zeros(shape, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def _chain():
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((m,), lambda i: B[i] * 2.0, name="C")
    return A, B, C


@pytest.mark.parametrize("where", ["compute_at", "compute_inline", "compute_root"])
def test_producer_placement(where):
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    if where == "compute_inline":
        s[B].compute_inline()
    else:
        s[B].compute_at(s[C], C.op.axis[0])
        if where == "compute_root":
            s[B].compute_root()
    f = tvm.build(s, [A, C], target="llvm")
    for m in (50, 3):
        a, c = rand(m), np.zeros(m, "float32")
        f(a, c)
        np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6)


def tile_compute_at():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((m, n), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], x_factor=8, y_factor=4)
    s[B].compute_at(s[C], yo)
    return s, [A, C]


def test_compute_at_tile_region_is_guarded():
    s, args = tile_compute_at()
    f = tvm.build(s, args, target="llvm")
    for shape in ((19, 10), (8, 4), (1, 1)):
        a, c = rand(*shape), np.zeros(shape, "float32")
        f(a, c)
        np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6)


def test_symbolic_lowered_text_matches_golden(request):
    s, args = tile_compute_at()
    text = str(tvm.lower(s, args, name="symbolic_tile_compute_at")) + "\n"
    path = GOLDEN / "symbolic_tile_compute_at.txt"
    if request.config.getoption("--update-golden"):
        path.write_text(text)
    assert text == path.read_text()


def test_symbolic_reduction_with_split_reduce_axis():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    S = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="S")
    s = te.create_schedule(S.op)
    ko, ki = s[S].split(k, factor=4)
    s[S].reorder(ko, S.op.axis[0], ki)
    f = tvm.build(s, [A, S], target="llvm")
    for shape in ((7, 13), (3, 1)):
        a, out = rand(*shape), np.zeros(shape[0], "float32")
        f(a, out)
        np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- tuples
def test_tuple_outputs_and_compute_at():
    m, n = te.var("m"), te.var("n")
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")
    s = te.create_schedule(B0.op)
    f = tvm.build(s, [A0, A1, B0, B1], target="llvm")
    a0, a1 = rand(5, 9), rand(5, 9) + 1
    b0, b1 = np.zeros((5, 9), "float32"), np.zeros((5, 9), "float32")
    f(a0, a1, b0, b1)
    np.testing.assert_allclose(b0, a0 + 2, rtol=1e-6)
    np.testing.assert_allclose(b1, a1 * 3, rtol=1e-6)

    C = te.compute((m, n), lambda i, j: A1[i, j] + B0[i, j] * B1[i, j], name="C")
    s = te.create_schedule(C.op)
    s[B0].compute_at(s[C], C.op.axis[0])
    f = tvm.build(s, [A0, A1, C], target="llvm")
    c = np.zeros((6, 4), "float32")
    a0, a1 = rand(6, 4), rand(6, 4)
    f(a0, a1, c)
    np.testing.assert_allclose(c, a1 + (a0 + 2) * (a1 * 3), rtol=1e-5)


def test_argmax_comm_reducer():
    def fcombine(x, y):
        lhs = tir.Select(x[1] >= y[1], x[0], y[0])
        rhs = tir.Select(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return tir.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    m, n = te.var("m"), te.var("n")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    f = tvm.build(s, [idx, val, T0, T1], target="llvm")
    rng = np.random.default_rng(3)
    for shape in ((6, 11), (2, 1)):
        v = rng.integers(-100, 100, shape).astype("int32")
        ix = np.tile(np.arange(shape[1], dtype="int32"), (shape[0], 1))
        t0, t1 = np.zeros(shape[0], "int32"), np.zeros(shape[0], "int32")
        f(ix, v, t0, t1)
        np.testing.assert_array_equal(t1, v.max(axis=1))
        # ties keep the first index (x[1] >= y[1] prefers the accumulator)
        np.testing.assert_array_equal(t0, v.argmax(axis=1))


# ---------------------------------------------------------------- errors
def test_call_errors_name_param_dimension_expected_and_got():
    A, B, C = vector_add()
    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, B, C], target="llvm", name="vadd")
    a = np.zeros(8, "float32")
    with pytest.raises(ValueError, match=r"function 'vadd' param 'B': dimension 0 is shape "
                                         r"variable n, which is 8 \(from param 'A' dimension "
                                         r"0\); expected 8, got 7"):
        f(a, np.zeros(7, "float32"), np.zeros(8, "float32"))
    with pytest.raises(ValueError, match=r"param 'C': expected 1 dimensions \(n,\), got an "
                                         r"array of shape \(8, 1\)"):
        f(a, a.copy(), np.zeros((8, 1), "float32"))
    with pytest.raises(ValueError, match="param 'B': expected dtype float32, got float64"):
        f(a, np.zeros(8), np.zeros(8, "float32"))
    with pytest.raises(TypeError, match="takes 3 arrays"):
        f(a, a.copy())
    with pytest.raises(TypeError, match="param 'A': expected a numpy.ndarray, got list"):
        f([0.0] * 8, a.copy(), a.copy())


def test_build_errors():
    n = te.var("n")
    A = te.placeholder((n + 1,), name="A")
    B = te.compute((n + 1,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(BuildError, match="shape variable 'n' is not a whole dimension"):
        tvm.build(te.create_schedule(B.op), [A, B], target="llvm")
    A, B, C = vector_add()
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    assert "thread_extent" in str(tvm.lower(s, [A, B, C]))
    with pytest.raises(CodegenError, match="GPU thread axis 'blockIdx.x'"):
        tvm.build(s, [A, B, C], target="llvm")
    with pytest.raises(TEError, match="expected an int or a scalar integer expression"):
        te.placeholder((te.var("x", "float32"),))


def test_autosched_refuses_symbolic_dag():
    A, B, C = vector_add()
    with pytest.raises(auto.AutoSchedError, match="symbolic extent n; the auto-scheduler "
                                                  "needs static shapes"):
        auto.ComputeDAG([A, B, C])


def test_symbolic_meta_is_plain_data_and_survives_json():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    D = te.compute((n - 1,), lambda i: A[i + 1] - A[i], name="D")
    s = te.create_schedule(D.op)
    obj, metas, ir_text = tvm.build_object(tvm.lower(s, [A, D], name="diff2"), "llvm")
    (fm,) = metas
    assert fm.shape_vars == (("n", "int32"),)
    assert [p.shape for p in fm.params] == [("n",), (("sub", "n", 1),)]
    doc = json.loads(json.dumps([[fm.name, [[p.name, p.shape, p.dtype, p.written, p.align]
                                            for p in fm.params], fm.shape_vars]]))
    mod = load_module(obj, doc, ir_text=ir_text)
    assert mod.funcs_meta == metas
    a, d = rand(10), np.zeros(9, "float32")
    mod(a, d)
    np.testing.assert_allclose(d, np.diff(a), rtol=1e-6)
