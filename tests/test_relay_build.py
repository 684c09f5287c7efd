"""relay.build end to end: the graph executor API and its errors, graph JSON and memory
plan, kernel deduplication, schedule providers, export and load without compiling, and
the model zoo (ResNet-18, MobileNetV2, a BERT-base layer) against the interpreter."""
import json
import logging
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from relay_helpers import module_of, rand, run_built, run_interp

import compiler
from compiler import relay, te
from compiler.contrib import graph_executor
from compiler.relay import RelayInputError, testing
from compiler.relay.backend.dispatch import schedule_provider
from compiler.relay.backend.te_compiler import KernelCache
from compiler.relay.op import OpStrategy, op_strategy
from compiler.transform import PassContext

RNG = np.random.default_rng(11)


def small_net():
    mod, params = testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32),
                                              num_classes=10)
    return mod, params


@pytest.fixture(scope="module")
def built_small():
    mod, params = small_net()
    with PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)
    return mod, params, lib


def rel_err(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


# ------------------------------------------------------------------ executor API
def test_graph_module_api(built_small):
    mod, params, lib = built_small
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    x = rand(RNG, (1, 3, 32, 32))
    m.set_input("data", x)
    m.run()
    out = m.get_output(0).numpy()
    assert m.get_num_outputs() == 1 and m.get_num_inputs() == 1
    np.testing.assert_array_equal(m.get_input("data").numpy(), x)
    assert rel_err(out, run_interp(mod, {"data": x}, params)[0]) < 1e-4
    m.set_input(0, compiler.nd.array(x))             # by index, as an NDArray
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), out)
    res = m.benchmark(number=2, repeat=2)
    assert len(res.results) == 2 and res.mean > 0 and "mean (ms)" in str(res)


def test_executor_input_errors(built_small):
    _, _, lib = built_small
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    with pytest.raises(RelayInputError, match=r"input\(s\) \['data'\] were never set"):
        m.run()
    with pytest.raises(RelayInputError, match=r"set_input 'data': got shape \(1, 3, 16, 16\) "
                                              r"dtype float32, expected shape \(1, 3, 32, 32\)"):
        m.set_input("data", np.zeros((1, 3, 16, 16), "float32"))
    with pytest.raises(RelayInputError, match="dtype float64, expected shape"):
        m.set_input("data", np.zeros((1, 3, 32, 32)))
    with pytest.raises(RelayInputError, match=r"unknown input 'image'; the model's inputs are "
                                              r"\['data'\]"):
        m.set_input("image", np.zeros((1, 3, 32, 32), "float32"))
    with pytest.raises(RelayInputError, match="index 3 out of range"):
        m.set_input(3, np.zeros(1))
    with pytest.raises(RelayInputError, match="get_output: index 1 out of range"):
        m.get_output(1)


def test_build_rejects_bad_modules():
    x = relay.var("x", shape=(2,))
    with pytest.raises(relay.RelayError, match="expected an IRModule or a relay.Function"):
        relay.build(relay.exp(x))
    twin = relay.Function([x, relay.var("x", shape=(2,))], relay.exp(x))
    with pytest.raises(relay.RelayError, match="two parameters named 'x'"):
        relay.build(twin)
    with pytest.raises(relay.RelayError, match=r"param 'x': got shape \(3,\)"):
        relay.build(relay.Function([x], relay.exp(x)), params={"x": np.zeros(3, "float32")})


# ------------------------------------------------------------------ graph and memory plan
def test_graph_json_follows_tvm_format(built_small):
    _, params, lib = built_small
    g = json.loads(lib.get_graph_json())
    assert set(g) == {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"}
    assert set(g["attrs"]) == {"dltype", "storage_id", "shape"}
    ops = [n for n in g["nodes"] if n["op"] == "tvm_op"]
    assert len(ops) == lib.stats["groups"]
    assert all(n["op"] == "null" for n in (g["nodes"][i] for i in g["arg_nodes"]))
    assert g["nodes"][g["arg_nodes"][0]]["name"] == "data"
    assert set(lib.get_params()) == {n["name"] for n in g["nodes"]
                                     if n["op"] == "null" and n["name"] != "data"}
    assert g["attrs"]["shape"][1][g["heads"][0][0]] == [1, 10]


def test_memory_plan_reuses_storage(built_small):
    _, _, lib = built_small
    g = json.loads(lib.get_graph_json())
    storage = g["attrs"]["storage_id"][1]
    assert len(set(storage)) < len(storage)        # intermediates share storage
    layout = lib.layout
    total = sum(int(np.prod(s)) * np.dtype(d).itemsize for s, d, _ in layout.entries)
    assert layout.pool_bytes < total


def test_identical_groups_compile_once():
    x = relay.var("x", shape=(4, 4))
    y = relay.exp(relay.nn.softmax(relay.exp(relay.nn.softmax(x))))
    lib = relay.build(module_of(y))
    assert lib.stats["groups"] == 4 and lib.stats["kernels"] == 2
    out = run_built(module_of(y), {"x": rand(RNG, (4, 4))})[0]
    assert out.shape == (4, 4)


# ------------------------------------------------------------------ schedule providers
class CountingProvider:
    """Gives every group a plain (unoptimized) schedule and records the keys asked for."""

    def __init__(self):
        self.keys = []

    def query(self, target, key, tensors):
        self.keys.append(key)
        return te.create_schedule([tensors[-1].op])


def test_provider_used_only_with_use_auto_scheduler(caplog):
    x = relay.var("x", shape=(4, 8))
    y = relay.nn.relu(relay.nn.dense(x, relay.var("w", shape=(6, 8))))
    mod = module_of(y)
    inputs = {"x": rand(RNG, (4, 8)), "w": rand(RNG, (6, 8))}
    p = CountingProvider()
    with schedule_provider(p), caplog.at_level(logging.WARNING, "compiler.relay"):
        lib = relay.build(mod)
    assert p.keys == [] and lib.stats["tuned_groups"] == 0
    assert "relay.backend.use_auto_scheduler is not set" in caplog.text
    with schedule_provider(p), PassContext(opt_level=3, config={
            "relay.backend.use_auto_scheduler": True}):
        lib = relay.build(mod)
        out = run_built(mod, inputs)[0]
    assert len(p.keys) >= 1 and lib.stats["tuned_groups"] == 1
    np.testing.assert_allclose(out, np.maximum(inputs["x"] @ inputs["w"].T, 0), rtol=1e-5)


def test_workload_keys_are_stable_across_processes():
    code = textwrap.dedent("""
        from compiler import relay
        from compiler.relay.backend.te_compiler import lower_to_te
        from compiler.relay.transform import FuseOps, InferType
        from compiler.transform import PassContext
        x = relay.var("x", shape=(4, 8))
        y = relay.nn.relu(relay.nn.dense(x, relay.var("w", shape=(6, 8))))
        mod = relay.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
        with PassContext(opt_level=2):
            fused = FuseOps()(InferType()(mod))
        print(lower_to_te(fused["main"].body.op).key)
    """)
    keys = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)}
    assert len(keys) == 1 and keys.pop().startswith('["')


# ------------------------------------------------------------------ export and load
def test_export_and_load_without_compiling(built_small, tmp_path):
    mod, params, lib = built_small
    path = tmp_path / "net.tar"
    lib.export_library(path)
    x = rand(RNG, (1, 3, 32, 32))
    expected = run_interp(mod, {"data": x}, params)[0]
    np.save(tmp_path / "x.npy", x)
    code = textwrap.dedent(f"""
        import numpy as np
        import compiler
        from compiler.contrib import graph_executor
        from compiler.runtime import process_stats, set_default_cache
        set_default_cache(None)
        lib = compiler.runtime.load_module({str(path)!r})
        m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
        m.set_input("data", np.load({str(tmp_path / "x.npy")!r}))
        m.run()
        np.save({str(tmp_path / "out.npy")!r}, m.get_output(0).numpy())
        print(process_stats()["compiles"])
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "0"                  # nothing was compiled when loading
    assert rel_err(np.load(tmp_path / "out.npy"), expected) < 1e-4


def test_load_module_rejects_non_libraries(tmp_path):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar file")
    with pytest.raises(compiler.BuildError, match="is not an exported library"):
        compiler.runtime.load_module(bad)


# ------------------------------------------------------------------ create_executor
def test_create_executor_graph_and_debug_agree():
    x = relay.var("x", shape=(3, 4))
    y = relay.Tuple([relay.exp(x), relay.sum(x, axis=1)])
    mod = module_of(y)
    xv = rand(RNG, (3, 4))
    g = relay.create_executor("graph", mod=mod).evaluate()(xv)
    d = relay.create_executor("debug", mod=mod).evaluate()(x=xv)
    for a, b in zip(g, d):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    with pytest.raises(relay.RelayError, match="kind 'vm'"):
        relay.create_executor("vm", mod=mod)


# ------------------------------------------------------------------ the model zoo
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert_base_layer"])
def test_model_zoo_matches_interpreter(name):
    make = {"resnet18": lambda: testing.resnet.get_workload(num_layers=18),
            "mobilenet_v2": lambda: testing.mobilenet.get_workload(),
            "bert_base_layer": lambda: testing.bert.get_workload(seq_len=128)}[name]
    mod, params = make()
    shape = mod["main"].params[0].checked_type.shape
    x = rand(RNG, shape)
    got = run_built(mod, {"data": x}, params, opt_level=3)[0]
    ref = run_interp(mod, {"data": x}, params)[0]
    assert got.shape == ref.shape
    assert rel_err(got, ref) < 1e-4


def test_mlp_workload_is_seeded():
    a = testing.mlp.get_workload(seed=3)[1]
    b = testing.mlp.get_workload(seed=3)[1]
    c = testing.mlp.get_workload(seed=4)[1]
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["fc1_weight"], c["fc1_weight"])


# ------------------------------------------------------------------ strategies
@pytest.mark.parametrize("layout,groups,expected", [
    ("NCHW", 1, "conv2d_nchw.x86"), ("NCHW", 8, "depthwise_conv2d_nchw.x86"),
    ("NCHW", 2, "group_conv2d_nchw.x86"), ("NHWC", 1, "conv2d_nhwc.x86")])
def test_conv2d_strategy_selects_by_attrs(layout, groups, expected):

    shape = (1, 8, 6, 6) if layout == "NCHW" else (1, 6, 6, 8)
    wshape = (8, 8 // groups, 3, 3) if layout == "NCHW" else (3, 3, 8 // groups, 8)
    call = relay.nn.conv2d(relay.var("x", shape=shape), relay.var("w", shape=wshape),
                           groups=groups, data_layout=layout)
    types = (relay.TensorType(shape), relay.TensorType(wshape))
    strat = op_strategy(call.op, call.attrs, types, compiler.parse_target("llvm"))
    assert strat.best().name == expected
    assert strat.implementations[-1].name == "generic"
    assert strat.implementations[-1].plevel == 0


def test_strategy_priority_and_kernel_records_its_implementation():

    s = OpStrategy()
    s.add_implementation(None, None, "low", plevel=5)
    s.add_implementation(None, None, "high", plevel=12)
    s.add_implementation(None, None, "tie", plevel=12)
    assert s.best().name == "high"

    x = relay.var("x", shape=(1, 8, 6, 6))
    y = relay.nn.relu(relay.nn.conv2d(x, relay.var("w", shape=(8, 1, 3, 3)), groups=8))
    with PassContext(opt_level=2):
        fused = relay.transform.FuseOps()(relay.transform.InferType()(module_of(y)))
    cache = KernelCache(compiler.parse_target("llvm"), use_providers=False)
    kernel = cache.lower(fused["main"].body.op)
    assert kernel.implementation == "depthwise_conv2d_nchw.x86"
