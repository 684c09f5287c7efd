"""The auto-scheduler State and its 14 transform steps (AN FU PR RE SP FSP FFSP SA CA CI CR
CHR CHW RF).

For every step: its effect on the State (iterators, annotations, attach map, stage
insertion), replay on a te Schedule checked against numpy, the record round trip (step
record and a whole ``records.Record`` line), the printed schedule-API Python (it must lower
to exactly the replayed program), and the InvalidStepError raised when it does not apply.
Regression tests for bugs found by these tests are named ``test_bug_*``.
"""
import functools
import json
import re
from dataclasses import dataclass

import numpy as np
import pytest

from autosched import serialize
from autosched import state as S
from autosched import steps as ST
from autosched.compute_dag import ComputeDAG
from autosched.errors import InvalidStepError
from autosched.steps import apply_step, step_from_record
from autosched.task import SearchTask
from autosched.workload import register_workload
from compiler import build, lower, te
from compiler.schedule.bound import resolve_attach_ivar
from compiler.tir.expr import IterVar
from records import STEP_FIELDS, Record, validate_step

RNG = np.random.default_rng(7)
PAR, VEC, UNR = S.ANN_PARALLEL, S.ANN_VECTORIZE, S.ANN_UNROLL


# ---------------------------------------------------------------- workloads
@register_workload("steps_test_matmul")
def wl_matmul(n, m, k_):
    A = te.placeholder((n, k_), name="A")
    B = te.placeholder((k_, m), name="B")
    k = te.reduce_axis((0, k_), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, C]


@register_workload("steps_test_matmul_relu")
def wl_matmul_relu(n, m, k_):
    A, B, C = wl_matmul(n, m, k_)
    R = te.compute((n, m), lambda i, j: te.max(C[i, j], 0.0), name="R")
    return [A, B, R]


@register_workload("steps_test_rowsum")
def wl_rowsum(n, k_):
    A = te.placeholder((n, k_), name="A")
    k = te.reduce_axis((0, k_), name="k")
    return [A, te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="S")]


@register_workload("steps_test_chain")
def wl_chain(n, m):
    A = te.placeholder((n, m), name="A")
    E = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="E")
    F = te.compute((n, m), lambda i, j: E[i, j] + 1.0, name="F")
    G = te.compute((n, m), lambda i, j: F[i, j] * F[i, j], name="G")
    return [A, G]


@register_workload("steps_test_conv")
def wl_conv(batch, ci, h, w, co, kh):
    data = te.placeholder((batch, ci, h, w), name="data")
    kern = te.placeholder((co, ci, kh, kh), name="kernel")
    p = kh // 2
    pad = te.compute(
        (batch, ci, h + 2 * p, w + 2 * p),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= p, y < h + p, x >= p, x < w + p), data[n, c, y - p, x - p], 0.0),
        name="pad")
    rc = te.reduce_axis((0, ci), name="rc")
    rh = te.reduce_axis((0, kh), name="rh")
    rw = te.reduce_axis((0, kh), name="rw")
    conv = te.compute(
        (batch, co, h, w),
        lambda n, f, y, x: te.sum(pad[n, rc, y + rh, x + rw] * kern[f, rc, rh, rw],
                                  axis=[rc, rh, rw]), name="conv")
    return [data, kern, conv]


def ref_conv(data, kern):
    kh = kern.shape[2]
    p = kh // 2
    padded = np.pad(data, ((0, 0), (0, 0), (p, p), (p, p)))
    h, w = data.shape[2:]
    out = np.zeros((data.shape[0], kern.shape[0], h, w), "float32")
    for dy in range(kh):
        for dx in range(kh):
            out += np.einsum("ncyx,fc->nfyx", padded[:, :, dy:dy + h, dx:dx + w],
                             kern[:, :, dy, dx])
    return out


# name -> (workload, args, numpy reference of the inputs)
WORKLOADS = {
    "matmul": ("steps_test_matmul", (32, 32, 32), lambda a, b: a @ b),
    "matmul_relu": ("steps_test_matmul_relu", (32, 32, 32), lambda a, b: np.maximum(a @ b, 0)),
    "rowsum": ("steps_test_rowsum", (16, 64), lambda a: a.sum(axis=1)),
    "chain": ("steps_test_chain", (8, 16), lambda a: (a * 2 + 1) ** 2),
    "conv": ("steps_test_conv", (1, 4, 8, 8, 4, 3), ref_conv),
}


@functools.lru_cache(maxsize=None)
def task_of(name):
    func, args, _ = WORKLOADS[name]
    return SearchTask(func=func, args=args)


def dag_of(name) -> ComputeDAG:
    return task_of(name).compute_dag


def make(name, *steps):
    state = dag_of(name).init_state()
    for step in steps:
        apply_step(state, step)
    return state


# ---------------------------------------------------------------- checks
def run_and_compare(name, state):
    dag = dag_of(name)
    sch, args = dag.apply_steps_from_state(state)
    mod = build(sch, args, name="kernel")
    ins = [(RNG.random([d.value for d in t.shape]) - 0.5).astype("float32")
           for t in args if isinstance(t.op, te.PlaceholderOp)]
    out = np.zeros([d.value for d in args[-1].shape], "float32")
    mod(*ins, out)
    np.testing.assert_allclose(out, WORKLOADS[name][2](*ins), rtol=1e-4, atol=1e-4)


TE_ANN = {S.ANN_UNROLL: "unroll", S.ANN_VECTORIZE: "vectorize", S.ANN_PARALLEL: "parallel"}
TE_ATTACH = {S.ROOT: "root", S.INLINED: "inline", S.ITER: "scope"}
TE_KIND = {IterVar.DataPar: S.SPATIAL, IterVar.CommReduce: S.REDUCTION}


def assert_mirrors_schedule(state, sch):
    """State stage i / iter j is schedule stage i / leaf j: names, extents, kinds,
    annotations, compute-at kind and attach point all agree."""
    assert [st.name for st in state.stages] == [ts.op.name for ts in sch.stages]
    for sid, (st, ts) in enumerate(zip(state.stages, sch.stages)):
        if st.is_placeholder:
            continue
        leaves = ts.leaf_iter_vars
        assert len(st.iters) == len(leaves), st.name
        for it, iv in zip(st.iters, leaves):
            assert it.extent == iv.dom.extent.value, (st.name, it.name)
            assert it.kind == TE_KIND.get(iv.iter_type, S.MIXED), (st.name, it.name)
            assert TE_ANN.get(it.annotation) == ts.annotations.get(iv), (st.name, it.name)
        assert TE_ATTACH[st.compute_at] == ts.attach_type, st.name
        if ts.attach_type == "scope":
            tgt = ts.attach_stage
            iv = resolve_attach_ivar(tgt, ts.attach_ivar)
            pos = [k for k, x in enumerate(tgt.leaf_iter_vars) if x is iv]
            assert state.attach_map.get(sid) == (sch.stages.index(tgt), pos[0]), st.name
        else:
            assert sid not in state.attach_map, st.name


def lowered_pair(name, state):
    dag = dag_of(name)
    sch, args = dag.apply_steps_from_state(state)
    code = dag.print_python_code_from_state(state)
    ns = dag.python_namespace()
    exec(code, ns)  # noqa: S102 - the code under test
    return code, str(lower(ns["s"], args, name="f")), str(lower(sch, args, name="f"))


@dataclass(frozen=True)
class FakeInput:
    task: object
    state: object


@dataclass(frozen=True)
class FakeResult:
    costs: tuple = (1.5e-3, 1.25e-3)
    error_no: int = 0
    all_cost: float = 0.75
    timestamp: float = 1700000000.0


def record_round_trip(name, state):
    task = task_of(name)
    rec = serialize.encode_record(FakeInput(task, state), FakeResult())
    back = Record.from_json(rec.to_json())
    assert back == rec
    return serialize.state_from_record(task, back)


# ---------------------------------------------------------------- scenarios
def tiled_matmul_with_cache_write():
    """An Ansor-like sketch: CHW + SSRSRS tiling + FSP + CA + FU + AN + PR."""
    return ("matmul", [
        ST.CacheWriteStep(2, "local"),                   # C.local 2, C 3
        ST.SplitStep(2, 0, 32, (2, 4, 2), True),
        ST.SplitStep(2, 4, 32, (2, 4, 2), True),
        ST.SplitStep(2, 8, 32, (4,), True),
        ST.ReorderStep(2, (0, 4, 1, 5, 8, 2, 6, 9, 3, 7)),
        ST.FollowSplitStep(3, 0, 1, 2),
        ST.FollowSplitStep(3, 3, 2, 2),
        ST.ReorderStep(3, (0, 3, 1, 4, 2, 5)),
        ST.ComputeAtStep(2, 3, 3),
        ST.FuseStep(3, (0, 1)),
        ST.AnnotationStep(3, 0, PAR),
        ST.AnnotationStep(2, 9, VEC),
        ST.PragmaStep(3, 0, "auto_unroll_max_step$16"),
        ST.AnnotationStep(3, 4, VEC),
    ])


SCENARIOS = {
    "AN": ("matmul_relu", [ST.SplitStep(2, 0, 32, (8,), True), ST.AnnotationStep(2, 0, PAR),
                           ST.AnnotationStep(2, 3, UNR), ST.AnnotationStep(3, 1, VEC)]),
    "FU": ("matmul_relu", [ST.FuseStep(3, (0, 1)), ST.AnnotationStep(3, 0, PAR),
                           ST.ComputeAtStep(2, 3, 0), ST.FuseStep(2, (0, 1))]),
    "PR": ("matmul", [ST.SplitStep(2, 2, 32, (4,), True),
                      ST.PragmaStep(2, 0, "auto_unroll_max_step$16")]),
    "RE": ("matmul", [ST.ReorderStep(2, (2, 0, 1))]),
    "SP": ("matmul", [ST.SplitStep(2, 0, 32, (4, 2), True),
                      ST.SplitStep(2, 3, 32, (2, 4), False),
                      ST.SplitStep(2, 6, 32, (5,), True)]),
    "FSP": ("matmul_relu", [ST.SplitStep(3, 0, 32, (4, 2), True),
                            ST.FollowSplitStep(2, 0, 0, 2),
                            ST.FollowSplitStep(2, 3, 0, 3),
                            ST.ComputeAtStep(2, 3, 1)]),
    "FFSP": ("matmul_relu", [ST.SplitStep(3, 0, 32, (4, 2), True),
                             ST.SplitStep(3, 3, 32, (4, 2), True),
                             ST.ReorderStep(3, (0, 3, 1, 4, 2, 5)),
                             ST.FuseStep(3, (0, 1)),
                             ST.FuseStep(2, (0, 1)),
                             ST.FollowFusedSplitStep(2, 0, (0, 1), 0, True),
                             ST.FollowFusedSplitStep(2, 0, (0, 1), 1, False)]),
    "SA": ("matmul_relu", [ST.StorageAlignStep(2, 0, 8, 1)]),
    "CA": ("conv", [ST.ComputeAtStep(1, 3, 2)]),
    "CA-tiled": ("matmul_relu", [
        ST.SplitStep(3, 0, 32, (2, 2, 2), True), ST.SplitStep(3, 4, 32, (2, 4, 2), True),
        ST.ReorderStep(3, (0, 4, 1, 5, 2, 6, 3, 7)),
        ST.SplitStep(2, 0, 32, (2, 2, 2), True), ST.SplitStep(2, 4, 32, (2, 4, 2), True),
        ST.SplitStep(2, 8, 32, (4,), True),
        ST.ReorderStep(2, (0, 4, 1, 5, 8, 2, 6, 9, 3, 7)),
        ST.ComputeAtStep(2, 3, 3), ST.FuseStep(3, (0, 1)), ST.AnnotationStep(3, 0, PAR),
        ST.AnnotationStep(2, 9, VEC), ST.PragmaStep(3, 0, "auto_unroll_max_step$16")]),
    "CI": ("chain", [ST.ComputeInlineStep(1), ST.ComputeInlineStep(2)]),
    "CI-conv": ("conv", [ST.ComputeInlineStep(1), ST.FuseStep(3, (0, 1, 2)),
                         ST.AnnotationStep(3, 0, PAR)]),
    "CR": ("chain", [ST.ComputeAtStep(1, 3, 0), ST.ComputeAtStep(2, 3, 1),
                     ST.ComputeRootStep(1)]),
    "CHR": ("matmul", [ST.CacheReadStep(0, "shared", (2,)), ST.SplitStep(3, 0, 32, (8,), True),
                       ST.ComputeAtStep(1, 3, 1)]),
    "CHW": ("matmul", [ST.CacheWriteStep(2, "local"), ST.SplitStep(3, 0, 32, (8,), True),
                       ST.ComputeAtStep(2, 3, 0), ST.AnnotationStep(3, 0, PAR)]),
    "RF": ("rowsum", [ST.SplitStep(1, 1, 64, (8,), True), ST.RfactorStep(1, 2, 1),
                      ST.ComputeAtStep(1, 2, 0), ST.AnnotationStep(2, 0, PAR)]),
    "RF-axis0": ("rowsum", [ST.SplitStep(1, 1, 64, (8,), True), ST.RfactorStep(1, 1, 0),
                            ST.AnnotationStep(1, 0, PAR)]),
    "sketch": tiled_matmul_with_cache_write(),
}

# schedule-API call each step code prints
PY_CALL = {"AN": r"\.(unroll|vectorize|parallel)\(", "FU": r"\.fuse\(", "PR": r"\.pragma\(",
           "RE": r"\.reorder\(", "SP": r"\.split\(", "FSP": r"\.split\(",
           "FFSP": r"\.split\(", "SA": r"\.storage_align\(", "CA": r"\.compute_at\(",
           "CI": r"\.compute_inline\(\)", "CR": r"\.compute_root\(\)",
           "CHR": r"s\.cache_read\(", "CHW": r"s\.cache_write\(", "RF": r"s\.rfactor\("}


@functools.lru_cache(maxsize=None)
def scenario_state(sid):
    name, steps = SCENARIOS[sid]
    return make(name, *steps)


def test_scenarios_cover_all_14_step_codes():
    codes = {s.CODE for _, steps in SCENARIOS.values() for s in steps}
    assert codes == set(ST.STEP_CLASSES) == set(STEP_FIELDS)
    assert len(codes) == 14


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_state_mirrors_replayed_schedule(sid):
    name, steps = SCENARIOS[sid]
    state = scenario_state(sid)
    assert state.transform_steps == steps
    sch, args = dag_of(name).apply_steps_from_state(state)
    assert args == dag_of(name).tensors
    assert_mirrors_schedule(state, sch)


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_replay_matches_numpy(sid):
    run_and_compare(SCENARIOS[sid][0], scenario_state(sid))


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_step_records_round_trip(sid):
    for step in scenario_state(sid).transform_steps:
        rec = step.to_record()
        assert rec[0] == step.CODE
        assert len(rec) == len(STEP_FIELDS[step.CODE]) + 1
        assert json.loads(json.dumps(rec)) == rec
        validate_step(rec, 0)                       # the records schema accepts it
        back = step_from_record(rec)
        assert back == step and type(back) is type(step)
        assert step_from_record(json.loads(json.dumps(rec))) == step


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_record_line_round_trip(sid):
    state = scenario_state(sid)
    back = record_round_trip(SCENARIOS[sid][0], state)
    assert str(back) == str(state)
    assert back.transform_steps == state.transform_steps
    assert back.attach_map == state.attach_map


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_python_code_lowers_identically(sid):
    name, steps = SCENARIOS[sid]
    code, from_code, from_state = lowered_pair(name, scenario_state(sid))
    assert from_code == from_state
    for step in steps:
        assert re.search(PY_CALL[step.CODE], code), (step.CODE, code)


@pytest.mark.parametrize("sid", ["AN", "SP", "CA", "CI", "CHW", "RF", "sketch"])
def test_scenario_changes_the_lowered_program(sid):
    """The Python-equivalence check is not vacuous: these schedules lower differently from
    the default one."""
    name = SCENARIOS[sid][0]
    _, _, scheduled = lowered_pair(name, scenario_state(sid))
    _, _, default = lowered_pair(name, dag_of(name).init_state())
    assert scheduled != default


# ---------------------------------------------------------------- State basics
def test_init_state_mirrors_ops():
    state = make("matmul_relu")
    assert [st.name for st in state.stages] == ["A", "B", "C", "R"]
    assert [st.is_placeholder for st in state.stages] == [True, True, False, False]
    c = state.stages[2]
    assert [(it.name, it.extent, it.kind, it.annotation) for it in c.iters] == [
        ("i", 32, S.SPATIAL, S.ANN_NONE), ("j", 32, S.SPATIAL, S.ANN_NONE),
        ("k", 32, S.REDUCTION, S.ANN_NONE)]
    assert state.attach_map == {} and state.transform_steps == [] and state.concrete
    assert str(state) == ("Placeholder: A, B\n"
                          "for i (0,32)\n  for j (0,32)\n    for k (0,32)\n      C = ...\n"
                          "for i (0,32)\n  for j (0,32)\n    R = ...\n")
    assert state.stage_id("C") == 2 and state.stage_id(2) == 2
    assert state.stage_id(dag_of("matmul_relu").tensors[-1]) == 3
    with pytest.raises(KeyError, match="nope"):
        state.stage_id("nope")


def test_apply_step_returns_result_and_records_history():
    state = make("matmul")
    assert apply_step(state, ST.SplitStep(2, 0, 32, (4, 2), True)) == [0, 1, 2]
    assert apply_step(state, ST.FuseStep(2, (1, 2))) == 1
    assert len(state.transform_steps) == 2
    assert dag_of("matmul").state_from_steps(state.transform_steps) == state


# ---------------------------------------------------------------- AN
def test_annotation_step_state():
    state = scenario_state("AN")
    c, r = state.stages[2], state.stages[3]
    assert [(it.name, it.annotation) for it in c.iters] == [
        ("i.0", PAR), ("i.1", S.ANN_NONE), ("j", S.ANN_NONE), ("k", UNR)]
    assert [(it.name, it.annotation) for it in r.iters] == [("i", S.ANN_NONE), ("j", VEC)]
    text = str(state)
    assert "parallel i.0 (0,4)" in text and "unroll k (0,32)" in text
    assert "vectorize j (0,32)" in text
    assert ST.AnnotationStep(2, 0, PAR).to_record() == ["AN", 2, 0, 3]


def test_annotation_step_prints_python():
    code, _, _ = lowered_pair("matmul_relu", scenario_state("AN"))
    assert "s[C].parallel(C_i_0)" in code
    assert "s[C].unroll(C_k)" in code
    assert "s[R].vectorize(R_j)" in code


def test_annotation_unroll_of_reduction_and_mixed_iterators_allowed():
    state = make("matmul", ST.FuseStep(2, (1, 2)))
    assert state.stages[2].iters[1].kind == S.MIXED
    apply_step(state, ST.AnnotationStep(2, 1, UNR))
    assert state.stages[2].iters[1].annotation == UNR


# ---------------------------------------------------------------- FU
def test_fuse_step_state_and_attach_update():
    state = scenario_state("FU")
    r, c = state.stages[3], state.stages[2]
    assert [(it.name, it.extent, it.kind, it.annotation) for it in r.iters] == [
        ("i@j@", 1024, S.SPATIAL, PAR)]
    assert [(it.name, it.extent, it.kind) for it in c.iters] == [
        ("i@j@", 1024, S.SPATIAL), ("k", 32, S.REDUCTION)]
    assert state.attach_map == {2: (3, 0)}
    assert str(state) == ("Placeholder: A, B\nparallel i@j@ (0,1024)\n"
                          "  for i@j@ (0,1024)\n    for k (0,32)\n      C = ...\n  R = ...\n")
    mixed = make("matmul", ST.FuseStep(2, (1, 2)))
    assert [(it.name, it.extent, it.kind) for it in mixed.stages[2].iters] == [
        ("i", 32, S.SPATIAL), ("j@k@", 1024, S.MIXED)]
    _, a, b = lowered_pair("matmul", mixed)
    assert a == b


def test_fuse_remaps_attach_points_of_fused_and_later_iterators():
    # attached at the inner fused iterator -> the fused one
    s1 = make("matmul_relu", ST.ComputeAtStep(2, 3, 1), ST.FuseStep(3, (0, 1)))
    assert s1.attach_map == {2: (3, 0)}
    # attached after the fused range -> shifted left
    s2 = make("matmul_relu", ST.SplitStep(3, 0, 32, (4,), True), ST.ComputeAtStep(2, 3, 2),
              ST.FuseStep(3, (0, 1)))
    assert s2.attach_map == {2: (3, 1)}
    assert [it.name for it in s2.stages[3].iters] == ["i.0@i.1@", "j"]
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(s2)
    assert_mirrors_schedule(s2, sch)
    run_and_compare("matmul_relu", s2)


def test_fuse_prints_python():
    code, _, _ = lowered_pair("matmul_relu", scenario_state("FU"))
    assert "R_i_j = s[R].fuse(R_i, R_j)" in code
    assert "s[R].parallel(R_i_j)" in code


# ---------------------------------------------------------------- PR
def test_pragma_step_state_and_schedule():
    state = scenario_state("PR")
    assert state.stages[2].auto_unroll_max_step == 16
    assert "# auto_unroll_max_step=16\n" in str(state)
    sch, _ = dag_of("matmul").apply_steps_from_state(state)
    stage = sch.stages[2]
    assert stage.pragmas[stage.leaf_iter_vars[0]] == [
        ("pragma_auto_unroll_max_step", 16), ("pragma_unroll_explicit", True)]
    code, _, _ = lowered_pair("matmul", state)
    assert 's[C].pragma(C_i, "auto_unroll_max_step", 16)' in code
    assert 's[C].pragma(C_i, "unroll_explicit", True)' in code
    assert ST.PragmaStep(2, 0, "auto_unroll_max_step$16").to_record() == [
        "PR", 2, 0, "auto_unroll_max_step$16"]


# ---------------------------------------------------------------- RE
def test_reorder_step_state():
    state = scenario_state("RE")
    assert [(it.name, it.kind) for it in state.stages[2].iters] == [
        ("k", S.REDUCTION), ("i", S.SPATIAL), ("j", S.SPATIAL)]
    assert str(state).startswith("Placeholder: A, B\nfor k (0,32)\n  for i (0,32)\n")
    code, _, _ = lowered_pair("matmul", state)
    assert "s[C].reorder(C_k, C_i, C_j)" in code


def test_reorder_remaps_attach_point():
    state = make("matmul_relu", ST.ComputeAtStep(2, 3, 0), ST.ReorderStep(3, (1, 0)))
    assert state.attach_map == {2: (3, 1)}
    assert str(state).index("for i (0,32)\n    for i (0,32)") > 0   # C under R's i, now inner
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)


# ---------------------------------------------------------------- SP
def test_split_step_state():
    state = scenario_state("SP")
    assert [(it.name, it.extent, it.kind) for it in state.stages[2].iters] == [
        ("i.0", 4, S.SPATIAL), ("i.1", 4, S.SPATIAL), ("i.2", 2, S.SPATIAL),
        ("j.0", 2, S.SPATIAL), ("j.1", 4, S.SPATIAL), ("j.2", 4, S.SPATIAL),
        ("k.0", 7, S.REDUCTION), ("k.1", 5, S.REDUCTION)]
    assert state.concrete


def test_split_prints_python():
    code, _, _ = lowered_pair("matmul", scenario_state("SP"))
    assert "C_i_o1, C_i_2 = s[C].split(C_i, factor=2)" in code
    assert "C_i_0, C_i_1 = s[C].split(C_i_o1, factor=4)" in code
    assert "C_j_0, C_j_i0 = s[C].split(C_j, nparts=2)" in code
    assert "C_j_1, C_j_2 = s[C].split(C_j_i0, nparts=4)" in code
    assert "C_k_0, C_k_1 = s[C].split(C_k, factor=5)" in code


def test_split_remaps_attach_point_to_innermost_part():
    state = make("matmul_relu", ST.ComputeAtStep(2, 3, 1), ST.SplitStep(3, 1, 32, (4,), True))
    assert state.attach_map == {2: (3, 2)}
    apply_step(state, ST.SplitStep(3, 0, 32, (8,), True))     # iterator before: shift
    assert state.attach_map == {2: (3, 3)}
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)


def test_split_with_unknown_lengths_is_a_sketch():
    state = make("matmul", ST.SplitStep(2, 2, 32, (None, 4), True))
    assert not state.concrete
    assert [(it.name, it.extent) for it in state.stages[2].iters][2:] == [
        ("k.0", None), ("k.1", None), ("k.2", 4)]
    assert "for k.0 (0,?)" in str(state)
    assert state.transform_steps[0].to_record() == ["SP", 2, 2, 32, [0, 4], 1]
    assert step_from_record(["SP", 2, 2, 32, [0, 4], 1]) == state.transform_steps[0]
    with pytest.raises(InvalidStepError, match="unknown lengths"):
        dag_of("matmul").apply_steps_from_state(state)
    assert state.copy().concrete is False


def test_split_record_with_zero_extent_means_unknown_extent():
    step = step_from_record(["SP", 2, 0, 0, [4], 1])
    assert step == ST.SplitStep(2, 0, None, (4,), True)
    state = make("matmul", step)
    assert [it.extent for it in state.stages[2].iters] == [8, 4, 32, 32]


# ---------------------------------------------------------------- FSP / FFSP
def test_follow_split_step_state():
    state = scenario_state("FSP")
    assert [(it.name, it.extent) for it in state.stages[3].iters] == [
        ("i.0", 4), ("i.1", 4), ("i.2", 2), ("j", 32)]
    # n_split 2 -> (4, 2): same extents as the followed split
    assert [(it.name, it.extent) for it in state.stages[2].iters][:3] == [
        ("i.0", 4), ("i.1", 4), ("i.2", 2)]
    # n_split 3 = len(lengths) + 1 -> (4, 2, 1), as TVM's ExtractSplitLengths
    assert [(it.name, it.extent) for it in state.stages[2].iters][3:] == [
        ("j.0", 4), ("j.1", 4), ("j.2", 2), ("j.3", 1), ("k", 32)]
    assert state.transform_steps[1].lengths(state.transform_steps) == (4, 2)
    assert state.transform_steps[2].lengths(state.transform_steps) == (4, 2, 1)
    assert ST.FollowSplitStep(2, 0, 0, 1).lengths(state.transform_steps) == (8,)
    assert state.attach_map == {2: (3, 1)}


def test_follow_split_prints_concrete_factors():
    code, _, _ = lowered_pair("matmul_relu", scenario_state("FSP"))
    assert "C_i_o1, C_i_2 = s[C].split(C_i, factor=2)" in code
    assert "C_j_o2, C_j_3 = s[C].split(C_j, factor=1)" in code


def test_follow_fused_split_step_state():
    state = scenario_state("FFSP")
    assert [(it.name, it.extent) for it in state.stages[3].iters] == [
        ("i.0@j.0@", 16), ("i.1", 4), ("j.1", 4), ("i.2", 2), ("j.2", 2)]
    c = state.stages[2].iters
    # level 0: 4 * 4 = 16 as a factor; then level 1: 2 * 2 = 4 as nparts
    assert [(it.name, it.extent, it.kind) for it in c] == [
        ("i@j@.0.0", 4, S.SPATIAL), ("i@j@.0.1", 16, S.SPATIAL), ("i@j@.1", 16, S.SPATIAL),
        ("k", 32, S.REDUCTION)]
    steps = state.transform_steps
    assert steps[5].length(steps) == 16 and steps[6].length(steps) == 4
    code, _, _ = lowered_pair("matmul_relu", state)
    assert "C_i_j__0, C_i_j__1 = s[C].split(C_i_j, factor=16)" in code
    assert "C_i_j__0_0, C_i_j__0_1 = s[C].split(C_i_j__0, nparts=4)" in code


def test_follow_split_with_unknown_source_lengths():
    state = make("matmul", ST.SplitStep(2, 0, 32, (None, 4), True),
                 ST.FollowSplitStep(2, 3, 0, 1), ST.FollowFusedSplitStep(2, 5, (0,), 0, True))
    assert [it.extent for it in state.stages[2].iters][3:] == [None, None, None, None]
    assert not state.concrete


# ---------------------------------------------------------------- SA
def test_storage_align_step_state_and_schedule():
    state = scenario_state("SA")
    assert state.stages[2].storage_offset == 1
    assert str(state) == str(make("matmul_relu"))           # not shown in the loop nest
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    st = sch.stages[2]
    assert st.storage_aligns == {st.op.axis[0]: (8, 1)}
    code, _, _ = lowered_pair("matmul_relu", state)
    assert "s[C].storage_align(C_i, 8, 1)" in code
    assert ST.StorageAlignStep(2, 0, 8, 1).to_record() == ["SA", 2, 0, 8, 1]


# ---------------------------------------------------------------- CA / CI / CR
def test_compute_at_step_state():
    state = scenario_state("CA")
    assert state.stages[1].compute_at == S.ITER
    assert state.attach_map == {1: (3, 2)}
    assert str(state) == (
        "Placeholder: data, kernel\n"
        "for n (0,1)\n  for f (0,4)\n    for y (0,8)\n"
        "      for n (0,1)\n        for c (0,4)\n          for y (0,10)\n"
        "            for x (0,10)\n              pad = ...\n"
        "      for x (0,8)\n        for rc (0,4)\n          for rh (0,3)\n"
        "            for rw (0,3)\n              conv = ...\n")
    code, _, _ = lowered_pair("conv", state)
    assert "s[pad].compute_at(s[conv], conv_y)" in code


def test_compute_inline_step_state():
    state = scenario_state("CI")
    assert [st.compute_at for st in state.stages] == [S.ROOT, S.INLINED, S.INLINED, S.ROOT]
    assert str(state) == "Placeholder: A\nfor i (0,8)\n  for j (0,16)\n    G = ...\n"
    code, _, _ = lowered_pair("chain", state)
    assert "s[E].compute_inline()" in code and "s[F].compute_inline()" in code
    conv = scenario_state("CI-conv")
    assert conv.stages[1].compute_at == S.INLINED and "pad" not in str(conv)


def test_compute_inline_of_attached_stage_drops_attach_entry():
    state = make("chain", ST.ComputeAtStep(1, 3, 0), ST.ComputeInlineStep(1))
    assert state.attach_map == {} and state.stages[1].compute_at == S.INLINED
    run_and_compare("chain", state)


def test_compute_root_step_state():
    state = scenario_state("CR")
    assert state.attach_map == {2: (3, 1)}
    assert [st.compute_at for st in state.stages] == [S.ROOT, S.ROOT, S.ITER, S.ROOT]
    assert str(state) == ("Placeholder: A\nfor i (0,8)\n  for j (0,16)\n    E = ...\n"
                          "for i (0,8)\n  for j (0,16)\n    for i (0,8)\n      for j (0,16)\n"
                          "        F = ...\n    G = ...\n")
    code, _, _ = lowered_pair("chain", state)
    assert "s[E].compute_root()" in code
    # a CA undone by CR prints as the initial state but keeps its history
    undone = make("chain", ST.ComputeAtStep(1, 3, 0), ST.ComputeRootStep(1))
    assert str(undone) == str(make("chain")) and len(undone.transform_steps) == 2


def test_compute_at_then_inline_and_root_records():
    assert ST.ComputeAtStep(1, 3, 2).to_record() == ["CA", 1, 3, 2]
    assert ST.ComputeInlineStep(1).to_record() == ["CI", 1]
    assert ST.ComputeRootStep(1).to_record() == ["CR", 1]


# ---------------------------------------------------------------- CHR / CHW / RF
def test_cache_read_step_inserts_stage_after_source():
    state = make("matmul")
    assert apply_step(state, ST.CacheReadStep(0, "shared", (2,))) == 1
    assert [st.name for st in state.stages] == ["A", "A.shared", "B", "C"]
    new = state.stages[1]
    assert not new.is_placeholder and new.compute_at == S.ROOT
    assert [(it.name, it.extent, it.kind) for it in new.iters] == [
        ("ax0", 32, S.SPATIAL), ("ax1", 32, S.SPATIAL)]
    assert {t.op.name for t in state.stages[3].op.input_tensors} == {"A.shared", "B"}
    assert "A.shared = ..." in str(state)


def test_cache_read_renumbers_attach_map():
    state = make("matmul_relu", ST.SplitStep(3, 0, 32, (4,), True), ST.ComputeAtStep(2, 3, 1))
    apply_step(state, ST.CacheReadStep(0, "shared", (2,)))
    assert [st.name for st in state.stages] == ["A", "A.shared", "B", "C", "R"]
    assert state.attach_map == {3: (4, 1)}
    assert [it.name for it in state.stages[4].iters] == ["i.0", "i.1", "j"]  # loops kept
    apply_step(state, ST.ComputeAtStep(1, 3, 0))
    assert state.attach_map == {3: (4, 1), 1: (3, 0)}
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)
    back = record_round_trip("matmul_relu", state)
    assert str(back) == str(state)
    _, a, b = lowered_pair("matmul_relu", state)
    assert a == b


def test_cache_read_prints_python():
    code, _, _ = lowered_pair("matmul", scenario_state("CHR"))
    assert 'A_shared = s.cache_read(A, "shared", [C])' in code
    assert "s[A_shared].compute_at(s[C], C_i_1)" in code
    assert ST.CacheReadStep(0, "shared", (2,)).to_record() == ["CHR", 0, "shared", [2]]


def test_cache_write_step_inserts_stage_before_original():
    state = make("matmul_relu")
    assert apply_step(state, ST.CacheWriteStep(2, "local")) == 2
    assert [st.name for st in state.stages] == ["A", "B", "C.local", "C", "R"]
    assert [(it.name, it.kind) for it in state.stages[2].iters] == [
        ("i_c", S.SPATIAL), ("j_c", S.SPATIAL), ("k_c", S.REDUCTION)]
    assert [(it.name, it.kind) for it in state.stages[3].iters] == [
        ("i", S.SPATIAL), ("j", S.SPATIAL)]
    assert state.stages[3].op.reduce_axis == () or not state.stages[3].op.reduce_axis
    code, _, _ = lowered_pair("matmul_relu", state)
    assert 'C_local = s.cache_write(C, "local")' in code
    assert ST.CacheWriteStep(2, "local").to_record() == ["CHW", 2, "local"]


def test_cache_write_renumbers_attach_map():
    state = make("matmul_relu", ST.CacheReadStep(0, "shared", (2,)),
                 ST.ComputeAtStep(1, 3, 1))
    assert state.attach_map == {1: (3, 1)}
    apply_step(state, ST.CacheWriteStep(4, "local"))      # R: inserted before R, after C
    assert [st.name for st in state.stages] == ["A", "A.shared", "B", "C", "R.local", "R"]
    assert state.attach_map == {1: (3, 1)}
    apply_step(state, ST.ComputeAtStep(4, 5, 1))
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)
    # attached stage and target both after the inserted stage: both renumbered
    state = make("matmul_relu", ST.CacheReadStep(2, "shared", (3,)),
                 ST.ComputeAtStep(3, 4, 1))
    assert [st.name for st in state.stages] == ["A", "B", "C", "C.shared", "R"]
    apply_step(state, ST.CacheWriteStep(2, "local"))
    assert [st.name for st in state.stages] == ["A", "B", "C.local", "C", "C.shared", "R"]
    assert state.attach_map == {4: (5, 1)}
    assert [st.compute_at for st in state.stages[2:]] == [S.ROOT, S.ROOT, S.ITER, S.ROOT]
    apply_step(state, ST.ComputeAtStep(2, 3, 0))
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)
    assert str(record_round_trip("matmul_relu", state)) == str(state)
    _, a, b = lowered_pair("matmul_relu", state)
    assert a == b


def test_rfactor_step_state():
    state = make("rowsum", ST.SplitStep(1, 1, 64, (8,), True))
    assert apply_step(state, ST.RfactorStep(1, 2, 1)) == 1
    assert [st.name for st in state.stages] == ["A", "S.rf", "S"]
    assert [(it.name, it.extent, it.kind) for it in state.stages[1].iters] == [
        ("i", 16, S.SPATIAL), ("k_inner", 8, S.SPATIAL), ("k_outer", 8, S.REDUCTION)]
    assert [(it.name, it.extent, it.kind) for it in state.stages[2].iters] == [
        ("i", 16, S.SPATIAL), ("k_inner_v", 8, S.REDUCTION)]
    rf = make("rowsum", ST.SplitStep(1, 1, 64, (8,), True), ST.RfactorStep(1, 1, 0))
    assert [(it.name, it.extent, it.kind) for it in rf.stages[1].iters] == [
        ("k_outer", 8, S.SPATIAL), ("i", 16, S.SPATIAL), ("k_inner", 8, S.REDUCTION)]
    assert ST.RfactorStep(1, 2, 1).to_record() == ["RF", 1, 2, 1]


def test_rfactor_renumbers_attach_map():
    state = make("matmul_relu", ST.CacheReadStep(2, "shared", (3,)),
                 ST.ComputeAtStep(3, 4, 1), ST.SplitStep(2, 2, 32, (4,), True))
    assert apply_step(state, ST.RfactorStep(2, 3, 0)) == 2
    assert [st.name for st in state.stages] == ["A", "B", "C.rf", "C", "C.shared", "R"]
    assert state.attach_map == {4: (5, 1)}
    assert [(it.name, it.kind) for it in state.stages[2].iters] == [
        ("k_inner", S.SPATIAL), ("i", S.SPATIAL), ("j", S.SPATIAL), ("k_outer", S.REDUCTION)]
    apply_step(state, ST.ComputeAtStep(2, 3, 1))
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)
    assert str(record_round_trip("matmul_relu", state)) == str(state)
    _, a, b = lowered_pair("matmul_relu", state)
    assert a == b


def test_rfactor_prints_python():
    code, _, _ = lowered_pair("rowsum", scenario_state("RF"))
    assert "S_rf = s.rfactor(S, S_k_1, 1)" in code
    assert "s[S_rf].compute_at(s[S], S_i)" in code
    assert "s[S].parallel(S_i)" in code


def test_full_sketch_state_text():
    state = scenario_state("sketch")
    assert str(state) == (
        "Placeholder: A, B\n"
        "parallel i.0@j.0@ (0,4)\n"
        "  for i.1 (0,2)\n"
        "    for j.1 (0,2)\n"
        "      for i_c.0 (0,2)\n        for j_c.0 (0,2)\n          for i_c.1 (0,2)\n"
        "            for j_c.1 (0,2)\n              for k_c.0 (0,8)\n"
        "                for i_c.2 (0,4)\n                  for j_c.2 (0,4)\n"
        "                    for k_c.1 (0,4)\n                      for i_c.3 (0,2)\n"
        "                        vectorize j_c.3 (0,2)\n"
        "                          C.local = ...\n"
        "      for i.2 (0,8)\n        vectorize j.2 (0,8)\n"
        "          # auto_unroll_max_step=16\n          C = ...\n")
    assert state.attach_map == {2: (3, 2)}


# ---------------------------------------------------------------- invalid steps
INVALID = [
    # (workload, prefix steps, bad step, message regex)
    ("matmul", [], ST.AnnotationStep(7, 0, PAR), r"AN: stage id 7 out of range \[0, 3\)"),
    ("matmul", [], ST.AnnotationStep(-1, 0, PAR), r"stage id -1 out of range"),
    ("matmul", [], ST.AnnotationStep(0, 0, PAR), r"stage 0 \(A\) is a placeholder"),
    ("matmul", [], ST.AnnotationStep(2, 3, PAR), r"iterator id 3 out of range for stage C"),
    ("matmul", [], ST.AnnotationStep(2, 2, VEC), r"cannot vectorize C\.k: it is not a spatial"),
    ("matmul", [], ST.AnnotationStep(2, 2, PAR), r"cannot parallel C\.k"),
    ("matmul", [ST.FuseStep(2, (1, 2))], ST.AnnotationStep(2, 1, VEC),
     r"cannot vectorize C\.j@k@"),
    ("matmul", [ST.AnnotationStep(2, 0, UNR)], ST.AnnotationStep(2, 0, PAR),
     r"C\.i is already annotated unroll"),
    ("matmul", [], ST.AnnotationStep(2, 0, 9), r"unsupported annotation 9"),
    ("matmul", [], ST.FuseStep(2, (0, 2)), r"FU: iterators \[0, 2\] of stage C are not "
     "consecutive"),
    ("matmul", [], ST.FuseStep(2, (1, 0)), r"not consecutive"),
    ("matmul", [], ST.FuseStep(2, ()), r"not consecutive"),
    ("matmul", [], ST.FuseStep(2, (2, 3)), r"iterator id 3 out of range"),
    ("matmul", [], ST.FuseStep(5, (0, 1)), r"FU: stage id 5 out of range"),
    ("matmul", [], ST.PragmaStep(2, 0, "unroll_explicit$1"), r"PR: unsupported pragma"),
    ("matmul", [], ST.PragmaStep(2, 0, "auto_unroll_max_step$x"), r"unsupported pragma"),
    ("matmul", [], ST.PragmaStep(2, 0, "auto_unroll_max_step"), r"unsupported pragma"),
    ("matmul", [], ST.PragmaStep(2, 4, "auto_unroll_max_step$4"), r"iterator id 4"),
    ("matmul", [], ST.ReorderStep(2, (0, 0, 1)), r"RE: \[0, 0, 1\] is not a permutation of "
     "the 3 iterators of stage C"),
    ("matmul", [], ST.ReorderStep(2, (0, 1)), r"not a permutation"),
    ("matmul", [], ST.ReorderStep(2, (0, 1, 2, 3)), r"not a permutation"),
    ("matmul", [], ST.ReorderStep(9, (0,)), r"RE: stage id 9 out of range"),
    ("matmul", [], ST.SplitStep(2, 0, 64, (4,), True), r"SP: iterator i has extent 32, the "
     "step expects 64"),
    ("matmul", [], ST.SplitStep(2, 0, 32, (0,), True), r"must be positive ints"),
    ("matmul", [], ST.SplitStep(2, 0, 32, (4, -2), True), r"must be positive ints"),
    ("matmul", [], ST.SplitStep(2, 0, 32, (2.5,), True), r"must be positive ints"),
    ("matmul", [], ST.SplitStep(2, 3, 32, (4,), True), r"iterator id 3 out of range"),
    ("matmul", [], ST.SplitStep(1, 0, 32, (4,), True), r"placeholder"),
    ("matmul", [ST.ReorderStep(2, (1, 0, 2))], ST.FollowSplitStep(2, 0, 0, 1),
     r"FSP: step 0 is not a split step"),
    ("matmul", [], ST.FollowSplitStep(2, 0, 0, 1), r"FSP: step 0 is not a split step"),
    ("matmul", [ST.SplitStep(2, 0, 32, (4,), True)], ST.FollowSplitStep(2, 2, 0, 3),
     r"FSP: n_split 3 out of range"),
    ("matmul", [ST.SplitStep(2, 0, 32, (4,), True)], ST.FollowSplitStep(2, 2, 0, 0),
     r"n_split 0 out of range"),
    ("matmul", [ST.FuseStep(2, (0, 1))], ST.FollowFusedSplitStep(2, 0, (0,), 0, True),
     r"FFSP: step 0 is not a split with level 0"),
    ("matmul", [ST.SplitStep(2, 0, 32, (4,), True)],
     ST.FollowFusedSplitStep(2, 0, (0,), 1, True), r"not a split with level 1"),
    ("matmul", [], ST.StorageAlignStep(2, 0, 0, 0), r"SA: need factor >= 1"),
    ("matmul", [], ST.StorageAlignStep(2, 0, 4, 4), r"0 <= offset < factor"),
    ("matmul", [], ST.StorageAlignStep(2, 5, 4, 1), r"iterator id 5"),
    ("matmul_relu", [], ST.ComputeAtStep(2, 2, 0), r"CA: bad target stage 2 for stage C"),
    ("matmul_relu", [], ST.ComputeAtStep(2, 4, 0), r"bad target stage 4"),
    ("matmul_relu", [], ST.ComputeAtStep(2, 0, 0), r"target stage A is inlined or a "
     "placeholder"),
    ("matmul_relu", [], ST.ComputeAtStep(2, 3, 2), r"iterator id 2 out of range for stage R"),
    ("matmul_relu", [ST.ComputeAtStep(2, 3, 0)], ST.ComputeAtStep(3, 2, 0),
     r"CA: target stage C is a producer of R"),
    ("chain", [ST.ComputeAtStep(1, 2, 0), ST.ComputeAtStep(2, 3, 0)],
     ST.ComputeAtStep(3, 1, 0), r"target stage E is a producer of G"),
    ("chain", [ST.ComputeInlineStep(2)], ST.ComputeAtStep(1, 2, 0),
     r"target stage F is inlined"),
    ("matmul_relu", [], ST.ComputeInlineStep(3), r"CI: R is a reduction or an output"),
    ("matmul_relu", [], ST.ComputeInlineStep(2), r"CI: C is a reduction"),
    ("chain", [ST.ComputeAtStep(1, 2, 0)], ST.ComputeInlineStep(2),
     r"CI: stages are attached to F; cannot inline it"),
    ("chain", [], ST.ComputeInlineStep(0), r"placeholder"),
    ("chain", [], ST.ComputeInlineStep(4), r"CI: stage id 4 out of range"),
    ("chain", [], ST.ComputeRootStep(4), r"CR: stage id 4 out of range"),
    ("matmul", [], ST.CacheReadStep(3, "shared", (2,)), r"CHR: stage id 3 out of range"),
    ("matmul", [], ST.CacheReadStep(-1, "shared", (2,)), r"CHR: stage id -1 out of range"),
    ("matmul_relu", [], ST.CacheReadStep(0, "shared", (3,)),
     r"CHR: stage 3 is not a reader of A"),
    ("matmul", [], ST.CacheWriteStep(0, "local"), r"CHW: stage 0 \(A\) is a placeholder"),
    ("matmul", [], ST.CacheWriteStep(3, "local"), r"CHW: stage id 3 out of range"),
    ("matmul", [ST.SplitStep(2, 0, 32, (4,), True)], ST.CacheWriteStep(2, "local"),
     r"CHW.*must be applied before the stage is split"),
    ("matmul", [], ST.RfactorStep(2, 0, 0), r"RF: C\.i is not a reduction iterator"),
    ("matmul", [], ST.RfactorStep(2, 3, 0), r"RF: iterator id 3 out of range"),
    ("rowsum", [], ST.RfactorStep(1, 1, 5), r"RF: .*factor_axis 5 out of range"),
    ("rowsum", [], ST.RfactorStep(0, 0, 0), r"RF: stage 0 \(A\) is a placeholder"),
]


@pytest.mark.parametrize("name,prefix,bad,pattern", INVALID,
                         ids=[f"{k}-{case[2].CODE}" for k, case in enumerate(INVALID)])
def test_invalid_step_raises_and_leaves_state_unchanged(name, prefix, bad, pattern):
    state = make(name, *prefix)
    before = (str(state), list(state.stages), dict(state.attach_map),
              list(state.transform_steps))
    with pytest.raises(InvalidStepError, match=pattern):
        apply_step(state, bad)
    assert (str(state), list(state.stages), dict(state.attach_map),
            list(state.transform_steps)) == before


def test_invalid_step_error_is_a_value_error():
    with pytest.raises(ValueError):
        apply_step(make("matmul"), ST.ReorderStep(2, (0,)))


def test_replaying_a_step_that_no_longer_applies_raises_invalid_step():
    """A record whose split does not fit the replayed schedule (e.g. the workload
    changed): replay reports InvalidStepError, not a raw ScheduleError."""
    sch = dag_of("matmul").replay([ST.SplitStep(2, 0, 32, (4,), True)])
    with pytest.raises(InvalidStepError, match="SP: stage 2 iterator 9 does not exist"):
        ST.apply_to_schedule(ST.SplitStep(2, 9, 32, (4,), True), sch, [])
    with pytest.raises(InvalidStepError, match="SA: storage_align on stage C"):
        ST.apply_to_schedule(ST.StorageAlignStep(2, 0, 8, 1), sch, [])  # i.0: not a root axis


MALFORMED = [
    (["XX", 1], r"unknown step record \['XX', 1\]; expected one of \['AN', 'CA'"),
    ([], r"unknown step record"),
    ("SP", r"unknown step record"),
    (None, r"unknown step record"),
    (["SP", 2, 0], r"malformed SP step record"),
    (["CI"], r"malformed CI step record"),
    (["CI", 2, 5], r"malformed CI step record"),
    (["AN", 2, 0], r"malformed AN step record"),
    (["CA", 1, 2, 3, 4], r"malformed CA step record"),
    (["FU", 2, 3], r"FU: fused ids must be a list of ints"),
    (["FU", 2, [0, True]], r"FU: fused ids must be a list of ints"),
    (["RE", 2, "012"], r"RE: order must be a list of ints"),
    (["CHR", 0, "shared", 2], r"CHR: readers must be a list of ints"),
    (["FFSP", 2, 0, [0.5], 0, 1], r"FFSP: src steps must be a list of ints"),
    (["SP", 2, 0, 32, 4, 1], r"malformed SP step record"),
]


@pytest.mark.parametrize("rec,pattern", MALFORMED)
def test_malformed_step_record_raises(rec, pattern):
    with pytest.raises(InvalidStepError, match=pattern):
        step_from_record(rec)


def test_step_from_record_decodes_every_code():
    recs = [["AN", 2, 0, 3], ["FU", 2, [0, 1]], ["PR", 2, 0, "auto_unroll_max_step$64"],
            ["RE", 2, [1, 0, 2]], ["SP", 2, 0, 32, [4, 2], 0], ["FSP", 2, 1, 0, 2],
            ["FFSP", 2, 0, [0, 1], 1, 0], ["SA", 2, 0, 16, 3], ["CA", 2, 3, 1], ["CI", 2],
            ["CR", 2], ["CHR", 0, "shared", [2, 3]], ["CHW", 2, "local"], ["RF", 2, 2, 0]]
    expected = [ST.AnnotationStep(2, 0, 3), ST.FuseStep(2, (0, 1)),
                ST.PragmaStep(2, 0, "auto_unroll_max_step$64"), ST.ReorderStep(2, (1, 0, 2)),
                ST.SplitStep(2, 0, 32, (4, 2), False), ST.FollowSplitStep(2, 1, 0, 2),
                ST.FollowFusedSplitStep(2, 0, (0, 1), 1, False), ST.StorageAlignStep(2, 0, 16, 3),
                ST.ComputeAtStep(2, 3, 1), ST.ComputeInlineStep(2), ST.ComputeRootStep(2),
                ST.CacheReadStep(0, "shared", (2, 3)), ST.CacheWriteStep(2, "local"),
                ST.RfactorStep(2, 2, 0)]
    assert [step_from_record(r) for r in recs] == expected
    assert [s.to_record() for s in expected] == recs
    assert {r[0] for r in recs} == set(ST.STEP_CLASSES)


# ---------------------------------------------------------------- known bugs
def test_bug_annotation_none_is_rejected_or_a_no_op():
    state = make("matmul")
    try:
        apply_step(state, ST.AnnotationStep(2, 0, S.ANN_NONE))
    except InvalidStepError:
        return                                           # rejected: fine
    _, a, b = lowered_pair("matmul", state)               # TVM: kNone is a no-op
    assert a == b


def test_bug_compute_at_onto_producer_is_rejected():
    state = make("matmul_relu")
    with pytest.raises(InvalidStepError, match="CA"):
        apply_step(state, ST.ComputeAtStep(3, 2, 0))     # R (reads C) at C


def test_bug_compute_at_replay_error_is_invalid_step():
    sch = dag_of("matmul_relu").replay([])
    with pytest.raises(InvalidStepError):
        ST.apply_to_schedule(ST.ComputeAtStep(3, 2, 0), sch, [])


@pytest.mark.parametrize("step", [ST.CacheWriteStep(2, "local"), ST.RfactorStep(2, 2, 0)])
def test_bug_dataflow_step_keeps_compute_at_of_attached_stage(step):
    state = make("matmul_relu", ST.ComputeAtStep(2, 3, 1), step)
    assert state.attach_map == {3: (4, 1)}
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)


def test_bug_cache_read_bad_reader_is_invalid_step():
    with pytest.raises(InvalidStepError):
        apply_step(make("matmul"), ST.CacheReadStep(0, "shared", (9,)))


def test_bug_split_with_empty_lengths():
    state = make("matmul")
    try:
        apply_step(state, ST.SplitStep(2, 0, 32, (), True))
    except InvalidStepError:
        return                                           # rejected: fine
    apply_step(state, ST.AnnotationStep(2, 0, PAR))
    _, a, b = lowered_pair("matmul", state)               # NameError: C_i_0
    assert a == b


def test_bug_storage_align_on_reduction_iterator_is_rejected_by_state():
    with pytest.raises(InvalidStepError):
        apply_step(make("matmul"), ST.StorageAlignStep(2, 2, 8, 1))


@pytest.mark.parametrize("rec", [["SP", 2, 0, 32, [4], 1, 99], ["FU", 2, [0, 1], 5],
                                 ["RE", 2, [1, 0], 0], ["CHR", 0, "shared", [2], 1],
                                 ["FFSP", 2, 0, [0], 0, 1, 1]])
def test_bug_step_record_with_extra_fields_is_rejected(rec):
    with pytest.raises(InvalidStepError, match="malformed"):
        step_from_record(rec)


def test_bug_step_from_record_accepts_validated_record_tuples():
    rec = validate_step(["FU", 2, [0, 1]], 0)
    assert rec == ("FU", 2, (0, 1))
    assert step_from_record(rec) == ST.FuseStep(2, (0, 1))


def test_bug_mixed_fuse_of_reduction_stage_builds():
    run_and_compare("matmul", make("matmul", ST.FuseStep(2, (1, 2))))


def test_bug_cache_write_of_stage_with_attached_stages():
    state = make("matmul_relu", ST.CacheReadStep(0, "shared", (2,)), ST.ComputeAtStep(1, 3, 1))
    try:
        apply_step(state, ST.CacheWriteStep(3, "local"))
    except InvalidStepError:
        return                                           # rejected: fine
    sch, args = dag_of("matmul_relu").apply_steps_from_state(state)
    lower(sch, args, name="f")                            # or it must at least lower
