"""Sparse x dense kernels end to end: ``topi.nn.sparse_dense`` (CSR, BSR, sparse lhs)
with its data-dependent reduce loop, the bound inference that keeps a BSR block stage
attached at a loop to its own blocks, ``random_bsr_matrix``, and TVM's sparse tuning
tutorial (task inputs under TVM's names, its custom sketch rule, ``_ffi_api``)."""
import random

import numpy as np
import pytest
from autosched_helpers import SMALL_SEARCH

import autosched as auto
import compiler
from autosched import _ffi_api
from autosched.errors import InvalidStepError
from autosched.search.init_rules import sample_state
from autosched.sparse_inputs import sparse_input_names
from autosched.task_inputs import TaskInputError
from compiler import relay, te, topi
from compiler.contrib import graph_executor
from compiler.errors import ScheduleError, TEError
from compiler.schedule.bound import interval
from compiler.topi.sparse.utils import random_bsr_matrix

RNG = np.random.default_rng(3)


def _csr(dense):
    rows = [np.nonzero(r)[0] for r in dense]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype("int32")
    indices = np.concatenate(rows).astype("int32")
    data = np.concatenate([dense[i, r] for i, r in enumerate(rows)]).astype("float32")
    return data, indices, indptr


def _placeholders(x_shape, w):
    X = te.placeholder(x_shape, name="X")
    D = te.placeholder(w[0].shape, name="W_data")
    idx = te.placeholder(w[1].shape, name="W_indices", dtype="int32")
    ptr = te.placeholder(w[2].shape, name="W_indptr", dtype="int32")
    return X, D, idx, ptr


@pytest.mark.parametrize("lhs", [False, True])
def test_csr_sparse_dense_matches_numpy(lhs):
    dense = RNG.random((12, 20)).astype("float32") * (RNG.random((12, 20)) < 0.3)
    dense[4] = 0.0                                        # an empty row
    w = _csr(dense)
    X, D, idx, ptr = _placeholders((6, 20), w)
    Y = topi.nn.sparse_dense(X, D, idx, ptr, sparse_lhs=lhs)
    assert Y.op.tag == "sparse_dense_sp_rhs_csrmm" and Y.op.attrs["FLOP"] == 2 * 6 * 12 * 20
    f = compiler.build(te.create_schedule(Y.op), [X, D, idx, ptr, Y])
    x = RNG.random((6, 20)).astype("float32")
    out = np.zeros([int(d) for d in Y.shape], "float32")
    f(x, *w, out)
    ref = x @ dense.T
    np.testing.assert_allclose(out, ref.T if lhs else ref, rtol=1e-5)


def test_bsr_sparse_dense_matches_numpy_under_a_tiled_schedule():
    w = random_bsr_matrix(32, 64, 4, 4, density=0.3, dtype="float32", seed=0)
    X, D, idx, ptr = _placeholders((16, 64), (w.data, w.indices, w.indptr))
    Y = topi.nn.sparse_dense(X, D, idx, ptr)
    blk = Y.op.input_tensors[0]
    assert (blk.op.tag, Y.op.tag) == ("sparse_dense_sp_rhs_bsrmm_block",
                                      "sparse_dense_sp_rhs_bsrmm")
    s = te.create_schedule(Y.op)
    m0, m1 = s[Y].split(Y.op.axis[0], factor=8)
    n0, n1 = s[Y].split(Y.op.axis[1], factor=4)
    s[Y].reorder(m0, n0, m1, n1)
    s[blk].compute_at(s[Y], n0)
    e0, _e1 = s[blk].split(s[blk].op.reduce_axis[0], factor=2)   # the data-dependent loop
    s[Y].parallel(m0)
    s[Y].vectorize(n1)
    text = str(compiler.lower(s, [X, D, idx, ptr, Y]))
    # one block (8 rows x 4 columns) per n0, not all 8 block rows; the split loop's
    # extent is read from the row pointers
    assert "sparse_dense_block = T.allocate([32]" in text
    assert "range((W_indptr[r_outer + 1] - W_indptr[r_outer] + 1) // 2)" in text
    f = compiler.build(s, [X, D, idx, ptr, Y])
    x = RNG.random((16, 64)).astype("float32")
    out = np.zeros((16, 32), "float32")
    f(x, w.data, w.indices, w.indptr, out)
    np.testing.assert_allclose(out, x @ w.todense().T, rtol=1e-5)


def test_bounds_through_div_and_mod_stay_tight():
    """``B`` read as ``B[i // 4]`` / ``B[i % 4 + 4 * (i // 8)]`` at a loop over 8 values
    of ``i``: 2 and 8 elements, exactly."""
    A = te.placeholder((64,), name="A")
    B = te.compute((16,), lambda k: A[k * 4] + 1.0, name="B")
    C = te.compute((64,), lambda i: B[i // 4], name="C")
    s = te.create_schedule(C.op)
    o, _i = s[C].split(C.op.axis[0], factor=8)
    s[B].compute_at(s[C], o)
    text = str(compiler.lower(s, [A, C]))
    assert "B = T.allocate([2]" in text
    f = compiler.build(s, [A, C])
    a = RNG.random(64).astype("float32")
    c = np.zeros(64, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a[(np.arange(64) // 4) * 4] + 1.0)


def test_random_bsr_matrix_layout_and_density():
    w = random_bsr_matrix(64, 48, 8, 4, density=0.25, dtype="float32", seed=1)
    assert w.shape == (64, 48) and w.blocksize == (8, 4) and w.data.dtype == np.float32
    assert len(w.indptr) == 9 and w.indptr[-1] == len(w.indices) == len(w.data)
    assert len(w.indices) == int(0.25 * 64 * 48) // 32 + 1
    for r in range(8):       # columns increase within a block row, no duplicates
        cols = w.indices[w.indptr[r]:w.indptr[r + 1]]
        assert np.all(np.diff(cols) > 0)
    again = random_bsr_matrix(64, 48, 8, 4, density=0.25, dtype="float32", seed=1)
    np.testing.assert_array_equal(again.todense(), w.todense())
    with pytest.raises(TEError, match=r"shape \(64, 47\) is not a multiple of the block"):
        random_bsr_matrix(64, 47, 8, 4, density=0.25, dtype="float32")


# ---------------------------------------------------------------------- tuning
M, N, K, BS_R, BS_C = 16, 64, 32, 16, 1
W = random_bsr_matrix(N, K, BS_R, BS_C, density=0.4, dtype="float32", seed=7)
# TVM's names for the inputs of its sparse_dense, as the tutorial builds them
PREFIX = (f"sparse_dense_bsr_{N}_{K}_{BS_R}_{BS_C}_{W.indices.shape[0]}_"
          f"{W.indptr.shape[0]}_")


@auto.register_workload("test_sparse_dense_bias_relu", override=True)
def sparse_dense_bias_relu(m, n, k, w_data_shape, w_indices_shape, w_indptr_shape, dtype):
    X = te.placeholder(shape=(m, k), dtype=dtype)
    W_data = te.placeholder(shape=w_data_shape, dtype=dtype)
    W_indices = te.placeholder(shape=w_indices_shape, dtype="int32")
    W_indptr = te.placeholder(shape=w_indptr_shape, dtype="int32")
    B = te.placeholder(shape=(m, n), dtype=dtype)
    out = topi.nn.sparse_dense(topi.nn.relu(X), W_data, W_indices, W_indptr)
    out = te.compute((m, n), lambda i, j: out[i, j] + B[i, j], name="BiasAdd")
    return [X, W_data, W_indices, W_indptr, B, topi.nn.relu(out)]


ARGS = (M, N, K, W.data.shape, W.indices.shape, W.indptr.shape, "float32")


def meet_condition_func(search_policy, state, stage_id):
    state = auto.loop_state.State(state, search_policy.search_task.compute_dag)
    if state.stages[stage_id].op.tag in ["sparse_dense_sp_rhs_bsrmm",
                                         "sparse_dense_sp_rhs_bsrmm_block"]:
        return auto.PreloadCustomSketchRule.APPLY_AND_SKIP_REST
    return auto.PreloadCustomSketchRule.PASS


def apply_func(search_policy, state, stage_id):
    """TVM's tutorial rule, as written there."""
    s0 = auto.loop_state.State(state, search_policy.search_task.compute_dag)
    if s0.stages[stage_id].op.tag == "sparse_dense_sp_rhs_bsrmm_block":
        return [s0.state_object, stage_id - 1]
    sparse_dense = s0.stages[stage_id].op
    sparse_dense_block = s0.stages[stage_id - 1].op
    consumer = sparse_dense
    consumers = _ffi_api.SearchPolicyUtilsGetConsumers(search_policy.search_task,
                                                       s0.state_object, stage_id)
    if len(consumers) == 1:
        consumer_id = int(consumers.items()[0][0])
        if _ffi_api.SearchPolicyUtilsIsElementwiseMatch(search_policy.search_task,
                                                        s0.state_object, stage_id,
                                                        consumer_id):
            consumer = s0.stages[consumer_id].op
            s0.compute_inline(sparse_dense)
    i, nb_j, j, row_offset, c = s0[sparse_dense_block].iters
    m, n = s0[consumer].iters
    i0, i1, i2 = s0.split(sparse_dense_block, i, [None, None])
    m0, m1 = s0.follow_split(consumer, m, len(s0.transform_steps) - 1, 1)
    j0, j1 = s0.split(sparse_dense_block, nb_j, [None])
    n0, n1 = s0.follow_split(consumer, n, len(s0.transform_steps) - 1, 1)
    s0.reorder(sparse_dense_block, [i0, j0, i1, j1, row_offset, i2, j, c])
    s0.reorder(consumer, [m0, n0, m1, n1])
    s0.compute_at(sparse_dense_block, consumer, n0)
    return [[s0.state_object, stage_id - 2]]


def _task(**kw):
    return auto.SearchTask(func="test_sparse_dense_bias_relu", args=ARGS, target="llvm", **kw)


def _check_workload_kernel(f):
    """``f`` (a built kernel of the tutorial's workload) computes relu(relu(X) W.T + B)."""
    x = RNG.standard_normal((M, K)).astype("float32")
    b = RNG.standard_normal((M, N)).astype("float32")
    y = np.zeros((M, N), "float32")
    f(x, W.data, W.indices, W.indptr, b, y)
    ref = np.maximum(np.maximum(x, 0) @ W.todense().T + b, 0)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def _task_with_inputs():
    """The tutorial's task: the weights given under TVM's names."""
    return _task(task_inputs={PREFIX + "W_data": W.data, PREFIX + "W_indices": W.indices,
                              PREFIX + "W_indptr": W.indptr}, task_inputs_overwrite=True)


def test_tvms_input_names_reach_the_sparse_placeholders():
    task = _task_with_inputs()
    names = sparse_input_names(task.compute_dag.tensors)
    by_pos = {k: names[t] for k, t in enumerate(task.compute_dag.tensors) if t in names}
    assert by_pos == {1: PREFIX + "W_data", 2: PREFIX + "W_indices", 3: PREFIX + "W_indptr"}
    assert task.compute_dag.flop_ct >= 2 * M * N * K      # the op's FLOP attribute


def test_tuning_without_the_row_pointers_is_refused(tmp_path):
    task = _task()
    opts = auto.TuningOptions(num_measure_trials=2, verbose=0)
    with pytest.raises(TaskInputError, match=r"loop bounds of sparse_dense_block read .*"
                                             r"argument 3\), which has no task input"):
        task.tune(opts)


def test_tvms_sparse_tutorial_tunes_and_builds_the_right_kernel(tmp_path):
    log = str(tmp_path / "sparse.json")
    task = _task_with_inputs()
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0,
                               init_search_callbacks=[auto.PreloadCustomSketchRule(
                                   meet_condition_func, apply_func, "SparseDense")])
    sketches = policy.generate_sketches()
    assert len(sketches) == 1        # the rule's, with the block attached in the consumer
    assert sketches[0].stages[5].compute_at == auto.state.ITER
    opts = auto.TuningOptions(num_measure_trials=6, num_measures_per_round=3, verbose=0,
                              measure_callbacks=[auto.RecordToFile(log)])
    stats = task.tune(opts, policy)
    assert stats.trials == 6 and stats.errors < 6
    sch, args = task.apply_best(log)
    _check_workload_kernel(compiler.build(sch, args, "llvm"))


def test_interval_of_div_and_mod_by_a_divisor_of_every_coefficient():
    o, i = te.var("o"), te.var("i")
    fixed, ext = {o}, {o: 10, i: 4}
    lo, hi = interval((o * 8 + 4 + i) // 4, fixed, ext)
    assert (str(lo), str(hi)) == ("o * 2 + 1", "o * 2 + 1")
    lo, hi = interval((o * 8 + 2 + i) // 4, fixed, ext)
    assert (str(lo), str(hi)) == ("o * 2", "o * 2 + 1")
    lo, hi = interval((o * 8 + 4 + i) % 8, fixed, ext)
    assert (lo.value, hi.value) == (4, 7)
    lo, hi = interval((o * 6 + i) % 4, fixed, ext)        # 6 is not a multiple of 4
    assert (lo.value, hi.value) == (0, 3)


def test_a_stage_named_by_its_op_is_found_by_identity():
    """Both ReLUs of the sparse workload are named T_relu."""
    state = _task().compute_dag.get_init_state()
    relus = [k for k, st in enumerate(state.stages) if st.op.name == "T_relu"]
    assert len(relus) == 2
    assert [state.stage_id(state.stages[k].op) for k in relus] == relus
    assert state.stage_id("T_relu") == relus[0]


def _div_mod_case(seed):
    """A consumer reading two producers through ``//`` and ``%`` (as a BSR reshape and a
    layout transform do), both attached at random loops of random splits."""
    rng = random.Random(seed)
    n, d, m = rng.choice([24, 32, 36, 48, 64]), rng.choice([2, 3, 4, 6, 8]), \
        rng.choice([2, 3, 4, 8])
    nb, nm = (n + d - 1) // d, (n + m - 1) // m * m
    A = te.placeholder((n,), name="A")
    B = te.compute((nb,), lambda k: A[k * d % n] * 2.0, name="B")
    Bm = te.compute((nm,), lambda k: A[k % n] + 1.0, name="Bm")
    C = te.compute((n,), lambda i: B[i // d] + Bm[(i % m + m * (i // (m * 2))) % nm],
                   name="C")
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=rng.choice([1, 2, 3, 4, 8, 12]))
    at = [o, i]
    if rng.random() < 0.5:
        io, ii = s[C].split(i, factor=rng.choice([2, 4]))
        at = [o, io, ii]
    s[B].compute_at(s[C], rng.choice(at))
    s[Bm].compute_at(s[C], rng.choice(at))
    a = np.random.default_rng(seed).random(n).astype("float32")
    c = np.zeros(n, "float32")
    compiler.build(s, [A, C])(a, c)
    k = np.arange(n)
    ref = (a[(np.arange(nb) * d) % n] * 2)[k // d] + \
        (a[np.arange(nm) % n] + 1)[(k % m + m * (k // (m * 2))) % nm]
    np.testing.assert_allclose(c, ref, rtol=1e-6, err_msg=f"seed {seed}")


def test_div_mod_reads_at_random_attach_points_match_numpy():
    for seed in range(40):
        _div_mod_case(seed)


def test_cache_write_of_a_data_dependent_reduction_reads_its_own_axes():
    """The cache stage's row-length extent must read ``indptr`` at the cache stage's
    axes (it read the original stage's, undefined there)."""
    w = random_bsr_matrix(32, 64, 4, 4, density=0.3, dtype="float32", seed=2)
    X, D, idx, ptr = _placeholders((8, 64), (w.data, w.indices, w.indptr))
    Y = topi.nn.sparse_dense(X, D, idx, ptr)
    blk = Y.op.input_tensors[0]
    s = te.create_schedule(Y.op)
    cached = s.cache_write(blk, "local")
    s[cached].split(s[cached].op.axis[1], factor=2)
    f = compiler.build(s, [X, D, idx, ptr, Y])
    x = RNG.random((8, 64)).astype("float32")
    out = np.zeros((8, 32), "float32")
    f(x, w.data, w.indices, w.indptr, out)
    np.testing.assert_allclose(out, x @ w.todense().T, rtol=1e-5)


def test_without_a_custom_rule_the_sparse_stage_is_not_tiled_and_tunes(tmp_path):
    """Multi-level tiling would put the row-length loop outside the block-row loop that
    defines its extent: the built-in rules leave such a stage untiled."""
    log = str(tmp_path / "plain.json")
    task = _task_with_inputs()
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0)
    (sketch,) = policy.generate_sketches()
    assert not any(type(s).__name__ == "SplitStep" for s in sketch.transform_steps)
    opts = auto.TuningOptions(num_measure_trials=4, num_measures_per_round=4, verbose=0,
                              measure_callbacks=[auto.RecordToFile(log)])
    stats = task.tune(opts, policy)
    assert stats.trials == 4 and stats.errors == 0


def test_rfactor_of_a_data_dependent_reduction_is_refused_clearly():
    dense = RNG.random((6, 10)).astype("float32")
    X, D, idx, ptr = _placeholders((4, 10), _csr(dense))
    Y = topi.nn.sparse_dense(X, D, idx, ptr)
    s = te.create_schedule(Y.op)
    _eo, ei = s[Y].split(Y.op.reduce_axis[0], factor=2)
    with pytest.raises(ScheduleError, match=r"rfactor on stage sparse_dense: reduce axis "
                                            r"elem_idx has the data-dependent extent"):
        s.rfactor(Y, ei)


def test_schedule_primitives_on_a_data_dependent_loop():
    dense = RNG.random((12, 20)).astype("float32") * (RNG.random((12, 20)) < 0.5)
    w = _csr(dense)
    X, D, idx, ptr = _placeholders((6, 20), w)
    Y = topi.nn.sparse_dense(X, D, idx, ptr)
    s = te.create_schedule(Y.op)
    e = Y.op.reduce_axis[0]
    with pytest.raises(ScheduleError, match="axis elem_idx is a reduction .* only "
                                            "data-parallel axes can be parallel$"):
        s[Y].parallel(e)
    with pytest.raises(ScheduleError, match="only data-parallel axes can be vectorized$"):
        s[Y].vectorize(e)
    _eo, ei = s[Y].split(e, factor=4)
    s[Y].unroll(ei)                        # a tail guarded by the row's length
    x = RNG.random((6, 20)).astype("float32")
    out = np.zeros((6, 12), "float32")
    compiler.build(s, [X, D, idx, ptr, Y])(x, *w, out)
    np.testing.assert_allclose(out, x @ dense.T, rtol=1e-5)


def test_the_block_row_loop_before_a_one_wide_column_loop_is_vectorized():
    """The tutorial's sketch ends the block stage with ``j`` (a block's rows) and ``c``
    (its columns, one wide): the column loop vanishes in lowering, so the vectorization
    rule looks past it and vectorizes ``j``; the kernel still matches numpy."""
    task = _task_with_inputs()
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0,
                               init_search_callbacks=[auto.PreloadCustomSketchRule(
                                   meet_condition_func, apply_func, "SparseDense")])
    (sketch,) = policy.generate_sketches()
    rng = random.Random(0)
    state = sample_state(sketch, rng, 2)
    block = state.stages[5]
    assert [it.name for it in block.iters[-2:]] == ["j", "c"]
    assert block.iters[-2].annotation == auto.state.ANN_VECTORIZE
    assert block.iters[-1].annotation == auto.state.ANN_NONE
    sch, args = task.compute_dag.apply_steps_from_state(state)
    _check_workload_kernel(compiler.build(sch, args))


@pytest.mark.parametrize("fmt", ["csr", "bsr"])
def test_relay_sparse_dense_builds_with_the_default_schedule(fmt):
    """``relay.nn.sparse_dense`` + ReLU: the graph executor's output (default schedule:
    parallel rows, a BSR block's rows vectorized) and the interpreter's match numpy."""
    if fmt == "csr":
        dense = RNG.random((12, 20)).astype("float32") * (RNG.random((12, 20)) < 0.4)
        weight = _csr(dense)
    else:
        bsr = random_bsr_matrix(32, 24, 4, 2, density=0.3, dtype="float32", seed=4)
        dense, weight = bsr.todense(), (bsr.data, bsr.indices, bsr.indptr)
    x = relay.var("x", shape=(6, dense.shape[1]))
    y = relay.nn.relu(relay.nn.sparse_dense(x, tuple(relay.const(a) for a in weight)))
    mod = relay.IRModule.from_expr(relay.Function([x], y))
    xn = RNG.random((6, dense.shape[1])).astype("float32")
    ref = np.maximum(xn @ dense.T, 0)
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    m.set_input("x", xn)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5)
    interp = relay.create_executor("debug", mod=mod).evaluate()(xn)
    np.testing.assert_allclose(interp.numpy(), ref, rtol=1e-5)
    with pytest.raises(relay.RelayError, match="must be \\(data, indices, indptr\\)"):
        relay.nn.sparse_dense(x, (weight[0],))


def test_the_packaged_rule_makes_the_tutorials_sketch():
    task = _task_with_inputs()
    tutorial = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0,
                                 init_search_callbacks=[auto.PreloadCustomSketchRule(
                                     meet_condition_func, apply_func, "SparseDense")])
    packaged = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0,
                                 init_search_callbacks=[auto.sparse_dense_sketch_rule()])
    (a,), (b,) = tutorial.generate_sketches(), packaged.generate_sketches()
    assert a.transform_steps == b.transform_steps and str(a) == str(b)


def test_a_data_dependent_loop_outside_the_loops_it_reads_is_refused_clearly():
    """A BSR row's length is read at its block row: a reorder that hoists the row-length
    loop above the block-row loop, or a fuse of it with another axis, is a ScheduleError
    naming both (it used to reach codegen as a variable read outside its loop), and the
    State refuses the same steps."""
    w = random_bsr_matrix(32, 24, 4, 2, density=0.3, dtype="float32", seed=4)
    X, D, idx, ptr = _placeholders((6, 24), (w.data, w.indices, w.indptr))
    Y = topi.nn.sparse_dense(X, D, idx, ptr)
    blk = Y.op.input_tensors[0]
    s = te.create_schedule(Y.op)
    i, nb_j, j = s[blk].op.axis
    e, c = s[blk].op.reduce_axis
    s[blk].reorder(i, e, nb_j, j, c)
    with pytest.raises(ScheduleError, match=r"stage sparse_dense_block: loop elem_idx runs "
                                            r"over reduce axis elem_idx, whose extent is read "
                                            r"from a tensor at axis nb_j, but loop nb_j of "
                                            r"nb_j runs inside it"):
        compiler.lower(s, [X, D, idx, ptr, Y])
    s = te.create_schedule(Y.op)
    s[blk].reorder(*s[blk].op.axis[:2], e, s[blk].op.axis[2], c)
    s[blk].fuse(e, s[blk].op.axis[2])
    with pytest.raises(ScheduleError, match=r"fuses reduce axis elem_idx, whose extent is "
                                            r"read from a tensor, with other axes"):
        compiler.lower(s, [X, D, idx, ptr, Y])
    # the State: the same reorder is refused when the state is checked
    task = auto.SearchTask(func="test_sparse_dense_bias_relu", args=ARGS, target="llvm")
    s0 = auto.loop_state.State(task.compute_dag.init_state(), task.compute_dag)
    block = next(st.op for st in s0.stages if st.op.tag == "sparse_dense_sp_rhs_bsrmm_block")
    i_, nb_, j_, e_, c_ = s0[block].iters
    s0.reorder(block, [i_, e_, nb_, j_, c_])
    with pytest.raises(InvalidStepError, match=r"invalid state: stage sparse_dense_block: "
                                               r"loop elem_idx runs over reduce axis"):
        task.compute_dag.apply_steps_from_state(s0.state_object)


def test_a_split_of_a_data_dependent_loop_by_parts_matches_numpy():
    """Splitting the row-length loop into a fixed number of parts makes the inner loop's
    extent, and the outer loops' strides, reads of ``indptr``: the body's index reads
    them too (it used to keep an unlowered tensor read)."""
    w = random_bsr_matrix(32, 24, 4, 2, density=0.5, dtype="float32", seed=5)
    X, D, idx, ptr = _placeholders((6, 24), (w.data, w.indices, w.indptr))
    Y = topi.nn.sparse_dense(X, D, idx, ptr)
    blk = Y.op.input_tensors[0]
    s = te.create_schedule(Y.op)
    e = s[blk].op.reduce_axis[0]
    eo, ei = s[blk].split(e, nparts=2)
    s[blk].split(ei, nparts=3)
    x = RNG.random((6, 24)).astype("float32")
    out = np.zeros((6, 32), "float32")
    compiler.build(s, [X, D, idx, ptr, Y])(x, w.data, w.indices, w.indptr, out)
    np.testing.assert_allclose(out, x @ w.todense().T, rtol=1e-5)
