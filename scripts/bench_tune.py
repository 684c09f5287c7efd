"""Tuning benchmark: the best kernel at each trial budget, re-timed honestly beside the
default schedule and numpy, over several seeds, all measured in one run.

    python3 scripts/bench_tune.py [--workloads matmul:512 conv2d ...] [--seeds 0 1 2]
                                  [--trials 64 200] [--model xgb|xgb-noprior|random]
                                  [--baseline results/bench_tune_before.json]

For each (workload, seed) one search runs through the budgets in order: at each budget
B the tuning ends as ``tune`` ends (``--retime K``, default 4: the best K states and the
default schedule's state measured twice more, side by side; 0: TVM's plain minimum),
the best state of the log so far is the answer of a B-trial run (``tuning.best_state``'s
ranking), and the same search then continues to the next budget.  Re-timing
measurements are not trials.  Each budget's best state is rebuilt as it was measured
(weights pre-transformed when the task rewrites layouts, as a relay build does once) and
re-timed interleaved with the default (topi) schedule and numpy: round-robin, one timing
of each per round, median of the rounds; when the best state is the default schedule's
own state, the answer is the default program and gets the default's figure
(``best_is_default``).  Reported per budget: the median and min-max
over seeds of the re-timed GFLOPS, the ratios to numpy and to the default schedule
(median and min), the logged GFLOPS; per run: measured candidates per second and the
share of the wall time outside build and run (search overhead).  Writes JSON.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import tempfile

import numpy as np

import autosched as auto
from autosched import catalog
from autosched.cli import _arrays, _best_kernel
from autosched.cost_model import PRIOR_BUILTIN, RandomModel, XGBModel
from autosched.default_state import default_state, is_default_program
from autosched.side_by_side import interleaved, kernel_timer, numpy_timer
from autosched.steps import serialize
from autosched.tuning import default_steps_repr, rank_records
from compiler import build, topi
from compiler.target import host_target
from records import load_records

# a sibling script (the scripts are not a package): the measured FMA peak
_spec = importlib.util.spec_from_file_location(
    "bench_peak", pathlib.Path(__file__).resolve().parent / "bench_peak.py")
peak = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peak)

SPECS = {
    "conv2d": "conv2d_nchw",
    "dense_bias_relu": "dense_bias_relu",
    "depthwise": "depthwise_conv2d",
    "softmax": "softmax",
}
ROUNDS = 7          # interleaved re-timing rounds (side_by_side.interleaved's default)
DEFAULT_WORKLOADS = ["matmul:256", "matmul:512", "matmul:1024", "conv2d", "dense_bias_relu",
                     "depthwise", "softmax"]


def parse_workload(text: str):
    """(catalog name, args) of ``matmul:N`` or a name of SPECS."""
    if text in SPECS:
        name = SPECS[text]
        return name, catalog.BUILTIN[name].default_args
    name, _, size = text.partition(":")
    if name != "matmul" or not (size or "512").isdigit():
        raise SystemExit(f"bench_tune: unknown workload {text!r}; expected matmul:N or one "
                         f"of {', '.join(SPECS)}")
    n = int(size or 512)
    return name, (n, n, n)


def make_model(name: str, seed: int):
    """``xgb``: XGBModel with the shipped prior; ``xgb-noprior``: Ansor's (random until
    100 records); ``random``: RandomModel."""
    if name == "random":
        return RandomModel(seed)
    return XGBModel(seed=seed, prior=None if name == "xgb-noprior" else PRIOR_BUILTIN)


def tune_once(func, args, model: str, budgets, seed: int, per_round: int,
              retime_k: int, confirm_k: int = 0, min_repeat_ms: float = 0) -> dict:
    """One search through the budgets; ``cuts[B]``: the log's length at budget B."""
    task = auto.SearchTask(func=func, args=args, target="llvm")
    log = os.path.join(tempfile.mkdtemp(prefix="bench_tune_"), f"{func}_{seed}.json")
    policy = auto.SketchPolicy(task, make_model(model, seed), seed=seed, verbose=0)
    cuts: dict = {}
    trials = errors = 0
    wall = busy = search = 0.0
    for b in sorted(budgets):
        opts = auto.TuningOptions(num_measure_trials=b - trials,
                                  num_measures_per_round=per_round, verbose=0,
                                  retime_top_k=retime_k, confirm_top_k=confirm_k,
                                  runner=auto.LocalRunner(min_repeat_ms=min_repeat_ms),
                                  measure_callbacks=[auto.RecordToFile(log)])
        stats = task.tune(opts, policy)
        trials, errors = trials + stats.trials, errors + stats.errors
        wall += stats.wall_seconds
        busy += stats.measure_seconds
        search += stats.search_seconds
        cuts[b] = sum(1 for _ in load_records(log))
    # the overhead split: search rounds, and the rest (neither search nor measurement)
    return {"task": task, "log": log, "cuts": cuts, "trials": trials, "errors": errors,
            "wall_s": wall, "candidates_per_s": trials / wall,
            "overhead_share": max(0.0, wall - busy) / wall,
            "stats": {"search_s": search, "rest_s": max(0.0, wall - busy - search),
                      "measure_s": busy}}


def best_within(task, log: str, n_records: int):
    """(State, logged cost) of the best state among the first ``n_records`` records, by
    ``tune``'s ranking (re-timed states by ``retimed_cost`` first, then by cost)."""
    recs = [r for r in list(load_records(log))[:n_records] if r.is_valid]
    if not recs:
        return None, float("inf")
    dflt = default_state(task)
    rec = rank_records(recs, None if dflt is None else default_steps_repr(dflt))[0]
    return serialize.state_from_record(task, rec), rec.mean_cost


def retime(name: str, task, states: dict, rounds: int = ROUNDS) -> dict:
    """Seconds of each budget's best state, the default schedule and numpy (interleaved,
    ``rounds`` rounds)."""
    tensors = task.compute_dag.tensors
    rng = np.random.default_rng(0)
    # 64-byte aligned, as the tuner measures and a relay build runs (cli._arrays)
    arrays = _arrays(tensors, rng)
    entry = catalog.BUILTIN[name]
    sch = getattr(topi.x86, entry.schedule)(tensors[-1])
    default = build(sch, tensors, name="default")
    default(*arrays)
    expected = arrays[-1].copy()
    timers = {"default": kernel_timer(default, arrays)}
    for b, state in states.items():
        mod, ins = _best_kernel(task, state, arrays)
        mod(*ins)
        np.testing.assert_allclose(ins[-1], expected, rtol=1e-3, atol=1e-3)
        timers[f"best@{b}"] = kernel_timer(mod, ins)
    if entry.numpy_ref is not None:
        timers["numpy"] = numpy_timer(entry.numpy_ref, arrays[:-1])
    return interleaved(timers, rounds=rounds)


def retime_run(name: str, args, run: dict, budgets, rounds: int = ROUNDS) -> None:
    """(Re-)time one tuned run from its log: each budget's best, default, numpy."""
    task = auto.SearchTask(func=name, args=tuple(args), target="llvm")
    flops = task.compute_dag.flop_ct
    states, logged = {}, {}
    for b in budgets:
        cuts = run.get("cuts", {})       # int keys, or str keys once read from JSON
        st, cost = best_within(task, run["log"], cuts.get(b, cuts.get(str(b), b)))
        logged[b] = flops / cost / 1e9 if cost < float("inf") else 0.0
        if st is not None:
            states[b] = st
    run["logged_gflops"] = logged
    run["seconds"] = retime(name, task, states, rounds)
    mark_default_answers(task, run, states)


def mark_default_answers(task, run: dict, states: dict) -> None:
    """Budgets whose best state is the default schedule's own state: the tuner answered
    with the default program, so its figure is the default's (two builds of one program
    differ only by measurement noise); the second build's figure is kept as
    ``best@B (own build)``."""
    secs = run["seconds"]
    run["best_is_default"] = {str(b): is_default_program(task, st) for b, st in states.items()}
    for b, same in run["best_is_default"].items():
        if same and f"best@{b}" in secs:
            secs[f"best@{b} (own build)"] = secs[f"best@{b}"]
            secs[f"best@{b}"] = secs["default"]


def retime_all(path: str, budgets, rounds: int = ROUNDS) -> dict:
    """Re-time every run of an earlier JSON from its logs, on a machine with no tuner
    running (the logs are kept in the temp directory the run printed)."""
    with open(path) as f:
        old = json.load(f)
    out = old["workloads"]
    for spec, res in out.items():
        name, _ = parse_workload(spec)
        for run in res["runs"]:
            retime_run(name, res["args"], run, budgets, rounds)
            secs = run["seconds"]
            print(f"  {spec} retimed: " + ", ".join(f"{k} {res['flops'] / v / 1e9:.1f}"
                                                    for k, v in secs.items()), flush=True)
    return out


def run_workload(spec: str, ns) -> dict:
    name, args = parse_workload(spec)
    flops = None
    per_seed = []
    for seed in ns.seeds:
        r = tune_once(name, args, ns.model, ns.trials, seed, ns.per_round, ns.retime_k,
                      ns.confirm_k, ns.min_repeat_ms)
        task = r.pop("task")
        flops = task.compute_dag.flop_ct
        retime_run(name, args, r, ns.trials, ns.rounds)
        secs = r["seconds"]
        per_seed.append(r)
        print(f"  {spec} seed {seed}: " + ", ".join(f"{k} {flops / v / 1e9:.1f}"
                                                      for k, v in secs.items()) + " GFLOPS",
              flush=True)
    return {"args": list(args), "flops": flops, "runs": per_seed}


def summarize(res: dict, budgets) -> list:
    """Rows: (budget, median GFLOPS, min, max, vs numpy med, vs default med, vs default
    min, logged med, cand/s med, overhead med, runs whose answer is the default
    schedule's own state)."""
    rows = []
    flops, runs = res["flops"], res["runs"]
    for b in budgets:
        key = f"best@{b}"
        ok = [r for r in runs if key in r["seconds"]]
        if not ok:
            continue
        g = [flops / r["seconds"][key] / 1e9 for r in ok]
        vs_def = [r["seconds"]["default"] / r["seconds"][key] for r in ok]
        vs_np = [r["seconds"]["numpy"] / r["seconds"][key] for r in ok if "numpy" in r["seconds"]]
        rows.append((b, statistics.median(g), min(g), max(g),
                     statistics.median(vs_np) if vs_np else None,
                     statistics.median(vs_def), min(vs_def),
                     statistics.median(r["logged_gflops"][b] for r in ok),
                     statistics.median(r["candidates_per_s"] for r in runs),
                     statistics.median(r["overhead_share"] for r in runs),
                     sum(bool(r.get("best_is_default", {}).get(str(b))) for r in ok)))
    return rows


def _baseline_rows(path: str | None) -> dict:
    """(workload, budget) -> (median GFLOPS, median vs default) of an earlier JSON."""
    if not path:
        return {}
    with open(path) as f:
        summary = json.load(f)["summary"]
    return {(spec, row[0]): (row[1], row[5]) for spec, rows in summary.items() for row in rows}


def print_table(out: dict, budgets, baseline: dict | None = None,
                peak_gflops: float | None = None) -> None:
    """The summary table; with ``peak_gflops`` (the measured FMA peak) a column gives
    each median's share of it (of little meaning for memory-bound workloads)."""
    baseline = baseline or {}
    print(f"{'workload':16s} {'trials':>6s} {'GFLOPS med':>10s} {'min-max':>13s} "
          f"{'vs numpy':>8s} {'vs default':>10s} {'(min)':>6s} {'logged':>7s} "
          f"{'cand/s':>6s} {'overhead':>8s} {'=dflt':>5s}"
          + (f" {'peak':>5s}" if peak_gflops else "")
          + (f" {'before':>14s}" if baseline else ""))
    for spec, res in out.items():
        for b, med, lo, hi, vnp, vdef, vdef_min, logged, cps, ovh, same in \
                summarize(res, budgets):
            vnp_s = f"{vnp:8.2f}" if vnp is not None else f"{'-':>8s}"
            old = baseline.get((spec, b))
            old_s = f" {old[0]:7.1f} ({old[1]:.2f})" if old else ""
            print(f"{spec:16s} {b:6d} {med:10.1f} {f'{lo:.1f}-{hi:.1f}':>13s} {vnp_s} "
                  f"{vdef:10.2f} {vdef_min:6.2f} {logged:7.1f} {cps:6.2f} {ovh:8.1%} "
                  f"{same:5d}" + (f" {med / peak_gflops:5.0%}" if peak_gflops else "")
                  + old_s)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", nargs="+", default=DEFAULT_WORKLOADS)
    p.add_argument("--model", default="xgb", choices=("random", "xgb", "xgb-noprior"))
    p.add_argument("--baseline", metavar="JSON",
                   help="an earlier result of this script: its medians print alongside")
    p.add_argument("--trials", type=int, nargs="+", default=[64, 200])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--per-round", type=int, default=64)
    p.add_argument("--retime-k", type=int, default=4, metavar="K",
                   help="at each budget re-time the best K states and the default's "
                        "(as tune's --retime; 0: the plain minimum, as TVM)")
    p.add_argument("--confirm-k", type=int, default=4, metavar="K",
                   help="measure a candidate entering the best K twice (as tune's "
                        "--confirm; 0: off, as TVM)")
    p.add_argument("--rounds", type=int, default=ROUNDS, metavar="N",
                   help="rounds of the final interleaved re-timing (median of N figures "
                        "per program; two builds of one program measured up to 5%% apart "
                        "with 7 here)")
    p.add_argument("--min-repeat-ms", type=float, default=0, metavar="MS",
                   help="the tuner's LocalRunner(min_repeat_ms=MS): how long each "
                        "candidate's repeat lasts (TVM's default is 100)")
    p.add_argument("--json", default="results/bench_tune.json")
    p.add_argument("--retime", metavar="JSON",
                   help="only re-time the runs of an earlier JSON from their logs")
    ns = p.parse_args(argv)
    ns.trials = sorted(set(ns.trials))
    # measured first, while nothing else runs
    fma = peak.measure_peak()
    print(f"measured FMA peak: {fma['gflops']:.1f} GFLOPS on {fma['threads']} threads",
          flush=True)
    if ns.retime:
        out = retime_all(ns.retime, ns.trials, ns.rounds)
    else:
        out = {spec: run_workload(spec, ns) for spec in ns.workloads}
    print_table(out, ns.trials, _baseline_rows(ns.baseline), fma["gflops"])
    os.makedirs(os.path.dirname(ns.json) or ".", exist_ok=True)
    with open(ns.json, "w") as f:
        json.dump({"host": {**host_info(), "fma_peak": fma}, "model": ns.model, "seeds": ns.seeds,
                   "retime_rounds": ns.rounds, "retime_k": ns.retime_k,
                   "confirm_k": ns.confirm_k, "min_repeat_ms": ns.min_repeat_ms,
                   "trials": ns.trials,
                   "summary": {s: summarize(r, ns.trials) for s, r in out.items()},
                   "workloads": out}, f, indent=2, default=str)
    print(f"wrote {ns.json}")
    return 0


def host_info() -> dict:
    """What the results were measured on: sessions run on different machines (a Zen 4
    with AVX-512 and a Zen 3 with AVX2 so far), and only same-machine runs compare."""
    t = host_target()
    return {"target": str(t), "mcpu": t.mcpu, "float32_lanes": t.vector_lanes(32),
            "num_cores": t.num_cores}


if __name__ == "__main__":
    sys.exit(main())
