"""TVM's network tutorial with ``use_sparse=True`` as a benchmark: the dense model, the
sparse model with default schedules and the tuned sparse model, timed side by side.

    python3 scripts/bench_sparse_network.py [--network resnet-50] [--trials 1600]
        [--dense-trials 1600] [--bs-r 4] [--sparsity 0.85] [--seed 0] [--sparse-3x3]
        [--json results/bench_sparse_network.json]

``tune_network_x86`` with ``use_sparse``: the model (NHWC, batch 1, 224x224) gets random
block-sparse weights (``convert_model_dense_to_sparse(..., random_params=True)``), its
tasks are tuned together (``TaskScheduler``, one ``SketchPolicy`` per task with
``sparse_sketch_rules()``, ``LocalRunner(repeat=10, enable_cpu_cache_flush=True)`` as the
tutorial, 16 candidates a round) and the model is built with the log; the dense model
(the same random weights stored dense) is tuned the same way with ``--dense-trials``.
The builds are timed interleaved (``autosched.side_by_side``): the dense and the sparse
model with default schedules and tuned; the
tuned build's output is checked against the sparse default build's.  ``--sparse-3x3``
(not in the tutorial) makes the plain 3x3 convolutions sparse too
(``random_sparse_conv2d_params`` and ``bsr_conv2d.convert`` with ``kernel_size=3``; the
random blocks get random signs and the norm of the weight they replace, since uniform
[0, 1) weights in these layers too drive the activations past float range).  The
model's output must be finite.
Prints a table of milliseconds and ratios and writes JSON.
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
from autosched.side_by_side import interleaved
from compiler import relay
from compiler.contrib import graph_executor
from compiler.relay.data_dep_optimization import bsr_conv2d
from compiler.relay.data_dep_optimization.utils import (
    convert_model_dense_to_sparse,
    random_sparse_conv2d_params,
)
from compiler.topi.sparse.utils import BSRMatrix

NETWORKS = {
    "resnet-50": lambda: relay.testing.resnet.get_workload(
        num_layers=50, layout="NHWC", image_shape=(224, 224, 3)),
    "mobilenet": lambda: relay.testing.mobilenet.get_workload(
        layout="NHWC", image_shape=(224, 224, 3)),
    "mlp": lambda: relay.testing.mlp.get_workload(image_shape=(224, 224, 3),
                                                  num_classes=1000),
}


def _args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--network", choices=sorted(NETWORKS), default="resnet-50")
    ap.add_argument("--trials", type=int, default=1600)
    ap.add_argument("--dense-trials", type=int, default=1600)
    ap.add_argument("--bs-r", type=int, default=4)
    ap.add_argument("--sparsity", type=float, default=0.85)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sparse-3x3", action="store_true",
                    help="also make the plain 3x3 convolutions sparse (not in TVM's tutorial)")
    ap.add_argument("--json", default="results/bench_sparse_network.json")
    return ap.parse_args()


def _module(mod, params, x, log=None):
    """A graph module of ``mod`` built with default schedules, or with ``log``."""
    if log is None:
        lib = relay.build(mod, target="llvm", params=params)
    else:
        with auto.ApplyHistoryBest(log):
            with compiler.transform.PassContext(
                    opt_level=3, config={"relay.backend.use_auto_scheduler": True}):
                lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    m.set_input("data", x)
    return m


def _timer(m, min_s: float = 0.3):
    """Seconds per run of graph module ``m`` (mean over at least ``min_s``)."""
    def run():
        m.run()
        n, t0 = 0, time.perf_counter()
        while True:
            m.run()
            n += 1
            if time.perf_counter() - t0 >= min_s:
                return (time.perf_counter() - t0) / n
    return run


def _tune(tasks, weights, trials: int, seed: int, log: str) -> float:
    policies = [auto.SketchPolicy(t, program_cost_model=auto.XGBModel(seed=seed), seed=seed,
                                  verbose=0, init_search_callbacks=auto.sparse_sketch_rules())
                for t in tasks]
    # 16 a round, as bench_network: one round of every task fits the budget
    opts = auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=16, verbose=0,
                              runner=auto.LocalRunner(repeat=10, enable_cpu_cache_flush=True),
                              measure_callbacks=[auto.RecordToFile(log)])
    t0 = time.perf_counter()
    auto.TaskScheduler(tasks, weights, callbacks=[]).tune(opts, search_policy=policies)
    return time.perf_counter() - t0


def main() -> None:
    a = _args()
    mod, params = NETWORKS[a.network]()
    np.random.seed(a.seed)
    smod, sparams = convert_model_dense_to_sparse(mod, params, bs_r=a.bs_r,
                                                  random_params=True, sparsity=a.sparsity)
    if a.sparse_3x3:
        before, signs = sparams, np.random.default_rng(a.seed)
        sparams = random_sparse_conv2d_params(smod["main"], sparams, a.bs_r, 1,
                                              1 - a.sparsity, "NHWC", kernel_size=3)
        for name, w in sparams.items():
            old = before[name].numpy()
            if w.shape[:2] == (3, 3) and not np.array_equal(w.numpy(), old):
                # uniform [0, 1) weights grow the activations past float range layer
                # after layer: random signs, and the norm of the weight they replace
                new = w.numpy() * signs.choice((-1.0, 1.0), size=w.shape)
                new *= np.linalg.norm(old) / np.linalg.norm(new)
                sparams[name] = compiler.nd.array(new.astype("float32"))
        func, sparams = bsr_conv2d.convert(smod["main"], sparams, (a.bs_r, 1), 0.8, "NHWC",
                                           kernel_size=3)
        smod = relay.IRModule.from_expr(func)
    # the dense model with the same (random sparse) weights, stored dense
    rebuilt = _densified(params, sparams)
    dense_params = {k: sparams[k] if k in sparams else rebuilt[k] for k in params}
    x = np.random.default_rng(a.seed).uniform(size=(1, 224, 224, 3)).astype("float32")
    tasks, weights = auto.extract_tasks(smod["main"], sparams, "llvm")
    n_sparse = sum(1 for t in tasks if t.task_input_names)
    logdir = tempfile.mkdtemp(prefix="bench-sparse-net-")
    log, dense_log = os.path.join(logdir, "sparse.json"), os.path.join(logdir, "dense.json")
    tune_s = _tune(tasks, weights, a.trials, a.seed, log) if a.trials else 0.0
    if a.dense_trials:
        dtasks, dweights = auto.extract_tasks(mod["main"], dense_params, "llvm")
        _tune(dtasks, dweights, a.dense_trials, a.seed, dense_log)
    builds = {"dense default": _module(mod, dense_params, x),
              "sparse default": _module(smod, sparams, x)}
    if a.dense_trials:
        builds["dense tuned"] = _module(mod, dense_params, x, dense_log)
    if a.trials:
        builds["sparse tuned"] = _module(smod, sparams, x, log)
    outs = {}
    for name, m in builds.items():
        m.run()
        outs[name] = m.get_output(0).numpy()
    assert np.isfinite(outs["sparse default"]).all(), "the model's output is not finite"
    for name in builds:
        np.testing.assert_allclose(outs[name], outs["sparse default"], rtol=1e-3, atol=1e-5)
    times = interleaved({k: _timer(m) for k, m in builds.items()}, rounds=5)
    report(a, len(tasks), n_sparse, tune_s, times)


def _densified(params, sparams) -> dict:
    """Each converted weight rebuilt dense from its BSR parts (the inverse of the
    conversion: a dense layer's ``out x in`` matrix, an HWIO kernel's ``out x kh*kw*in``
    matrix transposed)."""
    out = {}
    for name, w in params.items():
        if name + ".data" not in sparams:
            continue
        data = sparams[name + ".data"].numpy()
        data = data.reshape(*data.shape, 1) if data.ndim == 2 else data
        rows = (len(sparams[name + ".indptr"].numpy()) - 1) * data.shape[1]
        cols = w.shape[1] if w.ndim == 2 else w.shape[0] * w.shape[1] * w.shape[2]
        m = BSRMatrix(data, sparams[name + ".indices"].numpy(),
                      sparams[name + ".indptr"].numpy(), (rows, cols)).todense()
        out[name] = m if w.ndim == 2 else m.T.reshape(w.shape)
    return out


def report(a, n_tasks: int, n_sparse: int, tune_s: float, times: dict) -> None:
    ms = {k: v * 1e3 for k, v in times.items()}
    kinds = "dense, 1x1 and 3x3" if a.sparse_3x3 else "dense and 1x1"
    print(f"{a.network} NHWC 224x224 batch 1, BSR {a.bs_r}x1 blocks ({kinds} layers), "
          f"sparsity {a.sparsity}: "
          f"{n_tasks} tasks ({n_sparse} sparse), {a.trials} trials in {tune_s:.0f} s; "
          f"dense model {a.dense_trials} trials")
    print(f"{'build':16s} {'ms':>9s} {'dense default / it':>19s}")
    for k, v in ms.items():
        print(f"{k:16s} {v:9.2f} {ms['dense default'] / v:18.2f}x")
    out = {"config": vars(a), "tasks": n_tasks, "sparse_tasks": n_sparse,
           "tune_seconds": round(tune_s, 1), "ms": {k: round(v, 3) for k, v in ms.items()}}
    path = pathlib.Path(a.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
