"""TVM's loop-state methods on autosched states (ComputeDAG.get_init_state()).

A schedule written with the methods, as in TVM's test_auto_scheduler_loop_state, builds
and matches numpy, round-trips through a record and prints as Python; methods that do not
apply raise InvalidStepError and leave the state as it was.
"""
import numpy as np
import pytest

import autosched as auto
import compiler
from autosched.loop_state import LoopState
from autosched.steps import serialize
from compiler import te


@auto.register_workload("loop_state_mm_relu", override=True)
def mm_relu(N, M, K):
    A = te.placeholder((N, K), name="A")
    B = te.placeholder((K, M), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((N, M), lambda i, j: te.max(C[i, j], 0.0), name="D")
    return [A, B, D]


def _task():
    return auto.SearchTask(func=mm_relu, args=(64, 48, 32), target="llvm",
                           layout_rewrite_option=auto.LayoutRewriteOption.NO_REWRITE)


def _check(task, state):
    sch, args = task.compute_dag.apply_steps_from_state(state)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 32), "float32"), rng.standard_normal((32, 48), "float32")
    out = np.zeros((64, 48), "float32")
    compiler.build(sch, args)(a, b, out)
    np.testing.assert_allclose(out, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_tiling_fusion_and_annotations_build_and_round_trip():
    task = _task()
    dag = task.compute_dag
    s = dag.get_init_state()
    assert isinstance(s, LoopState)
    C, D = dag.tensors[-1].op.input_tensors[0], dag.tensors[-1]
    i, j, k = s[C].iters
    io, ii = s.split(C, i, [8])
    jo, ji = s.split(C, j, [16])
    ko, ki = s.split(C, k, [4])
    s.reorder(C, [io, jo, ko, ii, ki, ji])
    di, dj = s[D].iters
    dio, dii = s.split(D, di, [8])
    djo, dji = s.split(D, dj, [16])
    s.reorder(D, [dio, djo, dii, dji])
    s.compute_at(C, D, djo)
    fused = s.fuse(D, [dio, djo])
    assert fused.name == f"{dio.name}@{djo.name}" or "@" in fused.name
    s.parallel(D, fused)
    s.vectorize(C, s[C].iters[-1])
    s.vectorize(D, s[D].iters[-1])
    assert "parallel" in str(s) and "vectorize" in str(s)
    _check(task, s)
    # a record replays to the same state; the printed Python builds the same program
    rec = serialize.encode_record(auto.MeasureInput(task, s), auto.MeasureResult(
        [1e-3], 0, "", 0.1, 1.0))
    again = serialize.state_from_record(task, rec)
    assert str(again) == str(s)
    assert "s[C].compute_at(s[D]" in dag.print_python_code_from_state(s)


def test_cache_write_and_rfactor_return_new_stages():
    task = _task()
    s = task.compute_dag.get_init_state()
    C = task.compute_dag.tensors[-1].op.input_tensors[0]
    local = s.cache_write(C, "local")
    assert local.name == "C.local" and s.stage_id(local) == s.stage_id("C") - 1
    _check(task, s)
    s2 = task.compute_dag.get_init_state()
    ko, ki = s2.split(C, s2[C].iters[2], [8])
    rf = s2.rfactor(C, ki, 2)
    assert rf.name.startswith("C.rf")
    _check(task, s2)


def test_invalid_methods_raise_and_leave_the_state_unchanged():
    task = _task()
    s = task.compute_dag.get_init_state()
    C = task.compute_dag.tensors[-1].op.input_tensors[0]
    before = (str(s), len(s.transform_steps))
    with pytest.raises(auto.InvalidStepError, match="is not an iterator of stage D"):
        s.split("D", s[C].iters[2], [4])
    with pytest.raises(auto.InvalidStepError, match=r"unroll\(max_unroll=4\)"):
        s.unroll(C, 0, max_unroll=4)
    with pytest.raises(auto.InvalidStepError):
        s.rfactor(C, 0, 0)                 # i is not a reduction iterator
    assert (str(s), len(s.transform_steps)) == before
    assert task.compute_dag.infer_bound_from_state(s) == s
