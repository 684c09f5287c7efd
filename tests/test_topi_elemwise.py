"""topi elementwise math, broadcasting binary ops, comparisons and activations vs numpy.

Each case runs under the default schedule and a plain ``create_schedule`` (``verify``);
shapes include odd sizes, size-1 broadcasting on either side and rank differences.
"""
import math

import numpy as np
import pytest
from topi_helpers import expect_error, rand, verify

from compiler import te, topi

_erf = np.vectorize(math.erf)

UNARY = {
    "exp": (topi.exp, np.exp, (-3, 3)),
    "log": (topi.log, np.log, (0.1, 5)),
    "sqrt": (topi.sqrt, np.sqrt, (0.0, 4)),
    "rsqrt": (topi.rsqrt, lambda x: 1 / np.sqrt(x), (0.2, 4)),
    "tanh": (topi.tanh, np.tanh, (-4, 4)),
    "sigmoid": (topi.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-6, 6)),
    "erf": (topi.erf, _erf, (-3, 3)),
    "abs": (topi.abs, np.abs, (-2, 2)),
    "floor": (topi.floor, np.floor, (-3, 3)),
    "ceil": (topi.ceil, np.ceil, (-3, 3)),
    "negative": (topi.negative, np.negative, (-2, 2)),
    "gelu": (topi.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), (-3, 3)),
    "relu": (topi.nn.relu, lambda x: np.maximum(x, 0), (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(37,), (3, 5, 16)])
def test_unary(name, shape):
    fn, ref, (lo, hi) = UNARY[name]
    A = te.placeholder(shape, name="A")
    a = rand(shape, lo=lo, hi=hi)
    verify([A], fn(A), [a], ref(a.astype("float64")), rtol=2e-5, atol=1e-6)


def test_gelu_tanh_clip_cast_identity():
    A = te.placeholder((4, 33), name="A")
    a = rand((4, 33), lo=-3, hi=3)
    x = a.astype("float64")
    ref = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    verify([A], topi.gelu(A, approximate="tanh"), [a], ref, rtol=1e-5, atol=1e-6)
    verify([A], topi.clip(A, -0.5, 1.25), [a], np.clip(a, -0.5, 1.25))
    verify([A], topi.cast(A, "int32"), [a], np.trunc(a).astype("int32"))
    verify([A], topi.identity(A), [a], a)
    expect_error(lambda: topi.gelu(A, "fast"), "topi.gelu", "approximate")
    expect_error(lambda: topi.clip(A, 2, 1), "topi.clip", "a_min <= a_max")
    expect_error(lambda: topi.cast(A, "float7"), "topi.cast", "dtype")


BINARY = {
    "add": (topi.add, np.add), "subtract": (topi.subtract, np.subtract),
    "multiply": (topi.multiply, np.multiply), "divide": (topi.divide, np.divide),
    "maximum": (topi.maximum, np.maximum), "minimum": (topi.minimum, np.minimum),
    "power": (topi.power, np.power),
}
SHAPES = [((5, 17), (5, 17)), ((4, 1, 9), (3, 1)), ((1, 24), (7, 1)), ((2, 3, 1, 5), (5,)),
          ((8,), (3, 1, 8))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_broadcast_binary(name, shapes):
    fn, ref = BINARY[name]
    A = te.placeholder(shapes[0], name="A")
    B = te.placeholder(shapes[1], name="B")
    lo = 0.5 if name in ("divide", "power") else -2.0
    a, b = rand(shapes[0], lo=lo, hi=2.0), rand(shapes[1], lo=lo, hi=2.0)
    verify([A, B], fn(A, B), [a, b], ref(a.astype("float64"), b.astype("float64")),
           rtol=2e-5, atol=1e-6)


def test_scalar_operands_and_int_ops():
    A = te.placeholder((3, 10), name="A")
    a = rand((3, 10))
    verify([A], topi.add(A, 2.5), [a], a + 2.5)
    verify([A], topi.subtract(1.0, A), [a], 1.0 - a)
    verify([A], topi.multiply(A, 3), [a], a * 3)
    out = topi.add(2, 3)   # two numbers give an expression
    assert out.value == 5
    I = te.placeholder((4, 9), "int32", "I")
    J = te.placeholder((9,), "int32", "J")
    i, j = rand((4, 9), "int32", -20, 20), rand((9,), "int32", 1, 6)
    verify([I, J], topi.floor_divide(I, J), [i, j], np.floor_divide(i, j))
    verify([I, J], topi.floor_mod(I, J), [i, j], np.mod(i, j))
    expect_error(lambda: topi.power(I, J), "topi.power", "floating")
    expect_error(lambda: topi.add(A, "x"), "topi.add", "rhs")


CMP = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
       "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal}


@pytest.mark.parametrize("name", sorted(CMP))
def test_comparisons(name):
    A = te.placeholder((6, 1, 7), "int32", "A")
    B = te.placeholder((5, 7), "int32", "B")
    a, b = rand((6, 1, 7), "int32", -3, 3), rand((5, 7), "int32", -3, 3)
    out = getattr(topi, name)(A, B)
    assert out.dtype == "bool"
    verify([A, B], out, [a, b], CMP[name](a, b))


def test_logical_ops_and_where():
    P = te.placeholder((4, 9), "bool", "P")
    Q = te.placeholder((9,), "bool", "Q")
    p, q = rand((4, 9), "bool"), rand((9,), "bool")
    verify([P, Q], topi.logical_and(P, Q), [p, q], p & q)
    verify([P, Q], topi.logical_or(P, Q), [p, q], p | q)
    verify([P, Q], topi.logical_xor(P, Q), [p, q], p ^ q)
    verify([P], topi.logical_not(P), [p], ~p)
    X = te.placeholder((4, 1), name="X")
    Y = te.placeholder((9,), name="Y")
    x, y = rand((4, 1)), rand((9,))
    verify([P, X, Y], topi.where(P, X, Y), [p, x, y], np.where(p, x, y))
    expect_error(lambda: topi.where(X, X, Y), "topi.where", "bool")


def test_activations():
    X = te.placeholder((2, 5, 3, 11), name="X")
    S = te.placeholder((5,), name="S")
    B = te.placeholder((11,), name="B")
    x, sl, b = rand((2, 5, 3, 11), lo=-2, hi=2), rand((5,)), rand((11,))
    verify([X], topi.nn.leaky_relu(X, 0.1), [x], np.where(x > 0, x, 0.1 * x))
    verify([X, S], topi.nn.prelu(X, S, axis=1), [x, sl],
           np.where(x > 0, x, x * sl[None, :, None, None]))
    verify([X, B], topi.nn.bias_add(X, B, axis=-1), [x, b], x + b)
    verify([X, S], topi.nn.relu(topi.nn.bias_add(X, S)), [x, sl],
           np.maximum(x + sl[None, :, None, None], 0))
    expect_error(lambda: topi.nn.prelu(X, S, axis=2), "nn.prelu", "slope", "(3,)")
    expect_error(lambda: topi.nn.leaky_relu(X, "a"), "nn.leaky_relu", "alpha")


def test_batch_norm_inference():
    X = te.placeholder((2, 6, 5, 7), name="X")
    g, b, m, v = (te.placeholder((6,), name=n) for n in ("g", "b", "m", "v"))
    x = rand((2, 6, 5, 7))
    gv, bv, mv = rand((6,)), rand((6,)), rand((6,))
    vv = rand((6,), lo=0.1, hi=2.0)
    out, mean, var = topi.nn.batch_norm(X, g, b, m, v, axis=1, epsilon=1e-3)
    assert mean is m and var is v
    c = (slice(None),) + (None,) * 2
    ref = (x - mv[c]) / np.sqrt(vv[c] + 1e-3) * gv[c] + bv[c]
    verify([X, g, b, m, v], out, [x, gv, bv, mv, vv], ref, rtol=1e-5, atol=1e-5)
    out2 = topi.nn.batch_norm(X, g, b, m, v, axis=1, center=False, scale=False)[0]
    verify([X, g, b, m, v], out2, [x, gv, bv, mv, vv], (x - mv[c]) / np.sqrt(vv[c] + 1e-5),
           rtol=1e-5, atol=1e-5)
    expect_error(lambda: topi.nn.batch_norm(X, g, b, m, v, axis=2), "nn.batch_norm", "gamma")
    expect_error(lambda: topi.nn.batch_norm(X, g, b, m, v, training=True), "training")
