"""Cost-model features: names/version, shape and determinism, loop nests that agree with
the compiler's bound inference, the meaning of individual features, and speed."""
import random
import time

import numpy as np
import pytest

import autosched as auto
from autosched import catalog  # noqa: F401  (registers built-in workloads)
from autosched import state as S
from autosched.features import extract as F
from autosched.features import nest as N
from autosched.features import regions as R
from autosched.features.nest import build_nests
from autosched.search.mutation_rules import MUTATIONS, mutate, replay
from autosched.steps import (
    AnnotationStep,
    CacheWriteStep,
    ComputeAtStep,
    FuseStep,
    PragmaStep,
    ReorderStep,
    SplitStep,
    apply_step,
)
from autosched.steps.compute import scope_violation
from compiler.schedule.bound import attach_path, infer_bound
from compiler.schedule.inline import inject_inline

WORKLOADS = [("matmul", (64, 48, 32)), ("conv2d_nchw", (1, 8, 14, 14, 16, 3, 3, 1, 1)),
             ("conv2d_nhwc", (1, 14, 14, 8, 16, 3, 3, 1, 1)), ("softmax", (8, 40)),
             ("depthwise_conv2d", (1, 8, 28, 28, 3, 1, 1)), ("batch_matmul", (2, 16, 16, 32)),
             ("dense", (16, 64, 32))]


def _task(name, args):
    return auto.SearchTask(func=name, args=args)


def _population(name, args, n, seed=0):
    return auto.SketchPolicy(_task(name, args), seed=seed).sample_initial_population(n)


def _col(name):
    return F.FEATURE_NAMES.index(name)


def _slog(x):
    return float(np.log2(1.0 + x))


def test_names_are_the_single_source_of_truth():
    names = F.FEATURE_NAMES
    assert len(set(names)) == len(names)
    assert sum(n.startswith("buf") for n in names) == F.N_BUFFERS * len(F.BUFFER_FIELDS)
    assert F.FEATURE_VERSION.startswith(f"{F._REVISION}-")
    assert len(F.FEATURE_VERSION.split("-")[1]) == 10
    rows = F.featurize(_population("matmul", (64, 48, 32), 1)[0])
    assert rows.shape[1] == len(names) and rows.dtype == np.float32
    # one-hot columns are not log-scaled, counts are
    assert not F._RAW[_col("float_mad")] and F._RAW[_col("vec_pos_none")]
    assert F._RAW[_col("buf0_acc_read")] and F._RAW[_col("arith_intensity_3")]


@pytest.mark.parametrize("name,args", WORKLOADS)
def test_shape_finite_and_deterministic(name, args):
    pop = _population(name, args, 12)
    a = F.FeatureExtractor().featurize_many(pop)
    b = F.FeatureExtractor().featurize_many(pop[::-1])[::-1]
    dag = pop[0].dag
    for st, x, y in zip(pop, a, b):
        n_stores = sum(1 for s in st.stages if not s.is_placeholder
                       and s.compute_at != S.INLINED)
        assert x.shape == (n_stores, len(F.FEATURE_NAMES))
        assert np.isfinite(x).all()
        assert x.tobytes() == y.tobytes()
        # the same schedule rebuilt from its steps featurizes identically
        again = F.featurize_raw(dag.state_from_steps(st.transform_steps))
        assert np.array_equal(F.featurize_raw(st), again)


def _check_against_bound_inference(st):
    sch = st.dag.replay(st.transform_steps)
    bounds = infer_bound(sch, inject_inline(sch))
    for nest in build_nests(st):
        te_stage = sch.stages[nest.sid]
        real = [bounds.ext[iv] for iv in attach_path(te_stage, bounds)] + \
            [bounds.ext[iv] for iv in te_stage.leaf_iter_vars]
        assert nest.ext == real, (str(st), te_stage.name)
        assert [a for a in nest.ann[nest.n_outer:]] == [it.annotation for it in
                                                          st.stages[nest.sid].iters]


@pytest.mark.parametrize("name,args", WORKLOADS)
def test_loop_nests_match_bound_inference(name, args):
    """Extents derived from the steps equal what lowering's bound inference computes,
    including attached stages (shrunk regions) and the loops around the attach point."""
    rng = random.Random(1)
    pop = _population(name, args, 8, seed=2)
    for st in pop:
        _check_against_bound_inference(st)
        child = st
        for _ in range(3):
            child = mutate(child, rng, 2, MUTATIONS) or child
        _check_against_bound_inference(child)


def _outside_reader_states(name, args):
    """Sampled states with a producer of an attached stage R computed at a loop of R's
    attach target, outside R (TVM's candidates offer those places): e.g. a padding at a
    loop of the conv that its cache-write stage runs inside."""
    out = []
    for st in _population(name, args, 24, seed=4):
        steps = list(st.transform_steps)
        by_op = {stage.op: i for i, stage in enumerate(st.stages)}
        for ca in steps:
            if not isinstance(ca, ComputeAtStep):
                continue
            for t in st.stages[ca.stage_id].op.input_tensors:
                p = by_op.get(t.op)
                if p is None or st.stages[p].is_placeholder or \
                        st.stages[p].compute_at == S.INLINED:
                    continue
                rest = [s for s in steps if not (isinstance(s, ComputeAtStep)
                                                 and s.stage_id == p)]
                at = rest.index(ca) + 1
                for i in range(ca.target_iter_id + 1):
                    moved = rest[:at] + [ComputeAtStep(p, ca.target_stage_id, i)] + rest[at:]
                    child = replay(st.dag, moved)
                    if child is not None and scope_violation(child) is None:
                        out.append(child)
    return out


@pytest.mark.parametrize("name,args", [WORKLOADS[1], WORKLOADS[2]])
def test_stages_computed_outside_their_reader_match_bound_inference(name, args):
    """A stage computed at a loop of its consumer's attach target, with the consumer
    deeper inside (TVM's candidates offer such places, so TVM's logs hold them): the
    region is what the reader inside the attach point touches, as bound inference has
    it.  (With several readers the model takes the largest range, which bound
    inference can exceed at a fused loop: softmax's exp at norm's fused loop.)"""
    seen = 0
    for st in _outside_reader_states(name, args):
        plan = N._nest_plan(st)
        if any(att is not None and readers != (att[0],)
               for _, _, att, _, readers in plan):
            _check_against_bound_inference(st)
            seen += 1
    assert seen >= 10


def test_sketch_is_refused():
    sketch = auto.SketchPolicy(_task("matmul", (64, 48, 32))).generate_sketches()[0]
    with pytest.raises(F.FeatureError, match="sketch"):
        F.featurize_raw(sketch)


# ---------------------------------------------------------------------- meanings
def _matmul_state(N=64, M=64, K=64, vec=True, fj=8):
    """i, j.0, k, j.1 with j.1 optionally vectorized."""
    st = _task("matmul", (N, M, K)).compute_dag.init_state()
    apply_step(st, SplitStep(2, 1, M, (fj,), True))
    apply_step(st, ReorderStep(2, (0, 1, 3, 2)))
    if vec:
        apply_step(st, AnnotationStep(2, 3, S.ANN_VECTORIZE))
    return st


def test_compute_and_annotation_features():
    vec, scalar = F.featurize_raw(_matmul_state()), F.featurize_raw(_matmul_state(vec=False))
    assert vec[0, _col("float_mad")] == 64 ** 3
    assert vec[0, _col("float_mul")] == 0 and vec[0, _col("float_addsub")] == 0
    assert vec[0, _col("vec_num")] == 1 and vec[0, _col("vec_len")] == 8
    assert vec[0, _col("vec_pos_inner_spatial")] == 1
    assert scalar[0, _col("vec_num")] == 0 and scalar[0, _col("vec_pos_none")] == 1
    st = _matmul_state()
    apply_step(st, FuseStep(2, (0, 1)))
    apply_step(st, AnnotationStep(2, 0, S.ANN_PARALLEL))
    par = F.featurize_raw(st)
    assert par[0, _col("parallel_prod")] == 64 * 8
    assert par[0, _col("parallel_pos_mixed")] == 1
    assert par[0, _col("parallel_launches")] == 1
    inner = _matmul_state()
    apply_step(inner, AnnotationStep(2, 1, S.ANN_PARALLEL))     # j.0 under serial i
    assert F.featurize_raw(inner)[0, _col("parallel_launches")] == 64
    assert vec[0, _col("parallel_launches")] == 0
    logged = F.featurize(_matmul_state())
    assert logged[0, _col("float_mad")] == pytest.approx(_slog(64 ** 3))


def test_buffer_features_follow_the_loop_order():
    raw = F.featurize_raw(_matmul_state(N=32, M=64, K=16, vec=False))[0]
    names = [n for n in F.BUFFER_FIELDS]
    buf = [dict(zip(names, raw[F._BUF0 + b * F._NBF:F._BUF0 + (b + 1) * F._NBF]))
           for b in range(3)]
    out, b, a = buf            # output first, then B (16x64) and A (32x16) by size
    assert out["acc_readwrite"] == 1 and a["acc_read"] == 1 and b["acc_read"] == 1
    assert out["unique_bytes"] == 32 * 64 * 4
    assert b["unique_bytes"] == 16 * 64 * 4 and a["unique_bytes"] == 32 * 16 * 4
    # innermost loop j.1: B and the output are contiguous, A does not move
    assert out["stride"] == 1 and b["stride"] == 1 and a["stride"] == 0
    assert a["reuse_loop"] == 1 and a["reuse_ct"] == 8          # reused across j.1
    assert out["reuse_loop"] == 1 and out["reuse_ct"] == 16      # reused across k
    assert out["reuse_dis_iter"] == 8
    assert raw[_col("num_loops")] == 4 and raw[_col("outer_prod")] == 32 * 64 * 16


def test_attached_cache_stage_is_shrunk_and_unrolled():
    task = _task("matmul", (64, 64, 64))
    st = task.compute_dag.init_state()
    apply_step(st, CacheWriteStep(2, "local"))          # 2: T.local, 3: T
    apply_step(st, SplitStep(3, 0, 64, (4,), True))     # i.0 (16), i.1 (4)
    apply_step(st, SplitStep(3, 2, 64, (16,), True))    # j.0 (4), j.1 (16)
    apply_step(st, ReorderStep(3, (0, 2, 1, 3)))
    apply_step(st, ComputeAtStep(2, 3, 1))              # inside j.0
    apply_step(st, PragmaStep(2, 0, "auto_unroll_max_step$64"))
    local, out = F.featurize_raw(st)
    assert local[_col("alloc_size")] == 4 * 16 * 4     # a 4x16 float tile
    assert local[_col("alloc_outer_prod")] == 16 * 4
    assert local[_col("float_mad")] == 64 ** 3
    # loops i_c (4), j_c (16), k (64), innermost first: k (64 steps <= 64) unrolls,
    # then j_c would need 16 * 64 > 64 steps and stops the unrolling
    assert local[_col("unroll_num")] == 1 and local[_col("unroll_len")] == 64
    assert local[_col("unroll_pos_inner_reduce")] == 1
    assert out[_col("alloc_size")] == 0 and out[_col("auto_unroll_max_step")] == 0


def test_memo_reuses_rows_and_is_bounded():
    pop = _population("matmul", (64, 48, 32), 6)
    fx = F.FeatureExtractor(F.FeatureConfig(cache_size=4))
    first = fx.featurize_many(pop + pop[:1])
    assert first[0] is first[-1]
    assert not first[0].flags.writeable
    assert len(fx._memo) == 4
    assert fx.featurize(pop[-1]) is first[-2]


def _generations(name, args, n, gens, seed=0):
    """A sampled population and ``gens`` generations of mutated children."""
    rng = random.Random(seed)
    out = [_population(name, args, n, seed)]
    for _ in range(gens):
        kids: list = []
        while len(kids) < n:
            child = mutate(rng.choice(out[-1]), rng, 2, MUTATIONS)
            if child is not None:
                kids.append(child)
        out.append(kids)
    return out


def _alone(state):
    raw = F.featurize_raw(state)
    raw[:, F._LOG] = F.slog(raw[:, F._LOG])
    return raw.astype(np.float32)


@pytest.mark.parametrize("name,args", WORKLOADS)
def test_memoized_store_rows_equal_rows_computed_alone(name, args):
    """Rows of stores outside any compute_at come from the extractor's store memo once
    seen; every state's rows equal those of the state featurized alone, bit for bit."""
    fx = F.FeatureExtractor()
    reused = 0
    for batch in _generations(name, args, 40, 2):
        before = dict(fx._stores)
        reused += sum(F._store_key(job) in before
                      for st in batch for job in F.state_jobs(st))
        for st, rows in zip(batch, fx.featurize_many(batch)):
            assert not rows.flags.writeable
            np.testing.assert_array_equal(rows, _alone(st), err_msg=str(st))
    assert fx._stores and reused > 0


def test_attached_nests_are_the_same_with_a_warm_memo():
    """``_attached_outer`` memoizes an attached stage's enclosing loops on its root
    parent's loops; the nests equal those built with the memo empty."""
    states = [st for g in _generations("matmul", (64, 48, 32), 30, 1) for st in g]
    R._OUTER.clear()
    cold = []
    for st in states:
        cold.append(build_nests(st))
        R._OUTER.clear()
    warm = [build_nests(st) for st in states]
    attached = sum(n.attached for nests in warm for n in nests)
    assert 0 < len(R._OUTER) < attached       # memoized, and hit
    for a_nests, b_nests in zip(cold, warm):
        for a, b in zip(a_nests, b_nests):
            assert (a.ext, a.pos, a.root_ext) == (b.ext, b.pos, b.root_ext)
            np.testing.assert_array_equal(a.span, b.span)
            np.testing.assert_array_equal(a.step, b.step)


@pytest.mark.slow   # a timing assertion: fails under load
def test_throughput_is_reasonable():
    """A loose floor (the requirement is 2,000 states/s on one core; see the report)."""
    pop = _population("conv2d_nchw", (1, 64, 56, 56, 64, 3, 3, 1, 1), 200)
    for st in pop:
        str(st)
    fx = F.FeatureExtractor()
    t = time.perf_counter()
    for k in range(0, len(pop), 100):
        fx.featurize_many(pop[k:k + 100])
    rate = len(pop) / (time.perf_counter() - t)
    assert rate > 500, f"{rate:.0f} states/s"
