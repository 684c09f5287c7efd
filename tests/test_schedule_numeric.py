"""End-to-end schedules (TE -> lower -> LLVM -> JIT) compared against numpy.

Each test builds a program with a particular schedule and checks the numbers; the
combinations are the ones the auto-scheduler produces (tiling + cache_write +
compute_at + vectorize + parallel, rfactor, inlining, non-dividing splits, ...).
"""
import numpy as np
import pytest
from schedule_helpers import conv2d_nchw, conv_ref, matmul, rand, run

from compiler import te, tir


# ---------------------------------------------------------------- combinations
def test_tiled_vectorized_parallel_matmul_with_cache_write():
    A, B, C = matmul(64, 96, 48)
    R = te.compute(C.shape, lambda i, j: te.max(C[i, j], tir.const(0.0, "float32")), name="R")
    s = te.create_schedule(R.op)
    CC = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 16)
    s[CC].compute_at(s[C], jo)
    ic, jc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, ki, ic, jc)
    s[CC].unroll(ki)
    s[CC].vectorize(jc)
    s[C].vectorize(ji)
    s[C].parallel(io)
    a, b = rand((64, 48)), rand((48, 96))
    r = run(s, [A, B, R], [a, b])
    np.testing.assert_allclose(r, np.maximum(a @ b, 0), rtol=1e-5, atol=1e-5)


def test_parallel_rfactor_reduction():
    X = te.placeholder((4000,), name="X")
    r = te.reduce_axis((0, 4000), name="r")
    Y = te.compute((1,), lambda i: te.sum(X[r], axis=r), name="Y")
    s = te.create_schedule(Y.op)
    ro, ri = s[Y].split(r, nparts=8)
    YF = s.rfactor(Y, ro)
    s[YF].parallel(s[YF].op.axis[0])
    x = rand((4000,))
    np.testing.assert_allclose(run(s, [X, Y], [x]), [x.astype("float64").sum()], rtol=1e-4)


def test_rfactor_inner_axis_vectorized():
    A = te.placeholder((16, 256), name="A")
    k = te.reduce_axis((0, 256), name="k")
    B = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=8)
    BF = s.rfactor(B, ki, factor_axis=1)
    s[BF].vectorize(s[BF].op.axis[1])
    s[BF].compute_at(s[B], s[B].op.axis[0])
    s[B].parallel(s[B].op.axis[0])
    a = rand((16, 256))
    np.testing.assert_allclose(run(s, [A, B], [a]), a.sum(1), rtol=1e-4, atol=1e-5)


def test_cache_read_at_compute_at_stage():
    A, B, C = matmul(32, 32, 64)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    BB = s.cache_read(B, "local", [C])
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)
    ko, ki = s[C].split(k, factor=16)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[AA].compute_at(s[C], ko)
    s[BB].compute_at(s[C], ko)
    s[C].vectorize(ji)
    a, b = rand((32, 64)), rand((64, 32))
    np.testing.assert_allclose(run(s, [A, B, C], [a, b]), a @ b, rtol=1e-5, atol=1e-5)


def test_inlined_elementwise_chain():
    A = te.placeholder((37, 19), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute(A.shape, lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute(A.shape, lambda i, j: te.exp(C[i, j]) - B[i, j], name="D")
    s = te.create_schedule(D.op)
    s[B].compute_inline()
    s[C].compute_inline()
    f = s[D].fuse(*D.op.axis)
    fo, fi = s[D].split(f, factor=8)
    s[D].parallel(fo)
    s[D].vectorize(fi)
    a = rand((37, 19))
    np.testing.assert_allclose(run(s, [A, D], [a]), np.exp(a * 2 + 1) - a * 2, rtol=1e-5)






@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_with_inlined_padding(stride):
    X, W, P, Y = conv2d_nchw(1, 8, 14, 14, 16, 3, 3, 1, stride)
    s = te.create_schedule(Y.op)
    s[P].compute_inline()
    b, f, y, x = Y.op.axis
    fo, fi = s[Y].split(f, factor=4)
    xo, xi = s[Y].split(x, factor=7 if stride == 1 else 4)
    rc, ry, rx = Y.op.reduce_axis
    s[Y].reorder(b, fo, y, xo, rc, ry, rx, fi, xi)
    s[Y].vectorize(xi)
    s[Y].parallel(fo)
    x_, w_ = rand((1, 8, 14, 14)), rand((16, 8, 3, 3))
    np.testing.assert_allclose(run(s, [X, W, Y], [x_, w_]), conv_ref(x_, w_, 1, stride),
                               rtol=1e-4, atol=1e-5)


def test_conv2d_padding_at_compute_at():
    X, W, P, Y = conv2d_nchw(1, 4, 10, 10, 8, 3, 3, 1)
    s = te.create_schedule(Y.op)
    b, f, y, x = Y.op.axis
    s[P].compute_at(s[Y], y)
    x_, w_ = rand((1, 4, 10, 10)), rand((8, 4, 3, 3))
    np.testing.assert_allclose(run(s, [X, W, Y], [x_, w_]), conv_ref(x_, w_, 1), rtol=1e-4,
                               atol=1e-5)


def test_stencil_attached_by_compute_at():
    A = te.placeholder((100,), name="A")
    B = te.compute((100,), lambda i: A[i] * 3.0, name="B")
    C = te.compute((98,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    co, ci = s[C].split(C.op.axis[0], factor=10)
    s[B].compute_at(s[C], co)
    a = rand((100,))
    b = a * 3
    np.testing.assert_allclose(run(s, [A, C], [a]), b[:-2] + b[1:-1] + b[2:], rtol=1e-5)


def test_2d_stencil_halo_compute_at():
    A = te.placeholder((30, 30), name="A")
    B = te.compute((30, 30), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((28, 28), lambda i, j: B[i, j] + B[i + 2, j + 1] + B[i + 1, j + 2], name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(*C.op.axis, 8, 8)
    s[B].compute_at(s[C], jo)
    a = rand((30, 30))
    b = a + 1
    ref = b[:28, :28] + b[2:, 1:29] + b[1:29, 2:]
    np.testing.assert_allclose(run(s, [A, C], [a]), ref, rtol=1e-5)


@pytest.mark.parametrize("position", ["outer", "inner", "middle", "vector", "parallel"])
def test_non_dividing_split_at_each_position(position):
    A, B, C = matmul(29, 23, 13)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    if position == "outer":
        io, ii = s[C].split(i, factor=5)
    elif position == "inner":
        jo, ji = s[C].split(j, factor=7)
        ko, ki = s[C].split(k, factor=4)
    elif position == "middle":
        io, ii = s[C].split(i, nparts=3)
        iio, iii = s[C].split(ii, factor=4)
        s[C].reorder(io, j, iio, k, iii)
    elif position == "vector":
        jo, ji = s[C].split(j, factor=8)
        s[C].reorder(i, jo, k, ji)
        s[C].vectorize(ji)
    else:
        io, ii = s[C].split(i, factor=6)
        s[C].parallel(io)
    a, b = rand((29, 13)), rand((13, 23))
    np.testing.assert_allclose(run(s, [A, B, C], [a, b]), a @ b, rtol=1e-5, atol=1e-5)


def test_non_dividing_split_with_compute_at_producer():
    A = te.placeholder((23, 17), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute(A.shape, lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(*C.op.axis, 5, 4)
    s[B].compute_at(s[C], jo)
    a = rand((23, 17))
    np.testing.assert_allclose(run(s, [A, C], [a]), a * 2 + 1, rtol=1e-6)


def test_row_softmax():
    A = te.placeholder((13, 70), name="A")
    k1 = te.reduce_axis((0, 70), name="k1")
    k2 = te.reduce_axis((0, 70), name="k2")
    M = te.compute((13,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    E = te.compute(A.shape, lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    S = te.compute((13,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    O = te.compute(A.shape, lambda i, j: E[i, j] / S[i], name="O")
    s = te.create_schedule(O.op)
    i = O.op.axis[0]
    s[M].compute_at(s[O], i)
    s[E].compute_at(s[O], i)
    s[S].compute_at(s[O], i)
    jo, ji = s[O].split(O.op.axis[1], factor=8)
    s[O].vectorize(ji)
    s[E].vectorize(s[E].split(E.op.axis[1], factor=8)[1])
    s[O].parallel(i)
    a = rand((13, 70)) * 4
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(run(s, [A, O], [a]), e / e.sum(1, keepdims=True), rtol=1e-5)


def test_compute_at_then_split_and_fuse_target_axis():
    A = te.placeholder((12, 10), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute(A.shape, lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[B].compute_at(s[C], i)
    io, ii = s[C].split(i, factor=4)   # B follows the inner part
    s[C].fuse(ii, j)                   # ... then the fused axis
    a = rand((12, 10))
    np.testing.assert_allclose(run(s, [A, C], [a]), (a + 1) * 2, rtol=1e-6)


@pytest.mark.parametrize("width", [8, 9, 10, 18])
def test_vectorized_padding_inside_parallel_loop(width):
    """Regression: masked loads of non-power-of-two vectors were miscompiled by LLVM
    inside parallel loops; such if_then_else loads now branch instead."""
    h = w = width
    X = te.placeholder((1, 2, h - 4, w - 4), name="X")
    P = te.compute((1, 2, h, w), lambda b, c, y, x: te.if_then_else(
        te.all(y >= 2, y < h - 2, x >= 2, x < w - 2), X[b, c, y - 2, x - 2],
        tir.const(0.0, "float32")), name="P")
    rc = te.reduce_axis((0, 2), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    out = te.compute((1, 1, h - 2, w - 2), lambda b, o, y, x: te.sum(
        P[b, rc, y + ry, x + rx], axis=[rc, ry, rx]), name="out")
    s = te.create_schedule(out.op)
    y = out.op.axis[2]
    s[P].compute_at(s[out], y)
    s[P].vectorize(s[P].op.axis[-1])
    s[out].parallel(y)
    x = rand((1, 2, h - 4, w - 4))
    xp = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))
    ref = sum(xp[:, c:c + 1, i:i + h - 2, j:j + w - 2] for c in range(2) for i in range(3)
              for j in range(3))
    np.testing.assert_allclose(run(s, [X, out], [x]), ref, rtol=1e-5)
