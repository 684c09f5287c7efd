"""Tests of the ``permute_local_layout`` pass (vectorized dim of a local buffer goes last)."""
import numpy as np
from interp import assert_same_result, ci, fi
from schedule_helpers import channel_vectorized_conv

from compiler import build, lower
from compiler.passes import default_pipeline, permute_local_layout
from compiler.runtime.module import as_aligned
from compiler.tir import expr as E
from compiler.tir import stmt as S

A = S.decl_buffer((4, 8), "float32", "A")
B = S.decl_buffer((4, 8), "float32", "B")


def _copy_through_local(fill_kind="vectorized", back_kind="serial", strides=(), back=4):
    """L[i, j] = A[i, j] * 2 with ``i`` innermost (``fill_kind``), then B[i, j] = L[i, j]
    with ``j`` innermost (``back_kind``); ``back`` is the extent of an extra loop around
    the copy-back, to weigh it in the vote."""
    L = S.decl_buffer((4, 8), "float32", "L", strides=strides)
    i, j, i2, j2, r = (E.Var(n) for n in ("i", "j", "i", "j", "r"))
    fill = S.For(j, ci(0), ci(8), "serial", S.For(i, ci(0), ci(4), fill_kind, S.BufferStore(
        L, E.BufferLoad(A, (i, j)) * fi(2.0), (i, j))))
    copy = S.For(i2, ci(0), ci(4), "serial", S.For(j2, ci(0), ci(8), back_kind, S.BufferStore(
        B, E.BufferLoad(B, (i2, j2)) + E.BufferLoad(L, (i2, j2)), (i2, j2))))
    copy = S.For(r, ci(0), ci(back), "serial", copy)
    return S.PrimFunc("f", (A, B), S.Allocate(L, S.seq(fill, copy)))


def test_vectorized_dim_moves_last_golden():
    f = _copy_through_local()
    g = permute_local_layout(f)
    assert str(g.body) == "\n".join([
        'L = T.allocate([8, 4], "float32", "global")',
        "for j in range(8):",
        "    for i in T.vectorized(4):",
        "        L[j, i] = A[i, j] * T.float32(2.0)",
        "for r in range(4):",
        "    for i_1 in range(4):",
        "        for j_1 in range(8):",
        "            B[i_1, j_1] = B[i_1, j_1] + L[j_1, i_1]"])
    assert_same_result(f, g)


def test_nothing_to_do_returns_the_same_function():
    # no vectorized loop; vectorized along the last dim already
    for f in (_copy_through_local(fill_kind="serial"),
              _copy_through_local(fill_kind="serial", back_kind="vectorized")):
        assert permute_local_layout(f) is f


def test_heavier_accesses_win_the_vote():
    # the copy-back vectorizes the last dim 8 times as often as the fill the first one
    f = _copy_through_local(back_kind="vectorized", back=8)
    assert permute_local_layout(f) is f
    # as often (8 x 4 fill stores against 4 x 8 loads): a tie keeps the layout
    f = _copy_through_local(back_kind="vectorized", back=1)
    assert permute_local_layout(f) is f


def test_strided_and_parameter_buffers_keep_their_layout():
    f = _copy_through_local(strides=(ci(9), ci(1)))
    assert permute_local_layout(f) is f
    # A and B are parameters: only L may change
    g = permute_local_layout(_copy_through_local())
    assert g.params == (A, B)


def test_flat_access_blocks_the_permutation():
    L = S.decl_buffer((4, 8), "float32", "L")
    i, k = E.Var("i"), E.Var("k")
    fill = S.For(i, ci(0), ci(4), "vectorized", S.BufferStore(L, fi(1.0), (i, ci(0))))
    flat = S.For(k, ci(0), ci(32), "serial", S.BufferStore(
        B, E.BufferLoad(L, (k,)), (ci(0), ci(0))))
    f = S.PrimFunc("f", (A, B), S.Allocate(L, S.seq(fill, flat)))
    assert permute_local_layout(f) is f


def test_let_bound_index_counts_as_vectorized():
    L = S.decl_buffer((4, 8), "float32", "L")
    i, j, t = E.Var("i"), E.Var("j"), E.Var("t")
    body = S.For(j, ci(0), ci(8), "serial", S.For(i, ci(0), ci(4), "vectorized", S.LetStmt(
        t, i + ci(0), S.BufferStore(L, E.BufferLoad(A, (i, j)), (t, j)))))
    f = S.PrimFunc("f", (A, B), S.Allocate(L, body))
    g = permute_local_layout(f)
    assert [int(x) for x in g.body.buffer.shape] == [8, 4]
    assert_same_result(f, g)


def test_default_pipeline_runs_it_before_flatten():
    names = [p.__name__ for p in default_pipeline()]
    assert names.index("permute_local_layout") < names.index("flatten_buffers")


# ---------------------------------------------------------------- end to end: a conv
def _np_conv_bias_relu(x, w, b):
    h = x.shape[2]
    xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((w.shape[0], h, h), np.float32)
    for ry in range(3):
        for rx in range(3):
            out += np.einsum("oi,ihw->ohw", w[:, :, ry, rx], xp[:, ry:ry + h, rx:rx + h])
    return np.maximum(out + b[:, None, None], 0)[None]


def test_channel_vectorized_conv_matches_numpy():
    C, H = 16, 7
    s, args = channel_vectorized_conv(C, H, vc=8)
    mod = build(s, args, target="llvm", name="cv")
    rng = np.random.default_rng(0)
    x = as_aligned(rng.standard_normal((1, C, H, H)).astype("float32"))
    w = rng.standard_normal((C, C, 3, 3)).astype("float32")
    b = as_aligned(rng.standard_normal(C).astype("float32"))
    wp = as_aligned(w.reshape(C // 8, 8, C, 3, 3).transpose(0, 2, 3, 4, 1))
    out = as_aligned(np.zeros((1, C, H, H), np.float32))
    mod(x, wp, b, out)
    np.testing.assert_allclose(out, _np_conv_bias_relu(x, w, b), rtol=1e-4, atol=1e-4)


def test_channel_vectorized_conv_accumulator_is_contiguous():
    s, args = channel_vectorized_conv(16, 7, vc=8)
    text = str(lower(s, args, name="cv"))
    # the accumulator's channel vectors are unit-stride Ramps, 8 lanes apart per column
    assert "conv[T.Ramp(8, 1, 8)] = conv[T.Ramp(8, 1, 8)] + " in text
    assert "conv[T.Ramp(1, 7, 8)]" not in text
