"""Relay IR: construction API, types, printer (golden), structural equality and hash,
traversal, and the errors bad programs get."""
import numpy as np
import pytest
from relay_helpers import check_golden

import compiler
from compiler import relay
from compiler.relay import RelayError, RelayTypeError, UnknownOpError
from compiler.relay.functor import ExprMutator, post_order


def conv_block():
    data = relay.var("data", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    b = relay.var("b", shape=(4,))
    y = relay.nn.conv2d(data, w, padding=(1, 1), channels=4, kernel_size=(3, 3))
    y = relay.nn.relu(relay.nn.bias_add(y, b))
    return relay.Function(relay.analysis.free_vars(y), y)


def test_printer_golden(request):
    mod = relay.transform.InferType()(compiler.IRModule.from_expr(conv_block()))
    check_golden(request, "relay_conv_block", mod.astext())
    assert "%0 = nn.conv2d(%data, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) " \
           "/* ty=Tensor[(1, 4, 8, 8), float32] */;" in mod.astext()


def test_printer_tuples_constants_and_untyped():
    x = relay.var("x", shape=(2,))
    c = relay.const(np.arange(2, dtype="float32"))
    t = relay.Tuple([relay.add(x, c), relay.multiply(x, relay.const(2.0))])
    text = relay.astext(relay.Function([x], relay.TupleGetItem(t, 1)))
    assert text.splitlines() == [
        "fn (%x: Tensor[(2,), float32]) {",
        "  %0 = add(%x, meta[relay.Constant][0]);",
        "  %1 = multiply(%x, 2f);",
        "  %2 = (%0, %1);",
        "  %2.1",
        "}"]


def test_var_and_const_api():
    x = relay.var("x", shape=(2, 3), dtype="int32")
    assert x.checked_type == relay.TensorType((2, 3), "int32")
    assert relay.const(1.5).data.dtype == np.float32
    assert relay.const(3).data.dtype == np.int32
    assert relay.const(np.ones(2, "float64")).data.dtype == np.float64
    with pytest.raises(RelayError, match="non-empty string"):
        relay.var("", shape=(1,))


def test_free_vars_order_and_bound_vars():
    fn = conv_block()
    assert [v.name_hint for v in fn.params] == ["data", "w", "b"]
    assert relay.analysis.bound_vars(fn) == list(fn.params)
    assert relay.analysis.free_vars(fn) == []


def test_structural_equal_and_hash():
    a, b = conv_block(), conv_block()
    assert a is not b
    assert not relay.structural_equal(a.body, b.body)            # free vars differ
    assert relay.structural_equal(a, b)                          # params are bound
    assert relay.structural_hash(a) == relay.structural_hash(b)
    c_body = relay.nn.relu(relay.nn.conv2d(a.params[0], a.params[1], padding=(2, 2)))
    c = relay.Function(a.params[:2], c_body)
    assert not relay.structural_equal(a, c)
    assert relay.structural_hash(a) != relay.structural_hash(c)


def test_structural_equal_sees_sharing():
    x = relay.var("x", shape=(2,))
    e = relay.exp(x)
    shared = relay.Function([x], relay.add(e, e))
    y = relay.var("x", shape=(2,))
    unshared = relay.Function([y], relay.add(relay.exp(y), relay.exp(y)))
    assert not relay.structural_equal(shared, unshared)


def test_post_order_visits_a_dag_once_and_deep_graphs_do_not_recurse():
    x = relay.var("x", shape=(1,))
    y = x
    for _ in range(5000):
        y = relay.add(y, y)
    nodes = post_order(y)
    assert len(nodes) == 5001
    assert nodes[0] is x and nodes[-1] is y


def test_mutator_keeps_sharing_and_identity():
    x = relay.var("x", shape=(3,))
    e = relay.exp(x)
    fn = relay.Function([x], relay.add(e, relay.sigmoid(e)))

    class ExpToTanh(ExprMutator):
        def rewrite_Call(self, call):
            new = self.rebuild(call)
            return relay.tanh(new.args[0]) if call.op.name == "exp" else new

    out = ExpToTanh().visit(fn)
    add = out.body
    assert add.args[0] is add.args[1].args[0]                # still one tanh node
    assert ExprMutator().visit(fn) is fn                     # nothing changed: same object


def test_type_error_names_op_argument_shapes():
    x = relay.var("x", shape=(1, 256))
    w = relay.var("w", shape=(10, 512))
    mod = compiler.IRModule.from_expr(relay.nn.dense(x, w))
    with pytest.raises(RelayTypeError) as e:
        relay.transform.InferType()(mod)
    assert str(e.value) == ("nn.dense: weight has 512 input features, data has 256 "
                            "(data (1, 256), weight (10, 512))")


def test_broadcast_type_error():
    a, b = relay.var("a", shape=(2, 3)), relay.var("b", shape=(4,))
    with pytest.raises(RelayTypeError, match=r"add: .*\(2, 3\).*\(4,\)"):
        relay.transform.InferType()(compiler.IRModule.from_expr(relay.add(a, b)))


def test_conv2d_channel_mismatch_error():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 2, 3, 3))
    with pytest.raises(RelayTypeError, match="weight has 2 input channels per group x 1 "
                                             "groups, data has 3"):
        relay.transform.InferType()(compiler.IRModule.from_expr(relay.nn.conv2d(x, w)))


def test_unknown_op_and_bad_attrs():
    with pytest.raises(UnknownOpError, match="unknown relay operator 'nn.conv3d'"):
        relay.op.get("nn.conv3d")
    with pytest.raises(UnknownOpError, match="did you mean 'nn.relu'"):
        relay.op.get("relu")
    x = relay.var("x", shape=(1, 3, 8, 8))
    with pytest.raises(RelayError, match="data_layout 'NCWH'"):
        relay.nn.conv2d(x, relay.var("w", shape=(1, 3, 1, 1)), data_layout="NCWH")
    with pytest.raises(RelayError, match="strides: 'ab' must be an int or a sequence of ints"):
        relay.nn.max_pool2d(x, (2, 2), strides="ab")
    with pytest.raises(RelayError, match="padding.*must have 1, 2 or 4 values"):
        relay.nn.conv2d(x, relay.var("w", shape=(1, 3, 1, 1)), padding=(1, 2, 3))


def test_untyped_var_and_reading_type_before_inference():
    x = relay.var("x")
    with pytest.raises(RelayTypeError, match="variable %x has no type annotation"):
        relay.transform.InferType()(compiler.IRModule.from_expr(relay.exp(x)))
    y = relay.exp(relay.var("y", shape=(2,)))
    with pytest.raises(RelayError, match="type of Call 'exp' is not known: run "
                                         "relay.transform.InferType"):
        y.checked_type  # noqa: B018


def test_module_api():
    fn = conv_block()
    mod = compiler.IRModule.from_expr(fn)
    assert mod["main"] is fn and "main" in mod
    with pytest.raises(RelayError, match="IRModule has no function 'other'"):
        mod["other"]  # noqa: B018
    with pytest.raises(RelayError, match="is not a relay expression"):
        compiler.IRModule.from_expr(3)


def test_operator_sugar():
    x = relay.var("x", shape=(2,))
    e = (x + relay.const(1.0)) * x - x / relay.const(2.0)
    ops = relay.analysis.list_ops(e)
    assert sorted(ops) == ["add", "divide", "multiply", "subtract"]
