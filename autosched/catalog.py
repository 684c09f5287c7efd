"""Built-in workloads of the ``tune`` CLI, drawn from the operator library, and the
end-of-run summary (best vs the default schedule and, for matmul-like ops, vs numpy).

Every built-in is a registered workload, so its key recreates it in worker processes.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from compiler import build, te, topi

from .tuning import best_state
from .workload import register_workload


@dataclass(frozen=True)
class Builtin:
    default_args: tuple
    doc: str
    schedule: str          # name of the default schedule in compiler.topi.x86
    numpy_ref: object = None


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
    "batch_matmul": Builtin((8, 128, 128, 128), "Z = X @ Y^T per batch (B, M, N, K)",
                            "schedule_batch_matmul", lambda x, y: x @ y.transpose(0, 2, 1)),
    "conv2d_nchw": Builtin((1, 64, 56, 56, 64, 3, 3, 1, 1), "ResNet 3x3 conv, NCHW",
                           "schedule_conv2d_nchw"),
    "conv2d_nhwc": Builtin((1, 56, 56, 64, 64, 3, 3, 1, 1), "ResNet 3x3 conv, NHWC",
                           "schedule_conv2d_nhwc"),
    "depthwise_conv2d": Builtin((1, 32, 112, 112, 3, 1, 1), "MobileNet depthwise 3x3",
                                "schedule_depthwise_conv2d_nchw"),
    "softmax": Builtin((128, 1000), "row softmax", "schedule_softmax"),
}


def _arrays(tensors, rng):
    return [rng.random([int(d.value) for d in t.shape]).astype(t.dtype) for t in tensors]


def _time(mod, arrays, repeat=5) -> float:
    return mod.time_evaluator(number=3, repeat=repeat, min_repeat_ms=20)(*arrays).median


def default_schedule_cost(name: str, tensors, arrays) -> float | None:
    fn = getattr(topi.x86, BUILTIN[name].schedule, None) if name in BUILTIN else None
    s = fn(tensors[-1]) if fn is not None else te.create_schedule(tensors[-1].op)
    return _time(build(s, tensors, name="default"), arrays)


def numpy_cost(name: str, arrays) -> float | None:
    ref = BUILTIN[name].numpy_ref if name in BUILTIN else None
    if ref is None:
        return None
    ins = arrays[:-1]
    ref(*ins)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(3):
            ref(*ins)
        best = min(best, (time.perf_counter() - t) / 3)
    return best


def print_summary(task, name, args, log, stats, ns) -> int:
    if stats.best_cost == float("inf"):
        print(f"No valid schedule found in {stats.trials} trials ({stats.errors} errors); "
              f"see {log}")
        return 1
    flops = task.compute_dag.flop_ct
    state, _ = best_state(task, log)
    sch, tensors = task.compute_dag.apply_steps_from_state(state)
    arrays = _arrays(tensors, np.random.default_rng(0))
    best = _time(build(sch, tensors, name="best"), arrays)
    print(f"Best: {best * 1e3:.4f} ms, {flops / best / 1e9:.2f} GFLOPS "
          f"({stats.trials} new trials, {stats.preloaded} from the log, {stats.errors} errors, "
          f"{stats.wall_seconds:.1f} s, search overhead {stats.overhead_share:.0%})")
    try:
        d = default_schedule_cost(name, tensors, arrays)
        print(f"vs default schedule: {d * 1e3:.4f} ms -> {d / best:.2f}x")
    except Exception as err:  # noqa: BLE001 - the summary must not lose the tuning result
        print(f"vs default schedule: unavailable ({type(err).__name__}: {err})")
    n = numpy_cost(name, arrays)
    if n is not None:
        print(f"vs numpy: {n * 1e3:.4f} ms ({flops / n / 1e9:.2f} GFLOPS) -> {n / best:.2f}x")
    print("Best schedule as Python:")
    print(task.compute_dag.print_python_code_from_state(state))
    return 0
