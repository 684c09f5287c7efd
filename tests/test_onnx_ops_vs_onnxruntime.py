"""Single ONNX operators whose lowering is a decomposition, against onnxruntime on random
data larger than ONNX's own node cases: Resize (image.resize2d when it is exact, else the
separable take-and-weight form), 3-D pools (two 2-D pools), MaxPool's Indices, grouped
and dilated ConvTranspose, BatchNormalization in training mode.
"""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import compiler  # noqa: E402
from compiler import relay  # noqa: E402
from compiler.contrib import graph_executor  # noqa: E402


def _model(node, x_shape, inits=(), n_out=1):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    outs = [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None)
            for k in range(n_out)]
    g = helper.make_graph([node], "g", [x], outs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])


def _run_both(model, x):
    mod, params = relay.frontend.from_onnx(model)
    with compiler.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    m.set_input("x", x)
    m.run()
    ours = [m.get_output(k).numpy() for k in range(m.get_num_outputs())]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return mod, ours, sess.run(None, {"x": x})


def _ops(mod) -> set:
    names = set()
    relay.analysis.post_order_visit(
        mod["main"].body, lambda e: names.add(e.op.name) if hasattr(e, "op") and
        hasattr(e.op, "name") else None)
    return names


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _resize(scales=None, sizes=None, **attrs):
    inits = [numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
    names = ["x", "roi"]
    if scales is not None:
        inits.append(numpy_helper.from_array(np.asarray(scales, np.float32), "scales"))
        names.append("scales")
    else:
        inits.append(numpy_helper.from_array(np.asarray(sizes, np.int64), "sizes"))
        names += ["", "sizes"]
    return helper.make_node("Resize", names, ["y0"], **attrs), inits


@pytest.mark.parametrize("kw, lowered_to", [
    (dict(scales=[1, 1, 2, 2], mode="linear"), "image.resize2d"),
    (dict(sizes=[1, 3, 13, 7], mode="nearest"), "image.resize2d"),
    (dict(scales=[1, 1, 0.7, 1.3], mode="linear"), "take"),
    (dict(scales=[1, 1, 1.6, 0.55], mode="cubic", exclude_outside=1), "take"),
    (dict(scales=[1, 1, 0.45, 0.6], mode="linear", antialias=1), "take"),
    (dict(sizes=[1, 3, 10, 10], mode="nearest", coordinate_transformation_mode="asymmetric",
          keep_aspect_ratio_policy="not_larger", axes=None), "take"),
])
def test_resize_matches_onnxruntime(kw, lowered_to):
    kw = {k: v for k, v in kw.items() if v is not None}
    node, inits = _resize(**kw)
    mod, ours, ref = _run_both(_model(node, (1, 3, 11, 9), inits), _x((1, 3, 11, 9)))
    assert lowered_to in _ops(mod)
    assert ours[0].shape == ref[0].shape
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, attrs", [
    ("MaxPool", dict(kernel_shape=[3, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 1],
                     ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[2, 3, 3], strides=[1, 2, 2], pads=[0, 1, 1, 1, 1, 0],
                         count_include_pad=0)),
    ("AveragePool", dict(kernel_shape=[3, 3, 2], strides=[2, 2, 1], pads=[1, 1, 0, 1, 1, 1],
                         count_include_pad=1)),
])
def test_pool3d_matches_onnxruntime(op, attrs):
    node = helper.make_node(op, ["x"], ["y0"], **attrs)
    _, ours, ref = _run_both(_model(node, (2, 3, 7, 8, 9)), _x((2, 3, 7, 8, 9), seed=1))
    assert ours[0].shape == ref[0].shape
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices_match_onnxruntime(storage_order):
    node = helper.make_node("MaxPool", ["x"], ["y0", "y1"], kernel_shape=[3, 2],
                            strides=[2, 2], pads=[1, 0, 1, 1], dilations=[1, 2], ceil_mode=1,
                            storage_order=storage_order)
    model = _model(node, (2, 3, 9, 8), n_out=2)
    model.graph.output[1].type.tensor_type.elem_type = TensorProto.INT64
    _, ours, ref = _run_both(model, _x((2, 3, 9, 8), seed=5))
    np.testing.assert_array_equal(ours[0], ref[0])
    assert ours[1].dtype == np.int64
    np.testing.assert_array_equal(ours[1], ref[1])


def test_grouped_dilated_conv_transpose_matches_onnxruntime():
    w = numpy_helper.from_array(_x((4, 3, 3, 2), seed=2), "w")
    b = numpy_helper.from_array(_x((6,), seed=3), "b")
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y0"], group=2,
                            dilations=[2, 3], strides=[2, 1], pads=[1, 0, 0, 2])
    _, ours, ref = _run_both(_model(node, (1, 4, 5, 6), [w, b]), _x((1, 4, 5, 6), seed=4))
    assert ours[0].shape == ref[0].shape
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5)


def test_batch_norm_training_mode_matches_onnxruntime():
    inits = [numpy_helper.from_array(_x((3,), seed=k) + (2 if name == "var" else 0), name)
             for k, name in enumerate(("s", "bias", "mean", "var"))]
    inits[3] = numpy_helper.from_array(np.abs(numpy_helper.to_array(inits[3])), "var")
    node = helper.make_node("BatchNormalization", ["x", "s", "bias", "mean", "var"],
                            ["y0", "y1", "y2"], training_mode=1, momentum=0.8, epsilon=1e-3)
    model = _model(node, (4, 3, 5, 5), inits, n_out=3)
    model.opset_import[0].version = 15
    _, ours, ref = _run_both(model, _x((4, 3, 5, 5), seed=9))
    for got, want in zip(ours, ref):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
