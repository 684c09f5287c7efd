"""Relay passes: each pass's rewrite and its numerical equivalence, the pipeline's opt
levels, and FuseOps (rules by pattern kind; golden fused groups of three model blocks)."""
import numpy as np
import pytest
from relay_helpers import check_golden, module_of, rand, run_interp

import compiler
from compiler import relay
from compiler.relay import testing
from compiler.relay import transform as T
from compiler.relay.functor import post_order
from compiler.transform import PassContext

RNG = np.random.default_rng(7)


def op_calls(expr):
    """Operator names of every call in ``expr`` (nested functions included), sorted."""
    return sorted(n.op.name for n in relay.functor.post_order(expr)
                  if isinstance(n, relay.Call) and isinstance(n.op, relay.op.Op))


def ops_of(mod):
    return sorted(set(op_calls(mod["main"])))


def primitive_groups(mod):
    return [n for n in relay.functor.post_order(mod["main"].body)
            if isinstance(n, relay.Function) and n.attrs.get("Primitive")]


def group_ops(mod):
    return [op_calls(g) for g in primitive_groups(mod)]


def same_values(before, after, inputs, params=None, rtol=1e-5):
    for a, b in zip(run_interp(before, inputs, params), run_interp(after, inputs, params)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-5)


# ------------------------------------------------------------------ individual passes
def test_simplify_inference_removes_batch_norm_and_dropout():
    x = relay.var("x", shape=(2, 3, 4, 4))
    g, b, m, v = (relay.var(n, shape=(3,)) for n in "gbmv")
    y = relay.nn.dropout(relay.nn.batch_norm(x, g, b, m, v, epsilon=1e-3)[0])
    mod = module_of(y)
    out = T.SimplifyInference()(mod)
    assert "nn.batch_norm" not in ops_of(out) and "nn.dropout" not in ops_of(out)
    inputs = {"x": rand(RNG, (2, 3, 4, 4)), "g": rand(RNG, (3,)), "b": rand(RNG, (3,)),
              "m": rand(RNG, (3,)), "v": rand(RNG, (3,), low=0.5, high=1.5)}
    same_values(mod, out, inputs)


def test_fold_constant_evaluates_constant_subgraphs():
    c1 = relay.const(np.arange(4, dtype="float32"))
    c2 = relay.const(np.full(4, 2.0, dtype="float32"))
    x = relay.var("x", shape=(4,))
    mod = module_of(relay.multiply(relay.exp(relay.add(c1, c2)), x))
    out = T.FoldConstant()(mod)
    assert ops_of(out) == ["multiply"]
    folded = out["main"].body.args[0]
    assert isinstance(folded, relay.Constant)
    np.testing.assert_allclose(folded.data, np.exp(np.arange(4) + 2.0), rtol=1e-6)


def test_fold_constant_runs_from_opt_level_2_only():
    c = relay.const(np.ones(3, "float32"))
    x = relay.var("x", shape=(3,))
    mod = module_of(relay.add(relay.exp(c), x))
    with PassContext(opt_level=1):
        assert ops_of(T.Sequential([T.FoldConstant()])(mod)) == ["add", "exp"]
    with PassContext(opt_level=2):
        assert ops_of(T.Sequential([T.FoldConstant()])(mod)) == ["add"]
    with PassContext(opt_level=2, disabled_pass=["FoldConstant"]):
        assert ops_of(T.Sequential([T.FoldConstant()])(mod)) == ["add", "exp"]
    with PassContext(opt_level=0, required_pass=["FoldConstant"]):
        assert ops_of(T.Sequential([T.FoldConstant()])(mod)) == ["add"]


def test_eliminate_common_subexpr():
    x = relay.var("x", shape=(3,))
    y = relay.add(relay.exp(x), relay.exp(x))
    out = T.EliminateCommonSubexpr()(module_of(y))
    add = out["main"].body
    assert add.args[0] is add.args[1]


def test_dead_code_elimination_drops_unused_let():
    x = relay.var("x", shape=(3,))
    unused = relay.var("u", shape=(3,))
    body = relay.Let(unused, relay.exp(x), relay.negative(x))
    out = T.DeadCodeElimination()(compiler.IRModule.from_expr(relay.Function([x], body)))
    assert ops_of(out) == ["negative"]


def test_simplify_expr_reshape_chain_and_transposes():
    x = relay.var("x", shape=(2, 3, 4))
    y = relay.reshape(relay.reshape(x, (6, 4)), (4, 6))
    y = relay.transpose(relay.transpose(y, (1, 0)), (1, 0))
    mod = module_of(y)
    out = T.SimplifyExpr()(mod)
    assert ops_of(out) == ["reshape"]
    assert out["main"].body.args[0] is out["main"].params[0]
    same_values(mod, out, {"x": rand(RNG, (2, 3, 4))})
    noop = T.SimplifyExpr()(module_of(relay.transpose(x, (0, 1, 2))))
    assert ops_of(noop) == []


def test_fold_scale_axis_folds_per_channel_scale_into_conv_weights():
    x = relay.var("x", shape=(1, 3, 6, 6))
    w = rand(RNG, (4, 3, 3, 3))
    scale = rand(RNG, (4, 1, 1), low=0.5, high=2)
    bias = rand(RNG, (4,))
    conv = relay.nn.bias_add(relay.nn.conv2d(x, relay.const(w), padding=(1, 1)),
                             relay.const(bias))
    mod = module_of(relay.nn.relu(relay.multiply(conv, relay.const(scale))))
    out = T.FoldScaleAxis()(mod)
    assert ops_of(out) == ["nn.bias_add", "nn.conv2d", "nn.relu"]
    same_values(mod, out, {"x": rand(RNG, (1, 3, 6, 6))}, rtol=1e-4)


def test_fold_scale_axis_leaves_non_channel_scales_and_shared_layers():
    x = relay.var("x", shape=(1, 3, 6, 6))
    conv = relay.nn.conv2d(x, relay.const(rand(RNG, (4, 3, 1, 1))))
    spatial = relay.const(rand(RNG, (1, 6, 6)))
    assert "multiply" in ops_of(T.FoldScaleAxis()(module_of(relay.multiply(conv, spatial))))
    per_channel = relay.const(rand(RNG, (4, 1, 1)))
    shared = relay.add(relay.multiply(conv, per_channel), conv)
    assert "multiply" in ops_of(T.FoldScaleAxis()(module_of(shared)))


def _conv_of(mod):
    return next(n for n in post_order(mod["main"])
                if isinstance(n, relay.Call) and getattr(n.op, "name", "") == "nn.conv2d")


@pytest.mark.parametrize("shape, oc, k, stride, pad", [
    ((1, 16, 7, 7), 32, 3, 1, 1),          # a deep ResNet layer in small
    ((1, 8, 28, 28), 16, 3, 2, 1),         # strided: 14 columns
    ((1, 16, 14, 14), 24, 1, 1, 0),        # 1x1
])
def test_alter_op_layout_packs_narrow_conv_weights(shape, oc, k, stride, pad):
    """A constant OIHW weight of a conv whose width does not fill vectors becomes
    "OIHW{v}o" (v = the machine's float32 lanes), packed by blocks of v output channels,
    and the module computes the same values (interpreter and build)."""
    v = compiler.topi.x86.utils.vector_lanes("float32")
    if oc % v or oc < 2 * v:                # at least two channel blocks
        oc = 2 * v
    x = relay.var("x", shape=shape)
    w = rand(RNG, (oc, shape[1], k, k))
    y = relay.nn.relu(relay.nn.conv2d(x, relay.const(w), strides=(stride, stride),
                                      padding=(pad, pad)))
    mod = module_of(y)
    out = T.AlterOpLayout()(mod)
    conv = _conv_of(out)
    assert conv.attrs.kernel_layout == f"OIHW{v}o"
    packed = conv.args[1].data
    assert packed.shape == (oc // v, shape[1], k, k, v)
    np.testing.assert_array_equal(packed[1, 2, 0, 0, 3], w[v + 3, 2, 0, 0])
    assert T.alter_op_layout(out).astext() == out.astext()      # idempotent
    data = rand(RNG, shape)
    same_values(mod, out, {"x": data}, rtol=1e-4)
    lib = relay.build(mod, "llvm")
    m = compiler.contrib.graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    m.set_input("x", data)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), run_interp(mod, {"x": data})[0],
                               rtol=1e-4, atol=1e-4)


def test_alter_op_layout_leaves_wide_grouped_and_non_constant_convs():
    v = compiler.topi.x86.utils.vector_lanes("float32")
    x = relay.var("x", shape=(1, 8, 4 * v, 4 * v))
    wide = relay.nn.conv2d(x, relay.const(rand(RNG, (v, 8, 3, 3))), padding=(1, 1))
    grouped = relay.nn.conv2d(relay.var("z", shape=(1, 8, 7, 7)),
                              relay.const(rand(RNG, (v, 4, 3, 3))), padding=(1, 1), groups=2)
    weight_input = relay.nn.conv2d(relay.var("y", shape=(1, 8, 7, 7)),
                                   relay.var("w", shape=(v, 8, 3, 3)), padding=(1, 1))
    odd_channels = relay.nn.conv2d(relay.var("u", shape=(1, 8, 7, 7)),
                                   relay.const(rand(RNG, (v + 1, 8, 3, 3))), padding=(1, 1))
    for y in (wide, grouped, weight_input, odd_channels):
        assert _conv_of(T.AlterOpLayout()(module_of(y))).attrs.kernel_layout == "OIHW"


def _build_and_run(mod, inputs):
    lib = relay.build(mod, "llvm")
    m = compiler.contrib.graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    return m.get_output(0).numpy()


@pytest.mark.parametrize("data_shape, units", [((4, 24), 64), ((1, 3, 40), 32), ((1, 16), 8)])
def test_alter_op_layout_packs_constant_dense_weights(data_shape, units):
    """A constant (N, K) dense weight becomes contrib_dense_pack's "NC{nr}n" (two
    vectors of units when they divide N, else one); values are unchanged (interpreter
    and build), 3-D data included, and the pass is idempotent."""
    v = compiler.topi.x86.utils.vector_lanes("float32")
    units = units * v // 8                   # the same number of vectors on AVX2 and AVX-512
    nr = 2 * v if units % (2 * v) == 0 else v
    k = data_shape[-1]
    x = relay.var("x", shape=data_shape)
    w = rand(RNG, (units, k))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, relay.const(w)),
                                        relay.const(rand(RNG, (units,))), axis=-1))
    mod = module_of(y)
    out = T.AlterOpLayout()(mod)
    (dense,) = [n for n in post_order(out["main"]) if isinstance(n, relay.Call)
                and getattr(n.op, "name", "") == "nn.contrib_dense_pack"]
    assert dense.attrs.weight_layout == f"NC{nr}n"
    packed = dense.args[1].data
    assert packed.shape == (units // nr, k, nr)
    np.testing.assert_array_equal(packed[0, 5, 3], w[3, 5])
    assert T.alter_op_layout(out).astext() == out.astext()
    data = rand(RNG, data_shape)
    same_values(mod, out, {"x": data}, rtol=1e-4)
    np.testing.assert_allclose(_build_and_run(mod, {"x": data}), run_interp(mod, {"x": data})[0],
                               rtol=1e-4, atol=1e-4)


def test_alter_op_layout_leaves_odd_units_and_weight_inputs_as_dense():
    v = compiler.topi.x86.utils.vector_lanes("float32")
    x = relay.var("x", shape=(2, 16))
    odd = relay.nn.dense(x, relay.const(rand(RNG, (v + 2, 16))))
    weight_input = relay.nn.dense(x, relay.var("w", shape=(2 * v, 16)))
    for y in (odd, weight_input):
        assert ops_of(T.AlterOpLayout()(module_of(y))) == ["nn.dense"]


def test_dense_pack_type_errors():
    x = relay.var("x", shape=(2, 16))
    for w_shape, layout, msg in [((2, 16, 8), "NC", "expected 'NC{nr}n'"),
                                 ((2, 16), "NC8n", "must be 3-D"),
                                 ((2, 16, 4), "NC8n", "must be 3-D"),
                                 ((2, 12, 8), "NC8n", "12 input features")]:
        y = relay.nn.contrib_dense_pack(x, relay.var("w", shape=w_shape), layout)
        with pytest.raises(relay.RelayTypeError, match=msg):
            T.InferType()(module_of(y))


def test_fold_scale_axis_dense():
    x = relay.var("x", shape=(2, 5))
    y = relay.multiply(relay.nn.dense(x, relay.const(rand(RNG, (3, 5)))),
                       relay.const(rand(RNG, (3,))))
    mod = module_of(y)
    out = T.FoldScaleAxis()(mod)
    assert ops_of(out) == ["nn.dense"]
    same_values(mod, out, {"x": rand(RNG, (2, 5))})


def test_combine_parallel_dense_at_opt_level_4():
    x = relay.var("x", shape=(4, 8))
    ws = [relay.var(f"w{k}", shape=(u, 8)) for k, u in enumerate((3, 5, 3))]
    y = relay.Tuple([relay.nn.relu(relay.nn.dense(x, w)) for w in ws])
    mod = module_of(y)
    with PassContext(opt_level=3):
        assert op_calls(T.optimize_pipeline()(mod)["main"]).count("nn.dense") == 3
    with PassContext(opt_level=4):
        assert op_calls(T.optimize_pipeline()(mod)["main"]).count("nn.dense") == 1
    out = T.CombineParallelDense()(mod)
    assert op_calls(out["main"]).count("nn.dense") == 1
    inputs = {"x": rand(RNG, (4, 8)), **{f"w{k}": rand(RNG, (u, 8))
                                         for k, u in enumerate((3, 5, 3))}}
    same_values(mod, out, inputs)


def test_combined_constant_dense_weights_are_joined_then_packed():
    """Constant branch weights are concatenated as one constant, so AlterOpLayout (after
    CombineParallelDense, as in TVM) packs the wide dense: Q/K/V become one packed GEMM."""
    v = compiler.topi.x86.utils.vector_lanes("float32")
    x = relay.var("x", shape=(4, 8))
    ws = [rand(RNG, (2 * v, 8)) for _ in range(3)]
    y = relay.Tuple([relay.nn.relu(relay.nn.dense(x, relay.const(w))) for w in ws])
    mod = module_of(y)
    combined = T.CombineParallelDense()(mod)
    (wide,) = [n for n in post_order(combined["main"]) if isinstance(n, relay.Call)
               and getattr(n.op, "name", "") == "nn.dense"]
    assert isinstance(wide.args[1], relay.Constant) and wide.args[1].data.shape == (6 * v, 8)
    with PassContext(opt_level=4):
        opt = T.optimize_pipeline()(mod)
    assert op_calls(opt["main"]).count("nn.contrib_dense_pack") == 1
    assert "nn.dense" not in op_calls(opt["main"])
    same_values(mod, combined, {"x": rand(RNG, (4, 8))})


# ------------------------------------------------------------------ FuseOps rules
def test_fuse_conv_bias_relu_into_one_group():
    x = relay.var("x", shape=(1, 3, 8, 8))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, relay.var("w", shape=(4, 3, 3, 3))),
                                        relay.var("b", shape=(4,))))
    with PassContext(opt_level=2):
        out = T.FuseOps()(module_of(y))
    assert group_ops(out) == [["nn.bias_add", "nn.conv2d", "nn.relu"]]


def test_fuse_opaque_stands_alone_and_reduction_takes_elementwise_inputs():
    x = relay.var("x", shape=(4, 6))
    y = relay.sum(relay.exp(relay.nn.softmax(relay.negative(x))), axis=1)
    with PassContext(opt_level=2):
        out = T.FuseOps()(module_of(y))
    assert group_ops(out) == [["negative"], ["nn.softmax"], ["exp", "sum"]]


def test_fuse_opt_level_0_and_max_depth():
    x = relay.var("x", shape=(8,))
    y = x
    for _ in range(6):
        y = relay.exp(y)
    with PassContext(opt_level=0):
        assert len(primitive_groups(T.FuseOps()(module_of(y)))) == 6
    with PassContext(opt_level=2):
        assert len(primitive_groups(T.FuseOps()(module_of(y)))) == 1
    with PassContext(opt_level=2, config={"relay.FuseOps.max_depth": 2}):
        assert len(primitive_groups(T.FuseOps()(module_of(y)))) == 3


def test_fuse_diamond_joins_at_the_post_dominator():
    x = relay.var("x", shape=(4, 4))
    a = relay.exp(x)
    y = relay.add(relay.sigmoid(a), relay.tanh(a))
    with PassContext(opt_level=2):
        out = T.FuseOps()(module_of(y))
    assert group_ops(out) == [["add", "exp", "sigmoid", "tanh"]]


# ------------------------------------------------------------------ golden fused blocks
def fused_block(out, seed=0):
    """The block after relay's pipeline; AlterOpLayout is off so the golden text does not
    depend on the machine's vector width (it is tested on its own below)."""
    mod, params = testing.create_workload(testing.layers.function_of(out), seed)
    with PassContext(opt_level=3, disabled_pass=["AlterOpLayout"]):
        return relay.optimize(mod, params)


def test_fused_resnet_basic_block(request):
    data = relay.var("data", shape=(1, 16, 16, 16))
    out = testing.resnet.basic_block(data, "unit", 16, 32, 2)
    fused = fused_block(out)
    check_golden(request, "relay_fused_resnet_block", fused.astext())
    # conv+bias+relu, conv+bias (shortcut), conv+bias+add+relu
    assert group_ops(fused) == [["add", "nn.conv2d", "nn.relu"], ["add", "nn.conv2d"],
                                ["add", "add", "nn.conv2d", "nn.relu"]]


def test_fused_mobilenet_v2_inverted_residual(request):
    data = relay.var("data", shape=(1, 16, 14, 14))
    out = testing.mobilenet.inverted_residual(data, "block", 16, 16, 1, 6)
    fused = fused_block(out)
    check_golden(request, "relay_fused_mobilenet_v2_block", fused.astext())
    # expand conv+bn+relu6, depthwise conv+bn+relu6, project conv+bn+residual add
    assert group_ops(fused) == [["add", "clip", "nn.conv2d"], ["add", "clip", "nn.conv2d"],
                                ["add", "add", "nn.conv2d"]]


def test_fused_bert_encoder_layer(request):
    fn = testing.bert.get_net(seq_len=8, hidden_size=16, num_heads=2, intermediate_size=32)
    fused = fused_block(fn.body)
    check_golden(request, "relay_fused_bert_layer", fused.astext())
    groups = group_ops(fused)
    assert len(groups) == 17
    assert ["nn.softmax"] in groups                                 # opaque, alone
    assert groups.count(["nn.layer_norm"]) == 2
    assert ["add", "erf", "multiply", "multiply", "multiply", "nn.bias_add", "nn.dense"] \
        in groups                                                   # GELU into the dense
    assert ["multiply", "nn.batch_matmul"] in groups                # the 1/sqrt(d) scale


def test_fused_groups_compute_the_same_values():
    fn = testing.bert.get_net(seq_len=8, hidden_size=16, num_heads=2, intermediate_size=32)
    mod, params = testing.create_workload(fn)
    with PassContext(opt_level=3):
        fused = relay.optimize(mod, params)
    x = {"data": rand(RNG, (1, 8, 16))}
    np.testing.assert_allclose(run_interp(fused, x)[0], run_interp(mod, x, params)[0],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_pipeline_at_every_opt_level_preserves_values(level):
    mod, params = testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32),
                                              num_classes=10)
    with PassContext(opt_level=level):
        fused = relay.optimize(mod, params)
    x = {"data": rand(RNG, (1, 3, 32, 32))}
    np.testing.assert_allclose(run_interp(fused, x)[0], run_interp(mod, x, params)[0],
                               rtol=1e-4, atol=1e-6)
