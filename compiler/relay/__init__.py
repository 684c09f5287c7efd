"""The graph level (TVM's ``tvm.relay``): IR, operators, passes, build, executors.

    from compiler import relay
    x = relay.var("x", shape=(1, 16), dtype="float32")
    y = relay.nn.relu(relay.nn.dense(x, relay.var("w", shape=(8, 16))))
    mod = compiler.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
"""
from . import analysis, backend, data_dep_optimization, frontend, image, nn, op, testing, transform
from .build_module import build, optimize
from .errors import RelayError, RelayInputError, RelayTypeError, UnknownOpError
from .executor import create_executor
from .expr import (
                   Call,
                   Constant,
                   DictAttrs,
                   Expr,
                   Function,
                   Let,
                   Tuple,
                   TupleGetItem,
                   Var,
                   const,
                   var,
)
from .module import IRModule
from .op.common import TupleWrapper
from .op.narrow import narrow_cast
from .op.tensor import (
                   abs,
                   add,
                   argmax,
                   argmin,
                   cast,
                   ceil,
                   clip,
                   divide,
                   equal,
                   erf,
                   exp,
                   floor,
                   floor_divide,
                   floor_mod,
                   greater,
                   greater_equal,
                   less,
                   less_equal,
                   log,
                   logical_and,
                   logical_not,
                   logical_or,
                   max,
                   maximum,
                   mean,
                   min,
                   minimum,
                   multiply,
                   negative,
                   not_equal,
                   ones_like,
                   power,
                   prod,
                   round,
                   rsqrt,
                   sigmoid,
                   sqrt,
                   subtract,
                   sum,
                   tanh,
                   where,
                   zeros_like,
)
from .op.transform import (
                   broadcast_to,
                   concatenate,
                   expand_dims,
                   reshape,
                   split,
                   squeeze,
                   strided_slice,
                   take,
                   transpose,
)
from .printer import astext
from .structural import structural_equal, structural_hash
from .ty import FuncType, TensorType, TupleType

__all__ = [n for n in dir() if not n.startswith("_")]
