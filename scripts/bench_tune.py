"""Tuning benchmark: best GFLOPS vs trials, ratio to numpy, throughput, search overhead.

    python3 scripts/bench_tune.py [--sizes 512 1024] [--trials 64 200] [--model random]

For each matmul size it tunes once up to the largest trial budget and reads the best
GFLOPS reached at each smaller budget off the same run (the search is sequential, so the
best after 64 trials of a 200-trial run is what a 64-trial run with the same seed finds).
numpy is timed in the same run.  Reported: best GFLOPS and ratio to numpy per budget,
measured candidates per second, and the share of wall time outside build and run
(search overhead).  Writes JSON (default results/bench_tune.json).
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


def tune_curve(n: int, budgets, seed: int, per_round: int) -> dict:
    task = auto.SearchTask(func="matmul", args=(n, n, n), target="llvm")
    log = os.path.join(tempfile.mkdtemp(prefix="bench_tune_"), f"mm{n}.json")
    curve = []

    def progress(stats):
        curve.append((stats.trials, stats.best_cost))

    opts = auto.TuningOptions(num_measure_trials=max(budgets), num_measures_per_round=per_round,
                              verbose=0, measure_callbacks=[auto.RecordToFile(log)],
                              progress_callback=progress)
    stats = task.tune(opts, auto.SketchPolicy(task, seed=seed, verbose=0))
    flops = task.compute_dag.flop_ct
    best_at = {}
    for b in budgets:
        costs = [c for t, c in curve if t <= b]
        best_at[b] = flops / min(costs) / 1e9 if costs and min(costs) < float("inf") else 0.0
    return {"best_gflops": best_at, "trials": stats.trials, "errors": stats.errors,
            "wall_s": stats.wall_seconds, "build_s": stats.build_seconds,
            "run_s": stats.run_seconds, "search_s": stats.search_seconds,
            "candidates_per_s": stats.trials / stats.wall_seconds,
            "overhead_share": stats.overhead_share, "log": log}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    p.add_argument("--trials", type=int, nargs="+", default=[64, 200])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-round", type=int, default=16)
    p.add_argument("--json", default="results/bench_tune.json")
    ns = p.parse_args(argv)
    out = {}
    for n in ns.sizes:
        res = tune_curve(n, ns.trials, ns.seed, ns.per_round)
        res["numpy_gflops"] = numpy_gflops(n)
        out[str(n)] = res
    print(f"{'workload':14s} {'trials':>6s} {'best GFLOPS':>12s} {'numpy':>8s} {'ratio':>6s} "
          f"{'cand/s':>7s} {'overhead':>9s}")
    for n, res in out.items():
        for b in ns.trials:
            g = res["best_gflops"][b]
            print(f"matmul {n:<7s} {b:6d} {g:12.1f} {res['numpy_gflops']:8.1f} "
                  f"{g / res['numpy_gflops']:6.2f} {res['candidates_per_s']:7.2f} "
                  f"{res['overhead_share']:9.1%}")
    os.makedirs(os.path.dirname(ns.json) or ".", exist_ok=True)
    with open(ns.json, "w") as f:
        json.dump(out, f, indent=2, default=str)
    print(f"wrote {ns.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
