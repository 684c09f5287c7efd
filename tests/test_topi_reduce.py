"""topi reductions, arg-reductions, softmax/log_softmax and layer_norm vs numpy.

Covers axis None / int / tuple, negative axes, keepdims, inner (row) and outer (column)
reductions (both schedule paths), SIMD-divisible and odd extents, ties in argmax.
"""
import numpy as np
import pytest
from topi_helpers import expect_error, rand, verify

from compiler import lower, te, topi

REDUCERS = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod, "mean": np.mean}
AXES = [None, -1, 0, (0, 2), (-1, -2), ()]


@pytest.mark.parametrize("name", sorted(REDUCERS))
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce(name, axis, keepdims):
    shape = (3, 5, 32)
    A = te.placeholder(shape, name="A")
    lo, hi = (0.5, 1.5) if name == "prod" else (-1, 1)
    a = rand(shape, lo=lo, hi=hi)
    out = getattr(topi, name)(A, axis=axis, keepdims=keepdims)
    ref = REDUCERS[name](a.astype("float64"), axis=axis, keepdims=keepdims)
    verify([A], out, [a], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,axis", [((7, 13), 1), ((4, 40), -1), ((64, 9), 0),
                                        ((2, 3, 24), (1, 2)), ((1000,), None),
                                        ((1 << 16,), None), ((16, 4096), None),
                                        ((2, 64, 512), (1, 2))], ids=str)
def test_sum_schedule_paths(shape, axis):
    A = te.placeholder(shape, name="A")
    a = rand(shape)
    verify([A], topi.sum(A, axis=axis), [a], a.astype("float64").sum(axis=axis),
           schedule=topi.x86.schedule_reduce, rtol=1e-4, atol=1e-5)


def test_all_any_and_int_sum():
    P = te.placeholder((4, 6, 5), "bool", "P")
    p = rand((4, 6, 5), "bool")
    p[0] = True
    verify([P], topi.all(P, axis=(1, 2)), [p], p.all(axis=(1, 2)))
    verify([P], topi.any(P, axis=0, keepdims=True), [p], p.any(axis=0, keepdims=True))
    I = te.placeholder((6, 7), "int32", "I")
    i = rand((6, 7), "int32", -50, 50)
    verify([I], topi.sum(I, axis=1), [i], i.sum(axis=1))
    verify([I], topi.max(I, axis=-2), [i], i.max(axis=-2))
    expect_error(lambda: topi.all(I), "topi.all", "bool")
    expect_error(lambda: topi.mean(I), "topi.mean", "floating")
    expect_error(lambda: topi.sum(I, axis=(1, -1)), "topi.sum", "distinct")


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (-1, True), (0, False)],
                         ids=str)
def test_arg_reduce(name, axis, keepdims):
    shape = (6, 9, 10)
    A = te.placeholder(shape, name="A")
    a = rand(shape, "int32", -4, 4).astype("float32")    # many ties: first index wins
    out = getattr(topi, name)(A, axis=axis, keepdims=keepdims)
    assert out.dtype == "int32"
    ref = getattr(np, name)(a, axis=axis)
    if keepdims:
        ref = np.expand_dims(ref, axis)
    verify([A], out, [a], ref.astype("int32"))


def test_arg_reduce_select_last_index_and_multi_axis():
    A = te.placeholder((5, 4, 6), name="A")
    a = rand((5, 4, 6), "int32", -2, 2).astype("float32")
    flip = a[:, :, ::-1]
    ref = a.shape[2] - 1 - np.argmax(flip, axis=2)
    verify([A], topi.argmax(A, axis=2, select_last_index=True), [a], ref)
    ref2 = a.reshape(5, 24).argmin(axis=1)      # flattened index over the reduced axes
    verify([A], topi.argmin(A, axis=(1, 2)), [a], ref2)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape,axis", [((4, 1000), -1), ((3, 17), 1), ((2, 3, 40), -1),
                                        ((2, 5, 4, 3), 1), ((64,), 0)], ids=str)
def test_softmax(shape, axis):
    X = te.placeholder(shape, name="X")
    x = rand(shape, lo=-8, hi=8)
    x64 = x.astype("float64")
    verify([X], topi.nn.softmax(X, axis), [x], _softmax(x64, axis), rtol=1e-5, atol=1e-6)
    ref = np.log(_softmax(x64, axis))
    verify([X], topi.nn.log_softmax(X, axis), [x], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cols", [2.5, 4, 62.5])
def test_softmax_row_statistics_are_lane_parallel(cols):
    """The row max and sum accumulate in a vector of partial results, a whole vector when
    it divides the row, else a half one (1000 columns on 16 lanes), never a scalar chain
    of dependent adds; values match numpy."""
    lanes = topi.x86.utils.vector_lanes("float32")
    n = int(cols * lanes)
    width = lanes if n % lanes == 0 else lanes // 2
    X = te.placeholder((4, n), name="X")
    out = topi.nn.softmax(X)
    text = str(lower(topi.x86.schedule_softmax(out), [X, out]))
    assert f"T_softmax_maxelem_rf[T.Ramp(0, 1, {width})]" in text
    assert f"T_softmax_expsum_rf[T.Ramp(0, 1, {width})]" in text
    x = rand((4, n), lo=-8, hi=8)
    verify([X], out, [x], _softmax(x.astype("float64"), -1), rtol=1e-5, atol=1e-6)


def test_softmax_large_inputs_do_not_overflow():
    X = te.placeholder((2, 16), name="X")
    x = rand((2, 16), lo=500, hi=600)
    verify([X], topi.nn.softmax(X), [x], _softmax(x.astype("float64"), -1), atol=1e-6)


@pytest.mark.parametrize("shape,axis", [((6, 64), -1), ((2, 5, 12), (1, 2)), ((4, 3, 10), 1),
                                        ((3, 7), (0, 1))], ids=str)
def test_layer_norm(shape, axis):
    X = te.placeholder(shape, name="X")
    axes = (axis,) if isinstance(axis, int) else axis
    nshape = tuple(shape[a] for a in axes)
    G = te.placeholder(nshape, name="G")
    B = te.placeholder(nshape, name="B")
    x, g, b = rand(shape, lo=-3, hi=3), rand(nshape), rand(nshape)
    x64 = x.astype("float64")
    mu = x64.mean(axis=axes, keepdims=True)
    var = ((x64 - mu) ** 2).mean(axis=axes, keepdims=True)
    bshape = [shape[a] if a in [q % len(shape) for q in axes] else 1 for a in range(len(shape))]
    ref = (x64 - mu) / np.sqrt(var + 1e-5) * g.reshape(bshape) + b.reshape(bshape)
    verify([X, G, B], topi.nn.layer_norm(X, G, B, axis), [x, g, b], ref, rtol=1e-4, atol=1e-5)
    expect_error(lambda: topi.nn.layer_norm(X, G, B, axis=5), "nn.layer_norm", "axis=5")
