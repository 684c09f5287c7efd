"""Tensor expressions: placeholder/compute definitions and reducers (TVM's ``te``)."""
from ..tir.expr import IterVar, Range, Reduce, Var
from ..tir.op import (abs_ as abs, all_ as all, any_ as any, ceil, const, erf, exp, floor,  # noqa: A004
                      floordiv, floormod, if_then_else, log, power, round_ as round, rsqrt,
                      sigmoid, sqrt, tanh, trunc, truncdiv, truncmod)
from .api import comm_reducer, compute, max, min, placeholder, reduce_axis, sum, var  # noqa: A004
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor
from ..schedule.schedule import Schedule, Stage, create_schedule  # noqa: E402

__all__ = [n for n in dir() if not n.startswith("_")]
