"""Tests of the ``remove_noop`` pass."""
from interp import assert_same_result, ci, fi

from compiler.passes import remove_noop
from compiler.tir import expr as E
from compiler.tir import stmt as S
from compiler.tir.analysis import vars_read

A = S.decl_buffer((64,), "float32", "A")
L = S.decl_buffer((4,), "float32", "L")


def _f(body):
    return S.PrimFunc("f", (A,), body)


def test_extent_one_loops_are_substituted_and_simplified():
    i, j = E.Var("i"), E.Var("j")
    f = _f(S.For(i, ci(3), ci(1), "serial", S.For(j, ci(0), ci(8), "serial", S.BufferStore(
        A, fi(1.0), (i * 8 + j,)))))
    g = remove_noop(f)
    assert str(g.body) == "\n".join([
        "for j in range(8):",
        "    A[j + 24] = T.float32(1.0)"])
    assert_same_result(f, g)


def test_noops_disappear():
    i, t = E.Var("i"), E.Var("t")
    nothing = S.Evaluate(ci(0))
    f = _f(S.SeqStmt((
        S.Evaluate(fi(2.0)),
        S.For(i, ci(0), ci(8), "serial", S.SeqStmt((nothing, S.SeqStmt(())))),
        S.IfThenElse(E.LT(i, ci(2)), nothing, nothing),
        S.LetStmt(t, ci(4), nothing),
        S.Allocate(L, nothing),
        S.AttrStmt(None, "pragma_x", ci(1), nothing),
        S.For(i, ci(0), ci(0), "serial", S.BufferStore(A, fi(1.0), (i,))),
        S.IfThenElse(ci(0, "bool"), S.BufferStore(A, fi(1.0), (ci(0),)),
                     S.BufferStore(A, fi(2.0), (ci(1),))),
        S.IfThenElse(ci(1, "bool"), S.BufferStore(A, fi(3.0), (ci(2),))),
    )))
    g = remove_noop(f)
    assert str(g.body) == "A[1] = T.float32(2.0)\nA[2] = T.float32(3.0)"
    assert_same_result(f, g)


def test_empty_then_branch_inverts_the_condition():
    i = E.Var("i")
    f = _f(S.For(i, ci(0), ci(8), "serial", S.IfThenElse(
        E.LT(i, ci(2)), S.Evaluate(ci(0)), S.BufferStore(A, fi(1.0), (i,)))))
    g = remove_noop(f)
    assert str(g.body) == "\n".join([
        "for i in range(8):",
        "    if i >= 2:",
        "        A[i] = T.float32(1.0)"])
    assert_same_result(f, g)


def test_all_noop_function_keeps_a_body_and_identity_when_clean():
    g = remove_noop(_f(S.SeqStmt((S.Evaluate(ci(0)), S.Evaluate(ci(1))))))
    assert str(g.body) == "T.evaluate(0)"
    i = E.Var("i")
    f = _f(S.For(i, ci(0), ci(8), "serial", S.BufferStore(A, fi(1.0), (i,))))
    assert remove_noop(f) is f


def test_nested_extent_one_loops_with_unread_and_read_variables():
    """A nest of extent-1 loops: an unread variable just drops its loop, a read one is
    replaced by its loop's min, including where an inner loop's min reads an outer
    variable (the substitution brings that read into the body)."""
    a, b, c, k = E.Var("a"), E.Var("b"), E.Var("c"), E.Var("k")
    store = S.BufferStore(A, fi(1.0), (c * 4 + k,))
    f = _f(S.For(a, ci(2), ci(1), "serial",
                 S.For(b, ci(0), ci(1), "serial",
                       S.For(c, a * 2, ci(1), "serial",
                             S.For(k, ci(0), ci(4), "serial", store)))))
    g = remove_noop(f)
    assert str(g.body) == "\n".join([
        "for k in range(4):",
        "    A[k + 16] = T.float32(1.0)"])
    assert_same_result(f, g)


def test_vars_read_counts_reads_not_loop_definitions():
    i, j, n = E.Var("i"), E.Var("j"), E.Var("n")
    body = S.For(i, ci(0), n, "serial",
                 S.For(j, ci(0), ci(4), "serial", S.BufferStore(A, fi(1.0), (i,))))
    assert vars_read(body) == {i, n}
