"""Operator strategies (TVM's ``relay.op.strategy``): how an anchor op is computed and
scheduled on x86.

An ``OpStrategy`` lists ``OpImplementation``s -- a compute, a schedule over a fused
group's outputs, a name and a priority level (``plevel``) -- that apply to one call (its
attrs and argument types).  The TE compiler asks the group's anchor op (its highest
pattern) for its strategy and uses the implementation of highest plevel; ties go to the
first added.  Every strategy ends with ``generic`` (``topi.generic.schedule_default``,
plevel 0), which schedules any group.

The x86 strategies registered here use topi's schedules: NCHW/NHWC convolution,
depthwise and grouped convolution, transposed convolution, dense, batch_matmul, pooling,
softmax and layer norm; injective and reduction groups use ``schedule_injective`` and
``schedule_reduce``.  Invariant: an implementation's schedule accepts any group whose
anchor satisfies its condition (its topi schedule places the elementwise epilogue).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ... import topi
from ...topi import tag as T
from .registry import Op

__all__ = ["OpImplementation", "OpStrategy", "register_strategy", "op_strategy",
           "select_implementation"]


@dataclass(frozen=True)
class OpImplementation:
    name: str
    compute: Callable          # (inputs, attrs, out_type) -> tensor(s)
    schedule: Callable         # (outs) -> Schedule
    plevel: int = 10


class OpStrategy:
    def __init__(self):
        self.implementations: list = []

    def add_implementation(self, compute, schedule, name: str = "default",
                           plevel: int = 10) -> None:
        self.implementations.append(OpImplementation(name, compute, schedule, plevel))

    def best(self) -> OpImplementation:
        return max(enumerate(self.implementations), key=lambda kv: (kv[1].plevel, -kv[0]))[1]

    def __repr__(self) -> str:
        return "OpStrategy(" + ", ".join(f"{i.name}@{i.plevel}" for i in
                                         self.implementations) + ")"


_STRATEGIES: dict = {}


def register_strategy(op_name: str, fn) -> None:
    """``fn(strategy, op, attrs, arg_types, target)`` adds the op's implementations."""
    _STRATEGIES[op_name] = fn


def op_strategy(op: Op, attrs, arg_types, target) -> OpStrategy:
    s = OpStrategy()
    fn = _STRATEGIES.get(op.name)
    if fn is not None:
        fn(s, op, attrs, arg_types, target)
    elif op.pattern in (T.ELEMWISE, T.BROADCAST, T.INJECTIVE):
        s.add_implementation(op.compute, topi.generic.schedule_injective, "injective.x86")
    elif op.pattern == T.COMM_REDUCE:
        s.add_implementation(op.compute, topi.generic.schedule_reduce, "reduce.x86")
    s.add_implementation(op.compute, topi.generic.schedule_default, "generic", plevel=0)
    return s


def select_implementation(op: Op, attrs, arg_types, target) -> OpImplementation:
    return op_strategy(op, attrs, arg_types, target).best()


# ------------------------------------------------------------------ x86 strategies
def _conv2d(s, op, a, arg_types, target):
    cin = arg_types[0].shape[1 if a.data_layout == "NCHW" else 3]
    if a.data_layout == "NHWC":
        s.add_implementation(op.compute, topi.generic.schedule_conv2d_nhwc,
                             "conv2d_nhwc.x86" if a.groups == 1 else "group_conv2d_nhwc.x86")
    elif a.groups == 1:
        s.add_implementation(op.compute, topi.generic.schedule_conv2d_nchw, "conv2d_nchw.x86")
    elif a.groups == cin and a.kernel_layout == "OIHW" and arg_types[1].shape[:2] == (cin, 1):
        s.add_implementation(_depthwise_nchw, topi.generic.schedule_depthwise_conv2d_nchw,
                             "depthwise_conv2d_nchw.x86")
    else:
        s.add_implementation(op.compute, topi.generic.schedule_group_conv2d_nchw,
                             "group_conv2d_nchw.x86")


def _depthwise_nchw(ins, a, out_type):
    """Depthwise (multiplier 1): relay's OIHW weight (C, 1, KH, KW) is topi's filter."""
    return topi.nn.depthwise_conv2d_nchw(ins[0], ins[1], a.strides, a.padding, a.dilation,
                                         a.out_dtype or None)


def _pool(s, op, a, arg_types, target):
    layout = a.layout
    s.add_implementation(op.compute, lambda outs: topi.generic.schedule_pool(outs, layout),
                         "pool.x86")


def _one(schedule, name: str):
    def add(s, op, a, arg_types, target):
        s.add_implementation(op.compute, schedule, name)
    return add


for _name, _fn in {
        "nn.conv2d": _conv2d,
        "nn.conv2d_transpose": _one(topi.generic.schedule_conv2d_transpose_nchw,
                                    "conv2d_transpose_nchw.x86"),
        "nn.dense": _one(topi.generic.schedule_dense, "dense.x86"),
        "nn.contrib_dense_pack": _one(topi.generic.schedule_dense, "dense_pack.x86"),
        "nn.batch_matmul": _one(topi.generic.schedule_batch_matmul, "batch_matmul.x86"),
        "nn.softmax": _one(topi.generic.schedule_softmax, "softmax.x86"),
        "nn.log_softmax": _one(topi.generic.schedule_softmax, "log_softmax.x86"),
        "nn.layer_norm": _one(topi.generic.schedule_layer_norm, "layer_norm.x86"),
        "nn.max_pool2d": _pool, "nn.avg_pool2d": _pool,
        "nn.global_avg_pool2d": _one(topi.generic.schedule_adaptive_pool, "global_pool.x86"),
        "nn.global_max_pool2d": _one(topi.generic.schedule_adaptive_pool, "global_pool.x86"),
        "nn.adaptive_avg_pool2d": _one(topi.generic.schedule_adaptive_pool,
                                       "adaptive_pool.x86"),
        "nn.adaptive_max_pool2d": _one(topi.generic.schedule_adaptive_pool,
                                       "adaptive_pool.x86")}.items():
    register_strategy(_name, _fn)
