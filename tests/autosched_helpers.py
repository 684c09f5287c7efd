"""Shared workloads, scenarios and checks for the autosched step tests."""
import functools
import zlib
from dataclasses import dataclass

import numpy as np

from autosched import state as S
from autosched import steps as ST
from autosched.compute_dag import ComputeDAG
from autosched.measure.measurer import BuildResult, MeasureResult
from autosched.search.policy import SearchParams
from autosched.steps import apply_step, serialize
from autosched.task import SearchTask
from autosched.workload import register_workload
from compiler import build, lower, te
from compiler.schedule.bound import resolve_attach_ivar
from compiler.tir.expr import IterVar
from records import Record


class Fine:
    """Builds and 'times' every candidate without compiling it: a cost from a hash of
    its state (tuning tests that need many fast, deterministic measurements)."""
    n_parallel = 1

    def build(self, inputs, verbose=0):
        return [BuildResult(b"obj", ("f",), 0, "", 0.0) for _ in inputs]

    def run(self, inputs, build_results, verbose=0):
        return [MeasureResult([1e-3 * (1 + zlib.crc32(str(i.state).encode()) % 97 / 97)], 0,
                              "", 0.0, 1.0) for i in inputs]


# A small evolutionary search for tests that tune a few trials: Ansor's default population
# (2048 x 4 generations) costs seconds per round and is benchmarked, not tested, here.
SMALL_SEARCH = SearchParams(evolutionary_search_population=64, evolutionary_search_num_iters=2)

RNG = np.random.default_rng(7)


PAR, VEC, UNR = S.ANN_PARALLEL, S.ANN_VECTORIZE, S.ANN_UNROLL


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


WORKLOADS = {
    "matmul": ("steps_test_matmul", (32, 32, 32), lambda a, b: a @ b),
    "matmul_relu": ("steps_test_matmul_relu", (32, 32, 32), lambda a, b: np.maximum(a @ b, 0)),
    "rowsum": ("steps_test_rowsum", (16, 64), lambda a: a.sum(axis=1)),
    "chain": ("steps_test_chain", (8, 16), lambda a: (a * 2 + 1) ** 2),
    "conv": ("steps_test_conv", (1, 4, 8, 8, 4, 3), ref_conv),
}


@functools.cache
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


PY_CALL = {"AN": r"\.(unroll|vectorize|parallel)\(", "FU": r"\.fuse\(", "PR": r"\.pragma\(",
           "RE": r"\.reorder\(", "SP": r"\.split\(", "FSP": r"\.split\(",
           "FFSP": r"\.split\(", "SA": r"\.storage_align\(", "CA": r"\.compute_at\(",
           "CI": r"\.compute_inline\(\)", "CR": r"\.compute_root\(\)",
           "CHR": r"s\.cache_read\(", "CHW": r"s\.cache_write\(", "RF": r"s\.rfactor\("}


@functools.cache
def scenario_state(sid):
    name, steps = SCENARIOS[sid]
    return make(name, *steps)
