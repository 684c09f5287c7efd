"""The default schedule as a State: schedule traces, their replay as steps, and the search
measuring the default first."""
import numpy as np
import pytest
from autosched_helpers import SMALL_SEARCH, FakeInput, FakeResult

import autosched as auto
import compiler
from autosched import catalog
from autosched.default_state import default_state, is_default_program, state_from_trace
from autosched.defaults import default_schedule_maker, layout_free_schedule_maker
from autosched.errors import InvalidStepError
from autosched.layout_rewrite import LayoutRewriteOption
from autosched.measure import MeasureInput, MeasureResult
from autosched.search.policy import SearchParams
from autosched.steps import serialize
from compiler import build, lower, relay, te, topi
from compiler.relay import testing as relay_testing
from compiler.schedule.trace import (
    LeafRef,
    StageRef,
    TensorRef,
    TraceEntry,
    record_schedules,
)
from records import Record

RNG = np.random.default_rng(3)


def _matmul(n=16):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


# ---------------------------------------------------------------- the compiler's trace
def test_trace_records_positions_at_call_time():
    A, B, C = _matmul()
    with record_schedules():
        s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=4)
    s[C].reorder(j, io)                  # leaves io, ii, j, k -> j, ii, io, k
    f = s[C].fuse(*s[C].leaf_iter_vars[:2])
    s[C].vectorize(s[C].leaf_iter_vars[-2])
    assert s.trace_stage_names == ["A", "B", "C"]
    assert s.trace == [
        TraceEntry("split", 2, (LeafRef(2, 0),), (("factor", 4),)),
        TraceEntry("reorder", 2, (LeafRef(2, 2), LeafRef(2, 0))),
        TraceEntry("fuse", 2, (LeafRef(2, 0), LeafRef(2, 1))),
        TraceEntry("vectorize", 2, (LeafRef(2, 1),)),
    ]
    assert f is s[C].leaf_iter_vars[0]


def test_trace_records_a_composite_primitive_once_and_dataflow_by_tensor():
    A, B, C = _matmul()
    with record_schedules():
        s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    s[C].tile(*s[C].op.axis, 4, 8)
    s[CL].compute_at(s[C], s[C].leaf_iter_vars[1])
    s[CL].storage_align(s[CL].op.axis[0], 8, 1)
    prims = [e.primitive for e in s.trace]
    assert prims == ["cache_write", "tile", "compute_at", "storage_align"]
    # C.local is inserted before C: the cache is stage 2, C stage 3
    assert s.trace[0] == TraceEntry("cache_write", -1, (TensorRef(2, 0), "local"))
    assert s.trace[1] == TraceEntry("tile", 3, (LeafRef(3, 0), LeafRef(3, 1), 4, 8))
    assert s.trace[2] == TraceEntry("compute_at", 2, (StageRef(3), LeafRef(3, 1)))
    assert s.trace[3] == TraceEntry("storage_align", 2, (LeafRef(2, 0), 8, 1))


def test_no_trace_outside_the_context():
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    s[C].split(s[C].op.axis[0], factor=2)
    assert s.trace is None


# ---------------------------------------------------------------- the trace as steps
@pytest.mark.parametrize("rewrite", [LayoutRewriteOption.NO_REWRITE,
                                     LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED])
def test_every_builtin_default_is_a_state_with_the_same_loop_nest(rewrite):
    """Each built-in default converts; a task that rewrites layouts starts from the
    layout-free variant where one is registered (dense's), else the plain default."""
    variants = 0
    for name, entry in catalog.BUILTIN.items():
        task = auto.SearchTask(func=name, args=entry.default_args,
                               layout_rewrite_option=rewrite)
        st = default_state(task)
        assert st is not None, name
        sch, args = task.compute_dag.apply_steps_from_state(st)
        make = default_schedule_maker(task.workload_key)
        if rewrite and layout_free_schedule_maker(task.workload_key) is not None:
            make = layout_free_schedule_maker(task.workload_key)
            variants += 1
        dsch, dargs = make()
        assert str(lower(sch, args, name="f")) == str(lower(dsch, dargs, name="f")), name
    assert variants == (2 if rewrite else 0)       # dense and dense_bias_relu


def test_a_dense_that_rewrites_layouts_starts_from_the_packed_panel_kernel():
    """The weight of the layout-free default is rewritten to dense_pack's layout (N/nr, K,
    nr) (nr from the target's vector width); built with the transformed weight, the
    kernel computes numpy's result; without the rewrite the task keeps the plain
    default ("dot": an rfactor, no transform)."""
    ref = catalog.BUILTIN["dense_bias_relu"].numpy_ref
    task = auto.SearchTask(func="dense_bias_relu", args=(8, 32, 48),
                           layout_rewrite_option=LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)
    st = default_state(task)
    (tr,) = task.compute_dag.layout_transforms(st)
    nr = topi.x86.dense.packed_width(48, topi.x86.utils.vector_lanes("float32"))
    assert tr.arg_index == 1 and tr.new_shape == (48 // nr, 8, 4, nr)
    sch, tensors = task.compute_dag.apply_steps_from_state(
        st, LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)
    x, w, b = ((RNG.random(shape) - 0.5).astype("float32")
               for shape in ((8, 32), (48, 32), (48,)))
    out = np.zeros((8, 48), "float32")
    build(sch, tensors)(x, tr.apply(w), b, out)
    np.testing.assert_allclose(out, ref(x, w, b), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(tr.apply(w), w.reshape(48 // nr, nr, 8, 4)
                                  .transpose(0, 2, 3, 1))
    plain = default_state(auto.SearchTask(func="dense_bias_relu", args=(8, 32, 48),
                                          layout_rewrite_option=LayoutRewriteOption.NO_REWRITE))
    assert "RF" in str([s.to_record()[0] for s in plain.transform_steps])
    assert "RF" not in str([s.to_record()[0] for s in st.transform_steps])


def test_packed_dense_groups_of_a_model_are_states_with_the_same_loop_nest():
    """The MLP's fused groups (two dense layers packed by AlterOpLayout, one plain) and a
    packed dense over 3-D data: each default schedule converts, and its replay lowers
    to exactly the default's TIR."""
    mod, params = relay_testing.mlp.get_workload(batch_size=1)
    tasks, _ = auto.extract_tasks(mod, params, "llvm")
    x = relay.var("data", shape=(1, 6, 32))
    w = relay.const(RNG.random((64, 32)).astype("float32"))
    seq = relay.Function([x], relay.nn.relu(relay.nn.dense(x, w)))
    more, _ = auto.extract_tasks(compiler.IRModule.from_expr(seq), {}, "llvm")
    assert sum("contrib_dense_pack" in t.desc for t in tasks + more) == 3
    for task in tasks + more:
        st = default_state(task)
        assert st is not None, task.desc
        sch, args = task.compute_dag.apply_steps_from_state(st)
        dsch, dargs = default_schedule_maker(task.workload_key)()
        assert str(lower(sch, args, name="f")) == str(lower(dsch, dargs, name="f")), task.desc


def _depthwise_ref(x, w, pad=1):
    n, c, h, wd = x.shape
    k = w.shape[-1]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, c, h + 2 * pad - k + 1, wd + 2 * pad - k + 1), "float32")
    for dy in range(k):
        for dx in range(k):
            out += xp[:, :, dy:dy + out.shape[2], dx:dx + out.shape[3]] * \
                w[None, :, 0, dy, dx, None, None]
    return out


def _softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


CASES = {
    "depthwise_conv2d": ((1, 8, 14, 14, 3, 1, 1), _depthwise_ref),
    "softmax": ((6, 40), _softmax_ref),
    "dense_bias_relu": ((8, 32, 48), catalog.BUILTIN["dense_bias_relu"].numpy_ref),
    "matmul": ((24, 40, 32), catalog.BUILTIN["matmul"].numpy_ref),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_state_computes_numpys_result(name):
    args, ref = CASES[name]
    task = auto.SearchTask(func=name, args=args)
    st = default_state(task)
    sch, tensors = task.compute_dag.apply_steps_from_state(st)
    mod = build(sch, tensors, name="kernel")
    ins = [(RNG.random([d.value for d in t.shape]) - 0.5).astype("float32")
           for t in tensors if isinstance(t.op, te.PlaceholderOp)]
    out = np.zeros([d.value for d in tensors[-1].shape], "float32")
    mod(*ins, out)
    np.testing.assert_allclose(out, ref(*ins), rtol=1e-4, atol=1e-4)


def test_default_state_round_trips_through_a_record():
    task = auto.SearchTask(func="dense_bias_relu", args=(8, 32, 48))
    st = default_state(task)
    rec = serialize.encode_record(FakeInput(task, st), FakeResult())
    back = serialize.state_from_record(task, Record.from_json(rec.to_json()))
    assert str(back) == str(st)
    assert back.transform_steps == st.transform_steps


def test_a_primitive_without_a_step_is_an_error_naming_it():
    A, B, C = _matmul()
    with record_schedules():
        s = te.create_schedule(C.op)
    s[C].set_scope("local")
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    with pytest.raises(InvalidStepError, match="set_scope has no transform step"):
        state_from_trace(task.compute_dag.init_state(), s)


def test_a_schedule_of_another_program_is_an_error_naming_both_stage_lists():
    X = te.placeholder((16,), name="X")
    Y = te.compute((16,), lambda i: X[i] * 2.0, name="Y")
    with record_schedules():
        s = te.create_schedule(Y.op)
    task = auto.SearchTask(func="matmul", args=(16, 16, 16))
    with pytest.raises(InvalidStepError, match=r"stages \['X', 'Y'\] are not the task's"):
        state_from_trace(task.compute_dag.init_state(), s)


def test_an_unrecorded_schedule_is_an_error():
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    task = auto.SearchTask(func="matmul", args=(16, 16, 16))
    with pytest.raises(InvalidStepError, match="was not recorded"):
        state_from_trace(task.compute_dag.init_state(), s)


def test_a_workload_without_a_default_has_no_default_state():
    @auto.register_workload("default_state_test_scale", override=True)
    def scale(n):
        X = te.placeholder((n,), name="X")
        return [X, te.compute((n,), lambda i: X[i] * 3.0, name="Y")]

    assert default_state(auto.SearchTask(func="default_state_test_scale", args=(8,))) is None


# ---------------------------------------------------------------- the search
def test_the_first_pick_is_the_default_state_and_it_is_measured_once():
    task = auto.SearchTask(func="matmul", args=(32, 32, 32))
    dflt = str(default_state(task))
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0)
    picks = policy.pick_states(6)
    assert str(picks[0]) == dflt
    policy.record_measured([MeasureInput(task, s) for s in picks],
                           [MeasureResult([1e-3], 0, "", 0.1, 0.0) for _ in picks])
    again = policy.pick_states(6)
    assert dflt not in {str(s) for s in again}


def test_seeding_can_be_turned_off():
    task = auto.SearchTask(func="matmul", args=(32, 32, 32))
    dflt = str(default_state(task))
    params = SearchParams(evolutionary_search_population=64, evolutionary_search_num_iters=0,
                          seed_default_schedule=False)
    policy = auto.SketchPolicy(task, params=params, seed=0, verbose=0)
    assert dflt not in {str(s) for s in policy.pick_states(6)}


def test_the_default_program_is_the_plain_default_state_only():
    """A dense task that rewrites layouts starts from another program than the plain
    default (its weight packed), so its answer is timed, not assumed the default's."""
    def task(name, args, rewrite):
        return auto.SearchTask(func=name, args=args, layout_rewrite_option=rewrite)

    packed = task("dense_bias_relu", (8, 32, 48), LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)
    plain = task("dense_bias_relu", (8, 32, 48), LayoutRewriteOption.NO_REWRITE)
    mm = task("matmul", (24, 40, 32), LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)
    assert not is_default_program(packed, default_state(packed))
    assert is_default_program(plain, default_state(plain))
    assert is_default_program(mm, default_state(mm))
    assert not is_default_program(plain, default_state(packed))
