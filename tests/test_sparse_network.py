"""Sparse models from dense ones, tuned and built as a network: TVM's
``relay.data_dep_optimization`` (``bsr_dense``, ``simplify_fc_transpose``),
``DenseToSparse``, ``convert_model_dense_to_sparse``, task extraction that gives a sparse
task its weights as task inputs, and TVM's network tutorial with ``use_sparse=True``."""
import numpy as np
import pytest
from autosched_helpers import SMALL_SEARCH
from relay_helpers import check_golden

import autosched as auto
import compiler
from autosched.default_state import default_state
from autosched.task_inputs import get_task_input_buffer
from autosched.tuning import default_steps_repr
from compiler import relay
from compiler.contrib import graph_executor
from compiler.errors import TEError
from compiler.relay import data_dep_optimization as ddo
from compiler.relay.analysis import sparse_dense as sd_analysis
from compiler.relay.data_dep_optimization.utils import convert_model_dense_to_sparse
from compiler.relay.errors import RelayError
from compiler.topi.sparse.utils import BSRMatrix, bsr_from_dense, random_bsr_matrix
from records import load_records

IMAGE = (3, 8, 8)          # a small MLP: 192 -> 128 -> 64 -> 1000


def _mlp():
    return relay.testing.mlp.get_workload(batch_size=1, image_shape=IMAGE, num_classes=1000)


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
    out = relay.create_executor("debug", mod=mod).evaluate()(x, **params)
    return _np(out)


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
