"""How the runner's first measurement after a build phase compares with the same
kernel's usual figure, with and without the runner's warm-up measurement.

    python3 scripts/bench_first_measurement.py [--workloads depthwise conv2d]
                                               [--phases 24] [--json OUT]

Per workload: the 8 fastest of 40 random states (and the default schedule's) are built
once; then each phase rebuilds them (both cores compiling, as between the batches of a
tuning round) and measures all 8 in a rotated order.  A kernel's usual figure is the
median of its measurements at positions 2..8; the report gives, over the phases, the
first measurement's ratio to that figure (median, max, share over 1.1) for three modes:
``builds`` (the runner's warm-up off), ``builds+warm-up`` (as ``tune`` runs) and
``no builds`` (phases back to back: the noise of a first position alone).  Writes JSON.
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics

import autosched as auto
import autosched.measure.runner as runner_mod
from autosched import catalog
from autosched.default_state import default_state
from autosched.measure.builder import LocalBuilder
from autosched.measure.runner import LocalRunner

SPECS = {"depthwise": "depthwise_conv2d", "conv2d": "conv2d_nchw", "softmax": "softmax"}
MODES = ("builds", "builds+warm-up", "no builds")


def fastest(task, builder, runner, n: int = 8) -> list:
    """(input, build) of the ``n`` fastest of the default's state and 40 random states."""
    states = [default_state(task)] + auto.SketchPolicy(
        task, seed=1, verbose=0).sample_initial_population(40)
    inputs = [auto.MeasureInput(task, s) for s in states if s is not None]
    ok = [(i, b) for i, b in zip(inputs, builder.build(inputs)) if b.error_no == 0]
    res = runner.run([i for i, _ in ok], [b for _, b in ok])
    ranked = sorted(range(len(ok)), key=lambda k: res[k].mean_cost)
    return [ok[k] for k in ranked[:n]]


def phases(kernels, builder, runner, mode: str, count: int) -> list:
    """First-position figure / usual figure, one per phase."""
    saved = runner_mod._WARM_AFTER_IDLE_S
    if mode == "builds":
        runner_mod._WARM_AFTER_IDLE_S = math.inf
    n, first, rest = len(kernels), [], {k: [] for k in range(len(kernels))}
    try:
        for p in range(count):
            if mode != "no builds":
                builder.build([i for i, _ in kernels])
            seq = [(p + j) % n for j in range(n)]
            out = runner.run([kernels[k][0] for k in seq], [kernels[k][1] for k in seq])
            first.append((seq[0], out[0].mean_cost))
            for k, res in zip(seq[1:], out[1:]):
                rest[k].append(res.mean_cost)
    finally:
        runner_mod._WARM_AFTER_IDLE_S = saved
    return [cost / statistics.median(rest[k]) for k, cost in first]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=["depthwise", "conv2d"],
                    choices=sorted(SPECS))
    ap.add_argument("--phases", type=int, default=24)
    ap.add_argument("--json", default="results/bench_first_measurement.json")
    a = ap.parse_args()
    out: dict = {"phases": a.phases, "workloads": {}}
    print(f"{'workload':10s} {'mode':15s} {'usual us':>9s} {'median':>7s} {'max':>6s} "
          f"{'>1.1':>5s}")
    for wl in a.workloads:
        name = SPECS[wl]
        task = auto.SearchTask(func=name, args=catalog.BUILTIN[name].default_args,
                               target="llvm")
        with LocalBuilder() as builder, LocalRunner(number=10, cutoff=None) as runner:
            kernels = fastest(task, builder, runner)
            usual = statistics.median(runner.run([i for i, _ in kernels[:1]],
                                                 [b for _, b in kernels[:1]])[0].costs)
            rows = {}
            for mode in MODES:
                r = phases(kernels, builder, runner, mode, a.phases)
                rows[mode] = {"median": round(statistics.median(r), 3),
                              "max": round(max(r), 2),
                              "share_over_1.1": round(sum(x > 1.1 for x in r) / len(r), 2)}
                print(f"{wl:10s} {mode:15s} {usual * 1e6:9.1f} {rows[mode]['median']:7.3f} "
                      f"{rows[mode]['max']:6.2f} {rows[mode]['share_over_1.1']:5.2f}")
        out["workloads"][wl] = {"fastest_us": round(usual * 1e6, 1), "modes": rows}
    path = pathlib.Path(a.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
