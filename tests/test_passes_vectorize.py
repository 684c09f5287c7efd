"""Tests of the ``vectorize_loops`` pass."""
import numpy as np
import pytest
from interp import assert_same_result, ci, fi

from compiler import build, te
from compiler.passes import flatten_buffers, vectorize_loops
from compiler.tir import dtype as dt
from compiler.tir import expr as E
from compiler.tir import stmt as S
from compiler.tir.functor import post_order_visit


def _f(body, *bufs):
    return S.PrimFunc("f", bufs, body)


def _loops(func):
    out = []
    post_order_visit(func.body, lambda n: out.append(n) if isinstance(n, S.For) else None)
    return out


def _check(f):
    g = vectorize_loops(f)
    assert_same_result(f, g)
    return g


A = S.decl_buffer((4, 16), "float32", "A")
B = S.decl_buffer((16,), "float32", "B")
C = S.decl_buffer((4, 16), "float32", "C")
I = S.decl_buffer((16,), "int32", "I")


def _outer_inner(make, n=16, kind="vectorized"):
    i, j = E.Var("i"), E.Var("j")
    body = S.For(i, ci(0), ci(4), "serial", S.For(j, ci(0), ci(n), kind, make(i, j)))
    return flatten_buffers(_f(body, A, B, C, I))


def test_golden_ramp_and_broadcast():
    f = _outer_inner(lambda i, j: S.BufferStore(
        C, E.BufferLoad(A, (i, j)) + E.BufferLoad(B, (i,)) * fi(2.0), (i, j)))
    g = _check(f)
    assert str(g.body) == "\n".join([
        "for i in range(4):",
        "    C[T.Ramp(i * 16, 1, 16)] = A[T.Ramp(i * 16, 1, 16)] + "
        "T.Broadcast(B[i] * T.float32(2.0), 16)"])


def test_strided_and_gather_loads_and_casts():
    f = _outer_inner(lambda i, j: S.BufferStore(
        C, E.BufferLoad(B, (E.FloorDiv(j, ci(2)),)) + E.Cast("float32", j * 3 + i)
        + E.BufferLoad(A, (E.FloorMod(j * 5, ci(4)), i)), (i, j)))
    g = _check(f)
    text = str(g.body)
    assert "B[T.Ramp(0, 1, 16) // T.Broadcast(2, 16)]" in text            # gather
    assert 'T.Cast("float32x16", T.Ramp(i, 3, 16))' in text
    assert not any(isinstance(lp, S.For) and lp.kind == "vectorized" for lp in _loops(g))


def test_select_if_then_else_and_comparisons():
    def make(i, j):
        cond = E.LT(j, i * 4)
        v = E.Select(cond, E.BufferLoad(B, (j,)), fi(0.0))
        w = E.Call("float32", "if_then_else", (E.LT(i, ci(2)), E.BufferLoad(B, (i,)), v))
        x = E.Call("float32", "if_then_else", (cond, E.BufferLoad(B, (j,)), fi(1.0)))
        return S.BufferStore(C, w + x, (i, j))
    g = _check(_outer_inner(make))
    calls = []
    post_order_visit(g.body, lambda n: calls.append(n) if isinstance(n, E.Call) else None)
    scalar_cond = [c for c in calls if dt.lanes(c.args[0].dtype) == 1]
    vector_cond = [c for c in calls if dt.lanes(c.args[0].dtype) == 16]
    assert len(scalar_cond) == 1 and scalar_cond[0].dtype == "float32x16"
    assert len(vector_cond) == 1 and vector_cond[0].dtype == "float32x16"


def test_let_binds_a_vector_var():
    t = E.Var("t")
    g = _check(_outer_inner(lambda i, j: S.LetStmt(
        t, j * 2, S.BufferStore(C, E.Cast("float32", t) + E.BufferLoad(B, (j,)), (i, j)))))
    text = str(g.body)
    assert "t: T.int32x16 = T.Ramp(0, 2, 16)" in text


def test_nested_serial_loop_is_kept_and_vectorized():
    k = E.Var("k")
    g = _check(_outer_inner(lambda i, j: S.For(k, ci(0), ci(3), "serial", S.BufferStore(
        C, E.BufferLoad(C, (i, j)) + E.BufferLoad(A, (k, j)), (i, j)))))
    assert str(g.body) == "\n".join([
        "for i in range(4):",
        "    for k in range(3):",
        "        C[T.Ramp(i * 16, 1, 16)] = C[T.Ramp(i * 16, 1, 16)] + A[T.Ramp(k * 16, 1, 16)]"])


def test_fallbacks_to_serial():
    k = E.Var("k")
    L = S.decl_buffer((16,), "float32", "L")
    cases = [
        # reduction over the vector lanes: the store index does not depend on j
        lambda i, j: S.BufferStore(B, E.BufferLoad(B, (i,)) + E.BufferLoad(A, (i, j)), (i,)),
        # branch on the lane
        lambda i, j: S.IfThenElse(E.LT(j, ci(3)), S.BufferStore(C, fi(1.0), (i, j))),
        # scatter with possible collisions
        lambda i, j: S.BufferStore(B, fi(1.0), (E.FloorDiv(j, ci(2)),)),
        # allocation inside
        lambda i, j: S.Allocate(L, S.BufferStore(L, fi(1.0), (j,))),
        # inner loop bound depends on the lane
        lambda i, j: S.For(k, ci(0), j, "serial", S.BufferStore(C, fi(1.0), (i, k))),
    ]
    for make in cases:
        f = _outer_inner(make)
        g = _check(f)
        kinds = [lp.kind for lp in _loops(g)]
        assert kinds.count("serial") >= 2 and "vectorized" not in kinds, str(g.body)
        assert not any(dt.lanes(n.dtype) > 1 for n in _all_exprs(g)), str(g.body)


def _all_exprs(func):
    out = []
    post_order_visit(func.body, lambda n: out.append(n) if isinstance(n, E.PrimExpr) else None)
    return out


def test_long_loops_are_split_into_chunks():
    A2 = S.decl_buffer((256,), "float32", "A2")
    j = E.Var("j")
    f = _f(S.For(j, ci(0), ci(192), "vectorized", S.BufferStore(
        A2, E.Cast("float32", j), (j + 32,))), A2)
    g = _check(f)
    assert str(g.body) == "\n".join([
        "for j_outer in range(3):",
        '    A2[T.Ramp(j_outer * 64 + 32, 1, 64)] = T.Cast("float32x64", '
        "T.Ramp(j_outer * 64, 1, 64))"])
    # 115 = 14 x 8 + 3: a serial loop of 8-lane vectors (112 lanes > 64), then a
    # 3-lane tail vector
    h = _check(_f(S.For(j, ci(0), ci(115), "vectorized", S.BufferStore(
        A2, E.Cast("float32", j), (j + 32,))), A2))
    assert str(h.body) == "\n".join([
        "for j_outer in range(14):",
        '    A2[T.Ramp(j_outer * 8 + 32, 1, 8)] = T.Cast("float32x8", T.Ramp(j_outer * 8, 1, 8))',
        'A2[T.Ramp(144, 1, 3)] = T.Cast("float32x3", T.Ramp(112, 1, 3))'])


def test_widths_that_are_not_powers_of_two_become_power_of_two_chunks_and_a_tail():
    A2 = S.decl_buffer((256,), "float32", "A2")
    j = E.Var("j")
    g = _check(_f(S.For(j, ci(0), ci(24), "vectorized", S.BufferStore(
        A2, E.BufferLoad(A2, (j + 100,)) * fi(2.0), (j,))), A2))
    assert str(g.body) == "\n".join([
        "for j_outer in T.unroll(3):",
        "    A2[T.Ramp(j_outer * 8, 1, 8)] = A2[T.Ramp(j_outer * 8 + 100, 1, 8)] * "
        "T.Broadcast(T.float32(2.0), 8)"])
    # 58 = 7 x 8 + 2 (the padded row of a 56-wide conv): an unrolled loop of 8-lane
    # vectors, then one 2-lane vector
    g = _check(_f(S.For(j, ci(0), ci(58), "vectorized", S.BufferStore(
        A2, E.BufferLoad(A2, (j + 100,)) * fi(2.0), (j,))), A2))
    assert str(g.body) == "\n".join([
        "for j_outer in T.unroll(7):",
        "    A2[T.Ramp(j_outer * 8, 1, 8)] = A2[T.Ramp(j_outer * 8 + 100, 1, 8)] * "
        "T.Broadcast(T.float32(2.0), 8)",
        "A2[T.Ramp(56, 1, 2)] = A2[T.Ramp(156, 1, 2)] * T.Broadcast(T.float32(2.0), 2)"])
    # a tail of one lane is a scalar statement
    g = _check(_f(S.For(j, ci(0), ci(9), "vectorized", S.BufferStore(
        A2, E.BufferLoad(A2, (j + 100,)) * fi(2.0), (j,))), A2))
    assert str(g.body) == "\n".join([
        "A2[T.Ramp(0, 1, 8)] = A2[T.Ramp(100, 1, 8)] * T.Broadcast(T.float32(2.0), 8)",
        "A2[8] = A2[108] * T.float32(2.0)"])
    widths = {}
    for n in (6, 7, 8, 12, 20, 21, 40, 48, 56, 67, 96, 226):
        h = _check(_f(S.For(j, ci(0), ci(n), "vectorized", S.BufferStore(
            A2, fi(1.0), (j,))), A2))
        loops = _loops(h)
        widths[n] = (len(loops) and (loops[0].kind, loops[0].extent.value),
                     {dt.lanes(x.dtype) for x in _all_exprs(h)} - {1})
    assert widths == {
        6: (0, {6}), 7: (0, {7}), 8: (0, {8}),                  # one register: kept whole
        12: (0, {8, 4}), 20: (("unrolled", 2), {8, 4}),         # vectors of 8 and a tail
        21: (("unrolled", 2), {8, 5}), 67: (("unrolled", 8), {8, 3}),
        40: (("unrolled", 5), {8}), 48: (("unrolled", 3), {16}), 56: (("unrolled", 7), {8}),
        96: (("serial", 3), {32}),                              # > 64: a serial chunk loop
        226: (("serial", 28), {8, 2})}


def test_non_zero_min_and_symbolic_stride():
    n = E.Var("n")
    A2 = S.decl_buffer((256,), "float32", "A2")
    j = E.Var("j")
    g = vectorize_loops(_f(S.For(j, ci(4), ci(8), "vectorized", S.BufferStore(
        A2, E.BufferLoad(A2, (j * n,)), (j,))), A2))
    assert str(g.body) == "A2[T.Ramp(4, 1, 8)] = A2[T.Ramp(n * 4, n, 8)]"


def test_nothing_to_do_keeps_identity():
    f = _outer_inner(lambda i, j: S.BufferStore(C, fi(1.0), (i, j)), kind="serial")
    assert vectorize_loops(f) is f


@pytest.mark.parametrize("nr", [9, 12, 20, 24, 28, 40, 48, 58])
def test_register_tiles_of_any_width_compute_the_product(nr):
    """A cache_write register tile of 4 x nr accumulators, vectorized over nr (as the
    search writes them): compiled through the chunked vectors, checked against numpy."""
    m, k, n = 8, 64, 2 * nr
    a_t, b_t = te.placeholder((m, k), name="A"), te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="r")
    c_t = te.compute((m, n), lambda i, j: te.sum(a_t[i, r] * b_t[r, j], axis=r), name="C")
    s = te.create_schedule(c_t.op)
    acc = s.cache_write(c_t, "local")
    io, ii = s[c_t].split(c_t.op.axis[0], factor=4)
    jo, ji = s[c_t].split(c_t.op.axis[1], factor=nr)
    s[c_t].reorder(io, jo, ii, ji)
    s[c_t].vectorize(ji)
    s[acc].compute_at(s[c_t], jo)
    ai, aj = s[acc].op.axis
    s[acc].reorder(s[acc].op.reduce_axis[0], ai, aj)
    s[acc].unroll(ai)
    s[acc].vectorize(aj)
    rng = np.random.default_rng(nr)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    build(s, [a_t, b_t, c_t])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
