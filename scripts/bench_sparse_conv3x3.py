"""A sparse 3x3 convolution against its dense model, in one run.

    python3 scripts/bench_sparse_conv3x3.py [--trials 64] [--seed 0] [--layout NHWC]
        [--h 56 --ci 64 --co 64] [--bs-r 4 --bs-c 1 --density 0.15]
        [--json results/bench_sparse_conv3x3.json]

The layer is a ResNet-50 3x3 convolution (stride 1, padding 1) + ReLU whose weight keeps
``density`` of its ``bs_r x bs_c`` blocks (``bsr_conv2d.convert(..., kernel_size=3)``
makes such layers ``nn.sparse_conv2d``).  The sparse layer is tuned with
``auto.sparse_sketch_rules()`` and the weight as task inputs under TVM's names, the dense
one with the built-in rules, ``trials`` each; both best kernels are rebuilt from their
logs and checked against numpy.  Then, timed interleaved (``autosched.side_by_side``):
both tuned kernels, both default schedules (``topi.generic.schedule_default``, what a
relay build uses without records) and numpy computing the dense layer as one im2col
matrix product.  Prints a table of milliseconds and ratios and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import tempfile
import time
from functools import partial

import numpy as np

import autosched as auto
import compiler
from autosched.defaults import register_default_schedule_func
from autosched.side_by_side import interleaved, kernel_timer, numpy_timer
from compiler import te, topi
from compiler.runtime import as_aligned
from compiler.topi.sparse.utils import bsr_from_dense


@auto.register_workload("bench_spconv3x3_relu", override=True)
def sparse_conv(x_shape, data_shape, indices_shape, indptr_shape, layout):
    X = te.placeholder(x_shape, name="X")
    D = te.placeholder(data_shape, name="W_data")
    idx = te.placeholder(indices_shape, name="W_indices", dtype="int32")
    ptr = te.placeholder(indptr_shape, name="W_indptr", dtype="int32")
    out = topi.nn.sparse_conv2d(X, D, idx, ptr, layout, kernel_size=3)
    return [X, D, idx, ptr, topi.nn.relu(out)]


@auto.register_workload("bench_conv3x3_relu", override=True)
def dense_conv(x_shape, w_shape, layout):
    X = te.placeholder(x_shape, name="X")
    W = te.placeholder(w_shape, name="W")
    conv = topi.nn.conv2d_nhwc(X, W, 1, 1, 1) if layout == "NHWC" else \
        topi.nn.conv2d_nchw(X, W, 1, 1, 1)
    return [X, W, topi.nn.relu(conv)]


def _default_schedule(func, *args):
    """What a relay build uses without records (``extract_tasks`` registers the same for a
    model's tasks): the floor the search starts from."""
    tensors = func(*args)
    return topi.generic.schedule_default(tensors[-1]), tensors


register_default_schedule_func("bench_spconv3x3_relu", partial(_default_schedule, sparse_conv))
register_default_schedule_func("bench_conv3x3_relu", partial(_default_schedule, dense_conv))


def _args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layout", default="NHWC", choices=("NHWC", "NCHW"))
    for name, value in (("h", 56), ("ci", 64), ("co", 64), ("bs-r", 4), ("bs-c", 1)):
        ap.add_argument(f"--{name}", type=int, default=value)
    ap.add_argument("--density", type=float, default=0.15)
    ap.add_argument("--json", default="results/bench_sparse_conv3x3.json")
    return ap.parse_args()


def _weights(a, rng):
    """The dense kernel (HWIO or OIHW) with block-sparse weight matrix, and its BSR."""
    rows, cols = a.co // a.bs_r, 9 * a.ci // a.bs_c
    mask = np.kron(rng.random((rows, cols)) < a.density, np.ones((a.bs_r, a.bs_c)))
    mat = (rng.standard_normal((a.co, 9 * a.ci)) * mask).astype("float32")
    kernel = mat.T.reshape(3, 3, a.ci, a.co) if a.layout == "NHWC" else \
        mat.reshape(a.co, a.ci, 3, 3)
    return kernel, mat, bsr_from_dense(mat, (a.bs_r, a.bs_c))


def _numpy_layer(a, mat):
    """The dense layer in numpy: im2col (HWIO or OIHW column order) then one product."""
    def run(x):
        xs = x if a.layout == "NHWC" else x.transpose(0, 2, 3, 1)
        xp = np.pad(xs, ((0, 0), (1, 1), (1, 1), (0, 0)))
        taps = [xp[:, i:i + a.h, j:j + a.h, :] for i in range(3) for j in range(3)]
        cols = np.stack(taps, axis=3)                      # n, h, w, tap, ci
        if a.layout == "NCHW":
            cols = cols.transpose(0, 1, 2, 4, 3)           # column order (ci, kh, kw)
        out = np.maximum(cols.reshape(a.h * a.h, -1) @ mat.T, 0)
        out = out.reshape(1, a.h, a.h, a.co)
        return out if a.layout == "NHWC" else out.transpose(0, 3, 1, 2)
    return run


def _tune(task, a, rules, name):
    log = os.path.join(tempfile.mkdtemp(prefix="bench-spconv-"), name + ".json")
    policy = auto.SketchPolicy(task, auto.XGBModel(seed=a.seed), seed=a.seed, verbose=0,
                               init_search_callbacks=rules)
    t0 = time.perf_counter()
    task.tune(auto.TuningOptions(num_measure_trials=a.trials, verbose=0,
                                 measure_callbacks=[auto.RecordToFile(log)]), policy)
    return log, time.perf_counter() - t0


def main() -> None:
    a = _args()
    rng = np.random.default_rng(a.seed)
    kernel, mat, w = _weights(a, rng)
    nhwc = a.layout == "NHWC"
    xs = (1, a.h, a.h, a.ci) if nhwc else (1, a.ci, a.h, a.h)
    prefix = (f"sparse_conv2d_bsr_{a.co}_{9 * a.ci}_{a.bs_r}_{a.bs_c}_{len(w.indices)}_"
              f"{len(w.indptr)}_")
    parts = (w.data, w.indices.astype("int32"), w.indptr.astype("int32"))
    sparse_task = auto.SearchTask(
        func="bench_spconv3x3_relu", target="llvm",
        args=(xs, w.data.shape, w.indices.shape, w.indptr.shape, a.layout),
        task_inputs=dict(zip((prefix + s for s in ("W_data", "W_indices", "W_indptr")),
                             parts)), task_inputs_overwrite=True)
    dense_task = auto.SearchTask(func="bench_conv3x3_relu", target="llvm",
                                 args=(xs, kernel.shape, a.layout))
    slog, s_sec = _tune(sparse_task, a, auto.sparse_sketch_rules(), "sparse")
    dlog, d_sec = _tune(dense_task, a, None, "dense")
    x = as_aligned(rng.standard_normal(xs).astype("float32"))
    numpy_layer = _numpy_layer(a, mat)
    ref = numpy_layer(x)
    out = as_aligned(np.zeros(ref.shape, "float32"))
    s_arrays, d_arrays = [x, *parts, out], [x, as_aligned(kernel), out]
    mods = {}
    for name, task, log, arrays in (("sparse", sparse_task, slog, s_arrays),
                                    ("dense", dense_task, dlog, d_arrays)):
        tensors = task.compute_dag.tensors
        for kind, sched in (("tuned", task.apply_best(log)),
                            ("default", (topi.generic.schedule_default(tensors[-1]),
                                         tensors))):
            mod = compiler.build(*sched)
            out[...] = 0
            mod(*arrays)
            np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)
            mods[f"{name} {kind}"] = kernel_timer(mod, arrays)
    mods["numpy dense"] = numpy_timer(numpy_layer, (x,))
    report(a, w, {"sparse": s_sec, "dense": d_sec}, interleaved(mods))


def report(a, w, tune_s, times) -> None:
    ms = {k: v * 1e3 for k, v in times.items()}
    print(f"3x3 conv {a.layout} {a.h}x{a.h}, {a.ci}->{a.co}, blocks {a.bs_r}x{a.bs_c}, "
          f"density {a.density} ({len(w.indices)} blocks), {a.trials} trials each "
          f"(sparse {tune_s['sparse']:.0f} s, dense {tune_s['dense']:.0f} s)")
    print(f"{'kernel':16s} {'ms':>9s} {'dense default / it':>19s}")
    for k, v in ms.items():
        print(f"{k:16s} {v:9.3f} {ms['dense default'] / v:18.2f}x")
    out = {"config": vars(a), "blocks": int(len(w.indices)),
           "tune_seconds": {k: round(v, 1) for k, v in tune_s.items()},
           "ms": {k: round(v, 4) for k, v in ms.items()},
           "sparse_tuned_vs_dense_tuned": round(ms["dense tuned"] / ms["sparse tuned"], 3)}
    path = pathlib.Path(a.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
