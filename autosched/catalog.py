"""Built-in workloads of the ``tune`` CLI, drawn from the operator library.

Every built-in is a registered workload, so its key recreates it in worker processes;
``BUILTIN`` gives each one its default arguments, its default (topi) schedule and, for
matmul-like ops, a numpy reference the CLI summary compares against.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from compiler import te, topi

from .defaults import register_default_schedule_func
from .workload import WORKLOAD_FUNCS, register_workload


@dataclass(frozen=True)
class Builtin:
    default_args: tuple
    doc: str
    schedule: str          # name of the default schedule in compiler.topi.x86
    numpy_ref: Callable | None = None


@register_workload("matmul", override=True)
def matmul(N, M, K, dtype="float32"):
    A = te.placeholder((N, K), name="A", dtype=dtype)
    B = te.placeholder((K, M), name="B", dtype=dtype)
    return [A, B, topi.nn.matmul(A, B)]


@register_workload("dense", override=True)
def dense(batch, in_dim, units, dtype="float32"):
    X = te.placeholder((batch, in_dim), name="X", dtype=dtype)
    W = te.placeholder((units, in_dim), name="W", dtype=dtype)
    return [X, W, topi.nn.dense(X, W)]


@register_workload("dense_bias_relu", override=True)
def dense_bias_relu(batch, in_dim, units, dtype="float32"):
    X = te.placeholder((batch, in_dim), name="X", dtype=dtype)
    W = te.placeholder((units, in_dim), name="W", dtype=dtype)
    B = te.placeholder((units,), name="B", dtype=dtype)
    return [X, W, B, topi.nn.relu(topi.nn.dense(X, W, B))]


@register_workload("batch_matmul", override=True)
def batch_matmul(B, M, N, K, dtype="float32"):
    X = te.placeholder((B, M, K), name="X", dtype=dtype)
    Y = te.placeholder((B, N, K), name="Y", dtype=dtype)
    return [X, Y, topi.nn.batch_matmul(X, Y)]


@register_workload("conv2d_nchw", override=True)
def conv2d_nchw(N, CI, H, W, CO, KH, KW, stride=1, pad=1):
    X = te.placeholder((N, CI, H, W), name="X")
    F = te.placeholder((CO, CI, KH, KW), name="F")
    return [X, F, topi.nn.conv2d_nchw(X, F, stride, pad, 1)]


@register_workload("conv2d_bias_relu", override=True)
def conv2d_bias_relu(N, CI, H, W, CO, KH, KW, stride=1, pad=1):
    """The fused group a CNN's conv + bias + ReLU becomes (bias broadcast per channel)."""
    X = te.placeholder((N, CI, H, W), name="X")
    F = te.placeholder((CO, CI, KH, KW), name="F")
    B = te.placeholder((CO, 1, 1), name="B")
    return [X, F, B, topi.nn.relu(topi.add(topi.nn.conv2d_nchw(X, F, stride, pad, 1), B))]


@register_workload("conv2d_nhwc", override=True)
def conv2d_nhwc(N, H, W, CI, CO, KH, KW, stride=1, pad=1):
    X = te.placeholder((N, H, W, CI), name="X")
    F = te.placeholder((KH, KW, CI, CO), name="F")
    return [X, F, topi.nn.conv2d_nhwc(X, F, stride, pad, 1)]


@register_workload("depthwise_conv2d", override=True)
def depthwise_conv2d(N, C, H, W, K, stride=1, pad=1):
    X = te.placeholder((N, C, H, W), name="X")
    F = te.placeholder((C, 1, K, K), name="F")
    return [X, F, topi.nn.depthwise_conv2d_nchw(X, F, stride, pad, 1)]


@register_workload("softmax", override=True)
def softmax(M, N):
    X = te.placeholder((M, N), name="X")
    return [X, topi.nn.softmax(X)]


BUILTIN = {
    "matmul": Builtin((256, 256, 256), "C = A @ B (N, M, K)", "schedule_matmul",
                      lambda a, b: a @ b),
    "dense": Builtin((128, 1024, 1024), "Y = X @ W.T (batch, in, units)", "schedule_dense",
                     lambda x, w: x @ w.T),
    "dense_bias_relu": Builtin((128, 768, 3072), "Y = relu(X @ W.T + B) (BERT FFN)",
                               "schedule_dense",
                               lambda x, w, b: np.maximum(x @ w.T + b, 0)),
    "batch_matmul": Builtin((8, 128, 128, 128), "Z = X @ Y^T per batch (B, M, N, K)",
                            "schedule_batch_matmul", lambda x, y: x @ y.transpose(0, 2, 1)),
    "conv2d_nchw": Builtin((1, 64, 56, 56, 64, 3, 3, 1, 1), "ResNet 3x3 conv, NCHW",
                           "schedule_conv2d_nchw"),
    "conv2d_bias_relu": Builtin((1, 64, 56, 56, 64, 3, 3, 1, 1),
                                "ResNet 3x3 conv + bias + ReLU, NCHW", "schedule_conv2d_nchw"),
    "conv2d_nhwc": Builtin((1, 56, 56, 64, 64, 3, 3, 1, 1), "ResNet 3x3 conv, NHWC",
                           "schedule_conv2d_nhwc"),
    "depthwise_conv2d": Builtin((1, 32, 112, 112, 3, 1, 1), "MobileNet depthwise 3x3",
                                "schedule_depthwise_conv2d_nchw"),
    "softmax": Builtin((128, 1000), "row softmax", "schedule_softmax"),
}


def _topi_default(name: str, *args, layout_free: bool = False):
    """(topi's x86 schedule, tensors) of a built-in workload: the floor tuning must beat.
    ``layout_free``: its weights will be rewritten into the kernel's order (dense)."""
    tensors = WORKLOAD_FUNCS[name](*args)
    schedule = getattr(topi.x86, BUILTIN[name].schedule)
    extra = {"layout_free": True} if layout_free else {}
    return schedule(tensors[-1], **extra), tensors


# topi's dense schedule has a variant for a weight the layout rewrite packs
_LAYOUT_FREE_SCHEDULES = ("schedule_dense",)
for _name, _entry in BUILTIN.items():
    register_default_schedule_func(
        _name, functools.partial(_topi_default, _name),
        functools.partial(_topi_default, _name, layout_free=True)
        if _entry.schedule in _LAYOUT_FREE_SCHEDULES else None)
