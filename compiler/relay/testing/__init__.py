"""The model zoo (TVM's ``relay.testing``): ``mlp``, ``resnet``, ``mobilenet`` (v2) and
``bert``, each with ``get_workload(...) -> (mod, params)`` and seeded weights; and
``onnx_models``, the same kinds of networks as seeded ONNX models (needs the ``[onnx]``
extra when a model is built)."""
from . import bert, init, layers, mlp, mobilenet, onnx_models, resnet
from .init import create_workload

__all__ = ["bert", "init", "layers", "mlp", "mobilenet", "onnx_models", "resnet",
           "create_workload"]
