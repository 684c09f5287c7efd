"""Invalid schedules raise ScheduleError naming the stage, the axis and the reason."""
import pytest

from compiler import te, tir
from compiler.errors import ScheduleError, TEError


def _mm(n=32):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    R = te.compute((n, n), lambda i, j: te.max(C[i, j], tir.const(0.0, "float32")), name="R")
    return A, B, C, R


def test_reorder_duplicate_axis():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match=r"reorder on stage C: axis i appears more than once"):
        s[C].reorder(i, j, i)


def test_fuse_non_adjacent():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    with pytest.raises(ScheduleError, match=r"fuse on stage C: axes i and k are not adjacent"):
        s[C].fuse(i, k)


def test_fuse_wrong_order_is_not_adjacent():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match="not adjacent"):
        s[C].fuse(j, i)


def test_compute_at_itself():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage C: cannot attach a stage to itself"):
        s[C].compute_at(s[C], C.op.axis[0])


def test_compute_at_cycle():
    _, _, C, R = _mm()
    s = te.create_schedule(R.op)
    with pytest.raises(ScheduleError, match="target stage C is a producer of R"):
        s[R].compute_at(s[C], C.op.axis[0])


def test_compute_at_attach_cycle():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ScheduleError, match="cycle"):
        s[C].compute_at(s[B], B.op.axis[0])


def test_compute_at_axis_of_other_stage():
    _, _, C, R = _mm()
    s = te.create_schedule(R.op)
    with pytest.raises(ScheduleError, match="axis i is not an axis of this stage"):
        s[C].compute_at(s[R], C.op.axis[0])


def test_inline_output():
    _, _, _, R = _mm()
    s = te.create_schedule(R.op)
    with pytest.raises(ScheduleError,
                       match="compute_inline on stage R: an output cannot be inlined"):
        s[R].compute_inline()


def test_inline_reduction():
    _, _, C, R = _mm()
    s = te.create_schedule(R.op)
    with pytest.raises(ScheduleError, match="stage C: a reduction cannot be inlined"):
        s[C].compute_inline()


def test_vectorize_reduction_axis():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="vectorize on stage C: axis k is a reduction"):
        s[C].vectorize(C.op.reduce_axis[0])


def test_parallel_reduction_axis():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="parallel on stage C: axis k is a reduction"):
        s[C].parallel(C.op.reduce_axis[0])


def test_split_already_split_axis():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    s[C].split(i, factor=4)
    with pytest.raises(ScheduleError, match="axis i is an axis already split or fused"):
        s[C].split(i, factor=2)


@pytest.mark.parametrize("kw", [dict(factor=0), dict(nparts=-1), dict(factor=2, nparts=2), {}])
def test_split_bad_factor(kw):
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="split on stage C, axis i"):
        s[C].split(C.op.axis[0], **kw)


def test_unknown_pragma():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="unknown key 'bogus'"):
        s[C].pragma(C.op.axis[0], "bogus", 1)


def test_schedule_placeholder_stage():
    A, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage A is a placeholder"):
        s[A].split(C.op.axis[0], factor=2)


def test_cache_read_non_reader():
    A, B, C, R = _mm()
    s = te.create_schedule(R.op)
    with pytest.raises(ScheduleError, match="cache_read of A: stage R does not read it"):
        s.cache_read(A, "local", [R])


def test_rfactor_on_data_axis():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="rfactor on stage C: axis i is not a reduction axis"):
        s.rfactor(C, C.op.axis[0])


def test_unknown_op_in_schedule():
    _, _, C, _ = _mm()
    s = te.create_schedule(C.op)
    other = te.placeholder((2,), name="Z")
    with pytest.raises(ScheduleError, match="'Z' is not an operation of this schedule"):
        s[other]


def test_te_errors():
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(TEError, match=r"tensor A has 2 dimensions \(4, 4\), indexed with 1"):
        A[1]
    with pytest.raises(TEError, match="lambda takes 1 arguments"):
        te.compute((4, 4), lambda i: A[i, i])
    with pytest.raises(TEError, match="expected an int or a scalar integer expression"):
        te.placeholder((te.var("x", "float32"), 4))
    with pytest.raises(TEError, match="unknown dtype 'float33'"):
        te.placeholder((4,), dtype="float33", name="Q")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(TEError, match="reduction must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2.0)
    with pytest.raises(TEError, match="cannot use symbolic expression"):
        te.compute((4,), lambda i: A[i, 0] if i > 2 else A[0, i])
