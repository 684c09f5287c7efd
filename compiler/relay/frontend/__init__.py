"""Model importers (TVM's ``relay.frontend``): ``from_onnx``."""
from .common import ONNXImportError
from .onnx import from_onnx

__all__ = ["from_onnx", "ONNXImportError"]
