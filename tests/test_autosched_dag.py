"""ComputeDAG (printing, flop count, access analysis, initial states), State equality, the
workload registry, SearchTask / HardwareParams and record serialization of states."""
import json
import time
from dataclasses import dataclass

import numpy as np
import pytest

import autosched
from autosched import state as S
from autosched import steps as ST
from autosched import workload as W
from autosched.compute_dag import ComputeDAG
from autosched.errors import AutoSchedError, InvalidStepError, WorkloadError
from autosched.steps import apply_step, serialize
from autosched.task import HardwareParams, SearchTask
from compiler import auto_scheduler, lower, te
from compiler.target import parse_target
from records import FAILURE_COST, Record


# ---------------------------------------------------------------- computations
def matmul(n, m, k_):
    A = te.placeholder((n, k_), name="A")
    B = te.placeholder((k_, m), name="B")
    k = te.reduce_axis((0, k_), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def conv2d(batch, ci, h, w, co, kh, pad):
    data = te.placeholder((batch, ci, h, w), name="data")
    kern = te.placeholder((co, ci, kh, kh), name="kernel")
    src = data
    if pad:
        src = te.compute(
            (batch, ci, h + 2 * pad, w + 2 * pad),
            lambda n, c, y, x: te.if_then_else(
                te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
                data[n, c, y - pad, x - pad], 0.0), name="pad")
    oh, ow = h + 2 * pad - kh + 1, w + 2 * pad - kh + 1
    rc = te.reduce_axis((0, ci), name="rc")
    rh = te.reduce_axis((0, kh), name="rh")
    rw = te.reduce_axis((0, kh), name="rw")
    out = te.compute((batch, co, oh, ow),
                     lambda n, f, y, x: te.sum(src[n, rc, y + rh, x + rw] * kern[f, rc, rh, rw],
                                               axis=[rc, rh, rw]), name="conv")
    return data, kern, src, out


@W.register_workload("dag_test_matmul")
def wl_matmul(n, m, k_):
    return list(matmul(n, m, k_))


@W.register_workload
def dag_test_matmul_relu(n, m, k_):
    A, B, C = matmul(n, m, k_)
    return [A, B, te.compute((n, m), lambda i, j: te.max(C[i, j], 0.0), name="R")]


@W.register_workload("dag_test_single_tensor")
def wl_single(n):
    A = te.placeholder((n,), name="A")
    return te.compute((n,), lambda i: A[i] + 1.0, name="B")


@W.register_workload("dag_test_not_tensors")
def wl_not_tensors(n):
    return [n]


@dataclass(frozen=True)
class FakeInput:
    task: object
    state: object


@dataclass(frozen=True)
class FakeResult:
    costs: tuple = (2e-3, 3e-3)
    error_no: int = 0
    all_cost: float = 1.25
    timestamp: float = 1700000123.5


# ---------------------------------------------------------------- ComputeDAG
def test_dag_str_matmul_golden():
    A, B, C = matmul(16, 24, 8)
    assert str(ComputeDAG([A, B, C])) == ("A = PLACEHOLDER [16, 8]\n"
                                          "B = PLACEHOLDER [8, 24]\n"
                                          "C(i, j) += A[i, k] * B[k, j]\n")
    assert repr(ComputeDAG([A, B, C])) == "ComputeDAG(A, B, C)"


def test_dag_str_elementwise_max_reduction_and_conv():
    dag = ComputeDAG(dag_test_matmul_relu(4, 4, 4))
    assert str(dag).splitlines()[-1] == "R(i, j) = T.max(C[i, j], T.float32(0.0))"
    A = te.placeholder((16, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    M = te.compute((16,), lambda i: te.max(A[i, k], axis=k), name="M")
    assert str(ComputeDAG([A, M])).splitlines()[-1] == "M(i) max= A[i, k]"
    data, kern, pad, conv = conv2d(1, 4, 8, 8, 4, 3, 1)
    lines = str(ComputeDAG([data, kern, conv])).splitlines()
    assert lines[0] == "data = PLACEHOLDER [1, 4, 8, 8]"
    assert lines[1].startswith("pad(n, c, y, x) = T.if_then_else(")
    assert lines[2] == "kernel = PLACEHOLDER [4, 4, 3, 3]"
    assert lines[3] == "conv(n, f, y, x) += pad[n, rc, y + rh, x + rw] * kernel[f, rc, rh, rw]"


def test_dag_ops_in_topological_order_and_outputs():
    data, kern, pad, conv = conv2d(1, 4, 8, 8, 4, 3, 1)
    dag = ComputeDAG([data, kern, conv])
    assert [op.name for op in dag.ops] == ["data", "pad", "kernel", "conv"]
    assert dag.outputs == [conv.op]
    assert dag.tensors == [data, kern, conv]
    single = ComputeDAG(conv)                         # one tensor is accepted
    assert single.tensors == [conv] and single.outputs == [conv.op]


@pytest.mark.parametrize("n,m,k", [(32, 32, 32), (16, 24, 8), (7, 5, 3)])
def test_flop_count_matmul(n, m, k):
    assert ComputeDAG(list(matmul(n, m, k))).flop_ct == 2 * n * m * k


def test_flop_count_matmul_relu_and_max_reduction():
    assert ComputeDAG(dag_test_matmul_relu(32, 16, 8)).flop_ct == 2 * 32 * 16 * 8 + 32 * 16
    A = te.placeholder((16, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    M = te.compute((16,), lambda i: te.max(A[i, k], axis=k), name="M")
    assert ComputeDAG([A, M]).flop_ct == 16 * 64


def test_flop_count_conv():
    data, kern, _, conv = conv2d(2, 3, 10, 12, 5, 3, 0)
    assert ComputeDAG([data, kern, conv]).flop_ct == 2 * 2 * 5 * 8 * 10 * 3 * 3 * 3
    data, kern, pad, conv = conv2d(1, 4, 8, 8, 4, 3, 1)
    # padding: 4 comparisons + 3 logical ands per padded element (as TVM's FlopEstimator);
    # index arithmetic inside loads is not counted
    assert ComputeDAG([data, kern, conv]).flop_ct == 2 * 1 * 4 * 8 * 8 * 4 * 9 + 7 * 4 * 10 * 10


def test_dag_rejects_bad_tensor_lists():
    A = te.placeholder((4,), name="A")
    with pytest.raises(AutoSchedError, match="expects a list of tensors"):
        ComputeDAG([])
    with pytest.raises(AutoSchedError, match="expects a list of tensors"):
        ComputeDAG([A, 3])
    with pytest.raises(AutoSchedError, match="no output compute op"):
        ComputeDAG([A])


# ---------------------------------------------------------------- access analysis
def _elementwise_ops():
    A = te.placeholder((8, 8), name="A")
    b = te.placeholder((8,), name="b")
    ops = {
        "plain": te.compute((8, 8), lambda i, j: A[i, j] * 2.0 + 1.0, name="plain"),
        "bias": te.compute((8, 8), lambda i, j: A[i, j] + b[j], name="bias"),
        "exp": te.compute((8, 8), lambda i, j: te.exp(A[i, j]), name="exp"),
        "ite": te.compute((8, 8), lambda i, j: te.if_then_else(A[i, j] > 0.0, A[i, j], 0.0),
                          name="ite"),
        "shift": te.compute((8, 7), lambda i, j: A[i, j + 1], name="shift"),
        "transpose": te.compute((8, 8), lambda i, j: A[j, i], name="transpose"),
    }
    k = te.reduce_axis((0, 8), name="k")
    ops["rowsum"] = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="rowsum")
    return [A, b], ops


def test_access_analysis_elementwise_ops():
    ins, ops = _elementwise_ops()
    dag = ComputeDAG(ins + list(ops.values()))
    acc = dag.access
    inl = {name: acc.is_strictly_inlineable(t.op) for name, t in ops.items()}
    assert inl == {"plain": True, "bias": True, "exp": False, "ite": False, "shift": False,
                   "transpose": True, "rowsum": False}
    simple = {name: acc.is_simple_access(t.op) for name, t in ops.items()}
    assert simple == {"plain": True, "bias": True, "exp": True, "ite": True, "shift": False,
                      "transpose": True, "rowsum": True}
    mlt = {name: acc.needs_multi_level_tiling(t.op) for name, t in ops.items()}
    assert mlt == {name: False for name in ops}
    for t in ins:                                    # placeholders: all predicates false
        assert not acc.is_strictly_inlineable(t.op)
        assert not acc.needs_multi_level_tiling(t.op)
        assert not acc.is_simple_access(t.op)


def test_access_analysis_matmul_and_conv_need_multi_level_tiling():
    A, B, C = matmul(16, 16, 16)
    dag = ComputeDAG([A, B, C])
    assert dag.access.needs_multi_level_tiling(C.op)
    assert not dag.access.is_strictly_inlineable(C.op)
    data, kern, pad, conv = conv2d(1, 4, 8, 8, 4, 3, 1)
    cdag = ComputeDAG([data, kern, conv])
    assert cdag.access.needs_multi_level_tiling(conv.op)
    assert not cdag.access.needs_multi_level_tiling(pad.op)
    assert not cdag.access.is_strictly_inlineable(pad.op)     # branch + shifted reads
    assert not cdag.access.is_simple_access(conv.op)          # y + rh


def test_access_analysis_two_inputs_missing_axes_without_reduction():
    A = te.placeholder((8,), name="A")
    B = te.placeholder((8,), name="B")
    outer = te.compute((8, 8), lambda i, j: A[i] * B[j], name="outer")
    dag = ComputeDAG([A, B, outer])
    assert dag.access.needs_multi_level_tiling(outer.op)       # two reads miss an axis


# ---------------------------------------------------------------- states
def test_init_state_copies_are_independent():
    dag = ComputeDAG(list(matmul(32, 32, 32)))
    s1, s2 = dag.init_state(), dag.init_state()
    assert s1 == s2 and s1 is not s2
    before = str(s2)
    apply_step(s1, ST.SplitStep(2, 0, 32, (4,), True))
    apply_step(s1, ST.AnnotationStep(2, 0, S.ANN_PARALLEL))
    assert str(s2) == before and s2.transform_steps == []
    assert str(dag.init_state()) == before
    assert len(dag.init_state().stages[2].iters) == 3
    assert s1 != s2


def test_state_copy_is_independent():
    dag = ComputeDAG(dag_test_matmul_relu(32, 32, 32))
    s1 = dag.init_state()
    apply_step(s1, ST.ComputeAtStep(2, 3, 1))
    s2 = s1.copy()
    assert s2 == s1 and s2.attach_map == s1.attach_map
    apply_step(s2, ST.SplitStep(3, 1, 32, (8,), True))
    assert s1.attach_map == {2: (3, 1)} and s2.attach_map == {2: (3, 2)}
    assert len(s1.transform_steps) == 1 and len(s2.transform_steps) == 2
    assert [it.name for it in s1.stages[3].iters] == ["i", "j"]
    assert s1.dag is s2.dag is dag


def test_state_equality_and_hash_follow_the_printout():
    dag = ComputeDAG(dag_test_matmul_relu(32, 32, 32))
    init = dag.init_state()
    undone = dag.state_from_steps([ST.ComputeAtStep(2, 3, 0), ST.ComputeRootStep(2)])
    assert undone == init and hash(undone) == hash(init)
    assert undone.transform_steps != init.transform_steps
    other = dag.state_from_steps([ST.ComputeAtStep(2, 3, 0)])
    assert other != init
    assert len({init, undone, other}) == 2
    assert init != str(init)                           # only States compare equal
    assert repr(init) == str(init)


def test_state_str_is_cached_and_invalidated():
    dag = ComputeDAG(list(matmul(8, 8, 8)))
    st = dag.init_state()
    first = str(st)
    assert str(st) is first
    apply_step(st, ST.ReorderStep(2, (1, 0, 2)))
    assert str(st) != first and str(st).startswith("Placeholder: A, B\nfor j (0,8)")


def test_state_from_steps_and_replay_cache():
    dag = ComputeDAG(list(matmul(16, 16, 16)))
    steps = [ST.CacheWriteStep(2, "local"), ST.SplitStep(3, 0, 16, (4,), True)]
    st = dag.state_from_steps(steps)
    assert st.transform_steps == steps
    assert [s.name for s in st.stages] == ["A", "B", "C.local", "C"]
    a = dag.replay(steps, readonly=True)
    assert dag.replay(list(steps), readonly=True) is a           # cached by records
    fresh = dag.replay(steps)
    assert fresh is not a and fresh is not dag.replay(steps)
    sch, args = dag.apply_steps_from_state(st)
    assert sch is not a and args == dag.tensors
    assert [s.op.name for s in sch.stages] == ["A", "B", "C.local", "C"]


def test_python_namespace_and_initial_code():
    dag = ComputeDAG(dag_test_matmul_relu(8, 8, 8))
    ns = dag.python_namespace()
    assert {"s", "te", "A", "B", "C", "R"} <= set(ns)
    assert ns["R"].op is dag.tensors[-1].op and ns["te"] is te
    assert [st.op.name for st in ns["s"].stages] == ["A", "B", "C", "R"]
    code = dag.print_python_code_from_state(dag.init_state())
    assert code == ("# s = te.create_schedule([R.op])\n"
                    "C_i, C_j, C_k, = (*s[C].op.axis, *s[C].op.reduce_axis)\n"
                    "R_i, R_j, = (*s[R].op.axis, *s[R].op.reduce_axis)\n")
    exec(code, ns)  # noqa: S102
    assert ns["C_k"] is ns["s"][ns["C"]].op.reduce_axis[0]
    args = dag.tensors
    assert str(lower(ns["s"], args, name="f")) == str(lower(dag.replay([]), args, name="f"))


# ---------------------------------------------------------------- workload registry
def test_make_workload_key_json():
    key = W.make_workload_key("dag_test_matmul", (32, 16, np.int64(8)))
    assert key == '["dag_test_matmul", 32, 16, 8]'
    assert json.loads(key) == ["dag_test_matmul", 32, 16, 8]
    assert W.make_workload_key("dag_test_matmul", [1, (2, 3), "x", 1.5, None, True]) == \
        '["dag_test_matmul", 1, [2, 3], "x", 1.5, null, true]'
    assert W.make_workload_key(dag_test_matmul_relu, ()) == '["dag_test_matmul_relu"]'


def test_non_json_workload_argument():
    with pytest.raises(WorkloadError, match=r"workload argument .*object.* is not a JSON value"):
        W.make_workload_key("dag_test_matmul", (object(),))
    with pytest.raises(WorkloadError, match="not a JSON value"):
        W.make_workload_key("dag_test_matmul", ([1, {2: 3}],))


def test_unregistered_function_key():
    def not_registered_anywhere(n):
        return []
    with pytest.raises(WorkloadError, match="'not_registered_anywhere' is not registered"):
        W.make_workload_key(not_registered_anywhere, (1,))


def test_register_workload_duplicates():
    def dag_test_dup(n):
        return wl_single(n)

    def other(n):
        return wl_single(n)

    try:
        assert W.register_workload(dag_test_dup) is dag_test_dup
        assert W.register_workload(dag_test_dup) is dag_test_dup     # same function: fine
        with pytest.raises(WorkloadError, match="'dag_test_dup' is already registered"):
            W.register_workload("dag_test_dup", other)
        assert W.WORKLOAD_FUNCS["dag_test_dup"] is dag_test_dup
        W.register_workload("dag_test_dup", other, override=True)
        assert W.WORKLOAD_FUNCS["dag_test_dup"] is other
        assert W.register_workload("dag_test_dup", override=True)(dag_test_dup) is dag_test_dup
    finally:
        W.WORKLOAD_FUNCS.pop("dag_test_dup", None)


def test_workload_key_to_tensors():
    ts = W.workload_key_to_tensors('["dag_test_matmul", 8, 4, 2]')
    assert [t.name for t in ts] == ["A", "B", "C"]
    assert [s.value for s in ts[2].shape] == [8, 4]
    single = W.workload_key_to_tensors('["dag_test_single_tensor", 5]')
    assert isinstance(single, list) and [t.name for t in single] == ["B"]


def test_unknown_workload_key_names_key_and_registered_workloads():
    key = '["no_such_workload_xyz", 1, 2]'
    with pytest.raises(WorkloadError) as err:
        W.workload_key_to_tensors(key)
    msg = str(err.value)
    assert "'no_such_workload_xyz'" in msg and key in msg
    assert "registered workloads:" in msg
    assert "dag_test_matmul" in msg and "dag_test_matmul_relu" in msg
    assert isinstance(err.value, KeyError)           # WorkloadError is a KeyError ...
    assert not msg.startswith('"')                   # ... without KeyError's quoting


@pytest.mark.parametrize("key,pattern", [
    ("not json", r"is not valid JSON"),
    ('{"a": 1}', r"must be a JSON list starting with the function name"),
    ("[]", r"must be a JSON list"),
    ("[1, 2]", r"must be a JSON list"),
    ('["dag_test_not_tensors", 3]', r"must return a list of tensors"),
])
def test_malformed_workload_keys(key, pattern):
    with pytest.raises(WorkloadError, match=pattern):
        W.workload_key_to_tensors(key)


# ---------------------------------------------------------------- SearchTask
def test_search_task_from_func_and_from_key():
    task = SearchTask(func="dag_test_matmul", args=(16, 8, 4), target="llvm")
    assert task.workload_key == '["dag_test_matmul", 16, 8, 4]'
    assert str(task.target) == str(parse_target("llvm"))
    assert str(task.compute_dag) == str(ComputeDAG(list(matmul(16, 8, 4))))
    assert task.compute_dag.flop_ct == 2 * 16 * 8 * 4
    again = SearchTask(workload_key=task.workload_key)
    assert str(again.compute_dag) == str(task.compute_dag)
    assert again.workload_key == task.workload_key
    by_name = SearchTask(func="dag_test_matmul", args=[16, 8, 4])
    assert by_name.workload_key == task.workload_key
    by_func = SearchTask(func=dag_test_matmul_relu, args=(2, 2, 2))  # registered by __name__
    assert by_func.workload_key == '["dag_test_matmul_relu", 2, 2, 2]'
    assert repr(task).startswith('SearchTask(["dag_test_matmul", 16, 8, 4], target=llvm')


def test_search_task_errors():
    with pytest.raises(WorkloadError, match="needs func=... .* or workload_key=..."):
        SearchTask()
    with pytest.raises(WorkloadError, match="unknown workload 'nope_nope'"):
        SearchTask(workload_key='["nope_nope"]')


def test_removed_tvm_entry_points_raise_with_the_upgrade_path():
    """Scripts written for TVM before its SearchTask API fail as on TVM (a ValueError),
    and the message says what replaced the call."""
    for call in (lambda: autosched.create_task("matmul", (4, 4, 4), "llvm"),
                 lambda: auto_scheduler.auto_schedule(None),
                 lambda: auto_scheduler.search_task.create_task(None, (), "llvm")):
        with pytest.raises(autosched.RemovedAPIError,
                           match=r"is removed: make the task with auto_scheduler\.SearchTask"):
            call()
    assert issubclass(autosched.RemovedAPIError, ValueError)
    assert issubclass(autosched.RemovedAPIError, AutoSchedError)


def test_search_task_with_given_dag_and_hardware():
    dag = ComputeDAG(list(matmul(4, 4, 4)))
    hw = HardwareParams(num_cores=3, vector_unit_bytes=16)
    task = SearchTask(workload_key='["custom", 4]', compute_dag=dag, hardware_params=hw,
                      desc="mine")
    assert task.compute_dag is dag and task.hardware_params is hw and task.desc == "mine"
    assert hw.to_list() == [3, 16, 64, 0, 0, 0, 0, 0]


def test_hardware_params_for_target():
    tgt = parse_target("llvm")
    hw = HardwareParams.for_target(tgt)
    lst = hw.to_list()
    assert len(lst) == 8 and all(isinstance(v, int) for v in lst)
    assert lst[0] == tgt.num_cores >= 1
    assert lst[1] == tgt.vector_bits // 8 and lst[1] in (16, 32, 64)
    assert lst[2] == 64
    assert SearchTask(func=dag_test_matmul_relu, args=(4, 4, 4)).hardware_params == hw


# ---------------------------------------------------------------- serialize
def _tiled_task():
    task = SearchTask(func=dag_test_matmul_relu, args=(32, 32, 32))
    st = task.compute_dag.state_from_steps([
        ST.CacheReadStep(0, "shared", (2,)),
        ST.SplitStep(4, 0, 32, (4, 2), True), ST.FollowSplitStep(3, 0, 1, 2),
        ST.ComputeAtStep(3, 4, 1), ST.ComputeAtStep(1, 3, 2),
        ST.FuseStep(4, (0, 1)), ST.AnnotationStep(4, 0, S.ANN_PARALLEL),
        ST.PragmaStep(4, 0, "auto_unroll_max_step$8")])
    return task, st


def test_encode_record_fields():
    task, st = _tiled_task()
    rec = serialize.encode_record(FakeInput(task, st), FakeResult(), seed=11)
    assert rec.workload_key == task.workload_key
    assert rec.target == str(task.target)
    assert list(rec.input.hardware_params) == task.hardware_params.to_list()
    assert rec.input.steps[0] == ("CHR", 0, "shared", (2,))
    assert rec.input.steps[2] == ("FSP", 3, 0, 1, 2)
    assert len(rec.input.steps) == len(st.transform_steps)
    assert rec.result.costs == (2e-3, 3e-3) and rec.result.error_no == 0
    assert rec.result.all_cost == 1.25 and rec.result.timestamp == 1700000123.5
    assert rec.seed == 11 and rec.is_valid and rec.mean_cost == pytest.approx(2.5e-3)


def test_encode_record_failed_measurement_and_default_timestamp():
    task, st = _tiled_task()
    t0 = time.time()
    rec = serialize.encode_record(FakeInput(task, st),
                                  FakeResult(costs=(), error_no=4, timestamp=None))
    assert rec.result.costs == (FAILURE_COST,) and rec.result.error_no == 4
    assert not rec.is_valid
    assert t0 <= rec.result.timestamp <= time.time() + 1


def test_record_json_round_trip_rebuilds_state():
    task, st = _tiled_task()
    line = serialize.encode_record(FakeInput(task, st), FakeResult()).to_json()
    obj = json.loads(line)
    assert obj["i"][1][1][1] == ["SP", 4, 0, 32, [4, 2], 1]
    back = Record.from_json(line)
    assert serialize.decode_steps(back) == st.transform_steps
    new = serialize.state_from_record(task, back)
    assert str(new) == str(st) and new.attach_map == st.attach_map
    assert new.transform_steps == st.transform_steps
    # a fresh task from the key alone (another process) rebuilds the same state
    other = SearchTask(workload_key=back.workload_key)
    assert str(serialize.state_from_record(other, back)) == str(st)


def test_state_from_record_that_no_longer_applies():
    task, st = _tiled_task()
    rec = serialize.encode_record(FakeInput(task, st), FakeResult())
    small = SearchTask(func=dag_test_matmul_relu, args=(16, 16, 16))
    with pytest.raises(InvalidStepError, match="SP: iterator i has extent 16, the step "
                                               "expects 32"):
        serialize.state_from_record(small, rec)


def test_bug_function_registered_under_custom_name_makes_key():
    assert W.WORKLOAD_FUNCS["dag_test_matmul"] is wl_matmul
    assert W.make_workload_key(wl_matmul, (8, 8, 8)) == '["dag_test_matmul", 8, 8, 8]'
