"""Tests of the default pass pipeline against the contract in docs/CONTRACTS.md §2."""
import numpy as np
import pytest
from interp import assert_same_result, ci, fi, random_args, run_func, tiled_matmul

from compiler.errors import LoweringError
from compiler.passes import (
    default_pipeline,
    flatten_buffers,
    permute_local_layout,
    remove_noop,
    run_pipeline,
    simplify,
    unroll_loops,
    vectorize_loops,
)
from compiler.tir import dtype as dt
from compiler.tir import expr as E
from compiler.tir import stmt as S
from compiler.tir.functor import post_order_visit


def _nodes(func, cls):
    out = []
    post_order_visit(func.body, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def _check_contract(g):
    for acc in _nodes(g, (E.BufferLoad, S.BufferStore)):
        assert len(acc.indices) == 1, str(acc)
    for al in _nodes(g, S.Allocate):
        assert len(al.buffer.shape) == 1 and not al.buffer.strides
    for lp in _nodes(g, S.For):
        assert lp.kind in ("serial", "parallel"), str(lp)
        assert not (isinstance(lp.extent, E.IntImm) and lp.extent.value == 1)


def test_default_pipeline_is_a_fresh_plain_list():
    p = default_pipeline()
    assert p == [simplify, permute_local_layout, flatten_buffers, vectorize_loops,
                 unroll_loops, remove_noop]
    p.append(simplify)
    assert len(default_pipeline()) == 6


def test_tiled_matmul_golden_and_numerics():
    f = tiled_matmul(16, 16, 8, tile=8, kfactor=2)
    g = run_pipeline(f)
    _check_contract(g)
    assert str(g.body) == "\n".join([
        "for i_o in T.parallel(2):",
        "    for j_o in range(2):",
        '        C_local = T.allocate([64], "float32", "global")',
        "        for i_i in range(8):",
        "            C_local[T.Ramp(i_i * 8, 1, 8)] = T.Broadcast(T.float32(0.0), 8)",
        "        for k_o in range(4):",
        "            for i_i_1 in range(8):",
        "                C_local[T.Ramp(i_i_1 * 8, 1, 8)] = C_local[T.Ramp(i_i_1 * 8, 1, 8)]"
        " + T.Broadcast(A[i_o * 64 + i_i_1 * 8 + k_o * 2], 8)"
        " * B[T.Ramp(k_o * 32 + j_o * 8, 1, 8)]",
        "            for i_i_1 in range(8):",
        "                C_local[T.Ramp(i_i_1 * 8, 1, 8)] = C_local[T.Ramp(i_i_1 * 8, 1, 8)]"
        " + T.Broadcast(A[i_o * 64 + i_i_1 * 8 + k_o * 2 + 1], 8)"
        " * B[T.Ramp(k_o * 32 + j_o * 8 + 16, 1, 8)]",
        "        for i_i_2 in range(8):",
        "            C[T.Ramp(i_o * 128 + i_i_2 * 16 + j_o * 8, 1, 8)] = "
        "C_local[T.Ramp(i_i_2 * 8, 1, 8)]"])
    assert_same_result(f, g)
    a, b, c = run_func(g, random_args(f, seed=3))
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_tiled_matmul_with_auto_unroll():
    f = tiled_matmul(16, 16, 8, tile=8, kfactor=2,
                     annotations=(("pragma_auto_unroll_max_step", 16),))
    g = run_pipeline(f)
    _check_contract(g)
    loops = [lp.loop_var.name for lp in _nodes(g, S.For)]
    assert sorted(loops) == ["i_o", "j_o", "k_o"]          # every i_i loop unrolled
    stores = _nodes(g, S.BufferStore)
    assert len(stores) == 8 + 16 + 8
    assert all(dt.lanes(s.value.dtype) == 8 for s in stores)
    assert_same_result(f, g)
    assert run_pipeline(g) is g                               # a fixed point


def test_predicated_non_dividing_split_through_pipeline():
    # 30 = 4 * 8 - 2: the last tile is guarded; the vectorized loop under the guard keeps
    # its predicate on the outer variable only, so it still vectorizes
    A = S.decl_buffer((30, 8), "float32", "A")
    B = S.decl_buffer((30, 8), "float32", "B")
    io, ii, j = E.Var("io"), E.Var("ii"), E.Var("j")
    row = io * 8 + ii
    body = S.For(io, ci(0), ci(4), "serial", S.For(ii, ci(0), ci(8), "unrolled", S.For(
        j, ci(0), ci(8), "vectorized", S.IfThenElse(E.LT(row, ci(30)), S.BufferStore(
            B, E.BufferLoad(A, (row, j)) * fi(3.0), (row, j))))))
    f = S.PrimFunc("p", (A, B), body)
    g = run_pipeline(f)
    _check_contract(g)
    text = str(g.body)
    assert "if io < 3:" in text and "if io * 8 + 6 < 30" not in text
    assert "B[T.Ramp(io * 64 + 8, 1, 8)] = A[T.Ramp(io * 64 + 8, 1, 8)]" in text
    assert_same_result(f, g)


def test_lane_dependent_guard_falls_back_but_stays_correct():
    A = S.decl_buffer((13,), "float32", "A")
    jo, ji = E.Var("jo"), E.Var("ji")
    body = S.For(jo, ci(0), ci(2), "serial", S.For(ji, ci(0), ci(8), "vectorized", S.IfThenElse(
        E.LT(jo * 8 + ji, ci(13)), S.BufferStore(A, fi(1.0), (jo * 8 + ji,)))))
    f = S.PrimFunc("p", (A,), body)
    g = run_pipeline(f)
    _check_contract(g)
    assert [lp.kind for lp in _nodes(g, S.For)] == ["serial", "serial"]
    assert_same_result(f, g)


def test_run_pipeline_custom_passes_and_errors():
    f = tiled_matmul(16, 16, 8)
    g = run_pipeline(f, [flatten_buffers])
    assert all(len(a.indices) == 1 for a in _nodes(g, (E.BufferLoad, S.BufferStore)))
    assert _nodes(g, S.For)[0].kind == "vectorized"         # nothing else ran
    assert run_pipeline(f, []) is f

    def broken(func):
        return func.body
    with pytest.raises(LoweringError, match="pass 'broken' returned"):
        run_pipeline(f, [simplify, broken])
    with pytest.raises(LoweringError, match="expected a tir.PrimFunc"):
        run_pipeline(f.body)
