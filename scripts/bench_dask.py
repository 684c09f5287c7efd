"""Tuning through Dask vs locally, in one run: throughput, per-candidate overhead, best.

    python3 scripts/bench_dask.py [--trials 128] [--workload matmul --args 256 256 256]

Three 128-trial tunes of the same task with the same seed and cost model: the local
builder/runner, and DaskBuilder/DaskRunner on a LocalCluster of 1 and of 2 worker
processes (loopback, ``--resources measure=1``).  Then the overhead of the Dask path:
the same pre-built candidates timed by LocalRunner and by DaskRunner on one worker
(and built by LocalBuilder(n_parallel=1) vs DaskBuilder on one single-threaded
worker); the difference per candidate is what Dask adds.  On one 2-core machine the
workers share the cores with each other and with the client, so 2 workers cannot beat
the local pool here; on N machines builds spread over all of them and runs go one per
machine (see the README).  Prints a table and writes results/bench_dask.json.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import time

import distributed

import autosched as auto
from autosched import catalog  # noqa: F401 - registers the built-in workloads
from autosched.measure import MeasureInput


def _cluster(n):
    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    resources={"measure": 1}, host="127.0.0.1",
                                    dashboard_address=":0")


def _tune(task, trials, builder, runner, seed):
    policy = auto.SketchPolicy(task, auto.XGBModel(seed=seed), seed=seed, verbose=0)
    opts = auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=32,
                              builder=builder, runner=runner, verbose=0)
    t0 = time.perf_counter()
    stats = task.tune(opts, policy)
    wall = time.perf_counter() - t0
    return {"trials": stats.trials, "errors": stats.errors, "wall_s": round(wall, 2),
            "cand_per_s": round(stats.trials / wall, 2),
            "best_gflops": round(task.compute_dag.flop_ct / stats.best_cost / 1e9, 1)}


def _overhead(task, n=64):
    """Per-candidate seconds Dask adds to building and to running the same candidates."""
    policy = auto.SketchPolicy(task, auto.RandomModel(0), seed=1, verbose=0)
    inputs = [MeasureInput(task, s) for s in policy.sample_initial_population(n)]
    with auto.LocalBuilder(n_parallel=1) as lb, auto.LocalRunner() as lr:
        lb.build(inputs[:2])                      # start the worker outside the timing
        t0 = time.perf_counter()
        built = lb.build(inputs)
        local_build = time.perf_counter() - t0
        lr.run(inputs[:2], built[:2])             # start the worker outside the timing
        t0 = time.perf_counter()
        lr.run(inputs, built)
        local_run = time.perf_counter() - t0
    with _cluster(1) as c, distributed.Client(c) as client:
        db, dr = auto.DaskBuilder(client), auto.DaskRunner(client)
        db.build(inputs[:2])
        dr.run(inputs[:2], built[:2])
        t0 = time.perf_counter()
        db.build(inputs)
        dask_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        dr.run(inputs, built)
        dask_run = time.perf_counter() - t0
    return {"n": len(inputs), "build_ms": round((dask_build - local_build) / len(inputs) * 1e3, 2),
            "run_ms": round((dask_run - local_run) / len(inputs) * 1e3, 2),
            "local_build_s": round(local_build, 2), "dask_build_s": round(dask_build, 2),
            "local_run_s": round(local_run, 2), "dask_run_s": round(dask_run, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="matmul")
    ap.add_argument("--args", type=int, nargs="*", default=[256, 256, 256])
    ap.add_argument("--trials", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="results/bench_dask.json")
    ns = ap.parse_args(argv)
    task = auto.SearchTask(func=ns.workload, args=tuple(ns.args))
    rows = {}
    with auto.LocalBuilder() as b, auto.LocalRunner() as r:
        rows["local"] = _tune(task, ns.trials, b, r, ns.seed)
    for n in (1, 2):
        with _cluster(n) as c, distributed.Client(c) as client:
            rows[f"dask x{n}"] = _tune(task, ns.trials, auto.DaskBuilder(client),
                                       auto.DaskRunner(client), ns.seed)
    over = _overhead(task)
    print(f"{task.workload_key}, {ns.trials} trials, seed {ns.seed}")
    print(f"{'measurer':10s} {'wall s':>7s} {'cand/s':>7s} {'vs local':>8s} {'errors':>6s} "
          f"{'best GFLOPS':>11s}")
    for name, row in rows.items():
        rel = row["cand_per_s"] / rows["local"]["cand_per_s"]
        print(f"{name:10s} {row['wall_s']:7.1f} {row['cand_per_s']:7.2f} {rel:7.2f}x "
              f"{row['errors']:6d} {row['best_gflops']:11.1f}")
    print(f"Dask overhead per candidate ({over['n']} candidates, one worker): build "
          f"{over['build_ms']:.1f} ms, run {over['run_ms']:.1f} ms (target <= 20 ms)")
    out = pathlib.Path(ns.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"workload": task.workload_key, "trials": ns.trials,
                               "tunes": rows, "overhead": over}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
