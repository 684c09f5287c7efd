"""Sparse 3x3 convolutions (TVM's ``conv3x3_spNHWC`` / ``conv3x3_spNCHW`` and
``bsr_conv2d.convert(..., kernel_size=3)``): kernels against numpy, the relay
conversion against the dense model, tuning and building with the log."""
import numpy as np
import pytest
from autosched_helpers import SMALL_SEARCH
from relay_helpers import check_golden

import autosched as auto
import compiler
from autosched import state as S
from autosched.default_state import default_state
from autosched.task_inputs import get_task_input_buffer
from autosched.tuning import default_steps_repr
from compiler import relay, te, topi
from compiler.contrib import graph_executor
from compiler.errors import TEError
from compiler.relay import data_dep_optimization as ddo
from compiler.relay.analysis.sparse_conv2d import matrix_of
from compiler.relay.data_dep_optimization.utils import random_sparse_conv2d_params
from compiler.relay.errors import RelayError
from compiler.topi.sparse.utils import bsr_from_dense
from records import load_records

RNG = np.random.default_rng(11)


def _np(v):
    return v.numpy() if hasattr(v, "numpy") else np.asarray(v)


def _conv3x3_ref(x, kernel, layout):
    """Stride 1, padding 1, written from the definition (float64)."""
    nchw = x if layout == "NCHW" else x.transpose(0, 3, 1, 2)
    oihw = kernel if layout == "NCHW" else kernel.transpose(3, 2, 0, 1)
    n, _, h, w = nchw.shape
    xp = np.pad(nchw.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, oihw.shape[0], h, w))
    for kh in range(3):
        for kw in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, kh:kh + h, kw:kw + w],
                             oihw[:, :, kh, kw])
    return out if layout == "NCHW" else out.transpose(0, 2, 3, 1)


def _sparse_kernel(ci, co, layout, block=(4, 1), density=0.3, seed=0):
    """A kernel (HWIO or OIHW) whose weight matrix is block-sparse, and its BSR parts."""
    rng = np.random.default_rng(seed)
    rows, cols = co // block[0], 9 * ci // block[1]
    mask = np.kron(rng.random((rows, cols)) < density, np.ones(block))
    mat = (rng.standard_normal((co, 9 * ci)) * mask).astype("float32")
    kernel = mat.T.reshape(3, 3, ci, co) if layout == "NHWC" else mat.reshape(co, ci, 3, 3)
    b = bsr_from_dense(mat, block)
    return kernel, (b.data, b.indices.astype("int32"), b.indptr.astype("int32"))


def _placeholders(xs, parts):
    return (te.placeholder(xs, name="X"), te.placeholder(parts[0].shape, name="W_data"),
            te.placeholder(parts[1].shape, name="W_indices", dtype="int32"),
            te.placeholder(parts[2].shape, name="W_indptr", dtype="int32"))


@pytest.mark.parametrize("layout,bs_c", [("NHWC", 1), ("NHWC", 3), ("NCHW", 1)])
def test_sparse_conv3x3_matches_numpy(layout, bs_c):
    ci, co = 6, 8
    kernel, parts = _sparse_kernel(ci, co, layout, (4, bs_c))
    xs = (2, 5, 7, ci) if layout == "NHWC" else (2, ci, 5, 7)
    X, D, idx, ptr = _placeholders(xs, parts)
    Y = topi.nn.sparse_conv2d(X, D, idx, ptr, layout, kernel_size=3)
    tagged = Y.op.input_tensors[0].op
    assert tagged.tag == ("conv3x3_spNHWC" if layout == "NHWC" else "conv3x3_spNCHW")
    x = RNG.random(xs).astype("float32")
    ref = _conv3x3_ref(x, kernel, layout)
    tvm_name = topi.x86.spconv2d_3x3_nhwc if layout == "NHWC" else topi.x86.spconv2d_3x3_nchw
    tvm_sched = topi.x86.schedule_spconv2d_3x3_nhwc if layout == "NHWC" else \
        topi.x86.schedule_spconv2d_3x3_nchw
    Y2 = topi.nn.relu(tvm_name(X, D, idx, ptr))
    for out_t, s in ((Y, te.create_schedule([Y.op])), (Y, topi.generic.schedule_default([Y])),
                     (Y2, tvm_sched([Y2]))):
        f = compiler.build(s, [X, D, idx, ptr, out_t])
        out = np.zeros([int(d) for d in out_t.shape], "float32")
        f(x, *parts, out)
        want = ref if out_t is Y else np.maximum(ref, 0)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_sparse_conv3x3_errors_name_the_argument():
    X = te.placeholder((1, 4, 4, 8), name="X")
    D2 = te.placeholder((3, 4), name="D")
    D3 = te.placeholder((3, 4, 2), name="D")
    idx = te.placeholder((3,), name="I", dtype="int32")
    ptr = te.placeholder((3,), name="P", dtype="int32")
    with pytest.raises(TEError, match=r"argument kernel_size=5 is invalid; expected 1 or 3"):
        topi.nn.sparse_conv2d(X, D3, idx, ptr, "NHWC", kernel_size=5)
    with pytest.raises(TEError, match=r"spconv2d_3x3_nhwc: argument sparse_data=.* expected "
                                      r"3-D BSR data"):
        topi.nn.sparse_conv2d(X, D2, idx, ptr, "NHWC", kernel_size=3)
    Xc = te.placeholder((1, 8, 4, 4), name="X")
    with pytest.raises(TEError, match=r"spconv2d_3x3_nchw: .*expected one-column blocks"):
        topi.nn.sparse_conv2d(Xc, D3, idx, ptr, "NCHW", kernel_size=3)
    D5 = te.placeholder((3, 4, 5), name="D")
    with pytest.raises(TEError, match=r"expected blocks whose width divides 9 \* 8"):
        topi.nn.sparse_conv2d(X, D5, idx, ptr, "NHWC", kernel_size=3)


def _net3x3(layout: str):
    """conv 3x3 8->16 (padding 1) + ReLU, a strided 3x3 conv and an unpadded one (both
    must stay dense), conv 3x3 16->8 (padding 1)."""
    nhwc = layout == "NHWC"
    x = relay.var("data", shape=(1, 8, 8, 8) if nhwc else (1, 8, 8, 8))

    def conv(y, name, cin, cout, stride=1, pad=1):
        w = relay.var(name + "_weight", shape=(3, 3, cin, cout) if nhwc else (cout, cin, 3, 3))
        return relay.nn.conv2d(y, w, strides=(stride, stride), padding=(pad, pad),
                               channels=cout, kernel_size=(3, 3), data_layout=layout,
                               kernel_layout="HWIO" if nhwc else "OIHW")
    y = relay.nn.relu(conv(x, "c1", 8, 16))
    y = conv(conv(conv(y, "c2", 16, 16, stride=2), "c3", 16, 16, pad=0), "c4", 16, 8)
    fn = relay.Function(relay.analysis.free_vars(y), y)
    params = {}
    for k, p in enumerate(fn.params[1:]):
        cin, cout = (p.type_annotation.shape[2:] if nhwc else
                     p.type_annotation.shape[1::-1])
        params[p.name_hint] = _sparse_kernel(int(cin), int(cout), layout, seed=k)[0]
    return relay.IRModule.from_expr(fn), params


def _dense_model_output(mod, params, x):
    out = _np(relay.create_executor("debug", mod=mod).evaluate()(x, **params))
    assert out.std() > 1e-3
    return out


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_bsr_conv2d_convert_3x3_keeps_the_models_values(layout):
    mod, params = _net3x3(layout)
    x = RNG.random((1, 8, 8, 8)).astype("float32")
    ref = _dense_model_output(mod, params, x)
    sfunc, sparams = ddo.bsr_conv2d.convert(mod["main"], dict(params), (4, 1), 0.5,
                                            layout=layout, kernel_size=3)
    text = relay.astext(sfunc)
    # the two plain (stride 1, padding 1) convolutions become sparse, the others stay
    assert text.count("nn.sparse_conv2d(") == 2 and text.count("nn.conv2d(") == 2
    assert "kernel_size=[3, 3]" in text
    assert "c1_weight" not in sparams and "c2_weight" in sparams and "c3_weight" in sparams
    assert sparams["c1_weight.data"].shape[1:] == (4, 1)        # 3-D, as TVM's
    smod = relay.IRModule.from_expr(sfunc)
    np.testing.assert_allclose(_dense_model_output(smod, sparams, x), ref, rtol=1e-4,
                               atol=1e-5)
    lib = relay.build(smod, target="llvm", params=sparams)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    m.set_input("data", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-5)


def test_3x3_conversion_errors():
    mod, params = _net3x3("NHWC")
    with pytest.raises(RelayError, match=r"Conv2dToSparse: weight 'c2_weight' is read by a "
                                         r"nn.conv2d the sparse kernel does not compute "
                                         r"\(expected a 3x3 convolution with stride 1, "
                                         r"padding 1, no dilation and one group\)"):
        relay.transform.Conv2dToSparse(["c2_weight"], [[8, 4, 1, 8, 5]], "NHWC", 3)(mod)
    nmod, nparams = _net3x3("NCHW")
    with pytest.raises(RelayError, match=r"block size \(4, 2\) for a 3x3 NCHW convolution"):
        ddo.bsr_conv2d.convert(nmod["main"], nparams, (4, 2), 0.5, "NCHW", kernel_size=3)
    with pytest.raises(RelayError, match=r"kernel_size 5; expected 1 or 3"):
        ddo.bsr_conv2d.convert(mod["main"], params, (4, 1), 0.5, "NHWC", kernel_size=5)


def test_sparse_3x3_network_tunes_and_builds_with_the_log(tmp_path):
    mod, params = _net3x3("NHWC")
    sfunc, sparams = ddo.bsr_conv2d.convert(mod["main"], dict(params), (4, 1), 0.5,
                                            layout="NHWC", kernel_size=3)
    tasks, weights = auto.extract_tasks(sfunc, sparams, "llvm")
    sparse_tasks = [t for t in tasks if t.task_input_names]
    assert len(tasks) == 4 and len(sparse_tasks) == 2
    nnz = sparams["c1_weight.indices"].shape[0]
    # TVM's name for a 3x3 weight: out channels, then 9 x in channels
    assert sparse_tasks[0].task_input_names[2] == \
        f"sparse_conv2d_bsr_16_72_4_1_{nnz}_5_W_indptr"
    # the default schedule is a State, so the search starts from it
    assert all(default_state(t) is not None for t in sparse_tasks)
    log = str(tmp_path / "net3x3.json")
    policies = [auto.SketchPolicy(t, params=SMALL_SEARCH, verbose=0,
                                  init_search_callbacks=auto.sparse_sketch_rules())
                for t in tasks]
    sketches = policies[tasks.index(sparse_tasks[0])].generate_sketches()
    assert len(sketches) == 1 and "Im2Col" in str(sketches[0])
    auto.TaskScheduler(tasks, weights).tune(
        auto.TuningOptions(num_measure_trials=16, num_measures_per_round=4, verbose=0,
                           measure_callbacks=[auto.RecordToFile(log)]),
        search_policy=policies)
    records = auto.load_records(log)
    assert all(res.error_no == 0 for _, res in records)
    dflt = {t.workload_key: default_steps_repr(default_state(t)) for t in tasks}
    kept = [r for r in load_records(log)
            if r.is_valid and repr(r.input.steps) != dflt[r.input.workload_key]]
    with open(log, "w") as f:
        f.writelines(r.to_json() + "\n" for r in kept)
    with auto.ApplyHistoryBest(log) as ctx:
        with compiler.transform.PassContext(opt_level=3, config={
                "relay.backend.use_auto_scheduler": True}):
            lib = relay.build(relay.IRModule.from_expr(sfunc), target="llvm", params=sparams)
    assert ctx.hits == 4 and ctx.stale == 0
    m = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    x = RNG.random((1, 8, 8, 8)).astype("float32")
    m.set_input("data", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _dense_model_output(mod, params, x),
                               rtol=1e-4, atol=1e-5)


@auto.register_workload("test_sparse_conv3x3_relu", override=True)
def sparse_conv3x3_relu(x_shape, data_shape, indices_shape, indptr_shape, layout):
    X, D, idx, ptr = _placeholders(x_shape, (np.zeros(data_shape), np.zeros(indices_shape),
                                             np.zeros(indptr_shape)))
    return [X, D, idx, ptr, topi.nn.relu(topi.nn.sparse_conv2d(X, D, idx, ptr, layout, 3))]


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_sparse_conv3x3_sketch(request, layout):
    """The 3x3 rule: pixel tiles outermost with the im2col rows gathered there, channel
    tiles inside (NHWC: the block stage computed at them, its row-length loop inside
    its block-row loop), the reshape inlined into the ReLU."""
    _, parts = _sparse_kernel(8, 16, layout)
    xs = (1, 6, 6, 8) if layout == "NHWC" else (1, 8, 6, 6)
    task = auto.SearchTask(func="test_sparse_conv3x3_relu", target="llvm", args=(
        xs, parts[0].shape, parts[1].shape, parts[2].shape, layout))
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, verbose=0,
                               init_search_callbacks=[auto.sparse_conv3x3_sketch_rule()])
    sketches = policy.generate_sketches()
    assert len(sketches) == 1
    check_golden(request, f"sketch_sparse_conv3x3_{layout.lower()}", str(sketches[0]))
    # every sample keeps the im2col stage computed inside the pixel tiles
    states = policy.sample_initial_population(8)
    cols = [st.op.name.lower() for st in sketches[0].stages].index("im2col")
    assert states and all(st.stages[cols].compute_at == S.ITER for st in states)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_random_sparse_3x3_params_convert_back_to_their_blocks(layout):
    """``random_sparse_conv2d_params(..., kernel_size=3)`` lays each random BSR matrix
    into the kernel as the 3x3 conversion reads it: the converted weights have exactly
    the random matrix's blocks."""
    mod, params = _net3x3(layout)
    np.random.seed(1)
    rparams = random_sparse_conv2d_params(mod["main"], params, 4, 1, 0.25, layout,
                                          kernel_size=3)
    for name in params:
        w = _np(rparams[name])
        assert not np.array_equal(w, params[name])
        mat = matrix_of(w, layout)
        # random_bsr_matrix's block count for this shape and density
        assert bsr_from_dense(mat, (4, 1)).data.shape[0] == int(0.25 * mat.size) // 4 + 1
    _, sparams = ddo.bsr_conv2d.convert(mod["main"], rparams, (4, 1), 0.7, layout=layout,
                                        kernel_size=3)
    assert {n for n in params if n + ".data" in sparams} == {"c1_weight", "c4_weight"}


def test_conversions_register_the_bsr_parts_as_tvm_does():
    """As TVM's process_params: every converted weight's parts go to the task-input table
    under "default" and TVM's names (not for a conv2d with ``reg_task_input=False``)."""
    mod, params = _net3x3("NHWC")
    _, sparams = ddo.bsr_conv2d.convert(mod["main"], dict(params), (4, 1), 0.5, "NHWC",
                                        kernel_size=3)
    nnz = sparams["c4_weight.indices"].shape[0]
    prefix = f"sparse_conv2d_bsr_8_144_4_1_{nnz}_3_"
    for part in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(get_task_input_buffer("default", prefix + "W_" + part),
                                      _np(sparams["c4_weight." + part]))
    x = relay.var("x", shape=(2, 24))
    w = relay.var("w_reg", shape=(12, 24))
    fn = relay.Function([x, w], relay.nn.dense(x, w))
    rng = np.random.default_rng(5)
    wv = (np.kron(rng.random((3, 24)) < 0.3, np.ones((4, 1))) *
          rng.standard_normal((12, 24))).astype("float32")
    _, dparams = ddo.bsr_dense.convert(fn, {"w_reg": wv}, (4, 1), 0.5)
    dnnz = dparams["w_reg.indices"].shape[0]
    got = get_task_input_buffer("default", f"sparse_dense_bsr_12_24_4_1_{dnnz}_4_W_indptr")
    np.testing.assert_array_equal(got, _np(dparams["w_reg.indptr"]))
    # reg_task_input=False: nothing registered (2x1 blocks: a name no other test makes)
    nmod, nparams = _net3x3("NCHW")
    relay.analysis.sparse_conv2d.process_params(nmod["main"], nparams, (2, 1), 0.5, "NCHW",
                                                3, reg_task_input=False)
    n2 = nparams["c4_weight.indices"].shape[0]
    with pytest.raises(auto.AutoSchedError, match=r"task input 'sparse_conv2d_bsr_8_144_2_1"):
        get_task_input_buffer("default", f"sparse_conv2d_bsr_8_144_2_1_{n2}_5_W_indptr")
