"""Tests of topi's tags, patterns, error messages and default schedules (the shared
helpers are in topi_helpers.py)."""
import numpy as np
import pytest
from topi_helpers import expect_error, rand, verify

from compiler import lower, te, topi
from compiler.topi import tag


# ---------------------------------------------------------------- tags and patterns
def test_pattern_kinds_of_ops():
    A = te.placeholder((4, 8), name="A")
    W = te.placeholder((6, 8), name="W")
    X = te.placeholder((1, 3, 8, 8), name="X")
    K = te.placeholder((4, 3, 3, 3), name="K")
    b = te.placeholder((8,), name="b")
    cases = {
        tag.ELEMWISE: [topi.exp(A), topi.nn.relu(A), topi.cast(A, "float64")],
        tag.BROADCAST: [topi.add(A, b), topi.nn.bias_add(A, b, axis=1), topi.maximum(A, 1.0)],
        tag.INJECTIVE: [topi.transpose(A), topi.reshape(A, (8, 4)),
                        topi.nn.pad(A, [1, 1], [1, 1]), topi.strided_slice(A, [1], [3])],
        tag.COMM_REDUCE: [topi.sum(A, axis=1), topi.argmax(A, axis=0), topi.mean(A)],
        tag.OUT_ELEMWISE_FUSABLE: [topi.nn.dense(A, W), topi.nn.conv2d_nchw(X, K, 1, 1, 1),
                                   topi.nn.pool2d(X, 2, 2, 1, 0, "max")],
        tag.OPAQUE: [topi.nn.softmax(A), topi.nn.layer_norm(A, b, b, axis=-1)],
    }
    for kind, tensors in cases.items():
        for t in tensors:
            assert topi.pattern_of(t) == kind, (t.op.name, t.op.tag, kind)
    assert topi.pattern_of(A) == tag.OPAQUE
    assert tag.PATTERN_LEVEL[tag.ELEMWISE] < tag.PATTERN_LEVEL[tag.OUT_ELEMWISE_FUSABLE]
    conv = topi.nn.conv2d_nchw(X, K, 1, 1, 1)
    assert conv.op.tag == "conv2d_nchw" and conv.op.attrs["strides"] == [1, 1]
    assert tag.is_injective("injective,pad") and not tag.is_broadcast("injective")
    # the kind of a whole op's result (what the graph level records for the operator)
    assert topi.pattern_of_dag(topi.nn.dense(A, W, te.placeholder((6,), name="c"))) == \
        tag.OUT_ELEMWISE_FUSABLE
    assert topi.pattern_of_dag(topi.nn.softmax(A)) == tag.OPAQUE
    assert topi.pattern_of_dag(topi.mean(A, axis=0)) == tag.COMM_REDUCE
    assert topi.pattern_of_dag([topi.exp(A), topi.add(A, b)]) == tag.BROADCAST


def test_pattern_of_untagged_ops_and_bad_input():
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis((0, 4), name="k")
    plain = te.compute((4,), lambda i: A[i] * 2.0, name="plain")
    red = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="red")
    assert topi.pattern_of(plain) == tag.INJECTIVE
    assert topi.pattern_of(red) == tag.COMM_REDUCE
    with pytest.raises(TypeError):
        topi.pattern_of("relu")


# ---------------------------------------------------------------- error messages
def test_errors_name_op_argument_and_expectation():
    A = te.placeholder((4, 8), name="A")
    W = te.placeholder((6, 7), name="W")
    expect_error(lambda: topi.nn.dense(A, W), "nn.dense", "weight", "in_dim")
    expect_error(lambda: topi.add(A, te.placeholder((3,), name="B")), "topi.add", "broadcast")
    expect_error(lambda: topi.sum(A, axis=2), "topi.sum", "axis=2", "[-2, 2)")
    expect_error(lambda: topi.reshape(A, (5, 7)), "topi.reshape", "newshape", "32 elements")
    expect_error(lambda: topi.transpose(A, (0, 0)), "topi.transpose", "permutation")
    expect_error(lambda: topi.exp(te.placeholder((3,), "int32", "I")), "topi.exp", "floating")
    X = te.placeholder((1, 4, 8, 8), name="X")
    K = te.placeholder((8, 3, 3, 3), name="K")
    expect_error(lambda: topi.nn.conv2d_nchw(X, K, 1, 1, 1), "nn.conv2d_nchw", "Filter")
    K4 = te.placeholder((8, 4, 3, 3), name="K4")
    expect_error(lambda: topi.nn.conv2d_nchw(X, K4, 1, (1, 2, 3), 1), "padding", "4-tuple")
    expect_error(lambda: topi.nn.conv2d_nchw(X, K4, 0, 1, 1), "stride", ">= 1")
    expect_error(lambda: topi.nn.group_conv2d_nchw(X, K4, 1, 1, 1, 3), "groups", "divisor")
    expect_error(lambda: topi.nn.pool2d(X, 3, 1, 1, 0, "min"), "nn.pool2d", "pool_type")
    expect_error(lambda: topi.nn.pool2d(X, 10, 1, 1, 0, "max"), "nn.pool2d", "kernel extent")
    expect_error(lambda: topi.split(A, 3, axis=1), "topi.split", "dividing")
    expect_error(lambda: topi.layout_transform(X, "NCHW", "NCHW3c"), "dividing")
    expect_error(lambda: topi.nn.softmax(A, axis=-3), "nn.softmax", "axis")
    expect_error(lambda: topi.image.resize2d(X, None, (4, 4), method="cubic"), "method")
    expect_error(lambda: topi.take(A, 1.5), "topi.take", "indices")
    expect_error(lambda: topi.nn.bias_add(A, te.placeholder((4,), name="b"), axis=1),
                 "nn.bias_add", "bias", "(8,)")


def test_verify_helper_can_fail():
    """The comparison helper must catch a wrong reference (tests are able to fail)."""
    A = te.placeholder((4, 8), name="A")
    a = rand((4, 8))
    with pytest.raises(AssertionError):
        verify([A], topi.exp(A), [a], np.exp(a) + 1e-2)


# ---------------------------------------------------------------- default schedules
def _lowered(outs, inputs, schedule):
    outs_l = outs if isinstance(outs, list) else [outs]
    return str(lower(schedule(outs), list(inputs) + outs_l))


def test_default_schedules_are_parallel_and_vectorized():
    """The fallback schedules are not naive: one parallel loop and SIMD vectors."""
    A = te.placeholder((256, 512), name="A")
    W = te.placeholder((128, 512), name="W")
    X = te.placeholder((1, 32, 56, 56), name="X")
    K = te.placeholder((32, 32, 3, 3), name="K")
    D = te.placeholder((32, 1, 3, 3), name="D")
    cases = [
        (topi.nn.relu(topi.add(A, 1.0)), [A], topi.x86.schedule_injective),
        (topi.nn.relu(topi.nn.dense(A, W)), [A, W], topi.x86.schedule_dense),
        (topi.nn.matmul(A, topi.transpose(W)), [A, W], topi.x86.schedule_matmul),
        (topi.nn.conv2d_nchw(X, K, 1, 1, 1), [X, K], topi.x86.schedule_conv2d_nchw),
        (topi.nn.depthwise_conv2d_nchw(X, D, 1, 1, 1), [X, D],
         topi.x86.schedule_depthwise_conv2d_nchw),
        (topi.nn.pool2d(X, 3, 1, 1, 1, "avg"), [X], topi.x86.schedule_pool),
        (topi.nn.softmax(A), [A], topi.x86.schedule_softmax),
        (topi.sum(A, axis=1), [A], topi.x86.schedule_reduce),
        (topi.sum(A, axis=0), [A], topi.x86.schedule_reduce),
    ]
    for out, inputs, sched in cases:
        text = _lowered(out, inputs, sched)
        assert "T.parallel" in text, (out.op.name, text)
        assert "T.Ramp" in text, (out.op.name, text)
        assert _lowered(out, inputs, topi.generic.schedule_default) == text, out.op.name


def test_schedule_default_handles_chained_anchors():
    X = te.placeholder((1, 4, 12, 12), name="X")
    K = te.placeholder((8, 4, 3, 3), name="K")
    x, k = rand((1, 4, 12, 12)), rand((8, 4, 3, 3))
    conv = topi.nn.relu(topi.nn.conv2d_nchw(X, K, 1, 1, 1))
    out = topi.nn.pool2d(conv, 2, 2, 1, 0, "max")
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (1, 1), (1, 1)))
    c = np.zeros((1, 8, 12, 12))
    for ry in range(3):
        for rx in range(3):
            c += np.einsum("nchw,fc->nfhw", xp[:, :, ry:ry + 12, rx:rx + 12], k[:, :, ry, rx])
    c = np.maximum(c, 0)
    ref = c.reshape(1, 8, 6, 2, 6, 2).max(axis=(3, 5))
    verify([X, K], out, [x, k], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("width, vectorized", [(14, True), (6, True), (56, False),
                                                (5, False)])
def test_guarded_injective_stage_vectorizes_only_power_of_two_rows(width, vectorized):
    """A pad row of 16 or 8 lanes is one masked vector; 58 or 7 lanes would be a branch
    per lane, so that row stays a scalar loop.  Values match numpy either way."""
    x = rand((3, 4, width, width))
    X = te.placeholder(x.shape, name="X")
    P = topi.nn.pad(X, (0, 0, 1, 1), (0, 0, 1, 1))
    text = _lowered(P, [X], topi.x86.schedule_injective)
    assert ("T.Ramp" in text) == vectorized, text
    verify([X], P, [x], np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))),
           schedule=topi.x86.schedule_injective)


def test_unguarded_odd_row_stays_one_vector():
    """Plain elementwise rows of odd length are still one vector (LLVM splits it)."""
    x = rand((64, topi.x86.utils.vector_lanes("float32") - 1))   # 7 on AVX2, 15 on AVX-512
    A = te.placeholder(x.shape, name="A")
    out = topi.add(A, 1.0)
    assert "T.Ramp(" in _lowered(out, [A], topi.x86.schedule_injective)
    verify([A], out, [x], x + 1.0, schedule=topi.x86.schedule_injective)
