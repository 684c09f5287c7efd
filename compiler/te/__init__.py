"""Tensor expressions: placeholder/compute definitions and reducers (TVM's ``te``)."""
from ..schedule.lower import create_prim_func
from ..schedule.schedule import Schedule, Stage, create_schedule  # noqa: E402
from ..tir.expr import IterVar, Range, Reduce, Var
from ..tir.op import abs_ as abs  # noqa: A004
from ..tir.op import all_ as all
from ..tir.op import any_ as any
from ..tir.op import (
                      ceil,
                      const,
                      div,
                      erf,
                      exp,
                      floor,
                      floordiv,
                      floormod,
                      if_then_else,
                      indexdiv,
                      indexmod,
                      log,
                      max_value,
                      min_value,
                      power,
                      rsqrt,
                      sigmoid,
                      sqrt,
                      tanh,
                      trunc,
                      truncdiv,
                      truncmod,
)
from ..tir.op import round_ as round
from .api import (  # noqa: A004
    comm_reducer,
    compute,
    max,
    min,
    placeholder,
    reduce_axis,
    size_var,
    sum,
    thread_axis,
    var,
)
from .extern import ExternOp, extern
from .scan import ScanOp, scan
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor

__all__ = [n for n in dir() if not n.startswith("_")]
