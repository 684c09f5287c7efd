"""Operator library (TVM's topi): compute definitions plus default CPU schedules.

    from compiler import topi
    C = topi.nn.dense(A, W, bias); R = topi.nn.relu(C)
    s = topi.x86.schedule_dense(R)          # or topi.generic.schedule_default(R)

Layout: elementwise math (``math``), broadcasting binary ops (``broadcast``), reductions
(``reduction``), shape ops (``transform``, ``indexing``, ``layout``), ``image``,
``nn`` (dense, conv2d, pooling, softmax, norms, activations) and the schedules in
``x86`` and ``generic``.  Every op's output is tagged with its fusion pattern
(``tag.pattern_of``; ``tag.pattern_of_dag`` for a whole op's result).  Errors are
``compiler.errors.TEError`` naming op and argument.
"""
from ..te import tensor as _te_tensor
from . import generic, image, nn, sparse, tag, x86
from .broadcast import (
                        add,
                        broadcast_shape,
                        broadcast_to,
                        divide,
                        equal,
                        floor_divide,
                        floor_mod,
                        greater,
                        greater_equal,
                        less,
                        less_equal,
                        logical_and,
                        logical_or,
                        logical_xor,
                        maximum,
                        minimum,
                        multiply,
                        not_equal,
                        power,
                        subtract,
                        where,
)
from .indexing import strided_slice, take
from .layout import layout_transform
from .math import (  # noqa: A004
                        abs,
                        cast,
                        ceil,
                        clip,
                        elemwise_sum,
                        erf,
                        exp,
                        floor,
                        gelu,
                        identity,
                        log,
                        logical_not,
                        negative,
                        round,
                        rsqrt,
                        sigmoid,
                        sqrt,
                        tanh,
                        trunc,
)
from .reduction import all, any, argmax, argmin, max, mean, min, prod, sum  # noqa: A004
from .tag import pattern_of, pattern_of_dag
from .transform import concatenate, expand_dims, flatten, reshape, split, squeeze, stack, transpose

# ``A + B`` on te tensors lowers to these broadcasts, as TVM's topi.generic_op_impl does.
_te_tensor.register_tensor_ops(add=add, subtract=subtract, multiply=multiply, divide=divide,
                               negative=negative)

__all__ = [n for n in dir() if not n.startswith("_")]
