"""Layout rewrite (issue 12 item 4): weights stored in the order the tuned kernel reads them.

Every sampled state of dense and conv2d is built three ways -- as written, with the
transform stage inside (INSERT_TRANSFORM_STAGE) and for a pre-transformed weight
(REWRITE_FOR_PRE_TRANSFORMED) -- and each result is compared with numpy.  Relay builds
with ApplyHistoryBest transform constant weights once, at build time.
"""
import random
from dataclasses import replace

import numpy as np
import pytest
from test_relay_integration import USE_AUTO, build, interp, run, sampled_record, small_net

import autosched as auto
import compiler
from autosched import catalog
from autosched.default_state import default_state
from autosched.layout_rewrite import LayoutRewriteOption as L
from autosched.search.init_rules import sample_state
from autosched.search.sketch_rules import generate_sketches
from autosched.steps.registry import SplitStep, apply_step
from compiler import relay
from records import Record, save_records


def _shape(t) -> tuple:
    return tuple(int(s.value) for s in t.shape)


def _states(task, n, seed):
    rng = random.Random(seed)
    sketches = generate_sketches(task.compute_dag.init_state(), task.hardware_params.num_cores)
    out = []
    while len(out) < n:
        try:
            out.append(sample_state(rng.choice(sketches), rng, task.hardware_params.num_cores))
        except auto.InvalidStepError:
            continue
    return out


def _conv_ref(x, w, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h, wd), "float64")
    for dy in range(kh):
        for dx in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, dy:dy + h, dx:dx + wd], w[:, :, dy, dx])
    return out


CASES = {
    "dense": (catalog.dense, (16, 64, 48), lambda x, w: x.astype("float64") @ w.T),
    "conv2d": (catalog.conv2d_nchw, (1, 8, 10, 10, 16, 3, 3), lambda x, w: _conv_ref(x, w, 1)),
}


def _run(dag, state, option, data):
    sch, args = dag.apply_steps_from_state(state, layout_rewrite=option)
    ins = list(data)
    if option == L.REWRITE_FOR_PRE_TRANSFORMED:
        for tr in dag.layout_transforms(state):
            assert _shape(args[tr.arg_index]) == tr.new_shape
            ins[tr.arg_index] = tr.apply(ins[tr.arg_index])
    out = np.zeros(_shape(args[-1]), "float32")
    compiler.build(sch, args, "llvm")(*ins, out)
    return args, out


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_option_matches_numpy(name):
    func, fargs, ref = CASES[name]
    task = auto.SearchTask(func=func, args=fargs, target="llvm")
    dag = task.compute_dag
    rng = np.random.default_rng(1)
    data = [rng.standard_normal([int(s.value) for s in t.shape]).astype("float32")
            for t in dag.tensors[:-1]]
    expected = ref(*data)
    rewritten = 0
    for state in _states(task, 6, seed=7):
        for option in L:
            args, out = _run(dag, state, option, data)
            np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
            if option == L.INSERT_TRANSFORM_STAGE:
                assert [_shape(a) for a in args] == [_shape(t) for t in dag.tensors]
        transforms = dag.layout_transforms(state)
        rewritten += bool(transforms)
        for tr in transforms:
            assert tr.arg_index == 1 and sorted(tr.new_shape) == sorted(tr.split_shape)
            assert int(np.prod(tr.new_shape)) == int(np.prod(tr.orig_shape))
    assert rewritten == 6      # every sampled tiling of these shapes splits exactly


def test_the_kernel_reads_the_rewritten_weight_contiguously():
    task = auto.SearchTask(func=catalog.dense, args=(16, 64, 48), target="llvm")
    state = _states(task, 1, seed=3)[0]
    (tr,) = task.compute_dag.layout_transforms(state)
    sch, args = task.compute_dag.apply_steps_from_state(state, L.REWRITE_FOR_PRE_TRANSFORMED)
    text = str(compiler.lower(sch, args, simple_mode=True))
    assert f"W: T.Buffer({tr.new_shape}" in text.replace(",)", ")")
    # the weight's innermost dimension is the innermost loop it is read in
    assert tr.perm[-1] == len(tr.split_shape) - 1 or tr.new_shape[-1] == 1


def test_inexact_splits_keep_the_layout():
    task = auto.SearchTask(func=catalog.dense, args=(16, 64, 48), target="llvm")
    dag = task.compute_dag
    state = dag.init_state()
    sid = state.stage_id("T_dense")
    apply_step(state, SplitStep(sid, 1, 48, (5,), True))   # 48 = 10 x 5 - 2
    assert dag.layout_transforms(state) == []
    _, args = dag.apply_steps_from_state(state, L.REWRITE_FOR_PRE_TRANSFORMED)
    assert [_shape(a) for a in args] == [_shape(t) for t in dag.tensors]


def test_a_reader_tiled_only_by_its_consumer_keeps_the_layout():
    # topi's conv: the accumulator is computed at the output's tile loop and does not
    # split the output channels itself; moving the whole channel axis innermost would
    # only spread each tile's filter reads (measured 20-30% slower), so no rewrite
    task = auto.SearchTask(func=catalog.conv2d_nchw, args=(1, 8, 10, 10, 16, 3, 3),
                           target="llvm")
    dag = task.compute_dag
    state = default_state(task)
    assert dag.layout_transforms(state) == []
    x = np.random.default_rng(0).standard_normal((1, 8, 10, 10)).astype("float32")
    w = np.random.default_rng(1).standard_normal((16, 8, 3, 3)).astype("float32")
    args, out = _run(dag, state, L.REWRITE_FOR_PRE_TRANSFORMED, [x, w])
    assert [_shape(a) for a in args] == [_shape(t) for t in dag.tensors]
    np.testing.assert_allclose(out, _conv_ref(x, w, 1), rtol=1e-4, atol=1e-4)


def test_options_and_errors():
    task = auto.SearchTask(func=catalog.dense, args=(16, 64, 48), target="llvm")
    assert task.layout_rewrite_option == L.REWRITE_FOR_PRE_TRANSFORMED
    assert L.get_target_default(task.target, in_relay_integration=True) == \
        L.INSERT_TRANSFORM_STAGE
    no = auto.SearchTask(func=catalog.dense, args=(16, 64, 48), target="llvm",
                         layout_rewrite_option=L.NO_REWRITE)
    assert no.layout_rewrite_option == L.NO_REWRITE
    state = _states(task, 1, seed=3)[0]
    with pytest.raises(auto.AutoSchedError, match=r"layout_rewrite='fast': expected a "
                                                  r"LayoutRewriteOption \(NO_REWRITE"):
        task.compute_dag.apply_steps_from_state(state, layout_rewrite="fast")
    (tr,) = task.compute_dag.layout_transforms(state)
    with pytest.raises(auto.AutoSchedError, match=r"layout transform of W: got shape "
                                                  r"\(64, 48\), expected \(48, 64\)"):
        tr.apply(np.zeros((64, 48), "float32"))


def test_apply_best_keeps_the_signature_by_default(tmp_path):
    task = auto.SearchTask(func=catalog.dense, args=(16, 64, 48), target="llvm")
    log = tmp_path / "dense.json"
    save_records(log, [sampled_record(task, seed=5)])
    sch, args = task.apply_best(str(log))                 # INSERT_TRANSFORM_STAGE
    assert [_shape(a) for a in args] == [_shape(t) for t in task.compute_dag.tensors]
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((16, 64), "float32"), rng.standard_normal((48, 64), "float32")
    out = np.zeros((16, 48), "float32")
    compiler.build(sch, args, "llvm")(x, w, out)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)
    sch, args = task.apply_best(str(log), layout_rewrite_option=L.REWRITE_FOR_PRE_TRANSFORMED)
    assert _shape(args[1]) != _shape(task.compute_dag.tensors[1])


def test_check_correctness_refuses_pre_transformed_tasks():
    task = auto.SearchTask(func=catalog.dense, args=(16, 64, 48), target="llvm")
    state = _states(task, 1, seed=3)[0]
    inp = auto.MeasureInput(task, state)
    with auto.LocalRunner(timeout=10, number=1, check_correctness=True) as runner:
        with pytest.raises(auto.AutoSchedError, match="REWRITE_FOR_PRE_TRANSFORMED.*create the "
                                                      "SearchTask with layout_rewrite_option"):
            runner.run([inp], auto.LocalBuilder(n_parallel=1).build([inp]))


def test_relay_build_transforms_constant_weights_once(tmp_path):
    mod = small_net(16)                   # an OIHW weight (AlterOpLayout leaves it)
    tasks, _ = auto.extract_tasks(mod, None, "llvm")
    x = np.random.default_rng(0).standard_normal((1, 8, 16, 16)).astype("float32")
    log = tmp_path / "net.json"
    save_records(log, [sampled_record(t, seed=k) for k, t in enumerate(tasks)])
    with auto.ApplyHistoryBest(str(log)):
        lib = build(mod)
    assert lib.stats["tuned_groups"] == 2
    np.testing.assert_allclose(run(lib, x), interp(mod, x), rtol=1e-4, atol=1e-4)
    conv = next(n for n, (k, _) in lib.kernel_keys.items() if "conv2d" in n)
    text = str(lib.lowered_funcs[conv])
    (tr,) = tasks[0].compute_dag.layout_transforms(
        auto.load_best_record(str(log), tasks[0].workload_key)[0].state)
    assert str(tr.new_shape).replace(",)", ")") in text      # the kernel reads the new layout
    # the weight is stored once: the original OIHW param is emptied, the copy kept
    shapes = sorted(tuple(v.shape) for v in lib.params.values())
    assert (16, 8, 3, 3) not in shapes and tuple(tr.new_shape) in shapes
    assert (0,) in shapes
    default_bytes = sum(v.nbytes for v in build(mod).params.values())
    assert sum(v.nbytes for v in lib.params.values()) <= default_bytes
    assert USE_AUTO["relay.backend.use_auto_scheduler"]


def test_relay_keeps_the_layout_of_weights_that_are_inputs(tmp_path):
    data = relay.var("data", shape=(4, 16))
    weight = relay.var("weight", shape=(8, 16))
    mod = relay.IRModule.from_expr(relay.Function([data, weight], relay.nn.dense(data, weight)))
    tasks, _ = auto.extract_tasks(mod, None, "llvm")
    log = tmp_path / "dense.json"
    save_records(log, [sampled_record(tasks[0], seed=2)])
    with auto.ApplyHistoryBest(str(log)):
        lib = build(mod)
    assert lib.stats["tuned_groups"] == 1
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 16), "float32"), rng.standard_normal((8, 16), "float32")
    m = compiler.contrib.graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    m.set_input("data", x)
    m.set_input("weight", w)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), x @ w.T, rtol=1e-4, atol=1e-4)
    assert "p1: T.Buffer((8, 16)" in str(next(iter(lib.lowered_funcs.values())))


def test_records_measured_without_rewrite_build_without_it(tmp_path):
    """A log written before layout rewrite (layout_rewrite_option 0) builds as measured."""
    mod = small_net(16)
    tasks, _ = auto.extract_tasks(mod, None, "llvm")
    log = tmp_path / "old.json"
    old = []
    for k, t in enumerate(tasks):
        rec = sampled_record(t, seed=k)
        old.append(Record(replace(rec.input, layout_rewrite_option=0), rec.result))
    save_records(log, old)
    with auto.ApplyHistoryBest(str(log)):
        lib = build(mod)
    assert lib.stats["tuned_groups"] == 2
    conv = next(n for n in lib.kernel_keys if "conv2d" in n)
    assert "T.Buffer((16, 8, 3, 3)" in str(lib.lowered_funcs[conv])
    x = np.random.default_rng(0).standard_normal((1, 8, 16, 16)).astype("float32")
    np.testing.assert_allclose(run(lib, x), interp(mod, x), rtol=1e-4, atol=1e-4)


def test_rewrite_layout_from_state_gives_the_pre_transformed_weights_dag():
    """TVM's ComputeDAG.rewrite_layout_from_state: the weight placeholder takes the
    shape the state's tiling reads; a state that rewrites nothing keeps the DAG."""
    task = auto.SearchTask(func=catalog.dense, args=(16, 64, 48), target="llvm")
    state = _states(task, 1, seed=3)[0]
    (tr,) = task.compute_dag.layout_transforms(state)
    rewritten = task.compute_dag.rewrite_layout_from_state(state)
    assert [_shape(t) for t in rewritten.tensors] == [(16, 64), tuple(tr.new_shape), (16, 48)]
    assert rewritten.flop_ct == task.compute_dag.flop_ct
    plain = auto.SearchTask(func="softmax", args=(4, 32))
    assert plain.compute_dag.rewrite_layout_from_state(
        plain.compute_dag.get_init_state()) is plain.compute_dag
