"""Bad input to ``from_onnx``: each a clear error, asserted by type and message.

A truncated, corrupt or empty ``.onnx`` file, an input whose shape is unknown and not
given, a given shape that contradicts the model, a model of unsupported operators (one
error listing every unsupported type with its nodes), and the ``onnx`` package missing
(an ImportError naming the extra to install).
"""
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402

from compiler import relay  # noqa: E402
from compiler.relay.frontend import ONNXImportError  # noqa: E402
from compiler.relay.testing.onnx_models import MODELS  # noqa: E402


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _relu_model(dims):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return _model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [x], [y])


@pytest.mark.parametrize("cut", [0.5, 0.99])
def test_truncated_file(tmp_path, cut):
    data = MODELS["mlp"]()[0].SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[:int(len(data) * cut)])
    with pytest.raises(ONNXImportError, match=r"'.*cut\.onnx' is not a readable ONNX model "
                                              r"\(DecodeError"):
        relay.frontend.from_onnx(path)


def test_corrupt_and_empty_files(tmp_path):
    bad = tmp_path / "text.onnx"
    bad.write_bytes(b"this is not a protobuf \xff\xfe")
    with pytest.raises(ONNXImportError, match=r"'.*text\.onnx' is not a readable ONNX model"):
        relay.frontend.from_onnx(str(bad))
    # protobuf reads zero bytes as an empty ModelProto: still an error, not an empty module
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(ONNXImportError, match=r"'.*empty\.onnx' has no graph outputs "
                                              r"\(an empty or truncated model\?\)"):
        relay.frontend.from_onnx(empty)
    with pytest.raises(ONNXImportError, match=r"'.*missing\.onnx' is not a readable ONNX "
                                              r"model \(FileNotFoundError"):
        relay.frontend.from_onnx(tmp_path / "missing.onnx")
    with pytest.raises(ONNXImportError, match="expected an onnx.ModelProto or a path, got "
                                              "bytes"):
        relay.frontend.from_onnx(b"\x08\x07")


def test_unknown_input_shape_not_given():
    with pytest.raises(ONNXImportError, match=r"graph input 'x' has shape \('N', 3\); give "
                                              r"it with shape=\{'x': \(\.\.\.\)\}"):
        relay.frontend.from_onnx(_relu_model(["N", 3]))
    with pytest.raises(ONNXImportError, match=r"graph input 'x' has shape \('\?', 3\)"):
        relay.frontend.from_onnx(_relu_model(["", 3]))
    with pytest.raises(ONNXImportError, match=r"graph input 'x' has shape unknown; give it "
                                              r"with shape=\{'x': \(\.\.\.\)\}"):
        relay.frontend.from_onnx(_relu_model(None))
    # given, the same models import
    mod, _ = relay.frontend.from_onnx(_relu_model(["N", 3]), shape={"x": (2, 3)})
    assert tuple(mod["main"].params[0].type_annotation.shape) == (2, 3)


@pytest.mark.parametrize("dims, given", [([1, 3], (1, 4)), ([1, 3], (1, 3, 1)),
                                         (["N", 3], (2, 4))])
def test_shape_contradicting_the_model(dims, given):
    with pytest.raises(ONNXImportError) as info:
        relay.frontend.from_onnx(_relu_model(dims), shape={"x": given})
    assert str(info.value) == (f"graph input 'x': shape {given} contradicts the model's "
                               f"{tuple(dims)}")


def test_shape_for_a_name_that_is_not_an_input():
    with pytest.raises(ONNXImportError, match=r"shape given for \['data'\], which are not "
                                              r"graph inputs; inputs are \['x'\]"):
        relay.frontend.from_onnx(_relu_model([1, 3]), shape={"data": (1, 3)})


def test_every_unsupported_op_type_listed_with_its_nodes():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Celu", ["a"], ["b"], name="celu1"),
             helper.make_node("Mish", ["b"], ["c"], name="mish1"),
             helper.make_node("Celu", ["c"], ["d"], name="celu2"),
             helper.make_node("Swizzle", ["d"], ["y"], name="custom1", domain="com.example")]
    model = _model(nodes, [x], [y])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(ONNXImportError) as info:
        relay.frontend.from_onnx(model)
    assert str(info.value) == (
        "from_onnx: 3 unsupported operator type(s): Celu (nodes celu1, celu2); "
        "Mish (nodes mish1); com.example.Swizzle (nodes custom1)")


def test_bad_node_is_named():
    """A converter's failure names the node and the bad value (a Reshape to a shape of
    the wrong element count)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    shape = onnx.numpy_helper.from_array(np.array([4, 2], np.int64), "shape")
    model = _model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape7")],
                   [x], [y], [shape])
    with pytest.raises(ONNXImportError, match=r"^Reshape node 'reshape7': .*\(4, 2\)"):
        relay.frontend.from_onnx(model)


def test_missing_onnx_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)     # "import onnx" now raises ImportError
    with pytest.raises(ImportError, match=r"from_onnx needs the 'onnx' package, which is not "
                                          r"installed: pip install 'tensor-autosched\[onnx\]'"):
        relay.frontend.from_onnx("model.onnx")
    with pytest.raises(ImportError, match=r"tensor-autosched\[onnx\]"):
        MODELS["mlp"]()
