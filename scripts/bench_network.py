"""Whole-model tuning: TaskScheduler strategies against the default schedules and
onnxruntime, side by side in one run.

    python3 scripts/bench_network.py [--models resnet18 bert_layer] [--trials 1000]
                                     [--strategies gradient round-robin]

Per model (``relay.testing.onnx_models``, seeded weights; the same ONNX file feeds
onnxruntime and ``from_onnx``): extract the tasks, then per strategy tune from an empty
log with ``--trials`` trials (XGB cost model, seed 0; each task's best states and its
default schedule's state re-timed side by side at the end, ``--retime``; kernels timed
after a CPU cache flush, ``--cache-flush``, as a model's weights are cold), recording the
estimated
end-to-end latency (sum of weight x the better of best tuned and default latency per
task) every 100 trials; build with
each log (``ApplyHistoryBest``) and with the default schedules, check every output
against onnxruntime's, and time onnxruntime (2 threads) and every build in alternation,
``--rounds`` rounds; latencies are medians over rounds and ratios are per-round medians.
Writes results/bench_network.json after each model and keeps the logs in --logdir.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import time

import numpy as np
from bench_e2e import _build, ort_session, race

import autosched as auto
import compiler
from autosched.cli_network import log_best_costs
from autosched.defaults import measure_default_costs
from autosched.relay_integration import write_task_table
from compiler import relay
from compiler.relay.backend.graph_executor import GraphModule
from compiler.relay.testing import onnx_models
from records import load_records


def log_curve(tasks, weights, log: str, defaults: list, step: int) -> list:
    """Estimated latency (ms; better of tuned and default per task) after every ``step``
    trials of the log, replayed in log order."""
    index = {t.workload_key: k for k, t in enumerate(tasks)}
    best = list(defaults)
    out = []
    for n, rec in enumerate(load_records(log), start=1):
        k = index.get(rec.workload_key)
        if k is not None and rec.is_valid:
            best[k] = min(best[k], rec.mean_cost)
        if n % step == 0:
            est = sum(w * c for w, c in zip(weights, best))
            out.append(round(est * 1e3, 3) if math.isfinite(est) else None)
    return out


def tune(tasks, weights, strategy: str, trials: int, log: str, reuse: bool,
         retime: int = 4, flush: bool = True) -> dict:
    if reuse and os.path.exists(log):
        # an earlier run's log: only the default costs are measured again
        print(f"  {strategy}: reusing {log}", flush=True)
        with auto.LocalRunner(enable_cpu_cache_flush=flush) as runner:
            defaults = measure_default_costs(tasks, runner)
        row: dict = {"trials": sum(1 for _ in load_records(log)), "reused_log": True}
    else:
        if os.path.exists(log):
            os.remove(log)
        sched = auto.TaskScheduler(tasks, weights, strategy=strategy, seed=0, callbacks=[])
        opts = auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=16,
                                  verbose=0, measure_callbacks=[auto.RecordToFile(log)],
                                  retime_top_k=retime, confirm_top_k=retime,
                                  runner=auto.LocalRunner(enable_cpu_cache_flush=flush))
        t0 = time.perf_counter()
        sched.tune(opts)
        defaults = list(sched.default_costs)
        row = {"trials": sched.ct, "wall_s": round(time.perf_counter() - t0, 1),
               "rounds_per_task": list(sched.task_cts), "retimed": sched.retimed}
    write_task_table(tasks, weights, log + ".tasks.json", defaults)
    best = log_best_costs(tasks, log)
    row["curve_ms_per_100"] = log_curve(tasks, weights, log, defaults, 100)
    row["estimated_ms"] = row["curve_ms_per_100"][-1] if row["curve_ms_per_100"] else None
    row["default_ms_per_task"] = [round(c * 1e3, 4) for c in defaults]
    row["best_ms_per_task"] = [round(c * 1e3, 4) for c in best]
    row["tasks_beating_default"] = sum(b < d for b, d in zip(best, defaults))
    print(f"  {strategy}: {row['trials']} trials, estimated {row['estimated_ms']} ms, "
          f"{row['tasks_beating_default']}/{len(tasks)} tasks beat their default", flush=True)
    return row


def bench(name: str, args) -> dict:
    model, inputs = onnx_models.MODELS[name]()
    x = np.random.default_rng(0).standard_normal(inputs["data"]).astype("float32")
    sess = ort_session(model)
    ref = sess.run(None, {"data": x})[0]
    mod, params = relay.frontend.from_onnx(model)
    tasks, weights = auto.extract_tasks(mod, params, "llvm")
    print(f"{name}: {len(tasks)} tasks, {sum(weights)} tunable groups", flush=True)
    row: dict = {"model": name, "tasks": len(tasks), "groups": sum(weights),
                 "budget": args.trials, "strategies": {}}
    libs = {"default": _build(mod, params)[0]}
    for strategy in args.strategies:
        log = os.path.join(args.logdir, f"{name}_{strategy}.json")
        row["strategies"][strategy] = tune(tasks, weights, strategy, args.trials, log,
                                           args.reuse_logs, args.retime, args.cache_flush)
        lib, secs = _build(mod, params, log)
        row["strategies"][strategy]["build_s"] = round(secs, 2)
        row["strategies"][strategy]["tuned_kernels"] = lib.stats["tuned_groups"]
        libs[strategy] = lib
    mods = {k: GraphModule(lib["default"](compiler.cpu(0))) for k, lib in libs.items()}
    race(sess, x, ref, mods, args.rounds, args.number, row)
    return row


def print_table(rows) -> None:
    for r in rows:
        print(f"\n{r['model']}: {r['tasks']} tasks, budget {r['budget']} trials; "
              f"onnxruntime {r['ort_ms']} ms, default schedules {r['default_ms']} ms "
              f"({r['default_vs_ort']}x ort)")
        print(f"{'strategy':>12} | {'tuned ms':>9} | {'x ort':>6} | {'vs default':>10} | "
              f"{'est. ms':>8} | {'rel err':>8} | curve (est. ms per 100 trials)")
        for s, d in r["strategies"].items():
            print(f"{s:>12} | {r[s + '_ms']:>9} | {r[s + '_vs_ort']:>6} | "
                  f"{r[s + '_speedup_vs_default']:>9}x | {d['estimated_ms']!s:>8} | "
                  f"{r[s + '_rel_err']:8.1e} | {d['curve_ms_per_100']}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["resnet18", "bert_layer"],
                    choices=sorted(onnx_models.MODELS))
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--strategies", nargs="+", default=["gradient", "round-robin"],
                    choices=["gradient", "round-robin"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cache-flush", action=argparse.BooleanOptionalAction, default=True,
                    help="flush the CPU caches before each timed call while tuning (weights "
                         "are cold in a whole-model run; TVM's x86 network tutorial does it)")
    ap.add_argument("--retime", type=int, default=4, metavar="K",
                    help="at the end, re-time each task's K best states and its default "
                         "schedule's state twice more, side by side (0: off)")
    ap.add_argument("--number", type=int, default=10)
    ap.add_argument("--logdir", default="results/network_logs")
    ap.add_argument("--reuse-logs", action="store_true",
                    help="keep an existing log of a model and strategy instead of tuning")
    ap.add_argument("--out", default="results/bench_network.json")
    args = ap.parse_args(argv)
    pathlib.Path(args.logdir).mkdir(parents=True, exist_ok=True)
    rows: list = []
    path = pathlib.Path(args.out)
    for name in args.models:
        rows.append(bench(name, args))
        path.write_text(json.dumps({"cores": os.cpu_count(), "date": time.strftime("%F %T"),
                                    "rows": rows}, indent=1) + "\n")
    print_table(rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
