"""``compiler.nd`` (TVM's ``tvm.nd``): ``array``, ``empty`` and ``NDArray``."""
from .runtime.ndarray import NDArray, array, empty

__all__ = ["NDArray", "array", "empty"]
