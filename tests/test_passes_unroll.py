"""Tests of the ``unroll_loops`` pass."""
from interp import assert_same_result, ci, fi

from compiler.passes import unroll_loops
from compiler.tir import expr as E
from compiler.tir import stmt as S
from compiler.tir.functor import post_order_visit

A = S.decl_buffer((64,), "float32", "A")


def _f(body):
    return S.PrimFunc("f", (A,), body)


def _loops(stmt):
    out = []
    post_order_visit(stmt, lambda n: out.append(n) if isinstance(n, S.For) else None)
    return out


def _stores(stmt):
    out = []
    post_order_visit(stmt, lambda n: out.append(n) if isinstance(n, S.BufferStore) else None)
    return out


def _nest(extents, kinds=None, annotations=(), leaf=None):
    """Loops i0, i1, ... (outermost first) around A[sum(i_k * stride_k)] += 1."""
    vs = [E.Var(f"i{k}") for k in range(len(extents))]
    idx, stride = ci(0), 1
    for v, n in reversed(list(zip(vs, extents))):
        idx, stride = idx + v * stride, stride * n
    body = leaf or S.BufferStore(A, E.BufferLoad(A, (idx,)) + fi(1.0), (idx,))
    kinds = kinds or ["serial"] * len(extents)
    for k in reversed(range(len(extents))):
        body = S.For(vs[k], ci(0), ci(extents[k]), kinds[k], body,
                     annotations if k == 0 else ())
    return _f(body)


def test_explicit_unroll_golden():
    f = _nest([2, 3], ["serial", "unrolled"])
    g = unroll_loops(f)
    assert str(g.body) == "\n".join([
        "for i0 in range(2):",
        "    A[i0 * 3] = A[i0 * 3] + T.float32(1.0)",
        "    A[i0 * 3 + 1] = A[i0 * 3 + 1] + T.float32(1.0)",
        "    A[i0 * 3 + 2] = A[i0 * 3 + 2] + T.float32(1.0)"])
    assert_same_result(f, g)


def test_unroll_non_zero_min_and_copies_are_simplified():
    i, j = E.Var("i"), E.Var("j")
    body = S.For(i, ci(0), ci(4), "serial", S.For(j, ci(2), ci(2), "unrolled", S.IfThenElse(
        E.LT(j * 4 + i, ci(14)), S.BufferStore(A, fi(1.0), (E.FloorDiv(j * 4 + i, ci(4)),)))))
    f = _f(body)
    g = unroll_loops(f)
    assert str(g.body) == "\n".join([
        "for i in range(4):",
        "    A[2] = T.float32(1.0)",
        "    if i < 2:",
        "        A[3] = T.float32(1.0)"])
    assert_same_result(f, g)


def test_auto_unroll_max_step_unrolls_small_inner_loops_only():
    # steps: i2 -> 4, i1 -> 12, i0 -> 24; with max_step 16 only i2 and i1 unroll
    f = _nest([2, 3, 4], annotations=(("pragma_auto_unroll_max_step", 16),))
    g = unroll_loops(f)
    loops = _loops(g.body)
    assert [lp.loop_var.name for lp in loops] == ["i0"] and len(_stores(g.body)) == 12
    assert_same_result(f, g)
    # with max_step 24 the annotated loop itself is covered too
    g2 = unroll_loops(_nest([2, 3, 4], annotations=(("pragma_auto_unroll_max_step", 24),)))
    assert _loops(g2.body) == [] and len(_stores(g2.body)) == 24


def test_auto_unroll_is_scoped_to_the_annotated_loop():
    inner = _nest([2, 3], annotations=(("pragma_auto_unroll_max_step", 64),)).body
    other = _nest([2, 3]).body
    g = unroll_loops(_f(S.seq(inner, other)))
    assert [lp.loop_var.name for lp in _loops(g.body)] == ["i1", "i0"]   # only the 2nd nest
    assert len(_stores(g.body)) == 7


def test_loop_that_stays_blocks_unrolling_of_outer_loops():
    # i1 (extent 40) exceeds max_step, so i0 must not unroll even though 2 <= 64
    f = _nest([2, 40, 2], annotations=(("pragma_auto_unroll_max_step", 64),))
    g = unroll_loops(f)
    assert [lp.loop_var.name for lp in _loops(g.body)] == ["i1", "i0"]
    assert len(_stores(g.body)) == 2


def test_sequence_steps_add_up():
    i, j = E.Var("i"), E.Var("j")
    two = S.seq(S.BufferStore(A, fi(1.0), (i * 2 + j,)), S.BufferStore(A, fi(2.0), (j,)))
    body = S.For(i, ci(0), ci(4), "serial", S.For(j, ci(0), ci(2), "serial", two),
                 (("pragma_auto_unroll_max_step", 15),))
    g = unroll_loops(_f(body))
    # j: 2 * 2 = 4 steps -> unrolled; i: 4 * 4 = 16 > 15 -> kept
    assert [lp.loop_var.name for lp in _loops(g.body)] == ["i"]
    assert len(_stores(g.body)) == 4


def test_unroll_explicit_false_marks_loops_for_llvm():
    ann = (("pragma_auto_unroll_max_step", 16), ("pragma_unroll_explicit", False))
    f = _nest([2, 3, 4], ["serial", "serial", "unrolled"], annotations=ann)
    g = unroll_loops(f)
    loops = {lp.loop_var.name: lp for lp in _loops(g.body)}
    assert set(loops) == {"i0", "i1", "i2"}
    for name in ("i1", "i2"):
        assert loops[name].kind == "serial"
        assert ("llvm.loop.unroll.full", True) in loops[name].annotations
    assert ("llvm.loop.unroll.full", True) not in loops["i0"].annotations
    assert unroll_loops(g) is g                                    # idempotent


def test_attr_stmt_pragma_and_non_constant_extent():
    n = E.Var("n")
    i = E.Var("i")
    body = S.AttrStmt(None, "pragma_auto_unroll_max_step", ci(8), S.For(
        i, ci(0), ci(4), "serial", S.BufferStore(A, fi(1.0), (i,))))
    g = unroll_loops(_f(body))
    assert _loops(g.body) == [] and len(_stores(g.body)) == 4
    h = unroll_loops(_f(S.For(i, ci(0), n, "unrolled", S.BufferStore(A, fi(1.0), (i,)))))
    assert [lp.kind for lp in _loops(h.body)] == ["serial"]


def test_no_unrolling_keeps_identity():
    f = _nest([2, 3])
    assert unroll_loops(f) is f
