"""Schedule fuzzing: random states, each replayed, built, run and compared with numpy.

Role: the engine of ``scripts/fuzz_schedules.py`` and of the sample that runs in the
default test suite.  Case ``k`` of a run with seed ``s`` is a pure function of (s, k): its
workload family, its source and every random choice come from ``random.Random(f"{s}:{k}")``,
so any finding is reproduced by its (seed, case) pair alone.

Two sources of states:
- ``search``: what the tuner makes -- a sketch filled by the init rules, then a chain of
  0-4 mutations;
- ``steps``: random step sequences beyond what the search generates (nested and uneven
  splits, lengths larger than the extent, fuses then splits, reorders, annotations,
  compute_at anywhere, inline/root, cache_read/cache_write, rfactor, storage_align,
  follow splits).  A step enters the state only if the State accepts it.

Outcomes: ``ok``; ``wrong`` (the output differs from numpy); ``refused`` (the State
accepted the steps but replay, lowering, building or running raised -- the two disagree,
which is a bug too); ``crash``/``hang`` (found by the isolated runner in fuzz_runner).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from compiler import build, te, topi
from compiler.errors import CompilerError
from compiler.topi.sparse.utils import random_bsr_matrix

from . import state as S
from .errors import InvalidStepError
from .layout_rewrite import LayoutRewriteOption
from .search.init_rules import sample_state
from .search.mutation_rules import mutate
from .search.sketch_rules import generate_sketches, task_sketch_options
from .search.sparse_rule import sparse_sketch_rules
from .steps import registry as ST
from .steps.compute import scope_violation
from .task import SearchTask
from .workload import register_workload

NUM_CORES = 2


@dataclass(frozen=True)
class Family:
    workload: str
    args: tuple
    reference: Callable        # numpy function of the input arrays -> output
    rtol: float = 1e-4
    # (argument position, array) given instead of random data: a sparse weight's
    # indices and row pointers must stay in bounds
    fixed: tuple = ()


# ---------------------------------------------------------------- workloads
@register_workload("fuzz_matmul")
def _matmul(n, m, k):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    return [A, B, topi.nn.matmul(A, B)]


@register_workload("fuzz_dense_bias_relu")
def _dense_bias_relu(b, i, u):
    X = te.placeholder((b, i), name="X")
    W = te.placeholder((u, i), name="W")
    bias = te.placeholder((u,), name="bias")
    return [X, W, bias, topi.nn.relu(topi.nn.dense(X, W, bias))]


@register_workload("fuzz_group_conv2d")
def _group_conv2d(n, ci, h, w, co, k, stride, pad, dilation, groups):
    X = te.placeholder((n, ci, h, w), name="X")
    F = te.placeholder((co, ci // groups, k, k), name="F")
    return [X, F, topi.nn.conv2d_nchw(X, F, stride, pad, dilation, groups=groups)]


@register_workload("fuzz_depthwise")
def _depthwise(n, c, h, w, k, stride, pad):
    X = te.placeholder((n, c, h, w), name="X")
    F = te.placeholder((c, 1, k, k), name="F")
    return [X, F, topi.nn.depthwise_conv2d_nchw(X, F, stride, pad, 1)]


@register_workload("fuzz_pool")
def _pool(n, c, h, w, k, stride, pad, kind):
    X = te.placeholder((n, c, h, w), name="X")
    return [X, topi.nn.pool2d(X, (k, k), (stride, stride), (1, 1), (pad, pad, pad, pad), kind)]


@register_workload("fuzz_softmax")
def _softmax(m, n):
    X = te.placeholder((m, n), name="X")
    return [X, topi.nn.softmax(X)]


@register_workload("fuzz_layer_norm")
def _layer_norm(m, n):
    X = te.placeholder((m, n), name="X")
    g = te.placeholder((n,), name="gamma")
    b = te.placeholder((n,), name="beta")
    return [X, g, b, topi.nn.layer_norm(X, g, b, axis=-1)]


@register_workload("fuzz_reductions")
def _reductions(m, k_):
    A = te.placeholder((m, k_), name="A")
    k = te.reduce_axis((0, k_), name="k")
    r = te.reduce_axis((0, m), name="r")
    S1 = te.compute((m,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="S1")
    return [A, te.compute((1,), lambda z: te.max(S1[r], axis=r), name="M")]


@register_workload("fuzz_bcast_chain")
def _bcast_chain(m, n):
    A = te.placeholder((m, n), name="A")
    b = te.placeholder((n,), name="b")
    c = te.placeholder((m, 1), name="c")
    E = te.compute((m, n), lambda i, j: (A[i, j] + b[j]) * c[i, 0], name="E")
    F = te.compute((m, n), lambda i, j: te.exp(E[i, j]) - A[i, j], name="F")
    return [A, b, c, te.compute((m, n), lambda i, j: F[i, j] * 0.5 + E[i, j], name="G")]


@register_workload("fuzz_int8_matmul")
def _int8_matmul(n, m, k_):
    A = te.placeholder((n, k_), name="A", dtype="int8")
    B = te.placeholder((k_, m), name="B", dtype="int8")
    k = te.reduce_axis((0, k_), name="k")
    return [A, B, te.compute((n, m), lambda i, j: te.sum(
        A[i, k].astype("int32") * B[k, j].astype("int32"), axis=k), name="C")]


@register_workload("fuzz_batch_matmul")
def _batch_matmul(b, m, n, k):
    X = te.placeholder((b, m, k), name="X")
    Y = te.placeholder((b, n, k), name="Y")
    return [X, Y, topi.nn.batch_matmul(X, Y)]


@register_workload("fuzz_conv2d_nhwc_residual")
def _conv2d_nhwc_residual(h, w, ci, co):
    """conv2d NHWC 3x3 + bias + residual add + ReLU: what relay fuses into one task."""
    X = te.placeholder((1, h, w, ci), name="X")
    F = te.placeholder((3, 3, ci, co), name="F")
    bias = te.placeholder((co,), name="bias")
    R = te.placeholder((1, h, w, co), name="R")
    conv = topi.nn.conv2d_nhwc(X, F, 1, 1, 1)
    return [X, F, bias, R, topi.nn.relu(topi.add(topi.add(conv, bias), R))]


@register_workload("fuzz_avg_pool_nhwc")
def _avg_pool_nhwc(h, w, c, k, stride, pad):
    """Average pooling in NHWC whose divisor counts only the taps inside the input."""
    X = te.placeholder((1, h, w, c), name="X")
    return [X, topi.nn.pool2d(X, (k, k), (stride, stride), (1, 1), (pad, pad, pad, pad),
                              "avg", layout="NHWC", count_include_pad=False)]


# sparse weights: fixed BSR matrices (a 4x2-block one; a 4x1-block one with TVM's 2-D data)
_W_DENSE = random_bsr_matrix(32, 24, 4, 2, 0.3, "float32", seed=11)
_W_CONV = random_bsr_matrix(16, 12, 4, 1, 0.4, "float32", seed=12)
_CONV_DATA = _W_CONV.data.reshape(len(_W_CONV.data), 4)
# 3x3 kernels over 4 input channels: the 8 x 36 weight matrices (HWIO / OIHW columns)
_W_3X3 = random_bsr_matrix(8, 36, 4, 2, 0.4, "float32", seed=13)
_W_3X3_NCHW = random_bsr_matrix(8, 36, 4, 1, 0.4, "float32", seed=14)


def _bsr_args(data, w) -> tuple:
    return ((1, data), (2, w.indices), (3, w.indptr))


def _bsr_placeholders(data, w) -> list:
    return [te.placeholder(data.shape, name="W_data"),
            te.placeholder(w.indices.shape, name="W_indices", dtype="int32"),
            te.placeholder(w.indptr.shape, name="W_indptr", dtype="int32")]


@register_workload("fuzz_sparse_dense")
def _sparse_dense(m):
    X = te.placeholder((m, 24), name="X")
    parts = _bsr_placeholders(_W_DENSE.data, _W_DENSE)
    return [X, *parts, topi.nn.relu(topi.nn.sparse_dense(X, *parts))]


@register_workload("fuzz_sparse_conv2d")
def _sparse_conv2d(h, w):
    X = te.placeholder((1, h, w, 12), name="X")
    parts = _bsr_placeholders(_CONV_DATA, _W_CONV)
    data, indices, indptr = parts
    return [X, *parts, topi.nn.relu(topi.nn.sparse_conv2d(X, data, indices, indptr, "NHWC"))]


@register_workload("fuzz_sparse_conv3x3")
def _sparse_conv3x3(h, w, layout):
    wt = _W_3X3 if layout == "NHWC" else _W_3X3_NCHW
    X = te.placeholder((1, h, w, 4) if layout == "NHWC" else (1, 4, h, w), name="X")
    data, indices, indptr = _bsr_placeholders(wt.data, wt)
    out = topi.nn.sparse_conv2d(X, data, indices, indptr, layout, 3)
    return [X, data, indices, indptr, topi.nn.relu(out)]


# ---------------------------------------------------------------- numpy references
def _conv_ref(x, f, stride, pad, dil, groups):
    n, ci, h, w = x.shape
    co, cig, k, _ = f.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dil * (k - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dil * (k - 1) - 1) // stride + 1
    out = np.zeros((n, co, oh, ow), np.float64)
    cog = co // groups
    for g in range(groups):
        xs = xp[:, g * cig:(g + 1) * cig]
        fs = f[g * cog:(g + 1) * cog]
        for dy in range(k):
            for dx in range(k):
                patch = xs[:, :, dy * dil:dy * dil + stride * (oh - 1) + 1:stride,
                           dx * dil:dx * dil + stride * (ow - 1) + 1:stride]
                out[:, g * cog:(g + 1) * cog] += np.einsum("ncyx,oc->noyx", patch,
                                                           fs[:, :, dy, dx])
    return out


def _conv3x3_ref(x, mat, layout: str):
    """A sparse 3x3 layer + ReLU from its dense weight matrix (HWIO or OIHW columns)."""
    if layout == "NHWC":
        out = _conv_ref(x.transpose(0, 3, 1, 2), mat.T.reshape(3, 3, 4, -1).transpose(
            3, 2, 0, 1), 1, 1, 1, 1).transpose(0, 2, 3, 1)
    else:
        out = _conv_ref(x, mat.reshape(-1, 4, 3, 3), 1, 1, 1, 1)
    return np.maximum(out, 0)


def _pool_ref(x, k, stride, pad, kind):
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh = (x.shape[2] + 2 * pad - k) // stride + 1
    ow = (x.shape[3] + 2 * pad - k) // stride + 1
    wins = [xp[:, :, dy:dy + stride * (oh - 1) + 1:stride, dx:dx + stride * (ow - 1) + 1:stride]
            for dy in range(k) for dx in range(k)]
    return np.max(wins, axis=0) if kind == "max" else np.sum(wins, axis=0) / (k * k)


def _conv_nhwc_residual_ref(x, f, b, r):
    conv = _conv_ref(x.transpose(0, 3, 1, 2), f.transpose(3, 2, 0, 1), 1, 1, 1, 1)
    return np.maximum(conv.transpose(0, 2, 3, 1) + b + r, 0)


def _avg_pool_nhwc_ref(x, k, stride, pad):
    """Window sums over the zero-padded input divided by each window's real taps."""
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    real = np.pad(np.ones(x.shape[1:3]), pad)
    oh = (x.shape[1] + 2 * pad - k) // stride + 1
    ow = (x.shape[2] + 2 * pad - k) // stride + 1
    rows = [slice(dy, dy + stride * (oh - 1) + 1, stride) for dy in range(k)]
    cols = [slice(dx, dx + stride * (ow - 1) + 1, stride) for dx in range(k)]
    total = np.sum([xp[:, r, c, :] for r in rows for c in cols], axis=0)
    taps = np.sum([real[r, c] for r in rows for c in cols], axis=0)
    return total / taps[None, :, :, None]


def _softmax_ref(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm_ref(x, g, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b


FAMILIES = {
    "matmul_odd": Family("fuzz_matmul", (7, 13, 29), lambda a, b: a @ b),
    "dense_bias_relu": Family("fuzz_dense_bias_relu", (6, 20, 12),
                              lambda x, w, b: np.maximum(x @ w.T + b, 0)),
    "group_conv2d": Family("fuzz_group_conv2d", (1, 4, 9, 9, 6, 3, 2, 1, 2, 2),
                           lambda x, f: _conv_ref(x, f, 2, 1, 2, 2)),
    "depthwise": Family("fuzz_depthwise", (1, 3, 10, 10, 3, 1, 1),
                        lambda x, f: _conv_ref(x, f, 1, 1, 1, 3)),
    "max_pool": Family("fuzz_pool", (1, 3, 11, 11, 3, 2, 1, "max"),
                       lambda x: _pool_ref(x, 3, 2, 1, "max")),
    "avg_pool_nhwc": Family("fuzz_avg_pool_nhwc", (10, 9, 3, 3, 2, 1),
                            lambda x: _avg_pool_nhwc_ref(x, 3, 2, 1)),
    "conv2d_nhwc_residual": Family("fuzz_conv2d_nhwc_residual", (6, 7, 5, 6),
                                   _conv_nhwc_residual_ref),
    "softmax": Family("fuzz_softmax", (5, 23), _softmax_ref),
    "layer_norm": Family("fuzz_layer_norm", (6, 19), _layer_norm_ref, 1e-3),
    "reductions": Family("fuzz_reductions", (9, 31),
                         lambda a: np.array([(a * a).sum(1).max()])),
    "bcast_chain": Family("fuzz_bcast_chain", (7, 12), lambda a, b, c: (
        lambda e: (np.exp(e) - a) * 0.5 + e)((a + b) * c)),
    "int8_matmul": Family("fuzz_int8_matmul", (5, 11, 17), lambda a, b: (
        a.astype(np.int32) @ b.astype(np.int32)), 0.0),
    "batch_matmul": Family("fuzz_batch_matmul", (2, 5, 7, 9),
                           lambda x, y: x @ y.transpose(0, 2, 1)),
    "sparse_dense": Family("fuzz_sparse_dense", (6,), lambda x, *_: np.maximum(
        x @ _W_DENSE.todense().T, 0), fixed=_bsr_args(_W_DENSE.data, _W_DENSE)),
    "sparse_conv2d": Family("fuzz_sparse_conv2d", (5, 6), lambda x, *_: np.maximum(
        np.einsum("mhwk,nk->mhwn", x, _W_CONV.todense()), 0),
        fixed=_bsr_args(_CONV_DATA, _W_CONV)),
    "sparse_conv3x3": Family("fuzz_sparse_conv3x3", (5, 6, "NHWC"), lambda x, *_: _conv3x3_ref(
        x, _W_3X3.todense(), "NHWC"), fixed=_bsr_args(_W_3X3.data, _W_3X3)),
    "sparse_conv3x3_nchw": Family("fuzz_sparse_conv3x3", (6, 5, "NCHW"), lambda x, *_: (
        _conv3x3_ref(x, _W_3X3_NCHW.todense(), "NCHW")),
        fixed=_bsr_args(_W_3X3_NCHW.data, _W_3X3_NCHW)),
}


# ---------------------------------------------------------------- state generation
_TASKS: dict = {}


def task_of(family: str) -> SearchTask:
    t = _TASKS.get(family)
    if t is None:
        f = FAMILIES[family]
        t = _TASKS[family] = SearchTask(func=f.workload, args=f.args, target="llvm")
    return t


_SKETCHES: dict = {}


def search_state(task, rng: random.Random):
    """A sketch filled by the init rules, then 0-4 mutations (as the tuner makes them)."""
    sketches = _SKETCHES.get(task.workload_key)
    if sketches is None:
        # the built-in rules' sketches and, for the sparse kernels, their custom rules'
        init = task.compute_dag.init_state()
        both = generate_sketches(init, NUM_CORES, **task_sketch_options(task)) + \
            generate_sketches(init, NUM_CORES, sparse_sketch_rules())
        sketches = _SKETCHES[task.workload_key] = list(
            {str(st) + repr(st.transform_steps): st for st in both}.values())
    for _ in range(20):
        try:
            state = sample_state(rng.choice(sketches), rng, NUM_CORES)
        except InvalidStepError:
            continue
        if scope_violation(state) is None:
            break
    else:
        return task.compute_dag.init_state()
    for _ in range(rng.randrange(5)):
        child = mutate(state, rng, NUM_CORES)
        if child is not None and scope_violation(child) is None:
            state = child
    return state


def random_steps_state(task, rng: random.Random, n_steps: int | None = None):
    """A state from random steps, each kept only if the State accepts it."""
    state = task.compute_dag.init_state()
    n_steps = rng.randrange(1, 13) if n_steps is None else n_steps
    for _ in range(n_steps * 6):
        if len(state.transform_steps) >= n_steps:
            break
        step = random_step(state, rng)
        if step is None:
            continue
        trial = state.copy()
        try:
            ST.apply_step(trial, step)
            ST.check_state(trial)
        except InvalidStepError:
            continue
        state = trial
    return state


_KINDS = (("SP", 24), ("FU", 9), ("RE", 9), ("AN", 12), ("PR", 4), ("CA", 12), ("CI", 6),
          ("CR", 3), ("CHR", 4), ("CHW", 4), ("RF", 5), ("SA", 2), ("FSP", 4), ("FFSP", 2))


def random_step(state, rng: random.Random):
    """One random step for ``state`` (possibly invalid: the State decides)."""
    kind = rng.choices([k for k, _ in _KINDS], [w for _, w in _KINDS])[0]
    stages = [i for i, st in enumerate(state.stages) if not st.is_placeholder]
    sid = rng.choice(stages)
    st = state.stages[sid]
    n_it = len(st.iters)
    iid = rng.randrange(n_it) if n_it else 0
    if kind in ("SP", "FU", "RE", "AN", "PR", "SA", "RF") and not n_it:
        return None
    if kind == "SP":
        ext = st.iters[iid].extent or 1
        pool = [1, 2, 3, 4, 5, 7, 8, 16, ext, ext + 1, max(1, ext // 2)]
        lengths = tuple(rng.choice(pool) for _ in range(rng.randrange(1, 4)))
        return ST.SplitStep(sid, iid, st.iters[iid].extent, lengths, rng.random() < 0.7)
    if kind == "FU":
        k = rng.randrange(2, 4)
        start = rng.randrange(max(1, n_it - k + 1))
        return ST.FuseStep(sid, tuple(range(start, min(n_it, start + k))))
    if kind == "RE":
        order = list(range(n_it))
        rng.shuffle(order)
        return ST.ReorderStep(sid, tuple(order))
    if kind == "AN":
        ann = rng.choice((S.ANN_UNROLL, S.ANN_VECTORIZE, S.ANN_PARALLEL))
        return ST.AnnotationStep(sid, iid, ann)
    if kind == "PR":
        return ST.PragmaStep(sid, 0, f"auto_unroll_max_step${rng.choice((0, 16, 64, 512))}")
    if kind == "SA":
        f = rng.choice((2, 4, 8, 16))
        return ST.StorageAlignStep(sid, iid, f, rng.randrange(f))
    if kind == "RF":
        red = [i for i, it in enumerate(st.iters) if it.kind == S.REDUCTION]
        if not red:
            return None
        return ST.RfactorStep(sid, rng.choice(red), rng.randrange(len(st.op.axis) + 1))
    if kind == "CA":
        readers = [i for i in stages
                   if any(t.op is st.op for t in state.stages[i].op.input_tensors)]
        tid = rng.choice(readers) if readers and rng.random() < 0.7 else rng.choice(stages)
        n_t = len(state.stages[tid].iters)
        return ST.ComputeAtStep(sid, tid, rng.randrange(n_t)) if n_t else None
    if kind == "CI":
        return ST.ComputeInlineStep(sid)
    if kind == "CR":
        return ST.ComputeRootStep(sid)
    if kind == "CHW":
        return ST.CacheWriteStep(sid, rng.choice(("local", "global")))
    if kind == "CHR":
        return _random_cache_read(state, rng)
    return _random_follow(state, rng, kind, sid, iid)


def _random_cache_read(state, rng):
    src = rng.randrange(len(state.stages))
    op = state.stages[src].op
    readers = [i for i, st in enumerate(state.stages) if not st.is_placeholder
               and any(t.op is op for t in st.op.input_tensors)]
    if not readers:
        return None
    picked = sorted(rng.sample(readers, rng.randrange(1, len(readers) + 1)))
    return ST.CacheReadStep(src, "global", tuple(picked))


def _random_follow(state, rng, kind, sid, iid):
    splits = [k for k, s in enumerate(state.transform_steps) if isinstance(s, ST.SplitStep)]
    if not splits or not state.stages[sid].iters:
        return None
    if kind == "FSP":
        src = rng.choice(splits)
        n = rng.randrange(1, len(state.transform_steps[src].lengths) + 2)
        return ST.FollowSplitStep(sid, iid, src, n)
    srcs = tuple(sorted(rng.sample(splits, min(len(splits), rng.randrange(1, 3)))))
    level = rng.randrange(min(len(state.transform_steps[s].lengths) for s in srcs))
    return ST.FollowFusedSplitStep(sid, iid, srcs, level, rng.random() < 0.5)


def make_case(seed: int, k: int):
    """(family name, source, state) of case ``k`` of a run with ``seed``."""
    rng = random.Random(f"{seed}:{k}")
    names = sorted(FAMILIES)
    family = names[k % len(names)]
    source = "search" if (k // len(names)) % 2 == 0 else "steps"
    task = task_of(family)
    state = search_state(task, rng) if source == "search" else random_steps_state(task, rng)
    return family, source, state


# ---------------------------------------------------------------- checking
@dataclass(frozen=True)
class Outcome:
    case: int
    family: str
    source: str
    status: str                 # ok | wrong | refused | crash | hang
    detail: str = ""
    steps: tuple = ()           # the state's step records, to reproduce a finding

    def to_json(self) -> dict:
        return {"case": self.case, "family": self.family, "source": self.source,
                "status": self.status, "detail": self.detail, "steps": list(self.steps)}


def _inputs(tensors, rng):
    out = []
    for t in tensors:
        shape = [int(d.value) for d in t.shape]
        if t.dtype.startswith("int"):
            out.append(rng.integers(-100, 100, shape).astype(t.dtype))
        else:
            out.append((rng.random(shape) * 2 - 1).astype(t.dtype))
    return out


def check_case(seed: int, k: int) -> Outcome:
    """Generate, build, run and check case ``k``; never raises for a compiler error."""
    family, source, state = make_case(seed, k)
    fam = FAMILIES[family]
    recs = tuple(tuple(s.to_record()) for s in state.transform_steps)
    task = task_of(family)
    # every third case each: as written, with the weight transform inside, and for
    # weights transformed beforehand (layout rewrite, where the family has a weight)
    option = LayoutRewriteOption(k % 3)
    dag = task.compute_dag
    try:
        sch, tensors = dag.apply_steps_from_state(state, option)
        mod = build(sch, tensors, name="fuzz")
        ins = _inputs(dag.tensors[:-1], np.random.default_rng(k))
        for pos, data in fam.fixed:
            ins[pos] = data
        args = list(ins)
        if option == LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED:
            for tr in dag.layout_transforms(state):
                args[tr.arg_index] = tr.apply(args[tr.arg_index])
        out = np.zeros([int(d.value) for d in tensors[-1].shape], tensors[-1].dtype)
        mod(*args, out)
    except (CompilerError, ValueError, TypeError, MemoryError, IndexError) as err:
        return Outcome(k, family, source, "refused", f"{type(err).__name__}: {err}"[:500], recs)
    ref = fam.reference(*ins)
    if fam.rtol == 0.0:
        ok = np.array_equal(out, ref)
    else:
        ok = np.allclose(out, ref, rtol=fam.rtol, atol=fam.rtol * max(1.0, np.abs(ref).max()))
    if ok:
        return Outcome(k, family, source, "ok")
    worst = float(np.abs(out.astype(np.float64) - ref).max())
    return Outcome(k, family, source, "wrong", f"max abs error {worst:.3g}", recs)


__all__ = ["FAMILIES", "Family", "Outcome", "check_case", "make_case", "random_step",
           "random_steps_state", "search_state"]
