"""Golden-file tests of lowered TIR text: schedules must print stably, like TVM's.

Regenerate after an intended change with ``pytest tests/test_golden_ir.py --update-golden``
and review the diff.
"""
import pathlib

import pytest
from schedule_helpers import channel_vectorized_conv, conv2d_nchw, matmul

from compiler import lower, te, tir

GOLDEN = pathlib.Path(__file__).parent / "golden"


def naive_matmul():
    A, B, C = matmul(16, 16, 16)
    return te.create_schedule(C.op), [A, B, C]


def tiled_matmul():
    A, B, C = matmul(64, 64, 64)
    R = te.compute(C.shape, lambda i, j: te.max(C[i, j], tir.const(0.0, "float32")), name="R")
    s = te.create_schedule(R.op)
    CC = s.cache_write(C, "local")
    s[C].compute_inline()
    i, j = R.op.axis
    io, jo, ii, ji = s[R].tile(i, j, 4, 16)
    s[CC].compute_at(s[R], jo)
    ic, jc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=2)
    s[CC].reorder(ko, ki, ic, jc)
    s[CC].unroll(ki)
    s[CC].vectorize(jc)
    s[R].vectorize(ji)
    s[R].parallel(io)
    return s, [A, B, R]


def conv_inline_pad():
    X, W, P, Y = conv2d_nchw(1, 2, 6, 6, 4, 3, 3, 1)
    s = te.create_schedule(Y.op)
    s[P].compute_inline()
    return s, [X, W, Y]


def rfactor_sum():
    X = te.placeholder((64,), name="X")
    r = te.reduce_axis((0, 64), name="r")
    Y = te.compute((1,), lambda i: te.sum(X[r], axis=r), name="Y")
    s = te.create_schedule(Y.op)
    ro, ri = s[Y].split(r, nparts=4)
    YF = s.rfactor(Y, ro)
    s[YF].parallel(s[YF].op.axis[0])
    return s, [X, Y]


def non_dividing_split():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    return s, [A, B]


def stencil_compute_at():
    A = te.placeholder((20,), name="A")
    B = te.compute((20,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((18,), lambda i: B[i] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    co, ci = s[C].split(C.op.axis[0], factor=6)
    s[B].compute_at(s[C], co)
    return s, [A, C]


def conv_channel_vectorized():
    # permute_local_layout stores the accumulator channel-last: unit-stride channel vectors
    return channel_vectorized_conv(c=16, h=4, vc=8)


CASES = {f.__name__: f for f in [naive_matmul, tiled_matmul, conv_inline_pad, rfactor_sum,
                                 non_dividing_split, stencil_compute_at,
                                 conv_channel_vectorized]}


@pytest.mark.parametrize("case", sorted(CASES))
def test_lowered_text_matches_golden(case, request):
    s, args = CASES[case]()
    text = str(lower(s, args, name=case)) + "\n"
    path = GOLDEN / f"{case}.txt"
    if request.config.getoption("--update-golden"):
        path.write_text(text)
    if not path.exists():
        pytest.fail(f"missing golden file {path}; run with --update-golden and review it")
    assert text == path.read_text()


def test_printing_is_deterministic():
    s1, a1 = tiled_matmul()
    s2, a2 = tiled_matmul()
    assert str(lower(s1, a1, name="m")) == str(lower(s2, a2, name="m"))
