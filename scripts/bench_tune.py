"""Tuning benchmark: best GFLOPS vs trials per cost model, ratio to numpy, throughput and
search overhead, all measured in one run.

    python3 scripts/bench_tune.py [--workloads matmul:512 matmul:1024 conv2d]
                                  [--models random xgb] [--trials 64 200]

For each (workload, model) it tunes once up to the largest budget and reads the best
GFLOPS at each smaller budget off the same run (the search is sequential: the best after
64 trials of a 200-trial run is what a 64-trial run with the same seed finds).  numpy
matmul is timed in the same run.  Reported per budget: best GFLOPS, ratio to numpy (for
matmul), xgb/random ratio; per run: measured candidates per second and the share of the
wall time spent outside build and run (search overhead).  Writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import autosched as auto
from autosched import catalog  # noqa: F401  (registers the built-in workloads)
from autosched.cost_model import RandomModel, XGBModel

SPECS = {"conv2d": ("conv2d_nchw", (1, 64, 56, 56, 64, 3, 3, 1, 1))}


def parse_workload(text: str):
    if text in SPECS:
        return SPECS[text]
    name, _, size = text.partition(":")
    n = int(size or 512)
    return name, (n, n, n)


def numpy_gflops(n: int) -> float:
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    a @ b
    ts = []
    for _ in range(10):
        t = time.perf_counter()
        a @ b
        ts.append(time.perf_counter() - t)
    return 2.0 * n ** 3 / statistics.median(ts) / 1e9


def make_model(name: str, seed: int):
    return RandomModel(seed) if name == "random" else XGBModel(seed=seed)


def tune_curve(func, args, model: str, budgets, seed: int, per_round: int) -> dict:
    task = auto.SearchTask(func=func, args=args, target="llvm")
    log = os.path.join(tempfile.mkdtemp(prefix="bench_tune_"), f"{func}_{model}.json")
    curve = []
    opts = auto.TuningOptions(num_measure_trials=max(budgets), num_measures_per_round=per_round,
                              verbose=0, measure_callbacks=[auto.RecordToFile(log)],
                              progress_callback=lambda st: curve.append((st.trials,
                                                                          st.best_cost)))
    policy = auto.SketchPolicy(task, make_model(model, seed), seed=seed, verbose=0)
    stats = task.tune(opts, policy)
    flops = task.compute_dag.flop_ct
    best_at = {}
    for b in budgets:
        costs = [c for t, c in curve if t <= b]
        best_at[b] = flops / min(costs) / 1e9 if costs and min(costs) < float("inf") else 0.0
    return {"best_gflops": best_at, "curve": [(t, flops / c / 1e9 if c < float("inf") else 0)
                                              for t, c in curve],
            "trials": stats.trials, "errors": stats.errors,
            "cut_off": stats.cut_off, "wall_s": stats.wall_seconds,
            "build_s": stats.build_seconds, "run_s": stats.run_seconds,
            "search_s": stats.search_seconds,
            "candidates_per_s": stats.trials / stats.wall_seconds,
            "overhead_share": stats.overhead_share, "log": log}


def print_table(out, budgets) -> None:
    print(f"{'workload':24s} {'model':6s} {'trials':>6s} {'GFLOPS':>8s} {'vs numpy':>8s} "
          f"{'xgb/rnd':>7s} {'cand/s':>7s} {'overhead':>8s}")
    for wl, per_model in out.items():
        np_g = per_model.get("numpy_gflops")
        for model, res in per_model.items():
            if model == "numpy_gflops":
                continue
            for b in budgets:
                g = res["best_gflops"][b]
                vs_np = f"{g / np_g:8.2f}" if np_g else f"{'-':>8s}"
                rnd = per_model.get("random")
                ratio = f"{g / rnd['best_gflops'][b]:7.2f}" if model == "xgb" and rnd and \
                    rnd["best_gflops"][b] else f"{'-':>7s}"
                print(f"{wl:24s} {model:6s} {b:6d} {g:8.1f} {vs_np} {ratio} "
                      f"{res['candidates_per_s']:7.2f} {res['overhead_share']:8.1%}")
        if np_g:
            print(f"{wl:24s} numpy  {'':6s} {np_g:8.1f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", nargs="+", default=["matmul:512", "matmul:1024"])
    p.add_argument("--models", nargs="+", default=["random"], choices=("random", "xgb"))
    p.add_argument("--trials", type=int, nargs="+", default=[64, 200])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-round", type=int, default=16)
    p.add_argument("--json", default="results/bench_tune.json")
    ns = p.parse_args(argv)
    out = {}
    for spec in ns.workloads:
        func, args = parse_workload(spec)
        per_model = out.setdefault(spec, {})
        for model in ns.models:
            per_model[model] = tune_curve(func, args, model, ns.trials, ns.seed, ns.per_round)
        if func == "matmul":
            per_model["numpy_gflops"] = numpy_gflops(args[0])
    print_table(out, ns.trials)
    os.makedirs(os.path.dirname(ns.json) or ".", exist_ok=True)
    with open(ns.json, "w") as f:
        json.dump(out, f, indent=2, default=str)
    print(f"wrote {ns.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
