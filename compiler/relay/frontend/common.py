"""What the ONNX converters share: the import error and the conversion context.

``OnnxContext`` holds the value names seen so far (``exprs``: name -> relay expression;
``values``: name -> numpy array for the values known at import time), the opset, and
the node being converted, so every error names it.  Converters read attributes through
``attributes(node)`` (bytes become str, tensors numpy arrays) and shape-like inputs
through ``static(ins, k, what)``; tensors of a narrow element type (bfloat16, float8,
int4, ...) are read as their storage, ``formats`` naming the format of such values.
The compiler imports the optional ``onnx`` package only through ``import_onnx()``,
when a model is imported or built.
"""
from __future__ import annotations

import numpy as np

from ...topi import narrow as N
from ..errors import RelayError
from ..expr import Constant

__all__ = ["ONNXImportError", "OnnxContext", "import_onnx"]


class ONNXImportError(RelayError):
    """An ONNX model cannot be imported: unsupported op, bad file, unknown shape, ..."""


def import_onnx():
    """The ``onnx`` package, imported on first use: it is the optional extra ``[onnx]``,
    so ``import compiler`` must work without it (an ImportError naming the extra)."""
    try:
        import onnx
    except ImportError:
        raise ImportError("relay.frontend.from_onnx needs the 'onnx' package, which is not "
                          "installed: pip install 'tensor-autosched[onnx]'") from None
    return onnx


class OnnxContext:
    def __init__(self, onnx, opset: int):
        self.onnx = onnx
        self.opset = opset
        self.exprs: dict = {}
        self.values: dict = {}
        self.formats: dict = {}      # name -> narrow format of the value (onnx_narrow)
        self.param_vars: list = []
        self.param_values: dict = {}
        self.node = None

    def where(self) -> str:
        n = self.node
        if n is None:
            return "from_onnx"
        return f"{n.op_type} node {n.name!r}" if n.name else f"{n.op_type} node " \
            f"(outputs {list(n.output)})"

    def error(self, msg: str) -> ONNXImportError:
        return ONNXImportError(f"{self.where()}: {msg}")

    def lookup(self, name: str, node):
        e = self.exprs.get(name)
        if e is None:
            self.node = node
            raise self.error(f"input {name!r} is not produced by an earlier node, an "
                             "initializer or a graph input")
        return e

    def to_array(self, tensor, what: str) -> np.ndarray:
        from_elem = self.onnx.helper.tensor_dtype_to_np_dtype
        try:
            np.dtype(from_elem(tensor.data_type))
            arr = self.onnx.numpy_helper.to_array(tensor)
        except Exception as e:
            raise ONNXImportError(f"{what}: cannot read tensor of element type "
                                  f"{tensor.data_type} ({e})") from None
        if str(arr.dtype) in N.FORMATS:        # bfloat16, float8, int4 ...: the storage
            return np.ascontiguousarray(N.to_storage(arr, str(arr.dtype)))
        if arr.dtype.kind not in "biuf" or arr.dtype.itemsize > 8 or \
                str(arr.dtype) not in _OUR_DTYPES:
            raise ONNXImportError(f"{what}: element type {arr.dtype} is not supported by "
                                  "this compiler")
        return np.ascontiguousarray(arr)

    def attributes(self, node) -> dict:
        out = {}
        for a in node.attribute:
            v = self.onnx.helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [x.decode() for x in v]
            elif type(v).__name__ == "TensorProto":
                v = self.to_array(v, f"{self.where_of(node)} attribute {a.name!r}")
            out[a.name] = v
        return out

    @staticmethod
    def where_of(node) -> str:
        return f"{node.op_type} node {node.name!r}"

    def static(self, ins, k: int, what: str, default=None):
        """Input ``k`` as a numpy array known at import time (``default`` if absent)."""
        if k >= len(ins) or ins[k] is None:
            return default
        e = ins[k]
        if not isinstance(e, Constant):
            raise self.error(f"input {k} ({what}) must be known when the model is imported "
                             "(an initializer, a Constant or computed from them): shapes "
                             "are static here")
        return e.data


_OUR_DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
               "uint16", "uint32", "uint64", "bool"}
