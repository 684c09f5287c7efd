"""The relay operators: registry (``get``), attrs, and the op definitions by family.

Importing this package registers every operator once.
"""
from . import attrs, narrow, nn, nn_more, strategy, tensor, transform
from .registry import Op, get, list_op_names, register_op
from .strategy import OpImplementation, OpStrategy, op_strategy, select_implementation

__all__ = ["Op", "get", "list_op_names", "register_op", "attrs", "narrow", "nn", "nn_more",
           "tensor",
           "transform", "strategy", "OpStrategy", "OpImplementation", "op_strategy",
           "select_implementation"]
