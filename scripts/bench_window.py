"""Measurement-window benchmark: does a longer ``min_repeat_ms`` measure candidates better?

    python3 scripts/bench_window.py [--workloads matmul:256 matmul:512 conv2d]
        [--windows 0 25 50 100] [--passes 4] [--candidates 40] [--trials 128]
        [--log WORKLOAD=LOG ...] [--json out.json]

Why: TVM's LocalRunner times each candidate for at least ``min_repeat_ms`` (100 ms by
default); ours defaults to 0.  That window is most of a round's time on small kernels,
so it should buy accuracy, and this measures whether it does.

Per workload: the candidates are the default schedule's state and the ``--candidates``
best distinct states of a tuning log (``--log``, or a fresh ``--trials`` tune with the
default settings), the kind of states the search actually has to rank.  All are built
once; then, ``--passes`` times, every window's LocalRunner times all of them (the
windows' order rotated per pass).  Reported per window:
- repeat spread: the median over candidates of |log(a / b)| between two passes' figures
  of the faster half (where the choice matters), as a percentage;
- top-1 regret: per pass, how much slower the candidate it ranks first is than the
  fastest by the geometric mean of all figures of all windows (the reference);
- ms per candidate: the runner's wall time per candidate.
Writes JSON.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import autosched as auto
from autosched import catalog
from autosched.default_state import default_state
from autosched.measure import MeasureInput
from autosched.measure.builder import LocalBuilder
from autosched.measure.runner import LocalRunner
from autosched.steps import serialize
from records import load_records

SPECS = {"conv2d": "conv2d_nchw", "dense_bias_relu": "dense_bias_relu",
         "depthwise": "depthwise_conv2d", "softmax": "softmax"}


def make_task(spec: str):
    if spec in SPECS:
        name = SPECS[spec]
        return auto.SearchTask(func=name, args=catalog.BUILTIN[name].default_args,
                               target="llvm")
    name, _, size = spec.partition(":")
    if name != "matmul" or not size.isdigit():
        raise SystemExit(f"bench_window: unknown workload {spec!r}; expected matmul:N or "
                         f"one of {', '.join(SPECS)}")
    n = int(size)
    return auto.SearchTask(func="matmul", args=(n, n, n), target="llvm")


def tuned_log(task, trials: int) -> str:
    """A fresh log of ``trials`` trials with the default settings."""
    log = os.path.join(tempfile.mkdtemp(prefix="bench_window_"), "log.json")
    task.tune(auto.TuningOptions(num_measure_trials=trials, verbose=0,
                                 measure_callbacks=[auto.RecordToFile(log)]))
    return log


def candidates(task, log: str, n: int) -> list:
    """The default schedule's state and the ``n`` best distinct states of ``log``."""
    recs = sorted((r for r in load_records(log) if r.is_valid), key=lambda r: r.mean_cost)
    states, seen = [default_state(task)], set()
    seen.add(str(states[0]))
    for rec in recs:
        st = serialize.state_from_record(task, rec)
        if str(st) not in seen:
            seen.add(str(st))
            states.append(st)
        if len(states) > n:
            break
    return states


def time_windows(task, states, windows, passes: int) -> tuple:
    """(figures per window as passes x candidates, runner seconds per window)."""
    inputs = [MeasureInput(task, st) for st in states]
    with LocalBuilder() as b:
        brs = b.build(inputs)
    keep = [i for i, br in enumerate(brs) if br.error_no == 0]
    inputs, brs = [inputs[i] for i in keep], [brs[i] for i in keep]
    runners = {w: LocalRunner(min_repeat_ms=w, cutoff=None) for w in windows}
    figs: dict = {w: [] for w in windows}
    secs = dict.fromkeys(windows, 0.0)
    try:
        for p in range(passes):
            k = p % len(windows)
            for w in windows[k:] + windows[:k]:
                t0 = time.perf_counter()
                res = runners[w].run(inputs, brs)
                secs[w] += time.perf_counter() - t0
                figs[w].append([statistics.fmean(r.costs) if r.error_no == 0 else math.nan
                                for r in res])
    finally:
        for r in runners.values():
            r.close()
    return {w: np.array(v) for w, v in figs.items()}, secs, len(inputs)


def summarize(figs: dict, secs: dict, n: int, passes: int) -> dict:
    ref = np.exp(np.nanmean(np.log(np.concatenate(list(figs.values()))), axis=0))
    fast = ref <= np.nanmedian(ref)
    out = {}
    for w, f in figs.items():
        lg = np.log(f[:, fast])
        pairs = [np.nanmedian(np.abs(lg[a] - lg[b]))
                 for a in range(passes) for b in range(a + 1, passes)]
        regret = [float(ref[int(np.nanargmin(f[p]))] / np.nanmin(ref) - 1)
                  for p in range(passes)]
        out[w] = {"spread": float(np.median(pairs)) if pairs else math.nan,
                  "regret": regret, "ms_per_candidate": 1e3 * secs[w] / passes / n}
    return {"candidates": n, "reference_median_ms": float(np.nanmedian(ref) * 1e3),
            "windows": out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", nargs="+", default=["matmul:256", "matmul:512", "conv2d"])
    p.add_argument("--windows", type=float, nargs="+", default=[0, 25, 50, 100])
    p.add_argument("--passes", type=int, default=4)
    p.add_argument("--candidates", type=int, default=40)
    p.add_argument("--trials", type=int, default=128)
    p.add_argument("--log", nargs="*", default=[], metavar="WORKLOAD=LOG")
    p.add_argument("--json", default="results/bench_window.json")
    ns = p.parse_args(argv)
    if ns.passes < 2:
        raise SystemExit("bench_window: --passes must be at least 2 (spread compares passes)")
    logs = dict(item.split("=", 1) for item in ns.log)
    out = {}
    for spec in ns.workloads:
        task = make_task(spec)
        log = logs.get(spec) or tuned_log(task, ns.trials)
        figs, secs, n = time_windows(task, candidates(task, log, ns.candidates),
                                     list(ns.windows), ns.passes)
        out[spec] = summarize(figs, secs, n, ns.passes)
        out[spec]["log"] = log
        print(f"{spec}: {n} candidates, median {out[spec]['reference_median_ms']:.3f} ms",
              flush=True)
        for w, r in out[spec]["windows"].items():
            print(f"  {w:6.0f} ms  spread {r['spread']:6.1%}  top-1 regret "
                  f"{' '.join(f'{x:.1%}' for x in r['regret'])}  "
                  f"{r['ms_per_candidate']:6.1f} ms/candidate", flush=True)
    os.makedirs(os.path.dirname(ns.json) or ".", exist_ok=True)
    with open(ns.json, "w") as f:
        json.dump({"passes": ns.passes, "workloads": out}, f, indent=2)
    print(f"wrote {ns.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
