"""Sparse models from dense ones, tuned and built as a network: TVM's
``relay.data_dep_optimization`` (``bsr_dense``, ``bsr_conv2d``, ``simplify_fc_transpose``),
``DenseToSparse``/``Conv2dToSparse``, ``convert_model_dense_to_sparse``, sparse 1x1
convolutions (topi, relay, their sketch rule), task extraction that gives a sparse task
its weights as task inputs, and TVM's network tutorial with ``use_sparse=True``."""
import numpy as np
import pytest
from autosched_helpers import SMALL_SEARCH
from relay_helpers import check_golden

import autosched as auto
import compiler
from autosched.default_state import default_state
from autosched.task_inputs import get_task_input_buffer
from autosched.tuning import default_steps_repr
from compiler import relay, te, topi
from compiler.contrib import graph_executor
from compiler.errors import TEError
from compiler.relay import data_dep_optimization as ddo
from compiler.relay.analysis import sparse_dense as sd_analysis
from compiler.relay.data_dep_optimization.utils import convert_model_dense_to_sparse
from compiler.relay.errors import RelayError
from compiler.topi.sparse.utils import BSRMatrix, bsr_from_dense, random_bsr_matrix
from records import load_records

IMAGE = (3, 8, 8)          # a small MLP: 192 -> 128 -> 64 -> 1000
RNG = np.random.default_rng(5)


def _mlp():
    """The MLP without its softmax: random sparse weights saturate a softmax (one class
    1.0, the others 0.0), which would hide wrong logits."""
    mod, params = relay.testing.mlp.get_workload(batch_size=1, image_shape=IMAGE,
                                                 num_classes=1000)
    fn = mod["main"]
    assert fn.body.op.name == "nn.softmax"
    logits = fn.body.args[0]
    return relay.IRModule.from_expr(relay.Function(fn.params, logits)), params


def _np(v):
    return v.numpy() if hasattr(v, "numpy") else np.asarray(v)


def _densified(params: dict, sparse_params: dict) -> dict:
    """The dense model's params with each converted weight rebuilt from its BSR parts."""
    out = dict(params)
    for name in params:
        if name + ".data" in sparse_params:
            out[name] = BSRMatrix(_np(sparse_params[name + ".data"]),
                                  _np(sparse_params[name + ".indices"]),
                                  _np(sparse_params[name + ".indptr"]),
                                  params[name].shape).todense()
    return out


def _run(mod, params, x, target="llvm"):
    lib = relay.build(mod, target=target, params=params)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    m.set_input("data", x)
    m.run()
    return m.get_output(0).numpy()


def _reference(mod, params, x):
    out = _np(relay.create_executor("debug", mod=mod).evaluate()(x, **params))
    assert out.std() > 1e-3          # values that tell a right answer from a wrong one
    return out


def test_bsr_from_dense_is_scipys_layout():
    w = random_bsr_matrix(16, 12, 4, 2, 0.3, "float32", seed=1)
    got = bsr_from_dense(w.todense(), (4, 2))
    np.testing.assert_array_equal(got.indices, w.indices)
    np.testing.assert_array_equal(got.indptr, w.indptr)
    np.testing.assert_array_equal(got.data, w.data)
    assert got.indices.dtype == got.indptr.dtype == np.int32
    dense = np.zeros((4, 6), "float32")
    dense[0, 5] = dense[3, 0] = 1.0
    b = bsr_from_dense(dense, (2, 3))      # blocks (0, 1) and (1, 0): row-major order
    assert b.indices.tolist() == [1, 0] and b.indptr.tolist() == [0, 1, 2]
    with pytest.raises(TEError, match=r"shape \(4, 6\) does not divide into blocks of \(4, 4\)"):
        bsr_from_dense(dense, (4, 4))


def test_process_params_converts_only_weights_sparse_enough():
    mod, params = _mlp()
    params = dict(params)
    fc2 = params["fc2_weight"] * (np.arange(params["fc2_weight"].size).reshape(64, 128) % 10 == 0)
    params["fc2_weight"] = fc2.astype("float32")
    info = sd_analysis.process_params(mod["main"], params, (4, 1), 0.85)
    assert info.weight_name == ["fc2_weight"]
    bsr = bsr_from_dense(fc2, (4, 1))
    assert info.weight_shape == [[len(bsr.indices), 4, 1, len(bsr.indices), 17]]
    # in place, as TVM: the dense weight is gone, its parts are there
    assert "fc2_weight" not in params and "fc1_weight" in params
    np.testing.assert_array_equal(params["fc2_weight.indptr"].numpy(), bsr.indptr)
    assert sd_analysis._search_dense_op_weight(mod["main"]) == [
        "fc1_weight", "fc2_weight", "fc3_weight"]
    with pytest.raises(RelayError, match=r"weight 'fc1_weight' of shape \(128, 192\) does not "
                                         r"divide into blocks of \(3, 1\)"):
        sd_analysis.process_params(mod["main"], dict(_mlp()[1]), (3, 1), 0.0)


def test_convert_model_dense_to_sparse_keeps_the_models_values(request):
    mod, params = _mlp()
    np.random.seed(0)
    smod, sparams = convert_model_dense_to_sparse(mod, params, bs_r=4, random_params=True)
    check_golden(request, "relay_sparse_mlp", relay.astext(smod["main"]))
    assert "fc1_weight" in params and "fc1_weight" not in sparams    # caller's dict kept
    x = np.random.default_rng(1).random((1, *IMAGE)).astype("float32")
    ref = _reference(mod, _densified(params, sparams), x)
    np.testing.assert_allclose(_run(smod, sparams, x), ref, rtol=1e-4, atol=1e-7)
    # without random weights, the model's own (dense) weights stay dense
    dmod, dparams = convert_model_dense_to_sparse(mod, params, bs_r=4)
    assert "nn.sparse_dense" not in relay.astext(dmod["main"]) and set(dparams) == set(params)


def test_simplify_fc_transpose_reads_a_stored_transpose():
    x = relay.var("data", shape=(2, 6))
    w = relay.var("w", shape=(6, 4))
    y = relay.nn.dense(x, relay.transpose(w, axes=(1, 0)))
    fn = relay.Function([x, w], y)
    wv = np.random.default_rng(0).random((6, 4)).astype("float32")
    params = {"w": wv}
    new_fn, new_params = ddo.simplify_fc_transpose.convert(fn, params)
    assert "transpose" not in relay.astext(new_fn)
    assert [p.name_hint for p in new_fn.params] == ["data", "w.T"]
    assert set(new_params) == {"w.T"}
    np.testing.assert_array_equal(new_params["w.T"].numpy(), wv.T)
    xv = np.random.default_rng(1).random((2, 6)).astype("float32")
    out = relay.create_executor("debug", mod=relay.IRModule.from_expr(new_fn)).evaluate()(
        xv, new_params["w.T"].numpy())
    np.testing.assert_allclose(_np(out), xv @ wv, rtol=1e-5)


def test_dense_to_sparse_checks_its_shapes():
    mod, _ = _mlp()
    with pytest.raises(RelayError, match=r"2 weight names but 1 shapes"):
        relay.transform.DenseToSparse(["fc1_weight", "fc2_weight"], [[1, 4, 1, 1, 33]])(mod)
    with pytest.raises(RelayError, match=r"weight 'fc1_weight' shape \[1, 4\]; expected "
                                         r"\[blocks, bs_r, bs_c, blocks, rows \+ 1\]"):
        relay.transform.DenseToSparse(["fc1_weight"], [[1, 4]])(mod)


def _sparse_mlp():
    mod, params = _mlp()
    np.random.seed(0)
    smod, sparams = convert_model_dense_to_sparse(mod, params, bs_r=4, random_params=True)
    return mod, params, smod, sparams


def test_extracted_sparse_tasks_measure_the_models_own_weights():
    _, _, smod, sparams = _sparse_mlp()
    tasks, weights = auto.extract_tasks(smod["main"], sparams, "llvm")
    assert len(tasks) == 3 and weights == [1, 1, 1]
    t0 = tasks[0]
    nnz = len(sparams["fc1_weight.indices"].numpy())
    prefix = f"sparse_dense_bsr_128_192_4_1_{nnz}_33_"
    assert t0.task_input_names == (prefix + "W_data", prefix + "W_indices",
                                   prefix + "W_indptr")
    from_task = get_task_input_buffer(t0.workload_key, prefix + "W_indptr")
    np.testing.assert_array_equal(from_task, sparams["fc1_weight.indptr"].numpy())


def _without_default_records(log_file: str, tasks) -> None:
    """Keep only the log's records of tuned states: a default schedule's record that
    ranks first would make its group build with the default schedule."""
    dflt = {t.workload_key: default_steps_repr(default_state(t)) for t in tasks}
    kept = [r for r in load_records(log_file)
            if r.is_valid and repr(r.input.steps) != dflt[r.input.workload_key]]
    with open(log_file, "w") as f:
        f.writelines(r.to_json() + "\n" for r in kept)


def test_tvms_network_tutorial_with_use_sparse_tunes_and_builds(tmp_path):
    """tune_network_x86 with ``use_sparse=True`` (network "mlp"), imports changed:
    ``convert_model_dense_to_sparse`` is in ``compiler.relay.data_dep_optimization``
    and ``sparse_sketch_rules`` in ``autosched``."""
    mod, params, smod, sparams = _sparse_mlp()
    log_file = str(tmp_path / "mlp-sparse.json")
    tasks, task_weights = auto.extract_tasks(smod["main"], sparams, "llvm")
    tuner = auto.TaskScheduler(tasks, task_weights)
    tune_option = auto.TuningOptions(num_measure_trials=12, num_measures_per_round=4,
                                     measure_callbacks=[auto.RecordToFile(log_file)],
                                     verbose=0)
    search_policy = [auto.SketchPolicy(task, program_cost_model=auto.XGBModel(),
                                       params=SMALL_SEARCH, verbose=0,
                                       init_search_callbacks=auto.sparse_sketch_rules())
                     for task in tasks]
    tuner.tune(tune_option, search_policy=search_policy)
    logged = {inp.task.workload_key for inp, res in auto.load_records(log_file)
              if res.error_no == 0}
    assert logged == {t.workload_key for t in tasks}
    _without_default_records(log_file, tasks)     # so that every group builds tuned
    with auto.ApplyHistoryBest(log_file) as ctx:
        with compiler.transform.PassContext(opt_level=3, config={
                "relay.backend.use_auto_scheduler": True}):
            lib = relay.build(smod, target="llvm", params=sparams)
    assert (ctx.hits, ctx.stale) == (3, 0)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    x = np.random.default_rng(2).random((1, *IMAGE)).astype("float32")
    m.set_input("data", compiler.nd.array(x))
    m.run()
    ref = _reference(mod, _densified(params, sparams), x)
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-7)


# ------------------------------------------------------------------ sparse 1x1 convolutions
def _bsr_weight(n, k, bs_c, seed=2):
    w = random_bsr_matrix(n, k, 4, bs_c, 0.4, "float32", seed=seed)
    data = w.data if bs_c > 1 else w.data.reshape(len(w.data), 4)   # TVM's 2-D data
    return w, (data, w.indices, w.indptr)


def _conv_ref(x, w_dense, layout):
    return np.einsum("mhwk,nk->mhwn", x, w_dense) if layout == "NHWC" else \
        np.einsum("mkhw,nk->mnhw", x, w_dense)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("bs_c", [1, 2])
def test_sparse_conv2d_matches_numpy(layout, bs_c):
    w, parts = _bsr_weight(16, 12, bs_c)
    xs = (2, 5, 6, 12) if layout == "NHWC" else (2, 12, 5, 6)
    X = te.placeholder(xs, name="X")
    D = te.placeholder(parts[0].shape, name="W_data")
    idx = te.placeholder(parts[1].shape, name="W_indices", dtype="int32")
    ptr = te.placeholder(parts[2].shape, name="W_indptr", dtype="int32")
    Y = topi.nn.sparse_conv2d(X, D, idx, ptr, layout)
    blk = Y.op.input_tensors[0]
    assert (blk.op.tag, Y.op.tag, Y.op.attrs["layout"]) == (
        "sparse_conv2d_sp_bsrmm_block", "sparse_conv2d_sp_bsrmm", layout)
    assert len(blk.op.reduce_axis) == (2 if bs_c > 1 else 1)    # no column axis for 1
    x = RNG.random(xs).astype("float32")
    f = compiler.build(topi.generic.schedule_default([Y]), [X, D, idx, ptr, Y])
    out = np.zeros([int(d) for d in Y.shape], "float32")
    f(x, *parts, out)
    np.testing.assert_allclose(out, _conv_ref(x, w.todense(), layout), rtol=1e-5, atol=1e-6)
    # the relay op: interpreter and graph build
    xv = relay.var("x", shape=xs)
    y = relay.nn.relu(relay.nn.sparse_conv2d(xv, tuple(relay.const(a) for a in parts), layout))
    mod = relay.IRModule.from_expr(relay.Function([xv], y))
    ref = np.maximum(_conv_ref(x, w.todense(), layout), 0)
    np.testing.assert_allclose(_np(relay.create_executor("debug", mod=mod).evaluate()(x)),
                               ref, rtol=1e-5, atol=1e-6)
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-6)


def test_sparse_conv2d_errors_name_the_argument():
    X = te.placeholder((1, 4, 4, 8), name="X")
    D = te.placeholder((3, 4), name="D")
    idx = te.placeholder((3,), name="I", dtype="int32")
    ptr = te.placeholder((3,), name="P", dtype="int32")
    with pytest.raises(TEError, match=r"sparse_conv2d: argument kernel_size=2 is invalid; "
                                      r"expected 1 or 3 \(a 1x1 or 3x3 convolution\)"):
        topi.nn.sparse_conv2d(X, D, idx, ptr, "NHWC", kernel_size=2)
    with pytest.raises(TEError, match=r"argument layout='NCWH' is invalid"):
        topi.nn.sparse_conv2d(X, D, idx, ptr, "NCWH")


def _convnet(layout: str):
    """1x1 conv 16->32 + ReLU, a strided 1x1 conv (which must stay dense), 1x1 conv
    32->16 + ReLU."""
    nhwc = layout == "NHWC"
    x = relay.var("data", shape=(1, 8, 8, 16) if nhwc else (1, 16, 8, 8))

    def conv(y, name, cin, cout, stride=1):
        w = relay.var(name + "_weight", shape=(1, 1, cin, cout) if nhwc else (cout, cin, 1, 1))
        return relay.nn.conv2d(y, w, strides=(stride, stride), channels=cout,
                               kernel_size=(1, 1), data_layout=layout,
                               kernel_layout="HWIO" if nhwc else "OIHW")
    y = relay.nn.relu(conv(x, "c1", 16, 32))
    y = relay.nn.relu(conv(conv(y, "c2", 32, 32, stride=2), "c3", 32, 16))
    fn = relay.Function(relay.analysis.free_vars(y), y)
    rng = np.random.default_rng(0)
    params = {p.name_hint: (rng.standard_normal(p.type_annotation.shape) * 0.3).astype(
        "float32") for p in fn.params if p.name_hint != "data"}
    return relay.IRModule.from_expr(fn), params


def _conv_densified(params, sparse_params, layout):
    """The dense model's params: a weight left dense is the converted model's (random
    weights replace the strided convolution's too, as TVM's), a converted one is
    rebuilt from its BSR parts."""
    out = {k: _np(sparse_params[k]) if k in sparse_params else v for k, v in params.items()}
    for name, w in params.items():
        if name + ".data" not in sparse_params:
            continue
        data = _np(sparse_params[name + ".data"])
        data = data.reshape(*data.shape, 1) if data.ndim == 2 else data
        n_by_k = BSRMatrix(data, _np(sparse_params[name + ".indices"]),
                           _np(sparse_params[name + ".indptr"]),
                           (w.shape[3], w.shape[2]) if layout == "NHWC" else w.shape[:2])
        m = n_by_k.todense()
        out[name] = (m.T if layout == "NHWC" else m).reshape(w.shape)
    return out


@pytest.mark.parametrize("layout,bs_c", [("NHWC", 1), ("NCHW", 2)])
def test_sparse_convnet_converts_tunes_and_builds(tmp_path, layout, bs_c):
    mod, params = _convnet(layout)
    np.random.seed(0)
    smod, sparams = convert_model_dense_to_sparse(mod, params, bs_r=4, bs_c=bs_c,
                                                  random_params=True, layout=layout)
    text = relay.astext(smod["main"])
    # the two plain 1x1 convolutions become sparse; the strided one stays dense
    assert text.count("nn.sparse_conv2d(") == 2 and text.count("nn.conv2d(") == 1
    assert "c2_weight" in sparams and "c1_weight" not in sparams
    assert sparams["c1_weight.data"].shape[1:] == ((4,) if bs_c == 1 else (4, bs_c))
    tasks, weights = auto.extract_tasks(smod["main"], sparams, "llvm")
    sparse_tasks = [t for t in tasks if t.task_input_names]
    assert len(tasks) == 3 and len(sparse_tasks) == 2
    nnz = sparams["c1_weight.indices"].shape[0]
    assert sparse_tasks[0].task_input_names[2] == \
        f"sparse_conv2d_bsr_32_16_4_{bs_c}_{nnz}_9_W_indptr"
    policies = [auto.SketchPolicy(t, params=SMALL_SEARCH, verbose=0,
                                  init_search_callbacks=auto.sparse_sketch_rules())
                for t in tasks]
    sketch = policies[0].generate_sketches()
    assert len(sketch) == 1 and "sparse_conv2d_block" in str(sketch[0])
    log = str(tmp_path / "convnet.json")
    auto.TaskScheduler(tasks, weights).tune(
        auto.TuningOptions(num_measure_trials=12, num_measures_per_round=4, verbose=0,
                           measure_callbacks=[auto.RecordToFile(log)]),
        search_policy=policies)
    assert all(res.error_no == 0 for _, res in auto.load_records(log))
    _without_default_records(log, tasks)
    with auto.ApplyHistoryBest(log) as ctx:
        with compiler.transform.PassContext(opt_level=3, config={
                "relay.backend.use_auto_scheduler": True}):
            lib = relay.build(smod, target="llvm", params=sparams)
    assert (ctx.hits, ctx.stale) == (3, 0)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    x = np.random.default_rng(3).random((1, 8, 8, 16) if layout == "NHWC" else
                                        (1, 16, 8, 8)).astype("float32")
    m.set_input("data", x)
    m.run()
    ref = _reference(mod, _conv_densified(params, sparams, layout), x)
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-5)


def test_conv2d_to_sparse_refuses_a_convolution_it_cannot_compute():
    mod, _ = _convnet("NHWC")
    with pytest.raises(RelayError, match=r"Conv2dToSparse: weight 'c2_weight' is read by a "
                                         r"nn.conv2d the sparse kernel does not compute"):
        relay.transform.Conv2dToSparse(["c2_weight"], [[8, 4, 8, 9]], "NHWC")(mod)


def test_testing_networks_take_the_image_shape_in_the_layouts_order():
    mod, _ = relay.testing.resnet.get_workload(num_layers=18, layout="NHWC",
                                               image_shape=(32, 32, 3))
    assert mod["main"].params[0].type_annotation.shape == (1, 32, 32, 3)
    mod, _ = relay.testing.mobilenet.get_workload(layout="NCHW", image_shape=(3, 32, 32))
    assert mod["main"].params[0].type_annotation.shape == (1, 3, 32, 32)


@auto.register_workload("test_sparse_conv2d_relu", override=True)
def sparse_conv2d_relu(x_shape, w_data_shape, w_indices_shape, w_indptr_shape, layout):
    X = te.placeholder(shape=x_shape, name="X")
    W_data = te.placeholder(shape=w_data_shape, name="W_data")
    W_indices = te.placeholder(shape=w_indices_shape, name="W_indices", dtype="int32")
    W_indptr = te.placeholder(shape=w_indptr_shape, name="W_indptr", dtype="int32")
    out = topi.nn.relu(topi.nn.sparse_conv2d(X, W_data, W_indices, W_indptr, layout))
    return [X, W_data, W_indices, W_indptr, out]


@pytest.mark.parametrize("layout,bs_c", [("NHWC", 1), ("NCHW", 2)])
def test_sparse_conv2d_sketch_is_tvms(request, layout, bs_c):
    """TVM's sparse_conv2d rule: the reshape inlined into the ReLU, the block stage tiled
    (batch, height, width in three, block rows in two) with the row-length loop after
    the outer tiles, computed at the ReLU's outer block-row loop."""
    _, parts = _bsr_weight(16, 12, bs_c)
    x_shape = (1, 8, 8, 12) if layout == "NHWC" else (1, 12, 8, 8)
    task = auto.SearchTask(func="test_sparse_conv2d_relu", target="llvm", args=(
        x_shape, parts[0].shape, parts[1].shape, parts[2].shape, layout))
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, verbose=0,
                               init_search_callbacks=auto.sparse_sketch_rules())
    sketches = policy.generate_sketches()
    assert len(sketches) == 1
    check_golden(request, f"sketch_sparse_conv2d_{layout.lower()}", str(sketches[0]))
