"""Every schedule primitive alone, plus TE features (dtypes, math, reducers), vs numpy."""
import math

import numpy as np
import pytest
from schedule_helpers import matmul, rand, run

from compiler import build, lower, te, tir


def _mm_check(s, A, B, C, n=24, m=20, k=16):
    a, b = rand((n, k)), rand((k, m))
    np.testing.assert_allclose(run(s, [A, B, C], [a, b]), a @ b, rtol=1e-5, atol=1e-5)


PRIMS = {
    "split_factor": lambda s, C: s[C].split(C.op.axis[0], factor=5),
    "split_nparts": lambda s, C: s[C].split(C.op.axis[1], nparts=3),
    "tile": lambda s, C: s[C].tile(*C.op.axis, 4, 8),
    "fuse": lambda s, C: s[C].fuse(*C.op.axis),
    "reorder": lambda s, C: s[C].reorder(C.op.reduce_axis[0], C.op.axis[1], C.op.axis[0]),
    "parallel": lambda s, C: s[C].parallel(C.op.axis[0]),
    "vectorize": lambda s, C: (s[C].reorder(C.op.axis[0], C.op.reduce_axis[0], C.op.axis[1]),
                               s[C].vectorize(C.op.axis[1])),
    "unroll": lambda s, C: s[C].unroll(C.op.reduce_axis[0]),
    "pragma_auto_unroll": lambda s, C: s[C].pragma(C.op.axis[0], "auto_unroll_max_step", 64),
    "pragma_unroll_explicit_off": lambda s, C: (
        s[C].pragma(C.op.axis[0], "auto_unroll_max_step", 64),
        s[C].pragma(C.op.axis[0], "unroll_explicit", False)),
}


@pytest.mark.parametrize("prim", sorted(PRIMS))
def test_single_primitive(prim):
    A, B, C = matmul(24, 20, 16)
    s = te.create_schedule(C.op)
    PRIMS[prim](s, C)
    _mm_check(s, A, B, C)


def test_compute_root_after_compute_at():
    A = te.placeholder((16, 16), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute(A.shape, lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].compute_root()
    assert "for i in range(16)" in str(lower(s, [A, C]))
    a = rand((16, 16))
    np.testing.assert_allclose(run(s, [A, C], [a]), (a + 1) * 2, rtol=1e-6)


def test_storage_align_pads_stride():
    A = te.placeholder((8, 8), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute(A.shape, lambda i, j: B[j, i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].storage_align(B.op.axis[0], 16, 3)
    text = str(lower(s, [A, C]))
    # row stride 19: the smallest value >= 8 with 19 % 16 == 3; 8 rows of 19
    assert "T.allocate([152]" in text and "B[i * 19 + j]" in text
    a = rand((8, 8))
    np.testing.assert_allclose(run(s, [A, C], [a]), (a.T + 1) * 2, rtol=1e-6)


def test_cache_write_then_inline_consumer_chain():
    A, B, C = matmul(16, 16, 16)
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    CL = s.cache_write(C, "local")
    s[CL].compute_at(s[C], s[C].op.axis[0])
    a, b = rand((16, 16)), rand((16, 16))
    np.testing.assert_allclose(run(s, [A, B, D], [a, b]), a @ b + 1, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- dtypes
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int32", "int64", "uint8",
                                   "float16"])
def test_dtypes_elementwise(dtype):
    A = te.placeholder((33,), name="A", dtype=dtype)
    B = te.placeholder((33,), name="B", dtype=dtype)
    C = te.compute((33,), lambda i: A[i] * B[i] + A[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    a, b = rand((33,), dtype), rand((33,), dtype)
    ref = (a * b + a).astype(dtype)
    out = run(s, [A, B, C], [a, b])
    tol = 1e-2 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(out.astype("float64"), ref.astype("float64"), rtol=tol)


def test_bool_and_casts():
    A = te.placeholder((20,), name="A", dtype="float32")
    M = te.placeholder((20,), name="M", dtype="bool")
    B = te.compute((20,), lambda i: te.if_then_else(
        te.any(M[i], A[i] > 0.25), A[i].astype("int32"), (A[i] * 10.0).astype("int32")),
        name="B")
    G = te.compute((20,), lambda i: te.all(A[i] > -0.2, te.any(M[i], A[i] < 0.3)), name="G")
    s = te.create_schedule([B.op, G.op])
    a, m = rand((20,)) * 3, rand((20,), "bool")
    b, g = run(s, [A, M, B, G], [a, m])
    np.testing.assert_array_equal(b, np.where(m | (a > 0.25), a.astype("int32"),
                                              (a * 10).astype("int32")))
    np.testing.assert_array_equal(g, (a > -0.2) & (m | (a < 0.3)))


def test_floordiv_floormod_select_and_call_indexing():
    A = te.placeholder((24,), name="A", dtype="int32")
    B = te.compute((24,), lambda i: tir.Select(A(i) > 0, te.floordiv(A(i), 7),
                                              te.floormod(A[i], 5)), name="B")
    s = te.create_schedule(B.op)
    a = rand((24,), "int32")
    np.testing.assert_array_equal(run(s, [A, B], [a]), np.where(a > 0, a // 7, a % 5))


def test_star_args_lambda_names_axes():
    A = te.placeholder((3, 4, 5), name="A")
    B = te.compute(A.shape, lambda *idx: A[idx] + 1.0, name="B")
    assert [iv.var.name for iv in B.op.axis] == ["i0", "i1", "i2"]
    C = te.compute(A.shape, lambda n, *rest: A[(n, *rest)] * 2.0, name="C")
    assert [iv.var.name for iv in C.op.axis] == ["n", "i1", "i2"]
    s = te.create_schedule([B.op, C.op])
    a = rand((3, 4, 5))
    b, c = run(s, [A, B, C], [a])
    np.testing.assert_allclose(b, a + 1, rtol=1e-6)
    np.testing.assert_allclose(c, a * 2, rtol=1e-6)


MATH = {
    "exp": (te.exp, np.exp, (-5, 5)), "log": (te.log, np.log, (0.01, 10)),
    "sqrt": (te.sqrt, np.sqrt, (0, 10)), "rsqrt": (te.rsqrt, lambda x: 1 / np.sqrt(x), (0.1, 10)),
    "tanh": (te.tanh, np.tanh, (-6, 6)),
    "sigmoid": (te.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-10, 10)),
    "erf": (te.erf, np.vectorize(math.erf), (-3, 3)), "abs": (te.abs, np.abs, (-3, 3)),
    "floor": (te.floor, np.floor, (-3, 3)), "ceil": (te.ceil, np.ceil, (-3, 3)),
    "round": (te.round, np.round, (-3, 3)),
    "power": (lambda x: te.power(x, 1.7), lambda x: np.power(x, 1.7), (0, 4)),
}


@pytest.mark.parametrize("fn", sorted(MATH))
@pytest.mark.parametrize("vec", [False, True])
def test_math(fn, vec):
    te_fn, np_fn, (lo, hi) = MATH[fn]
    A = te.placeholder((67,), name="A")
    B = te.compute((67,), lambda i: te_fn(A[i]), name="B")
    s = te.create_schedule(B.op)
    if vec:
        s[B].vectorize(s[B].split(B.op.axis[0], factor=8)[1])
    a = np.linspace(lo, hi, 67).astype("float32")
    np.testing.assert_allclose(run(s, [A, B], [a]), np_fn(a.astype("float64")), rtol=2e-6,
                               atol=1e-6)


def test_max_min_reductions_and_where():
    A = te.placeholder((9, 31), name="A")
    k = te.reduce_axis((0, 31), name="k")
    k2 = te.reduce_axis((1, 30), name="k2")
    Mx = te.compute((9,), lambda i: te.max(A[i, k], axis=k), name="Mx")
    Mn = te.compute((9,), lambda i: te.min(A[i, k2], axis=k2, where=A[i, k2] > -0.3), name="Mn")
    s = te.create_schedule([Mx.op, Mn.op])
    a = rand((9, 31))
    mx, mn = run(s, [A, Mx, Mn], [a])
    np.testing.assert_allclose(mx, a.max(1))
    sub = a[:, 1:30]
    np.testing.assert_allclose(mn, np.where(sub > -0.3, sub, np.inf).min(1))


def test_comm_reducer_argmax_tuple():
    def fcombine(x, y):
        take = y[1] > x[1]
        return tir.Select(take, y[0], x[0]), tir.Select(take, y[1], x[1])

    def fidentity(t0, t1):
        return tir.const(-1, t0), tir.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    A = te.placeholder((6, 40), name="A")
    k = te.reduce_axis((0, 40), name="k")
    I, V = te.compute((6,), lambda i: argmax((k.var, A[i, k]), axis=k), name="T")
    s = te.create_schedule(I.op)
    a = rand((6, 40))
    idx, val = run(s, [A, I, V], [a])
    np.testing.assert_array_equal(idx, a.argmax(1))
    np.testing.assert_allclose(val, a.max(1))


def test_product_reducer_with_init():
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: tir.const(1, t), name="prod")
    A = te.placeholder((5, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    P = te.compute((5,), lambda i: prod(A[i, k], axis=k, init=2.0), name="P")
    s = te.create_schedule(P.op)
    a = rand((5, 6)) + 1
    np.testing.assert_allclose(run(s, [A, P], [a]), 2 * a.prod(1), rtol=1e-5)


def test_two_outputs_one_schedule_and_unused_input():
    A = te.placeholder((10,), name="A")
    U = te.placeholder((3,), name="U")
    B = te.compute((10,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((10,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule([B.op, C.op])
    mod = build(s, [A, U, B, C], name="two")
    a = rand((10,))
    b, c = np.zeros(10, "float32"), np.zeros(10, "float32")
    mod(a, np.zeros(3, "float32"), b, c)
    np.testing.assert_allclose(b, a + 1, rtol=1e-6)
    np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6)
