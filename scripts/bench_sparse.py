"""TVM's sparse tuning tutorial as a benchmark: the tuned BSR kernel against numpy, in one run.

    python3 scripts/bench_sparse.py [--trials 64] [--seed 0] [--m 128 --n 3072 --k 768]
        [--bs-r 16 --bs-c 1 --density 0.6] [--json results/bench_sparse.json]

The tutorial's workload (``tune_sparse_x86``): ``relu(relu(X) @ W.T + B)`` with ``W`` a
random BSR matrix, tuned with its custom sketch rule (``auto.sparse_dense_sketch_rule``)
and the weights given as task inputs under TVM's names.  The best kernel is rebuilt
from the log, checked against numpy, and timed interleaved (``autosched.side_by_side``)
with numpy computing the same thing with ``W`` dense, and with the default schedule
(``topi.generic.schedule_default``: what a relay build uses without records).  Prints a
table of milliseconds and ratios and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import tempfile
import time

import numpy as np

import autosched as auto
import compiler
from autosched.side_by_side import interleaved, kernel_timer, numpy_timer
from compiler import te, topi
from compiler.runtime import as_aligned
from compiler.topi.sparse.utils import random_bsr_matrix


@auto.register_workload("bench_sparse_dense", override=True)
def sparse_dense(m, n, k, w_data_shape, w_indices_shape, w_indptr_shape, dtype):
    X = te.placeholder(shape=(m, k), dtype=dtype)
    W_data = te.placeholder(shape=w_data_shape, dtype=dtype)
    W_indices = te.placeholder(shape=w_indices_shape, dtype="int32")
    W_indptr = te.placeholder(shape=w_indptr_shape, dtype="int32")
    B = te.placeholder(shape=(m, n), dtype=dtype)
    out = topi.nn.sparse_dense(topi.nn.relu(X), W_data, W_indices, W_indptr)
    out = te.compute((m, n), lambda i, j: out[i, j] + B[i, j], name="BiasAdd")
    return [X, W_data, W_indices, W_indptr, B, topi.nn.relu(out)]


def _args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    for name, value in (("m", 128), ("n", 3072), ("k", 768), ("bs-r", 16), ("bs-c", 1)):
        ap.add_argument(f"--{name}", type=int, default=value)
    ap.add_argument("--density", type=float, default=0.6)
    ap.add_argument("--json", default="results/bench_sparse.json")
    return ap.parse_args()


def main() -> None:
    a = _args()
    w = random_bsr_matrix(a.n, a.k, a.bs_r, a.bs_c, a.density, "float32", seed=a.seed)
    prefix = (f"sparse_dense_bsr_{a.n}_{a.k}_{a.bs_r}_{a.bs_c}_{w.indices.shape[0]}_"
              f"{w.indptr.shape[0]}_")
    task = auto.SearchTask(
        func="bench_sparse_dense", args=(a.m, a.n, a.k, w.data.shape, w.indices.shape,
                                         w.indptr.shape, "float32"),
        task_inputs={prefix + "W_data": w.data, prefix + "W_indices": w.indices,
                     prefix + "W_indptr": w.indptr}, task_inputs_overwrite=True)
    log = os.path.join(tempfile.mkdtemp(prefix="bench-sparse-"), "sparse.json")
    policy = auto.SketchPolicy(task, auto.XGBModel(seed=a.seed), seed=a.seed, verbose=0,
                               init_search_callbacks=[auto.sparse_dense_sketch_rule()])
    t0 = time.perf_counter()
    stats = task.tune(auto.TuningOptions(num_measure_trials=a.trials, verbose=0,
                                         measure_callbacks=[auto.RecordToFile(log)]), policy)
    tune_s = time.perf_counter() - t0
    rng = np.random.default_rng(a.seed)
    x = as_aligned(rng.standard_normal((a.m, a.k)).astype("float32"))
    b = as_aligned(rng.standard_normal((a.m, a.n)).astype("float32"))
    dense = w.todense()
    ref = np.maximum(np.maximum(x, 0) @ dense.T + b, 0)
    arrays = [x, w.data, w.indices, w.indptr, b, as_aligned(np.zeros((a.m, a.n), "float32"))]
    tuned = compiler.build(*task.apply_best(log))
    tuned(*arrays)
    np.testing.assert_allclose(arrays[-1], ref, rtol=1e-4, atol=1e-4)
    tensors = task.compute_dag.tensors
    default = compiler.build(topi.generic.schedule_default(tensors[-1]), tensors)
    default(*arrays)
    np.testing.assert_allclose(arrays[-1], ref, rtol=1e-4, atol=1e-4)
    times = interleaved({
        "tuned": kernel_timer(tuned, arrays),
        "default": kernel_timer(default, arrays),
        "numpy dense": numpy_timer(lambda x_, b_: np.maximum(
            np.maximum(x_, 0) @ dense.T + b_, 0), (x, b))})
    report(a, w, stats, tune_s, times)


def report(a, w, stats, tune_s, times) -> None:
    ms = {k: v * 1e3 for k, v in times.items()}
    flop = 2 * a.m * len(w.indices) * a.bs_r * a.bs_c
    print(f"BSR {a.m}x{a.n}x{a.k}, blocks {a.bs_r}x{a.bs_c}, density {a.density} "
          f"({len(w.indices)} blocks), {a.trials} trials in {tune_s:.1f} s "
          f"({stats.errors} errors)")
    print(f"{'kernel':14s} {'ms':>9s} {'GFLOPS (stored)':>16s} {'numpy dense / it':>17s}")
    for k, v in ms.items():
        print(f"{k:14s} {v:9.3f} {flop / (v * 1e6):16.1f} {ms['numpy dense'] / v:16.2f}x")
    out = {"config": vars(a), "blocks": int(len(w.indices)), "tune_seconds": round(tune_s, 1),
           "errors": stats.errors, "ms": {k: round(v, 4) for k, v in ms.items()},
           "vs_numpy_dense": round(ms["numpy dense"] / ms["tuned"], 3),
           "vs_default": round(ms["default"] / ms["tuned"], 3)}
    path = pathlib.Path(a.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
