"""A reference interpreter for TIR, used to check that passes preserve meaning.

Every buffer is modelled as a flat numpy array; a multi-dimensional access computes its
offset row-major (or with ``Buffer.strides``), so a function before and after
``flatten_buffers`` runs on the same memory.  Vector expressions are numpy arrays; a
vectorized/unrolled loop runs like a serial one.  Kept deliberately naive and separate
from the compiler's own arithmetic so it can catch the simplifier's mistakes.
"""

import numpy as np
import pytest
from interp import assert_same_result, run_func

from compiler.tir import expr as E
from compiler.tir import stmt as S


# ---------------------------------------------------------------------- self-tests
def test_interp_runs_a_simple_loop():
    A = S.decl_buffer((4, 3), "float32", "A")
    i, j = E.Var("i"), E.Var("j")
    body = S.For(i, E.IntImm("int32", 0), E.IntImm("int32", 4), "serial",
                 S.For(j, E.IntImm("int32", 0), E.IntImm("int32", 3), "serial",
                       S.BufferStore(A, E.Cast("float32", i * 10 + j), (i, j))))
    f = S.PrimFunc("f", (A,), body)
    (a,) = run_func(f, [np.zeros((4, 3), np.float32)])
    np.testing.assert_array_equal(a, np.arange(4)[:, None] * 10 + np.arange(3)[None, :])


def test_interp_catches_a_difference():
    A = S.decl_buffer((4,), "float32", "A")
    i = E.Var("i")
    f = S.PrimFunc("f", (A,), S.For(i, E.IntImm("int32", 0), E.IntImm("int32", 4), "serial",
                                    S.BufferStore(A, E.FloatImm("float32", 1.0), (i,))))
    g = S.PrimFunc("f", (A,), S.For(i, E.IntImm("int32", 0), E.IntImm("int32", 3), "serial",
                                    S.BufferStore(A, E.FloatImm("float32", 1.0), (i,))))
    with pytest.raises(AssertionError):
        assert_same_result(f, g)


# ---------------------------------------------------------------------- shared builders




