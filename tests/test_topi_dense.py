"""nn.dense / nn.matmul / nn.batch_matmul vs numpy, alone and with fused epilogues.

Shapes exercise both register-blocked kernels (the "dot" kernel needs K a multiple of
the SIMD width, the "panel" kernel packs B), non-dividing tiles, M = 1, every transpose
combination and batch broadcasting.
"""
import numpy as np
import pytest
from topi_helpers import expect_error, rand, verify

from compiler import lower, te, topi

DENSE_SHAPES = [(1, 10, 64), (7, 13, 17), (33, 40, 64), (16, 48, 24), (5, 100, 48)]


@pytest.mark.parametrize("m,n,k", DENSE_SHAPES, ids=str)
def test_dense(m, n, k):
    A = te.placeholder((m, k), name="A")
    W = te.placeholder((n, k), name="W")
    a, w = rand((m, k)), rand((n, k))
    verify([A, W], topi.nn.dense(A, W), [a, w], a @ w.T, schedule=topi.x86.schedule_dense,
           rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m,n,k", [(16, 24, 32), (7, 13, 17)], ids=str)
def test_dense_bias_relu_fused(m, n, k):
    A = te.placeholder((m, k), name="A")
    W = te.placeholder((n, k), name="W")
    B = te.placeholder((n,), name="B")
    out = topi.nn.relu(topi.nn.dense(A, W, B))
    a, w, b = rand((m, k)), rand((n, k)), rand((n,))
    ref = np.maximum(a @ w.T + b, 0)
    verify([A, W, B], out, [a, w, b], ref, schedule=topi.x86.schedule_dense, rtol=1e-4,
           atol=1e-5)
    text = str(lower(topi.x86.schedule_dense(out), [A, W, B, out]))
    assert "T.parallel" in text and "T.Ramp" in text     # parallel and vectorized
    assert text.count("for ") < 12                       # the epilogue is fused, not a pass


def test_dense_out_dtype_and_errors():
    A = te.placeholder((4, 16), "int8", "A")
    W = te.placeholder((8, 16), "int8", "W")
    a, w = rand((4, 16), "int8", -20, 20), rand((8, 16), "int8", -20, 20)
    out = topi.nn.dense(A, W, out_dtype="int32")
    assert out.dtype == "int32"
    verify([A, W], out, [a, w], a.astype("int32") @ w.astype("int32").T)
    Wf = te.placeholder((8, 16), name="Wf")
    expect_error(lambda: topi.nn.dense(A, Wf), "nn.dense", "out_dtype")
    expect_error(lambda: topi.nn.dense(A, te.placeholder((8,), name="v")), "nn.dense",
                 "weight", "2-D")
    expect_error(lambda: topi.nn.dense(A, W, te.placeholder((7,), "int8", "b")),
                 "nn.dense", "bias", "(8,)")


PACKED_DENSE = [(1, 32, 64, 16, False), (7, 48, 24, 16, True), (33, 64, 40, 32, True),
                (12, 16, 8, 8, True)]


@pytest.mark.parametrize("m,n,k,nr,fused", PACKED_DENSE, ids=str)
def test_dense_pack(m, n, k, nr, fused):
    """The "NC{nr}n" weight (relay's AlterOpLayout) computes dense, with the packed
    micro-kernel schedule and a plain one; M = 1 and rows that MR does not divide."""
    A = te.placeholder((m, k), name="A")
    W = te.placeholder((n // nr, k, nr), name="W")
    B = te.placeholder((n,), name="B")
    a, w, b = rand((m, k)), rand((n, k)), rand((n,))
    wp = topi.nn.pack_dense_weight(w, nr)
    assert wp.shape == (n // nr, k, nr) and wp[1, 3, 2] == w[nr + 2, 3]
    out = topi.nn.dense_pack(A, W, B if fused else None)
    assert out.op.input_tensors[0].op.attrs["weight_vector"] == nr if fused else \
        out.op.attrs["weight_vector"] == nr
    ref = a @ w.T + (b if fused else 0)
    if fused:
        out = topi.nn.relu(out)
        ref = np.maximum(ref, 0)
    inputs, arrays = ([A, W, B], [a, wp, b]) if fused else ([A, W], [a, wp])
    verify(inputs, out, arrays, ref, schedule=topi.x86.schedule_dense, rtol=1e-4, atol=1e-5)
    text = str(lower(topi.x86.schedule_dense(out), inputs + [out]))
    # units vectorized: each k step loads contiguous weight vectors, A is broadcast
    assert "W[T.Ramp(" in text and "T.Broadcast(A[" in text and "T.parallel" in text


@pytest.mark.parametrize("m,nr,lanes,mr", [(128, 32, 16, 8), (128, 16, 8, 4), (1, 32, 16, 1),
                                           (7, 32, 16, 7), (36, 64, 16, 4), (30, 16, 8, 6),
                                           (26, 16, 16, 13)])
def test_dense_pack_register_tile(m, nr, lanes, mr):
    """MR x nr accumulators within 16 of AVX-512's 32 registers, 12 of AVX2's 16."""
    assert topi.x86.dense.packed_tile(m, nr, lanes) == mr


def test_dense_pack_errors():
    A = te.placeholder((4, 16), name="A")
    expect_error(lambda: topi.nn.dense_pack(A, te.placeholder((2, 16), name="W")),
                 "nn.contrib_dense_pack", "weight", "3-D")
    expect_error(lambda: topi.nn.dense_pack(A, te.placeholder((2, 8, 8), name="W")),
                 "nn.contrib_dense_pack", "in_dim", "16")


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,n,k", [(1, 10, 64), (13, 37, 24), (32, 64, 40)], ids=str)
def test_matmul(ta, tb, m, n, k):
    A = te.placeholder((k, m) if ta else (m, k), name="A")
    B = te.placeholder((n, k) if tb else (k, n), name="B")
    Bias = te.placeholder((n,), name="bias")
    a = rand((k, m) if ta else (m, k))
    b = rand((n, k) if tb else (k, n))
    bias = rand((n,))
    ref = (a.T if ta else a) @ (b.T if tb else b)
    verify([A, B], topi.nn.matmul(A, B, transpose_a=ta, transpose_b=tb), [a, b], ref,
           schedule=topi.x86.schedule_matmul, rtol=1e-4, atol=1e-5)
    out = topi.sigmoid(topi.nn.matmul(A, B, Bias, transpose_a=ta, transpose_b=tb))
    verify([A, B, Bias], out, [a, b, bias], 1 / (1 + np.exp(-(ref + bias))),
           schedule=topi.x86.schedule_matmul, rtol=1e-4, atol=1e-5, plain=False)


def test_matmul_errors():
    A = te.placeholder((4, 5), name="A")
    expect_error(lambda: topi.nn.matmul(A, A), "nn.matmul", "tensor_b", "reduction extent 5")
    expect_error(lambda: topi.nn.matmul(A, A, transpose_b=1), "nn.matmul", "transpose_b")


@pytest.mark.parametrize("ta,tb", [(False, True), (False, False), (True, False)])
@pytest.mark.parametrize("ba,bb", [(3, 3), (1, 4), (2, 1)])
def test_batch_matmul(ta, tb, ba, bb):
    m, n, k = 5, 12, 16
    A = te.placeholder((ba, k, m) if ta else (ba, m, k), name="A")
    B = te.placeholder((bb, n, k) if tb else (bb, k, n), name="B")
    a = rand((ba, k, m) if ta else (ba, m, k))
    b = rand((bb, n, k) if tb else (bb, k, n))
    ref = np.matmul(a.transpose(0, 2, 1) if ta else a, b.transpose(0, 2, 1) if tb else b)
    out = topi.nn.batch_matmul(A, B, transpose_a=ta, transpose_b=tb)
    verify([A, B], out, [a, b], ref, schedule=topi.x86.schedule_batch_matmul, rtol=1e-4,
           atol=1e-5)


def test_batch_matmul_fused_and_errors():
    A = te.placeholder((4, 8, 32), name="A")
    B = te.placeholder((4, 24, 32), name="B")
    a, b = rand((4, 8, 32)), rand((4, 24, 32))
    out = topi.nn.relu(topi.nn.batch_matmul(A, B))
    verify([A, B], out, [a, b], np.maximum(a @ b.transpose(0, 2, 1), 0), rtol=1e-4, atol=1e-5)
    expect_error(lambda: topi.nn.batch_matmul(A, te.placeholder((3, 24, 32), name="C")),
                 "nn.batch_matmul", "batch")
    expect_error(lambda: topi.nn.batch_matmul(A, B, oshape=(4, 8, 8)), "oshape")
