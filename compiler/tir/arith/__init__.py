"""Integer arithmetic on TIR (TVM's ``tvm.arith``): constant bounds, canonical
simplification, affine decomposition.  One module each; this package re-exports them."""
from .const_int_bound import BoundAnalyzer, bound_add, bound_scale, const_int_bound
from .detect_linear import detect_linear
from .simplify import Simplifier, simplify_expr

__all__ = ["BoundAnalyzer", "bound_add", "bound_scale", "const_int_bound", "detect_linear",
           "Simplifier", "simplify_expr"]
