"""Tests of the ``simplify`` pass."""
from interp import assert_same_result, ci, fi

from compiler.passes import simplify
from compiler.tir import expr as E
from compiler.tir import stmt as S


def _func(body, *bufs):
    return S.PrimFunc("f", bufs, body)


def test_predicates_and_split_indices_fold_with_loop_ranges():
    A = S.decl_buffer((64,), "float32", "A")
    io, ii = E.Var("io"), E.Var("ii")
    idx = E.FloorDiv(io * 16 + ii, ci(16)) * 16 + E.FloorMod(io * 16 + ii, ci(16))
    body = S.For(io, ci(0), ci(4), "serial", S.For(ii, ci(0), ci(16), "serial", S.IfThenElse(
        E.LT(io * 16 + ii, ci(64)), S.BufferStore(A, fi(1.0), (idx,)))))
    f = _func(body, A)
    g = simplify(f)
    assert str(g.body) == "\n".join([
        "for io in range(4):",
        "    for ii in range(16):",
        "        A[io * 16 + ii] = T.float32(1.0)"])
    assert_same_result(f, g)


def test_undecidable_predicate_stays_and_else_branch_is_taken():
    A = S.decl_buffer((60,), "float32", "A")
    io, ii = E.Var("io"), E.Var("ii")
    keep = S.IfThenElse(E.LT(io * 16 + ii, ci(60)), S.BufferStore(A, fi(1.0), (io * 16 + ii,)))
    dead = S.IfThenElse(E.GE(ii, ci(16)), S.BufferStore(A, fi(2.0), (ii,)),
                        S.BufferStore(A, fi(3.0), (ii,)))
    body = S.For(io, ci(0), ci(4), "serial", S.For(ii, ci(0), ci(16), "serial",
                                                    S.seq(keep, dead)))
    g = simplify(_func(body, A))
    assert str(g.body) == "\n".join([
        "for io in range(4):",
        "    for ii in range(16):",
        "        if io * 16 + ii < 60:",
        "            A[io * 16 + ii] = T.float32(1.0)",
        "        A[ii] = T.float32(3.0)"])


def test_zero_extent_loops_and_dead_code_disappear():
    A = S.decl_buffer((8,), "float32", "A")
    i, j = E.Var("i"), E.Var("j")
    body = S.seq(
        S.For(i, ci(0), ci(0), "serial", S.BufferStore(A, fi(1.0), (i,))),
        S.For(j, ci(0), ci(4) - ci(4), "serial", S.BufferStore(A, fi(1.0), (j,))),
        S.IfThenElse(E.LT(ci(3), ci(2)), S.BufferStore(A, fi(1.0), (ci(0),))),
        S.BufferStore(A, fi(2.0), (ci(1) + ci(2),)))
    g = simplify(_func(body, A))
    assert str(g.body) == "A[3] = T.float32(2.0)"


def test_extent_one_loop_var_is_pinned():
    A = S.decl_buffer((64,), "float32", "A")
    i, j = E.Var("i"), E.Var("j")
    body = S.For(i, ci(5), ci(1), "serial", S.For(j, ci(0), ci(8), "serial",
                                                   S.BufferStore(A, fi(1.0), (i * 8 + j,))))
    g = simplify(_func(body, A))
    assert "A[j + 40]" in str(g.body)


def test_let_ranges_are_used():
    A = S.decl_buffer((8,), "int32", "A")
    i, t = E.Var("i"), E.Var("t")
    body = S.For(i, ci(0), ci(8), "serial", S.LetStmt(
        t, E.FloorMod(i, ci(4)), S.BufferStore(A, E.Select(E.LT(t, ci(4)), t, ci(-1)), (i,))))
    f = _func(body, A)
    g = simplify(f)
    assert "A[i] = t" in str(g.body)
    assert_same_result(f, g)


def test_unchanged_function_is_returned_as_is():
    A = S.decl_buffer((16, 16), "float32", "A")
    i, j = E.Var("i"), E.Var("j")
    body = S.For(i, ci(0), ci(16), "serial", S.For(j, ci(0), ci(16), "serial",
                                                    S.BufferStore(A, fi(1.0), (i, j))))
    f = _func(body, A)
    assert simplify(f) is f


def test_same_var_in_sibling_loops_with_different_ranges():
    # the memo must not leak a range from the first loop into the second
    A = S.decl_buffer((32,), "float32", "A")
    i = E.Var("i")
    first = S.For(i, ci(0), ci(4), "serial",
                  S.IfThenElse(E.LT(i, ci(8)), S.BufferStore(A, fi(1.0), (i,))))
    second = S.For(i, ci(0), ci(16), "serial",
                   S.IfThenElse(E.LT(i, ci(8)), S.BufferStore(A, fi(2.0), (i,))))
    f = _func(S.seq(first, second), A)
    g = simplify(f)
    text = str(g.body)
    assert text.count("if i < 8") == 1
    assert_same_result(f, g)
