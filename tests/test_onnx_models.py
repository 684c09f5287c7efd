"""End-to-end ONNX models against onnxruntime: ``from_onnx`` + ``relay.build`` +
GraphModule on the seeded models of ``relay.testing.onnx_models``.

Outputs must agree with onnxruntime's within 1e-4 relative (elementwise ``rtol=1e-4``,
with an absolute floor of 1e-4 times the output's magnitude for entries near zero).
ResNet-18, the BERT layer (sequence 128), MobileNetV2 and the MLP run by default;
ResNet-50 is ``slow``.
"""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import compiler  # noqa: E402
from compiler import relay  # noqa: E402
from compiler.contrib import graph_executor  # noqa: E402
from compiler.relay.testing.onnx_models import MODELS  # noqa: E402


def _onnxruntime(model, feeds: dict) -> list:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _ours(mod, params, feeds: dict) -> list:
    with compiler.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    for name, value in feeds.items():
        m.set_input(name, value)
    m.run()
    return [m.get_output(k).numpy() for k in range(m.get_num_outputs())]


def _assert_close(got, ref):
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape)
    scale = float(np.abs(ref).max())
    assert scale > 0
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * scale)


def _inputs(shapes: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(v).astype("float32") for k, v in shapes.items()}


@pytest.mark.parametrize("name", [
    "mlp", "resnet18", "bert_layer", "mobilenet_v2",
    pytest.param("resnet50", marks=pytest.mark.slow)])
def test_model_matches_onnxruntime(name):
    model, shapes = MODELS[name]()
    feeds = _inputs(shapes)
    mod, params = relay.frontend.from_onnx(model)
    # the graph input keeps its ONNX name, so set_input("data", ...) addresses it
    assert [p.name_hint for p in mod["main"].params] == list(shapes)
    got = _ours(mod, params, feeds)
    ref = _onnxruntime(model, feeds)
    assert len(got) == len(ref) == 1
    _assert_close(got[0], ref[0])


def test_model_from_a_file_with_unfrozen_params(tmp_path):
    """A path imports like the ModelProto; ``freeze_params=False`` turns the initializers
    into params named as in the model, and the result is the same."""
    model, shapes = MODELS["mlp"](seed=3)
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    mod, params = relay.frontend.from_onnx(path, freeze_params=False)
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    assert set(params) == set(inits)
    for name, value in params.items():
        np.testing.assert_array_equal(np.asarray(value), inits[name])
    names = [p.name_hint for p in mod["main"].params]
    assert names[0] == "data" and set(names[1:]) == set(inits)
    feeds = _inputs(shapes, seed=1)
    _assert_close(_ours(mod, params, feeds)[0], _onnxruntime(model, feeds)[0])


def test_shape_override_of_a_symbolic_batch():
    """An input whose batch is symbolic ("N") imports once ``shape=`` gives it."""
    model, _ = MODELS["mlp"]()
    dim = model.graph.input[0].type.tensor_type.shape.dim[0]
    dim.dim_param = "N"             # clears dim_value: the batch is now unknown
    feeds = _inputs({"data": (3, 1, 28, 28)}, seed=2)
    mod, params = relay.frontend.from_onnx(model, shape={"data": (3, 1, 28, 28)})
    _assert_close(_ours(mod, params, feeds)[0], _onnxruntime(model, feeds)[0])


def test_models_are_deterministic_per_seed():
    a, _ = MODELS["mlp"](seed=5)
    b, _ = MODELS["mlp"](seed=5)
    c, _ = MODELS["mlp"](seed=6)
    assert a.SerializeToString() == b.SerializeToString() != c.SerializeToString()
