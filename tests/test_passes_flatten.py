"""Tests of the ``flatten_buffers`` pass."""
import pytest
from interp import assert_same_result, ci, fi

from compiler.errors import LoweringError
from compiler.passes import flatten_buffers
from compiler.tir import expr as E
from compiler.tir import stmt as S
from compiler.tir.functor import post_order_visit


def _accesses(func):
    out = []

    def fn(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)):
            out.append(n)
    post_order_visit(func.body, fn)
    return out


def _copy_through_local(strides=()):
    A = S.decl_buffer((4, 6), "float32", "A")
    B = S.decl_buffer((4, 6), "float32", "B")
    L = S.decl_buffer((4, 6), "float32", "L", strides=strides)
    i, j, i2, j2 = E.Var("i"), E.Var("j"), E.Var("i"), E.Var("j")
    fill = S.For(i, ci(0), ci(4), "serial", S.For(j, ci(0), ci(6), "serial", S.BufferStore(
        L, E.BufferLoad(A, (i, j)) * fi(2.0), (i, j))))
    back = S.For(i2, ci(0), ci(4), "serial", S.For(j2, ci(0), ci(6), "serial", S.BufferStore(
        B, E.BufferLoad(L, (i2, j2)), (i2, j2))))
    return S.PrimFunc("f", (A, B), S.Allocate(L, S.seq(fill, back))), L


def test_row_major_golden():
    f, _ = _copy_through_local()
    g = flatten_buffers(f)
    assert str(g.body) == "\n".join([
        'L = T.allocate([24], "float32", "global")',
        "for i in range(4):",
        "    for j in range(6):",
        "        L[i * 6 + j] = A[i * 6 + j] * T.float32(2.0)",
        "for i_1 in range(4):",
        "    for j_1 in range(6):",
        "        B[i_1 * 6 + j_1] = L[i_1 * 6 + j_1]"])
    assert_same_result(f, g)


def test_params_keep_identity_and_shape_allocations_are_replaced_consistently():
    f, L = _copy_through_local()
    g = flatten_buffers(f)
    assert g.params is f.params and [len(b.shape) for b in g.params] == [2, 2]
    alloc = g.body
    assert isinstance(alloc, S.Allocate) and alloc.buffer is not L
    assert alloc.buffer.data is L.data and [s.value for s in alloc.buffer.shape] == [24]
    acc = _accesses(g)
    assert all(len(a.indices) == 1 for a in acc)
    assert {a.buffer for a in acc} == {g.params[0], g.params[1], alloc.buffer}


def test_storage_align_strides():
    f, _ = _copy_through_local(strides=(ci(8), ci(1)))
    g = flatten_buffers(f)
    assert g.body.buffer.shape[0].value == 32           # strides[0] * shape[0]
    assert "L[i * 8 + j] = A[i * 6 + j]" in str(g.body)
    assert_same_result(f, g)


def test_idempotent_and_scalar_buffers():
    f, _ = _copy_through_local()
    g = flatten_buffers(f)
    assert flatten_buffers(g) is g
    s0 = S.decl_buffer((), "float32", "s")
    A = S.decl_buffer((3,), "float32", "A")
    h = S.PrimFunc("h", (A,), S.Allocate(s0, S.seq(
        S.BufferStore(s0, fi(1.5), ()), S.BufferStore(A, E.BufferLoad(s0, ()), (ci(2),)))))
    out = flatten_buffers(h)
    assert str(out.body).splitlines()[1:] == ["s[0] = T.float32(1.5)", "A[2] = s[0]"]
    assert_same_result(h, out)


def test_wrong_number_of_indices_is_an_error():
    A = S.decl_buffer((4, 6, 2), "float32", "A")
    f = S.PrimFunc("f", (A,), S.BufferStore(A, fi(1.0), (ci(0), ci(1))))
    with pytest.raises(LoweringError, match=r"buffer A has 2 indices; expected 3"):
        flatten_buffers(f)
